//! The content-addressed render cache: `helm template` output stored under a key that covers
//! everything that can change it, so an unchanged release renders without running Helm.
//!
//! - The key hashes nyl's version, the helm binary (version, size, modification time: probed once
//!   per binary), every file of the chart directory (sorted relative paths and contents, vendored
//!   `charts/` and the contract included), the values handed to Helm, the release name,
//!   namespace, kube version, API versions and include-CRDs. Repository paths and modification
//!   times never enter it: Argo CD unpacks a fresh copy of the repository for every request.
//! - Remote charts are keyed by repository, chart and version; without an exact version (none, or
//!   a range) they are not cached, since what Helm resolves can change under the same inputs.
//!   A version tag is trusted not to move.
//! - An entry is `nyl-cache-v1 <sha256> <length>\n` followed by the output, verified on every read:
//!   a corrupt or truncated entry is a miss and a warning, never wrong output.
//! - Writes go to a temporary file renamed into place, so processes sharing the directory see
//!   whole entries or none. A hit refreshes the entry's modification time; when a run that wrote
//!   leaves the directory past its bound, the least recently used entries go first.
//! - A cache that cannot be written costs one warning; the render still succeeds.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use tracing::{debug, info, warn};

use crate::helm::{Failure, Helm, Template};
use crate::pipeline::ChartSpec;

const MAGIC: &str = "nyl-cache-v1";
/// The default bound on the cache directory's size.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// How a run uses the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Read and write.
    #[default]
    ReadWrite,
    /// Write without reading (`--refresh`).
    Refresh,
    /// Neither read nor write (`--no-cache`).
    Off,
}

pub struct Cache {
    dir: PathBuf,
    mode: Mode,
    max_bytes: u64,
    helm_identity: String,
    chart_digests: Mutex<HashMap<PathBuf, String>>,
    hits: AtomicUsize,
    misses: AtomicUsize,
    warned_unwritable: AtomicBool,
    /// Whether this run wrote an entry (then the size bound is checked at the end).
    wrote: AtomicBool,
}

/// Where remembered `helm version` probes live inside a cache directory.
pub fn probes_dir(dir: &Path) -> PathBuf {
    dir.join("helm-probes")
}

/// `NYL_CACHE_DIR`, else `$XDG_CACHE_HOME/nyl`, else `~/.cache/nyl`.
pub fn default_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("NYL_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("nyl")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/nyl")))
}

impl Cache {
    pub fn new(dir: PathBuf, mode: Mode, max_bytes: u64, helm: &Helm) -> Cache {
        Cache {
            dir,
            mode,
            max_bytes,
            helm_identity: helm.identity.clone(),
            chart_digests: Mutex::new(HashMap::new()),
            hits: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
            warned_unwritable: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
        }
    }

    /// Runs `helm template` through the cache.
    pub fn template(&self, helm: &Helm, t: &Template<'_>) -> Result<String, Failure> {
        let key = if self.mode == Mode::Off {
            None
        } else {
            self.key(t)
        };
        let Some(key) = key else {
            return helm.template(t);
        };
        if self.mode == Mode::ReadWrite {
            if let Some(output) = self.read(&key) {
                debug!(release = t.release, key = %&key[..16], "cache hit");
                self.hits.fetch_add(1, Ordering::Relaxed);
                helm.take_output(output.len())?;
                return Ok(output);
            }
        }
        debug!(release = t.release, key = %&key[..16], "cache miss");
        self.misses.fetch_add(1, Ordering::Relaxed);
        let output = helm.template(t)?;
        self.write(&key, &output);
        Ok(output)
    }

    /// Ends the run: bounds the directory (once, not per write: the walk costs a stat per entry)
    /// and logs the one-line summary.
    pub fn finish(&self) {
        if self.wrote.load(Ordering::Relaxed) {
            self.evict();
        }
        let (hits, misses) = (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        );
        if hits + misses > 0 {
            info!(
                "render cache: {hits} hits, {misses} misses ({})",
                self.dir.display()
            );
        }
    }

    /// The key of a render, or `None` when it must not be cached (an unpinned remote chart, a
    /// chart directory that cannot be read).
    fn key(&self, t: &Template<'_>) -> Option<String> {
        let chart = match t.chart {
            ChartSpec::Local(dir) => format!("local {}", self.chart_digest(dir)?),
            ChartSpec::Remote(remote) => {
                // Only an exact version pins a chart: a range (`^1.2`, `1.x`) can resolve anew.
                remote.version.as_deref().filter(|v| is_exact_version(v))?;
                format!("remote {remote}")
            }
        };
        let mut h = Sha256::new();
        let mut field = |name: &str, value: &str| {
            // Length-prefixed, so no two different inputs serialize alike.
            h.update(format!("{name} {}\n", value.len()));
            h.update(value);
            h.update("\n");
        };
        field("nyl", env!("CARGO_PKG_VERSION"));
        field("helm", &self.helm_identity);
        field("chart", &chart);
        field("values", t.values_json);
        field("release", t.release);
        field("namespace", t.namespace);
        field("kube-version", t.kube_version.unwrap_or(""));
        field("api-versions", &t.api_versions.join("\n"));
        field(
            "include-crds",
            if t.include_crds { "true" } else { "false" },
        );
        Some(hex(&h.finalize()))
    }

    /// The digest of every file below a chart directory, computed once per directory and run.
    fn chart_digest(&self, dir: &Path) -> Option<String> {
        if let Some(d) = self.chart_digests.lock().ok()?.get(dir) {
            return Some(d.clone());
        }
        let mut files: Vec<(String, PathBuf)> = Vec::new();
        for entry in walkdir::WalkDir::new(dir) {
            let entry = entry.ok()?;
            if entry.file_type().is_file() {
                let rel = entry
                    .path()
                    .strip_prefix(dir)
                    .ok()?
                    .to_string_lossy()
                    .replace('\\', "/");
                files.push((rel, entry.into_path()));
            } else if entry.path_is_symlink() {
                // Helm follows links; a render through one is not cached, as its target may
                // change without the chart changing.
                return None;
            }
        }
        files.sort();
        let mut h = Sha256::new();
        for (rel, path) in files {
            let content = fs::read(&path).ok()?;
            h.update(format!("{} {} {}\n", rel.len(), rel, content.len()));
            h.update(&content);
        }
        let digest = hex(&h.finalize());
        if let Ok(mut map) = self.chart_digests.lock() {
            map.insert(dir.to_path_buf(), digest.clone());
        }
        Some(digest)
    }

    fn entry_path(&self, key: &str) -> PathBuf {
        self.dir.join(&key[..2]).join(format!("{key}.entry"))
    }

    fn read(&self, key: &str) -> Option<String> {
        let path = self.entry_path(key);
        let bytes = fs::read(&path).ok()?;
        match verify(&bytes) {
            Some(output) => {
                // Refresh the use time for least-recently-used eviction.
                if let Ok(file) = fs::File::options().append(true).open(&path) {
                    let _ = file.set_modified(SystemTime::now());
                }
                Some(output)
            }
            None => {
                warn!(entry = %path.display(), "corrupt render cache entry ignored; rendering again");
                let _ = fs::remove_file(&path);
                None
            }
        }
    }

    fn write(&self, key: &str, output: &str) {
        let path = self.entry_path(key);
        if let Err(e) = self.write_entry(&path, output) {
            if !self.warned_unwritable.swap(true, Ordering::Relaxed) {
                warn!(dir = %self.dir.display(), "render cache not written ({e}); rendering goes on without it");
            }
            return;
        }
        self.wrote.store(true, Ordering::Relaxed);
    }

    fn write_entry(&self, path: &Path, output: &str) -> std::io::Result<()> {
        let parent = path.parent().unwrap_or(&self.dir);
        fs::create_dir_all(parent)?;
        let digest = hex(&Sha256::digest(output.as_bytes()));
        let tmp = parent.join(format!(
            ".tmp-{}-{:?}-{}",
            std::process::id(),
            std::thread::current().id(),
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let result = (|| {
            let mut file = fs::File::create(&tmp)?;
            writeln!(file, "{MAGIC} {digest} {}", output.len())?;
            file.write_all(output.as_bytes())?;
            // No fsync: an entry torn by a crash fails verification and is a miss, so the rename
            // alone is enough, and a render does not wait for the disk.
            fs::rename(&tmp, path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    /// Removes least recently used entries while the directory is over its bound, and temporary
    /// files that a killed process left behind (older than an hour).
    fn evict(&self) {
        let hour_ago = SystemTime::now() - std::time::Duration::from_secs(3600);
        for e in walkdir::WalkDir::new(&self.dir)
            .into_iter()
            .filter_map(Result::ok)
        {
            let stale = e.file_name().to_string_lossy().starts_with(".tmp-")
                && e.metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .is_some_and(|t| t < hour_ago);
            if stale {
                let _ = fs::remove_file(e.path());
            }
        }
        let mut entries: Vec<(SystemTime, u64, PathBuf)> = walkdir::WalkDir::new(&self.dir)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "entry")
            })
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.into_path()))
            })
            .collect();
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        if total <= self.max_bytes {
            return;
        }
        entries.sort();
        for (_, len, path) in entries {
            if total <= self.max_bytes {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                debug!(entry = %path.display(), "render cache entry evicted");
                total = total.saturating_sub(len);
            }
        }
    }
}

/// `1.2.3`, `v1.2.3`, `1.2.3-rc.1+build`: a semantic version, no range.
fn is_exact_version(v: &str) -> bool {
    let core = v.strip_prefix('v').unwrap_or(v);
    let (core, rest) = core.split_at(core.find(['-', '+']).unwrap_or(core.len()));
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-+.".contains(&b))
}

/// The output of an entry whose header matches its content.
fn verify(bytes: &[u8]) -> Option<String> {
    let newline = bytes.iter().position(|b| *b == b'\n')?;
    let header = std::str::from_utf8(&bytes[..newline]).ok()?;
    let body = &bytes[newline + 1..];
    let mut parts = header.split(' ');
    let (magic, digest, len) = (
        parts.next()?,
        parts.next()?,
        parts.next()?.parse::<usize>().ok()?,
    );
    if magic != MAGIC || len != body.len() || hex(&Sha256::digest(body)) != digest {
        return None;
    }
    String::from_utf8(body.to_vec()).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::RemoteChart;

    fn key(helm_version: &str, version: Option<&str>, kube: Option<&str>) -> Option<String> {
        let helm = Helm::unprobed(helm_version, &format!("{helm_version} 1 2"));
        let cache = Cache::new(PathBuf::from("/nonexistent"), Mode::ReadWrite, 0, &helm);
        let chart = ChartSpec::Remote(RemoteChart {
            repository: "https://charts.example.com".into(),
            chart: Some("app".into()),
            version: version.map(str::to_string),
        });
        cache.key(&Template {
            release: "r",
            namespace: "n",
            chart: &chart,
            values_json: "{}",
            kube_version: kube,
            api_versions: &[],
            include_crds: true,
        })
    }

    #[test]
    fn the_key_covers_the_helm_version_and_skips_unpinned_remote_charts() {
        let base = key("v4.3.1", Some("1.0.0"), None).unwrap();
        assert_eq!(key("v4.3.1", Some("1.0.0"), None).unwrap(), base, "stable");
        assert_ne!(key("v3.19.0", Some("1.0.0"), None).unwrap(), base);
        assert_ne!(key("v4.3.1", Some("1.0.1"), None).unwrap(), base);
        assert_ne!(key("v4.3.1", Some("1.0.0"), Some("1.31.0")).unwrap(), base);
        assert_eq!(key("v4.3.1", None, None), None);
        for range in ["^1.0.0", "1.x", ">=1.0.0", "~1.2", "1.0"] {
            assert_eq!(key("v4.3.1", Some(range), None), None, "{range} is no pin");
        }
        assert!(key("v4.3.1", Some("v1.2.3-rc.1+b5"), None).is_some());
    }

    #[test]
    fn entries_verify_only_when_whole() {
        let body = "---\nkind: ConfigMap\n";
        let entry = format!(
            "{MAGIC} {} {}\n{body}",
            hex(&Sha256::digest(body)),
            body.len()
        );
        assert_eq!(verify(entry.as_bytes()).as_deref(), Some(body));
        assert_eq!(
            verify(&entry.as_bytes()[..entry.len() - 3]),
            None,
            "truncated"
        );
        assert_eq!(
            verify(entry.replace("ConfigMap", "ConfigMaq").as_bytes()),
            None,
            "corrupt"
        );
        assert_eq!(verify(b"garbage"), None);
    }
}
