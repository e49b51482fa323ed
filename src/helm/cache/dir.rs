//! The cache directory: where it is, and whether it can be trusted (only a directory and entries
//! the user owns and nobody else can write: anything else may hold renders nyl never wrote).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use tracing::{debug, warn};

use crate::helm::create_private_dir;

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

/// The cache directory, created if missing, when it can be trusted; `None` (after one warning
/// per run) when it cannot be created or someone else could have written it.
pub fn open_dir(dir: &Path) -> Option<PathBuf> {
    let checked = create_private_dir(dir)
        .and_then(|()| fs::metadata(dir))
        .map_err(|e| format!("render cache not written ({e})"))
        .and_then(|meta| match distrust(&meta, euid()) {
            Some(why) => Err(format!(
                "render cache directory {why}, so it may hold renders nyl did not write; not used \
                 (use a directory only you can write: chown it to yourself and chmod 700 it, or \
                 set NYL_CACHE_DIR)"
            )),
            None => Ok(()),
        });
    match checked {
        Ok(()) => Some(dir.to_path_buf()),
        Err(message) => {
            warn_once(dir, &message);
            None
        }
    }
}

/// One warning per run about the cache's trust, however many directories or entries fail.
pub(super) fn warn_once(path: &Path, message: &str) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        warn!(path = %path.display(), "{message}; rendering goes on without it");
    } else {
        debug!(path = %path.display(), "{message}");
    }
}

/// The effective user id, which owns what this process creates.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions, touches no memory of ours and cannot fail.
    unsafe { libc::geteuid() }
}

/// Why a cache directory or entry must not be used, if it must not: another user's, or writable
/// by others, it may hold renders nyl never wrote.
pub(super) fn distrust(meta: &fs::Metadata, uid: u32) -> Option<&'static str> {
    if meta.uid() != uid {
        Some("is owned by another user")
    } else if meta.mode() & 0o022 != 0 {
        Some("is writable by group or others")
    } else {
        None
    }
}
