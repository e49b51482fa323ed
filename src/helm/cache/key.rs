//! A render's key: BLAKE3 of nyl's version, the helm, Helm's arguments and the values (the
//! inputs) and of a local chart's content, the first hex digits the inputs' own ([`super::seen`]).

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::entry::MAGIC;
use super::seen::SEEN_DIGITS;
use crate::helm::{Helm, Template};
use nyl_core::parallel;
use nyl_core::project::objects::ChartSource;

/// Everything a render's key covers but a local chart's content: nyl's version, the helm, Helm's
/// arguments (a local chart's directory left out) and the values. `None` for a remote chart that
/// is not pinned to an exact version (see the module's documentation).
pub(super) fn inputs(t: &Template<'_>, helm_identity: &str) -> Option<blake3::Hash> {
    if let ChartSource::Remote(remote) = t.chart {
        // Only an exact version pins a chart: a range (`^1.2`, `1.x`) can resolve anew.
        remote.version.as_deref().filter(|v| is_exact_version(v))?;
    }
    // A local chart's directory stands for its content, hashed apart. A remote chart's
    // arguments never read alike: they hold `--repo=` or an `oci://` reference.
    let args = Helm::template_args_with(t, |_| "chart-content".into());
    let mut h = blake3::Hasher::new();
    put(&mut h, MAGIC.as_bytes());
    put(&mut h, env!("CARGO_PKG_VERSION").as_bytes());
    put(&mut h, helm_identity.as_bytes());
    put(&mut h, &(args.len() as u64).to_le_bytes());
    for arg in &args {
        put(&mut h, arg.as_bytes());
    }
    put(&mut h, t.values_json.as_bytes());
    Some(h.finalize())
}

/// A key: the hash of the inputs and the chart's content, its first [`SEEN_DIGITS`] hex digits
/// the inputs' own, so that whether any entry of the same inputs was stored can be told before
/// the chart is hashed ([`super::Cache::was_seen`]). The rest keeps 240 bits of the hash of both.
pub(super) fn key_of(inputs: &blake3::Hash, content: &str) -> String {
    let mut h = blake3::Hasher::new();
    put(&mut h, inputs.as_bytes());
    put(&mut h, content.as_bytes());
    let both = h.finalize().to_hex();
    format!(
        "{}{}",
        &inputs.to_hex()[..SEEN_DIGITS],
        &both[SEEN_DIGITS..]
    )
}

/// The digest of every file below a chart directory: each file's name (raw bytes) and digest, in
/// name order, the files hashed on two threads when `two_threads` allows and they are megabytes.
/// `None` when the directory cannot be read or holds a link.
pub(super) fn chart_content(dir: &Path, two_threads: impl Fn() -> bool) -> Option<String> {
    let mut files: Vec<(Vec<u8>, PathBuf)> = Vec::new();
    let mut bytes = 0;
    for entry in walkdir::WalkDir::new(dir) {
        let entry = entry.ok()?;
        if entry.file_type().is_file() {
            bytes += entry.metadata().map_or(0, |m| m.len());
            // Raw bytes: two names that differ only where they are not UTF-8 stay apart.
            let rel = entry.path().strip_prefix(dir).ok()?.as_os_str().as_bytes();
            files.push((rel.to_vec(), entry.into_path()));
        } else if entry.path_is_symlink() {
            // Helm follows links; a render through one is not cached, as its target may
            // change without the chart changing.
            return None;
        }
    }
    files.sort();
    // Each file's digest, on two threads for a chart of megabytes (CRDs), joined in name order.
    let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    let workers = parallel::workers_for(bytes, parallel::WORTH_A_THREAD, two_threads);
    let digests = parallel::map(&files, workers, |(): &mut (), (_, path)| {
        // A piece at a time (BLAKE3's reader, 64 KiB): a chart's CRD files are megabytes,
        // and nyl's memory is not.
        let file = fs::File::open(path).ok()?;
        Some(blake3::Hasher::new().update_reader(file).ok()?.finalize())
    })
    .into_iter()
    .collect::<Option<Vec<_>>>()?;
    let mut h = blake3::Hasher::new();
    for ((rel, _), digest) in files.iter().zip(digests) {
        put(&mut h, rel);
        h.update(digest.as_bytes());
    }
    Some(h.finalize().to_hex().to_string())
}

/// Hashes `bytes` after their length, so no two different sequences hash alike.
fn put(h: &mut blake3::Hasher, bytes: &[u8]) {
    h.update(&(bytes.len() as u64).to_le_bytes());
    h.update(bytes);
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
