//! Work split over threads: a level's renders over `-j` workers, and the few steps of one large
//! release that a warm or cold render waits for (hashing, reading and scanning megabytes) over
//! two. Results are those of the same work done in order on one thread.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The bytes from which one release's work (its output scanned, its cache entry hashed, read
/// or written) is worth a second thread: starting one costs tens of microseconds, about what
/// hashing or scanning a few hundred kilobytes costs.
pub const WORTH_A_THREAD: usize = 1 << 20;

/// The threads for one release's work on `bytes` bytes: two when the work is at least `worth`
/// bytes and the run allows a second (`two_threads`, asked only then: it may ask the system for
/// its cores), else one.
pub fn workers_for(bytes: usize, worth: usize, two_threads: impl FnOnce() -> bool) -> usize {
    if bytes >= worth && two_threads() {
        2
    } else {
        1
    }
}

/// `a()` and `b()`, `b` on a thread of its own when `parallel` (starting a thread costs tens of
/// microseconds: worth it for megabytes, not for a small release). A panic in `b` is `b`'s
/// caller's, as if it had run here.
pub fn join<A, B: Send>(
    parallel: bool,
    a: impl FnOnce() -> A,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if !parallel {
        return (a(), b());
    }
    std::thread::scope(|s| {
        let b = s.spawn(b);
        let a = a();
        (a, b.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })
}

/// `f` of each item, in order, computed on up to `workers` threads (this one included) that
/// take the next item as they finish one, each thread with a state of its own (such as a buffer
/// reused from item to item). A panic in `f` is the caller's, as if it had run here.
pub fn map<T: Sync, S: Default, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
    let workers = workers.clamp(1, items.len().max(1));
    if workers == 1 {
        let mut state = S::default();
        return items.iter().map(|item| f(&mut state, item)).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut state = S::default();
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, f(&mut state, item)));
        }
    };
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let others: Vec<_> = (1..workers).map(|_| s.spawn(work)).collect();
        let mut done = work();
        for other in others {
            done.extend(
                other
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p)),
            );
        }
        done
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_order() {
        let items: Vec<u32> = (0..500).collect();
        for workers in [0, 1, 2, 3, 1000] {
            let squares = map(&items, workers, |calls: &mut u32, i| {
                *calls += 1;
                i * i
            });
            assert_eq!(squares, items.iter().map(|i| i * i).collect::<Vec<_>>());
        }
        assert_eq!(
            map(&[] as &[u32], 2, |(): &mut (), &i| i),
            Vec::<u32>::new()
        );
        assert_eq!(join(true, || 1, || 2), (1, 2));
        assert_eq!(join(false, || 1, || 2), (1, 2));
    }

    #[test]
    fn a_panic_in_a_worker_is_the_callers() {
        let items: Vec<u32> = (0..100).collect();
        let caught = std::panic::catch_unwind(|| {
            map(&items, 2, |(): &mut (), &i| assert!(i != 77, "item 77"))
        });
        assert!(caught.is_err());
    }
}
