//! Progress of long runs (render-tree, validate, diff, a target's render) on stderr: apps done of
//! the total and cache hits, redrawn in place at most ten times a second, then a one-line summary.
//! Only on a terminal: a log or a CI job's stderr gets none of it.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Between two redraws at least.
const REDRAW: Duration = Duration::from_millis(100);

/// A run's counters; cheap to clone (shared), and silent unless made for a terminal.
#[derive(Clone, Debug, Default)]
pub struct Progress(Option<Arc<Shown>>);

#[derive(Debug)]
struct Shown {
    /// What runs: `render-tree`, `validate`.
    command: &'static str,
    started: Instant,
    apps_total: AtomicUsize,
    apps_done: AtomicUsize,
    releases: AtomicUsize,
    hits: AtomicUsize,
    /// When the line was last drawn; also keeps two threads from drawing at once.
    drawn: Mutex<Option<Instant>>,
}

/// What a run did, for its summary line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    pub apps: usize,
    pub releases: usize,
    pub hits: usize,
}

impl Progress {
    /// Progress of `command`, shown when `terminal` (stderr is one); silent otherwise.
    pub fn new(command: &'static str, terminal: bool) -> Progress {
        Progress(terminal.then(|| {
            Arc::new(Shown {
                command,
                started: Instant::now(),
                apps_total: AtomicUsize::new(0),
                apps_done: AtomicUsize::new(0),
                releases: AtomicUsize::new(0),
                hits: AtomicUsize::new(0),
                drawn: Mutex::new(None),
            })
        }))
    }

    /// `n` more apps to do.
    pub fn add_apps(&self, n: usize) {
        if let Some(s) = &self.0 {
            s.apps_total.fetch_add(n, Ordering::Relaxed);
            s.draw();
        }
    }

    /// One app done.
    pub fn app_done(&self) {
        if let Some(s) = &self.0 {
            s.apps_done.fetch_add(1, Ordering::Relaxed);
            s.draw();
        }
    }

    /// One release rendered, from the cache or by Helm.
    pub fn release(&self, hit: bool) {
        if let Some(s) = &self.0 {
            s.releases.fetch_add(1, Ordering::Relaxed);
            if hit {
                s.hits.fetch_add(1, Ordering::Relaxed);
            }
            s.draw();
        }
    }

    /// Clears the progress line and prints the summary in its place.
    pub fn finish(&self) {
        if let Some(s) = &self.0 {
            let _guard = s
                .drawn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let line = summary(s.command, s.counts(), s.started.elapsed());
            let _ = write!(std::io::stderr().lock(), "\r\x1b[K{line}\n");
        }
    }
}

impl Shown {
    fn counts(&self) -> Counts {
        Counts {
            apps: self.apps_done.load(Ordering::Relaxed),
            releases: self.releases.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
        }
    }

    /// Redraws the line, unless it was drawn less than [`REDRAW`] ago or another thread is at it.
    fn draw(&self) {
        let Ok(mut drawn) = self.drawn.try_lock() else {
            return;
        };
        let now = Instant::now();
        if drawn.is_some_and(|at| now.duration_since(at) < REDRAW) {
            return;
        }
        *drawn = Some(now);
        let line = line(
            self.command,
            self.counts(),
            self.apps_total.load(Ordering::Relaxed),
        );
        let _ = write!(std::io::stderr().lock(), "\r{line}\x1b[K");
    }
}

/// `render-tree: 3/12 apps, 7 releases (5 from the cache)`.
fn line(command: &str, c: Counts, total: usize) -> String {
    format!(
        "{command}: {}/{}, {} ({} from the cache)",
        c.apps,
        count(total, "app", "apps"),
        count(c.releases, "release", "releases"),
        c.hits
    )
}

/// `render-tree: 12 apps, 30 releases (28 from the cache, 2 rendered by helm) in 1.4s`.
pub fn summary(command: &str, c: Counts, took: Duration) -> String {
    format!(
        "{command}: {}, {} ({} from the cache, {} rendered by helm) in {:.1}s",
        count(c.apps, "app", "apps"),
        count(c.releases, "release", "releases"),
        c.hits,
        c.releases - c.hits,
        took.as_secs_f64()
    )
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_and_the_summary_count_apps_releases_and_hits() {
        let c = Counts {
            apps: 3,
            releases: 7,
            hits: 5,
        };
        assert_eq!(
            line("render-tree", c, 12),
            "render-tree: 3/12 apps, 7 releases (5 from the cache)"
        );
        assert_eq!(
            summary("validate", c, Duration::from_millis(1440)),
            "validate: 3 apps, 7 releases (5 from the cache, 2 rendered by helm) in 1.4s"
        );
        let one = Counts {
            apps: 1,
            releases: 1,
            hits: 0,
        };
        assert_eq!(
            line("render", one, 1),
            "render: 1/1 app, 1 release (0 from the cache)"
        );
    }

    #[test]
    fn without_a_terminal_nothing_is_counted() {
        let p = Progress::new("validate", false);
        p.add_apps(2);
        p.release(true);
        p.app_done();
        p.finish();
        assert!(p.0.is_none());
    }
}
