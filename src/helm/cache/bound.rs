//! The bound on the cache's size: the index of each shard's bytes, kept under the directory's
//! lock, and the eviction that sweeps shards from a rotating cursor, removing the least recently
//! used entries while the count is over the bound, and temporary files a killed process left.

use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tracing::debug;

const INDEX_MAGIC: &str = "nyl-cache-index-v1";

/// The default bound on the cache directory's size.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Entries one eviction may examine, plus [`SWEEP_PER_WRITE`] for each entry the run wrote: a run
/// can always remove more than it added, so the bound holds over time.
pub(super) const SWEEP_BASE: usize = 2048;
pub(super) const SWEEP_PER_WRITE: usize = 4;
pub(super) const SHARDS: usize = 256;
/// Temporary files older than this were left by a killed process.
const STALE: Duration = Duration::from_secs(3600);

/// What one eviction did (logged at debug level).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Sweep {
    pub(super) shards: usize,
    /// Directory entries looked at: never more than the run's budget.
    pub(super) examined: usize,
    pub(super) budget: usize,
    pub(super) removed: usize,
    pub(super) removed_bytes: u64,
}

/// Sweeps shards from the index's cursor, removing least recently used entries of the swept
/// shards while the counted size is over the bound, and temporary files that a killed
/// process left behind. Work is bounded by the number of entries examined.
pub(super) fn evict(dir: &Path, max_bytes: u64, writes: usize) -> io::Result<Sweep> {
    let mut index = Index::lock(dir)?;
    let mut sweep = Sweep {
        budget: SWEEP_BASE + SWEEP_PER_WRITE * writes,
        ..Sweep::default()
    };
    sweep.examined += remove_stale(dir, sweep.budget);
    while sweep.shards < SHARDS
        && sweep.examined < sweep.budget
        && (sweep.shards == 0 || index.counted() > max_bytes || index.unknown() > 0)
    {
        // Shards the index lost go first: until they are counted, the bound is not enforced
        // on them.
        let shard = (0..SHARDS)
            .map(|i| (index.cursor + i) % SHARDS)
            .find(|&s| index.shards[s].is_none())
            .unwrap_or(index.cursor);
        let whole = sweep_shard(dir, max_bytes, &mut index, shard, &mut sweep);
        // On past a shard seen in part, too: the next run samples another one.
        index.cursor = (shard + 1) % SHARDS;
        sweep.shards += 1;
        if !whole {
            break;
        }
    }
    index.save()?;
    Ok(sweep)
}

/// Counts one shard (within what is left of the budget) and removes its oldest entries while
/// the count is over the bound. False when the budget ran out before the shard was seen
/// whole.
fn sweep_shard(
    dir: &Path,
    max_bytes: u64,
    index: &mut Index,
    shard: usize,
    sweep: &mut Sweep,
) -> bool {
    let listing = match fs::read_dir(dir.join(format!("{shard:02x}"))) {
        Ok(listing) => listing,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            index.shards[shard] = Some(0);
            return true;
        }
        Err(_) => return true,
    };
    let mut entries: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
    let mut whole = true;
    for item in listing.filter_map(Result::ok) {
        if sweep.examined >= sweep.budget {
            whole = false;
            break;
        }
        sweep.examined += 1;
        if item.file_name().as_bytes().ends_with(b".entry") {
            let meta = item.metadata().ok().filter(fs::Metadata::is_file);
            if let Some((used, meta)) = meta.and_then(|m| Some((m.modified().ok()?, m))) {
                entries.push((used, meta.len(), item.path()));
            }
        } else {
            remove_if_stale(&item);
        }
    }
    if whole {
        index.shards[shard] = Some(entries.iter().map(|e| e.1).sum());
    }
    let mut excess = index.counted().saturating_sub(max_bytes);
    entries.sort();
    for (_, len, path) in entries {
        if excess == 0 {
            break;
        }
        if fs::remove_file(&path).is_ok() {
            debug!(entry = %path.display(), "render cache entry evicted");
            excess = excess.saturating_sub(len);
            index.add(shard, 0, len);
            sweep.removed += 1;
            sweep.removed_bytes += len;
        }
    }
    whole
}

/// The cache directory's accounting, read and changed only while its lock is held: the bytes of
/// each shard (`None` for a shard not counted since the index was lost) and where the next
/// sweep starts.
pub(super) struct Index {
    path: PathBuf,
    shards: Vec<Option<u64>>,
    cursor: usize,
    /// Held until the index is dropped: other processes wait at [`Index::lock`].
    _lock: fs::File,
}

impl Index {
    pub(super) fn lock(dir: &Path) -> io::Result<Index> {
        let lock = fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(dir.join("lock"))?;
        lock.lock()?;
        let path = dir.join("index");
        let (shards, cursor) = fs::read_to_string(&path)
            .ok()
            .and_then(|text| parse_index(&text))
            .unwrap_or_else(|| (lost_index(dir), 0));
        Ok(Index {
            path,
            shards,
            cursor,
            _lock: lock,
        })
    }

    pub(super) fn add(&mut self, shard: usize, added: u64, removed: u64) {
        if let Some(bytes) = &mut self.shards[shard] {
            *bytes = (*bytes + added).saturating_sub(removed);
        }
    }

    pub(super) fn unknown(&self) -> usize {
        self.shards.iter().filter(|s| s.is_none()).count()
    }

    /// The bytes of the counted shards: a lower bound of the directory's size while shards are
    /// not counted, so eviction never removes more than the excess.
    pub(super) fn counted(&self) -> u64 {
        self.shards.iter().flatten().sum()
    }

    /// Writes the index over itself, under the lock. Not a new file renamed over it: ext4 then
    /// writes the new file's blocks out at once (`auto_da_alloc`, for files replaced that way),
    /// about 0.17 ms here against 0.01 ms, twice in every render that stores an entry. An index
    /// torn by a crash is only accounting: one that does not parse is counted again
    /// ([`lost_index`]), and a wrong count is corrected as sweeps count its shards again.
    pub(super) fn save(&self) -> io::Result<()> {
        let values: Vec<String> = self
            .shards
            .iter()
            .map(|s| s.map_or("-".to_string(), |b| b.to_string()))
            .collect();
        let text = format!("{INDEX_MAGIC} {}\n{}\n", self.cursor, values.join(" "));
        let file = fs::File::options()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&self.path)?;
        file.write_all_at(text.as_bytes(), 0)?;
        file.set_len(text.len() as u64)
    }
}

fn parse_index(text: &str) -> Option<(Vec<Option<u64>>, usize)> {
    let (header, values) = text.split_once('\n')?;
    let cursor = header
        .strip_prefix(INDEX_MAGIC)?
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|c| *c < SHARDS)?;
    let shards = values
        .split_whitespace()
        .map(|v| match v {
            "-" => Some(None),
            _ => v.parse().ok().map(Some),
        })
        .collect::<Option<Vec<_>>>()?;
    (shards.len() == SHARDS).then_some((shards, cursor))
}

/// A fresh index for a directory without a readable one: a shard directory that does not exist is
/// empty, one that exists is not counted yet.
fn lost_index(dir: &Path) -> Vec<Option<u64>> {
    let mut shards = vec![Some(0); SHARDS];
    match fs::read_dir(dir) {
        Ok(listing) => {
            for item in listing.filter_map(Result::ok) {
                let name = item.file_name();
                let shard = std::str::from_utf8(name.as_bytes())
                    .ok()
                    .filter(|n| n.len() == 2)
                    .and_then(|n| usize::from_str_radix(n, 16).ok());
                if let Some(shard) = shard {
                    shards[shard] = None;
                }
            }
        }
        Err(_) => shards = vec![None; SHARDS],
    }
    shards
}

/// Removes stale temporary files from the top of the cache directory (where entries are
/// written); returns how many names it looked at, at most `budget`.
fn remove_stale(dir: &Path, budget: usize) -> usize {
    let Ok(listing) = fs::read_dir(dir) else {
        return 0;
    };
    let mut examined = 0;
    for item in listing.filter_map(Result::ok).take(budget) {
        examined += 1;
        remove_if_stale(&item);
    }
    examined
}

/// Removes a temporary file a killed process left (older than [`STALE`]); stats nothing else.
fn remove_if_stale(item: &fs::DirEntry) {
    let stale = item.file_name().as_bytes().starts_with(b".tmp-")
        && item
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t < SystemTime::now() - STALE);
    if stale {
        let _ = fs::remove_file(item.path());
    }
}

/// The shard of a key: its first two hex digits.
pub(super) fn shard_of(key: &str) -> usize {
    usize::from_str_radix(&key[..2], 16).unwrap_or(0)
}
