//! Work split over two threads, for the few steps of one large release that a warm or cold render
//! waits for (hashing, reading and scanning megabytes): results are those of the same work done
//! in order on one thread.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The bytes from which one release's work (its output scanned, its cache entry hashed, read
/// or written) is worth a second thread: starting one costs tens of microseconds, about what
/// hashing or scanning a few hundred kilobytes costs.
pub const WORTH_A_THREAD: usize = 1 << 20;

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

/// `f` of each item, in order, computed on two threads that take the next item as they finish
/// one (each thread with a state of its own, such as a buffer reused from item to item).
pub fn map<T: Sync, S: Default, R: Send>(
    items: &[T],
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
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
    let (a, b) = join(items.len() > 1, work, work);
    let mut done = a;
    done.extend(b);
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_order() {
        let items: Vec<u32> = (0..500).collect();
        let squares = map(&items, |calls: &mut u32, i| {
            *calls += 1;
            i * i
        });
        assert_eq!(squares, items.iter().map(|i| i * i).collect::<Vec<_>>());
        assert_eq!(map(&[] as &[u32], |(): &mut (), &i| i), Vec::<u32>::new());
        assert_eq!(join(true, || 1, || 2), (1, 2));
        assert_eq!(join(false, || 1, || 2), (1, 2));
    }
}
