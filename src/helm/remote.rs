//! Remote charts (a chart repository or an OCI registry): `helm pull` fetches the chart into a
//! private temporary directory, its schemas are checked exactly as those of a local chart's
//! packaged subchart ([`schema_files::schema_file_problems`]), and only then does
//! `helm template` render that copy. Helm never loads a remote chart nyl has not checked, so a
//! chart repository cannot make it follow a `$ref` to a file of the machine or a URL.
//!
//! - The archive is rendered as Helm pulled it, not unpacked: `helm template --repo` loaded the
//!   same archive from Helm's cache, so the output is the same bytes.
//! - The directory is `0700`, removed when the render is done, failed or not; Helm's cache for the
//!   pull (`HELM_CACHE_HOME`, where it puts the repository's index) is inside it, so a pull
//!   writes nothing anywhere else, and a read-only `HOME` does not stop it. A signal ends nyl
//!   without that cleanup: the first pull of a run removes the user's pull directories that are
//!   older than an hour.
//! - The pull and the render share the release's deadline ([`Helm::for_release`]).
//! - A release with an exact version is cached by its arguments, as before, and looked up before
//!   anything is pulled; one without (none, or a range) is cached by the pulled archive's content,
//!   as a local chart is.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;
use std::time::{Duration, SystemTime};

use crate::helm::cache::Cache;
use crate::helm::output::Read;
use crate::helm::{Failure, Helm, Template};
use crate::project::schema_files;
use nyl_core::expansion::manifest::Output;
use nyl_core::project::objects::ChartSource;
use nyl_core::project::objects::RemoteChart;

/// Why a release gave no output.
#[derive(Debug)]
pub enum Stop {
    /// `helm pull` of its remote chart failed.
    Pull(Failure),
    /// `helm template` failed.
    Template(Failure),
    /// The remote chart's schemas refer outside themselves, or cannot be checked: each problem
    /// as (the file as shown, the message), as [`schema_files::schema_file_problems`] gives them.
    Refused(Vec<(String, String)>),
}

impl From<Failure> for Stop {
    fn from(failure: Failure) -> Stop {
        Stop::Template(failure)
    }
}

/// Renders a release of a remote chart through the cache: on a miss, pulls the chart, checks its
/// schemas (at most `max_bytes` read or decompressed) and renders the pulled archive.
pub fn render(
    cache: &Cache,
    helm: &Helm,
    t: &Template<'_>,
    remote: &RemoteChart,
    max_bytes: u64,
) -> Result<Output, Stop> {
    cache.render(helm, t, |stored| {
        let helm = helm.for_release();
        let pulled = Pulled::fetch(&helm, remote, t.release).map_err(Stop::Pull)?;
        let problems =
            schema_files::schema_file_problems(&pulled.archive, &remote.to_string(), max_bytes);
        if !problems.is_empty() {
            return Err(Stop::Refused(problems));
        }
        let chart = ChartSource::Local(pulled.archive.clone());
        let local = Template {
            chart: &chart,
            ..t.clone()
        };
        // Stored under the release's own key, or else under the archive's content.
        if stored {
            let mut reading = cache.reading(true);
            helm.template(&local, &mut reading)?;
            Ok(reading.finish()?)
        } else {
            let output = cache.template(&helm, &local)?;
            Ok(Read {
                output,
                entry: None,
            })
        }
    })
}

/// A remote chart pulled into a private temporary directory, which goes when this does.
struct Pulled {
    dir: PathBuf,
    /// The chart archive Helm wrote.
    archive: PathBuf,
}

impl Pulled {
    fn fetch(helm: &Helm, remote: &RemoteChart, release: &str) -> Result<Pulled, Failure> {
        let dir = private_temp_dir()
            .map_err(|e| Failure::Failed(format!("cannot create a temporary directory: {e}")))?;
        let mut pulled = Pulled {
            archive: PathBuf::new(),
            dir,
        };
        let (chart, cache) = (pulled.dir.join("chart"), pulled.dir.join("helm-cache"));
        crate::helm::create_private_dir(&chart)
            .map_err(|e| Failure::Failed(format!("cannot create a temporary directory: {e}")))?;
        helm.pull(remote, &chart, &cache, release)?;
        pulled.archive = only_file(&chart).ok_or_else(|| {
            Failure::Failed("helm pull succeeded but did not leave one chart archive".to_string())
        })?;
        Ok(pulled)
    }
}

impl Drop for Pulled {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), "temporary chart directory not removed: {e}");
        }
    }
}

/// The one file in `dir`, if it holds exactly one (and no directory).
fn only_file(dir: &Path) -> Option<PathBuf> {
    let mut entries = fs::read_dir(dir).ok()?;
    let entry = entries.next()?.ok()?;
    (entries.next().is_none() && entry.file_type().ok()?.is_file()).then(|| entry.path())
}

/// The start of a pull directory's name.
const PREFIX: &str = "nyl-pull-";

/// A pull takes seconds (its deadline is the release's): a pull directory older than this was
/// left by a nyl that a signal ended.
const STALE: Duration = Duration::from_secs(3600);

/// A new directory in the system's temporary directory that only this user can enter. Created,
/// never reused: a name that exists already (another process's, or planted) is skipped.
fn private_temp_dir() -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static SWEEP: Once = Once::new();
    let base = std::env::temp_dir();
    SWEEP.call_once(|| remove_stale(&base));
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut last = io::Error::other("no attempt");
    for _ in 0..16 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("{PREFIX}{}-{n}-{nanos}", std::process::id()));
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Removes the pull directories in `base` that this user owns and that are older than
/// [`STALE`]; nothing else is looked at closer than its name.
fn remove_stale(base: &Path) {
    let Ok(listing) = fs::read_dir(base) else {
        return;
    };
    let me = crate::helm::cache::euid();
    let cutoff = SystemTime::now() - STALE;
    for item in listing.filter_map(Result::ok) {
        if !item
            .file_name()
            .as_encoded_bytes()
            .starts_with(PREFIX.as_bytes())
        {
            continue;
        }
        // Not followed: a link is nobody's pull directory.
        let stale = fs::symlink_metadata(item.path())
            .is_ok_and(|m| m.is_dir() && m.uid() == me && m.modified().is_ok_and(|t| t < cutoff));
        if stale {
            tracing::debug!(dir = %item.path().display(), "stale pull directory removed");
            let _ = fs::remove_dir_all(item.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn temporary_directories_are_private_and_new() {
        let a = private_temp_dir().unwrap();
        let b = private_temp_dir().unwrap();
        assert_ne!(a, b);
        let mode = fs::metadata(&a).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        for dir in [a, b] {
            fs::remove_dir(dir).unwrap();
        }
    }

    #[test]
    fn only_stale_pull_directories_are_removed() {
        let base = private_temp_dir().unwrap();
        let old = SystemTime::now() - STALE - Duration::from_secs(60);
        for name in ["nyl-pull-1-old", "nyl-pull-2-new", "other-old"] {
            fs::create_dir(base.join(name)).unwrap();
            fs::write(base.join(name).join("chart.tgz"), "x").unwrap();
            if name.ends_with("old") {
                let dir = fs::File::open(base.join(name)).unwrap();
                dir.set_modified(old).unwrap();
            }
        }
        remove_stale(&base);
        let mut left: Vec<String> = fs::read_dir(&base)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["nyl-pull-2-new", "other-old"]);
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn only_a_single_file_is_taken_for_the_archive() {
        let dir = private_temp_dir().unwrap();
        assert_eq!(only_file(&dir), None, "empty");
        fs::write(dir.join("a.tgz"), "x").unwrap();
        assert_eq!(only_file(&dir), Some(dir.join("a.tgz")));
        fs::write(dir.join("b.tgz"), "x").unwrap();
        assert_eq!(only_file(&dir), None, "two");
        fs::remove_dir_all(&dir).unwrap();
    }
}
