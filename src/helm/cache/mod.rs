//! The content-addressed render cache: `helm template` output stored under a key that covers
//! everything that can change it, so an unchanged release renders without running Helm.
//!
//! - The key hashes nyl's version, the helm binary (version, size, modification time: probed once
//!   per binary), the exact arguments Helm is given (each length-prefixed, as raw bytes) and the
//!   values on its stdin. A local chart's directory argument is replaced by the digest of every
//!   file below it (raw file-name bytes and each file's digest, in name order; vendored `charts/`
//!   and the contract included; the files hashed on two threads), so repository paths never
//!   enter the key: Argo CD unpacks a fresh copy of the repository for every request.
//! - A remote chart with an exact version is keyed by its arguments (repository, chart, version),
//!   and a hit needs no `helm pull`: a version tag is trusted not to move. Without one (none, or a
//!   range) what Helm resolves can change under the same inputs, so the chart is pulled every run
//!   and keyed by the pulled archive's content, as a local chart ([`crate::helm::remote`]).
//! - A key's first four hex digits are its inputs' (everything but a local chart's content:
//!   [`inputs`]), and a bit of the `seen` file for them is set as an entry is placed: a render
//!   whose bit is not set cannot be found, so Helm starts before the chart is hashed (its
//!   milliseconds then overlap Helm's run instead of preceding it).
//! - Keys are BLAKE3 (256 bits, collision-resistant, several times faster than SHA-256 on the
//!   megabytes of a large chart): a key names what an entry is the render of. An entry's digest
//!   only finds damage, and is XXH3 (128 bits; [`crate::helm::digest`] says why).
//! - An entry is the output as classified: Helm's bytes, then the index of its documents
//!   ([`Output::index`], binary), then a trailer of fixed length, `nyl-cache-v8 <key> <digest>
//!   <index length> <output length>\n` (lengths of 20 digits), verified whole against its
//!   digest on every read: a corrupt, truncated or misplaced entry is a miss and a warning,
//!   never wrong output. The digest goes by blocks of the body ([`BodyDigest`](crate::helm::digest::BodyDigest)), so a write
//!   hashes the body as Helm prints it and a hit hashes the blocks on two threads. A hit does no
//!   YAML work: it reads the body into the buffer whose front, Helm's bytes, it passes on, or,
//!   for a large output going straight to stdout, verifies it a block at a time and passes on
//!   the entry file itself ([`crate::helm::output`]).
//! - Only a directory the user owns and nobody else can write is used, and only entries the user
//!   owns and nobody else can write are served: anything else may hold renders nyl never wrote.
//!   nyl creates the directory `0700` and entries `0600`. A directory or entry that fails the
//!   check costs one warning per run; the render goes on without it.
//! - Writes go to a temporary file renamed into place, so processes sharing the directory see
//!   whole entries or none. A hit writes nothing, except that it moves the modification time
//!   of an entry last used more than [`USE_REFRESH`] ago (the use time that eviction orders by).
//! - Entries live in 256 shard directories (the key's first two hex digits). An index, changed
//!   only under the directory's lock file, keeps the bytes of each shard; a write adds to it. At
//!   the end of a run that wrote, eviction sweeps shards from a rotating cursor (at least one, more
//!   while the count is over the bound or shards are not counted), examining a bounded number of
//!   entries, and removes a swept shard's least recently used entries until the count is back
//!   under the bound: never more than the excess, even with concurrent runs, which take turns.
//! - A cache that cannot be written costs one warning; the render still succeeds.

mod bound;
mod dir;
mod entry;
mod key;
mod seen;

pub use bound::DEFAULT_MAX_BYTES;
pub(crate) use dir::euid;
pub use dir::{default_dir, open_dir, probes_dir};

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use tracing::{debug, info, warn};

use crate::helm::output::{Keep, Read as ReadOutput, Reading, Unstored};
use crate::helm::{Failure, Helm, Template};
use dir::{distrust, warn_once};
use entry::{complete, entry_path, read_entry, store};
use key::{inputs, key_of};
use nyl_core::expansion::manifest::{Output, Raw};
use nyl_core::parallel;
use nyl_core::project::objects::ChartSource;
use seen::{seen_bit, SEEN};

/// How stale an entry's use time may get before a hit moves it: eviction goes by the day, and
/// the renders of a busy day write nothing.
const USE_REFRESH: Duration = Duration::from_secs(24 * 3600);

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
    /// The helm that renders: its identity (version, size, modification time) is in every key.
    helm: Helm,
    uid: u32,
    chart_digests: Mutex<HashMap<PathBuf, String>>,
    /// The [`SEEN`] file, open for reading and writing once a lookup found it: each later
    /// release reads a byte of it instead of opening it again.
    seen: Mutex<Option<fs::File>>,
    hits: AtomicUsize,
    misses: AtomicUsize,
    warned_unwritable: AtomicBool,
    /// Entries this run wrote (then the size bound is checked at the end).
    writes: AtomicUsize,
    /// Large entries being written on threads of their own while the render goes on
    /// ([`Cache::write_later`]); waited for by [`Cache::finish`], or when the cache goes.
    stores: Mutex<Vec<std::thread::JoinHandle<io::Result<()>>>>,
    progress: crate::progress::Progress,
    /// The run's `-j`: with one job, a large release's hashing, scanning and writing stay on one
    /// thread too.
    jobs: Option<usize>,
    two_threads: OnceLock<bool>,
    /// Large outputs may stay in files (their entries, or files of their own): the run passes
    /// them on to stdout as they are.
    stored: bool,
}

impl Drop for Cache {
    /// A run that ends without [`Cache::finish`] still leaves whole entries, not temporary files.
    fn drop(&mut self) {
        self.wait_for_stores();
    }
}

impl Cache {
    /// A cache over `dir` as [`open_dir`] returned it; without one, nothing is read or written.
    pub fn new(dir: Option<PathBuf>, mode: Mode, max_bytes: u64, helm: &Helm) -> Cache {
        Cache {
            mode: if dir.is_some() { mode } else { Mode::Off },
            dir: dir.unwrap_or_default(),
            max_bytes,
            helm: helm.clone(),
            uid: euid(),
            chart_digests: Mutex::new(HashMap::new()),
            seen: Mutex::new(None),
            hits: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
            warned_unwritable: AtomicBool::new(false),
            writes: AtomicUsize::new(0),
            stores: Mutex::new(Vec::new()),
            progress: crate::progress::Progress::default(),
            jobs: None,
            two_threads: OnceLock::new(),
            stored: false,
        }
    }

    /// The cache, its large outputs kept in files (entries, or files of their own) when `stored`.
    pub fn with_stored(self, stored: bool) -> Cache {
        let mut cache = self;
        cache.stored = stored;
        cache
    }

    /// The cache, its large releases' work on two threads only when `jobs` allows two.
    pub fn with_jobs(self, jobs: Option<usize>) -> Cache {
        let mut cache = self;
        cache.jobs = jobs;
        cache
    }

    /// A reading of one release's output: a large one goes to a new entry when it will be stored
    /// (`keyed`), else to a file of its own, when the run passes outputs on as they are.
    pub fn reading(&self, keyed: bool) -> Reading {
        let keep = match (self.stored, keyed && self.mode != Mode::Off) {
            (false, _) => Keep::Memory,
            (true, true) => Keep::Entry(self.dir.clone()),
            (true, false) => Keep::Scratch,
        };
        Reading::new(keep, self.two_threads())
    }

    /// Whether a large release's work may take a second thread (the cores are asked only once
    /// a release is large).
    fn two_threads(&self) -> bool {
        *self
            .two_threads
            .get_or_init(|| crate::process::workers(self.jobs) > 1)
    }

    /// The cache, counting each release it renders or finds into `progress`.
    pub fn with_progress(self, progress: crate::progress::Progress) -> Cache {
        let mut cache = self;
        cache.progress = progress;
        cache
    }

    /// Runs `helm template` through the cache; the output comes classified.
    pub fn template(&self, helm: &Helm, t: &Template<'_>) -> Result<Output, Failure> {
        let inputs = match self.plan(t) {
            Some(Plan::Unseen(inputs, dir)) => return self.template_unseen(helm, t, &inputs, dir),
            Some(Plan::Lookup(inputs)) => Some(inputs),
            None => None,
        };
        self.render_from(helm, t, inputs, |keyed| {
            if !keyed {
                self.progress.release(false);
            }
            let mut reading = self.reading(keyed);
            helm.template(t, &mut reading)?;
            reading.finish()
        })
    }

    /// The output of `t` from the cache, else from `miss`, which is told whether its output will
    /// be stored under `t`'s key (a remote chart is rendered from a pulled copy: see
    /// [`crate::helm::remote`]). A release with a key is counted into `progress` here; one
    /// without is `miss`'s to count (a remote chart's is counted when its pulled copy is
    /// rendered).
    pub fn render<E: From<Failure>>(
        &self,
        helm: &Helm,
        t: &Template<'_>,
        miss: impl FnOnce(bool) -> Result<ReadOutput, E>,
    ) -> Result<Output, E> {
        self.render_from(helm, t, None, miss)
    }

    /// [`Cache::render`], with `t`'s [`inputs`] when they were hashed already.
    fn render_from<E: From<Failure>>(
        &self,
        helm: &Helm,
        t: &Template<'_>,
        inputs: Option<blake3::Hash>,
        miss: impl FnOnce(bool) -> Result<ReadOutput, E>,
    ) -> Result<Output, E> {
        // The first run of a helm binary asks its version alongside its first renders instead of
        // before them: the key needs the version, so those renders look nothing up (nothing can
        // be stored under a version that was never remembered) and are stored once it is known.
        let probing = self.helm.probing();
        let key = match self.mode {
            Mode::Off => None,
            _ if probing => self.key_with(t, "").map(|_| String::new()),
            _ => inputs.map_or_else(|| self.key(t), |inputs| self.key_from(t, &inputs)),
        };
        let Some(key) = key else {
            return miss(false).map(|read| read.output);
        };
        if self.mode == Mode::ReadWrite && !probing {
            if let Some(output) = self.read(&key) {
                debug!(release = t.release, key = %&key[..16], "cache hit");
                self.hits.fetch_add(1, Ordering::Relaxed);
                self.progress.release(true);
                helm.take_output(output.raw.len())?;
                return Ok(output);
            }
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        self.progress.release(false);
        let ReadOutput { output, entry } = miss(true)?;
        let key = if probing { self.key(t) } else { Some(key) };
        if let Some(key) = key {
            self.keep(t, key, &output, entry);
        }
        Ok(output)
    }

    /// How a render of a local chart goes: at once when no lookup can find it (the run does not
    /// look, `--refresh`, or no entry was ever stored under its inputs: [`Cache::was_seen`],
    /// whatever the chart's content), else looked up. `None` for a render [`Cache::render`]
    /// decides alone (a remote chart, no cache, a helm whose version is being asked).
    fn plan<'t>(&self, t: &Template<'t>) -> Option<Plan<'t>> {
        let ChartSource::Local(dir) = t.chart else {
            return None;
        };
        if self.helm.probing() || self.mode == Mode::Off {
            return None;
        }
        let inputs = inputs(t, &self.helm.identity().ok()?)?;
        Some(
            if self.mode == Mode::Refresh || !self.was_seen(&inputs.to_hex()) {
                Plan::Unseen(inputs, dir.as_path())
            } else {
                Plan::Lookup(inputs)
            },
        )
    }

    /// Whether an entry of `key`'s inputs may have been stored: true when it cannot be told, and
    /// when the [`SEEN`] file cannot be written (its bits would never be set, and no entry found
    /// again). No file yet: nothing was stored.
    fn was_seen(&self, key: &str) -> bool {
        let Some((at, bit)) = seen_bit(key) else {
            return true;
        };
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.is_none() {
            let opened = fs::File::options()
                .read(true)
                .write(true)
                .open(self.dir.join(SEEN));
            match opened {
                Ok(file) => *seen = Some(file),
                Err(e) => return e.kind() != io::ErrorKind::NotFound,
            }
        }
        let mut byte = [0];
        match seen.as_ref().map(|file| file.read_at(&mut byte, at)) {
            Some(Ok(0)) => false,
            Some(Ok(_)) => byte[0] & bit != 0,
            _ => true,
        }
    }

    /// Renders a release that no lookup can find ([`Cache::plan`]) and stores it: Helm starts
    /// at once, and the chart is hashed for the key once Helm has started, while it renders (a
    /// chart of megabytes takes milliseconds to hash, which a cold render waited for; hashed
    /// before Helm has started, it takes the core Helm's start needs).
    fn template_unseen(
        &self,
        helm: &Helm,
        t: &Template<'_>,
        inputs: &blake3::Hash,
        dir: &Path,
    ) -> Result<Output, Failure> {
        self.misses.fetch_add(1, Ordering::Relaxed);
        self.progress.release(false);
        let (started, start) = mpsc::channel();
        let rendered = || {
            let mut reading = self.reading(true);
            reading.when_started(move || {
                let _ = started.send(());
            });
            helm.template(t, &mut reading)?;
            reading.finish()
        };
        // No digest for a Helm that never started: the render has failed. With one thread of
        // work (`-j 1`), the chart is hashed once Helm has ended.
        let digest = move || start.recv().ok().and_then(|()| self.chart_digest(dir));
        let (read, content) = parallel::join(self.two_threads(), rendered, digest);
        let ReadOutput { output, entry } = read?;
        if let Some(content) = content {
            self.keep(t, key_of(inputs, &content), &output, entry);
        }
        Ok(output)
    }

    /// Stores a missed render's output under `key`: from the file a large one is kept in
    /// (`entry`), or from memory.
    fn keep(&self, t: &Template<'_>, key: String, output: &Output, entry: Option<Unstored>) {
        debug!(release = t.release, key = %&key[..16], "cache miss");
        if let Some(entry) = entry {
            // The entry (the output copied from its file, the index, the trailer, the rename
            // under the lock) is written beside the expansion: such an output is large.
            let index = output.index();
            self.later(move || complete(entry, &key, &index));
        } else if output.raw.len() >= parallel::WORTH_A_THREAD {
            self.write_later(key, output);
        } else {
            self.write(&key, output);
        }
    }

    /// Whether the run stored an entry or is storing one: what [`Cache::finish`] waits for and
    /// sweeps after.
    pub fn stored_any(&self) -> bool {
        self.writes.load(Ordering::Relaxed) > 0
            || !self
                .stores
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_empty()
    }

    /// Ends the run: bounds the directory (once, not per write) and logs the one-line summary.
    pub fn finish(&self) {
        self.wait_for_stores();
        if self.writes.load(Ordering::Relaxed) > 0 {
            match self.evict() {
                Ok(s) => debug!(
                    shards = s.shards,
                    examined = s.examined,
                    budget = s.budget,
                    removed = s.removed,
                    removed_bytes = s.removed_bytes,
                    "render cache swept"
                ),
                Err(e) => debug!("render cache not swept: {e}"),
            }
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
        self.key_with(t, &self.helm.identity().ok()?)
    }

    /// [`Cache::key`] with the helm's identity given.
    fn key_with(&self, t: &Template<'_>, helm_identity: &str) -> Option<String> {
        self.key_from(t, &inputs(t, helm_identity)?)
    }

    /// The key of a render whose [`inputs`] are hashed: they and the chart's content.
    fn key_from(&self, t: &Template<'_>, inputs: &blake3::Hash) -> Option<String> {
        let content = match t.chart {
            ChartSource::Local(dir) => self.chart_digest(dir)?,
            ChartSource::Remote(_) => String::new(),
        };
        Some(key_of(inputs, &content))
    }

    /// The digest of every file below a chart directory ([`key::chart_content`]), computed once
    /// per directory and run.
    fn chart_digest(&self, dir: &Path) -> Option<String> {
        if let Some(d) = self.chart_digests.lock().ok()?.get(dir) {
            return Some(d.clone());
        }
        let digest = key::chart_content(dir, || self.two_threads())?;
        if let Ok(mut map) = self.chart_digests.lock() {
            map.insert(dir.to_path_buf(), digest.clone());
        }
        Some(digest)
    }

    /// Bounds the directory ([`bound::evict`]), given the entries this run wrote.
    fn evict(&self) -> io::Result<bound::Sweep> {
        bound::evict(
            &self.dir,
            self.max_bytes,
            self.writes.load(Ordering::Relaxed),
        )
    }

    fn entry_path(&self, key: &str) -> PathBuf {
        entry_path(&self.dir, key)
    }

    fn read(&self, key: &str) -> Option<Output> {
        let path = self.entry_path(key);
        let file = fs::File::open(&path).ok()?;
        // Checked on the open file, so what is read is what was checked.
        let meta = file.metadata().ok()?;
        if let Some(why) = distrust(&meta, self.uid) {
            warn_once(&path, &format!("render cache entry {why}; not used"));
            return None;
        }
        // Exactly the length checked (entries are never written after their rename).
        let len = usize::try_from(meta.len()).ok()?;
        let large = len >= parallel::WORTH_A_THREAD;
        match read_entry(&file, len, key, large && self.two_threads(), self.stored) {
            Some(output) => {
                // The use time for least-recently-used eviction, when it is stale (the owner may
                // set it on a file opened for reading).
                let now = SystemTime::now();
                let stale = meta.modified().map_or(true, |t| t + USE_REFRESH < now);
                if stale {
                    let _ = file.set_modified(now);
                }
                Some(output)
            }
            None => {
                // Left in place: the write that follows replaces it and keeps the index right.
                warn!(entry = %path.display(), "corrupt render cache entry ignored; rendering again");
                None
            }
        }
    }

    fn write(&self, key: &str, output: &Output) {
        if let Raw::Text(raw) = &output.raw {
            let stored = store(&self.dir, key, raw.as_bytes(), &output.index());
            self.count_store(stored);
        }
    }

    /// Writes an entry on a thread of its own: writing megabytes (hashing them, and the kernel
    /// taking them into its page cache) is then done while the render goes on.
    fn write_later(&self, key: String, output: &Output) {
        let Raw::Text(raw) = &output.raw else {
            return;
        };
        let (dir, raw, index) = (self.dir.clone(), raw.clone(), output.index());
        self.later(move || store(&dir, &key, raw.as_bytes(), &index));
    }

    /// Stores an entry on a thread of its own, waited for by [`Cache::finish`], when the run
    /// may take a second core; on one, now. A thread that cannot start leaves the entry unstored
    /// (counted as a failed write), not the render.
    fn later(&self, store: impl FnOnce() -> io::Result<()> + Send + 'static) {
        if !self.two_threads() {
            return self.count_store(store());
        }
        match std::thread::Builder::new().spawn(store) {
            Ok(thread) => self
                .stores
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(thread),
            Err(e) => self.count_store(Err(e)),
        }
    }

    /// Waits for the entries being stored ([`Cache::later`]) and counts them.
    fn wait_for_stores(&self) {
        let stores =
            std::mem::take(&mut *self.stores.lock().unwrap_or_else(PoisonError::into_inner));
        for thread in stores {
            let stored = thread
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the thread writing it failed")));
            self.count_store(stored);
        }
    }

    /// Counts a written entry; warns once per run about one that could not be written.
    fn count_store(&self, stored: io::Result<()>) {
        if let Err(e) = stored {
            if !self.warned_unwritable.swap(true, Ordering::Relaxed) {
                warn!(dir = %self.dir.display(), "render cache not written ({e}); rendering goes on without it");
            }
            return;
        }
        self.writes.fetch_add(1, Ordering::Relaxed);
    }
}

/// How a render of a local chart goes ([`Cache::plan`]), with its [`inputs`], hashed once.
enum Plan<'t> {
    /// No lookup can find it: Helm starts at once, the chart in this directory hashed beside it.
    Unseen(blake3::Hash, &'t Path),
    /// Looked up under the key of these inputs and the chart's content.
    Lookup(blake3::Hash),
}

#[cfg(test)]
mod tests {
    use super::bound::*;
    use super::entry::*;
    use super::seen::*;
    use super::*;
    use crate::helm::create_private_dir;
    use crate::helm::output::STORE_FROM;
    use nyl_core::project::objects::RemoteChart;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn helm(version: &str) -> Helm {
        Helm::unprobed(version, "1 2")
    }

    /// A fresh directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nyl-cache-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        create_private_dir(&dir).unwrap();
        dir
    }

    /// An entry's output is copied from its file by the kernel, or through a buffer where the
    /// kernel cannot (`sendfile` into a file opened to append fails with `EINVAL`): the same
    /// bytes, from the start of the file whatever its position.
    #[test]
    fn an_output_is_copied_from_its_file_whole_either_way() {
        let dir = scratch("copy");
        let bytes: Vec<u8> = (0..(600 << 10) + 7)
            .map(|i: usize| u8::try_from(i % 253).unwrap())
            .collect();
        let from = dir.join("from");
        fs::write(&from, &bytes).unwrap();
        let from = fs::File::open(&from).unwrap();
        for append in [false, true] {
            let to = dir.join(format!("to-{append}"));
            let mut file = fs::File::options()
                .create_new(true)
                .write(true)
                .append(append)
                .open(&to)
                .unwrap();
            copy_start(&from, &mut file, bytes.len() - 7).unwrap();
            assert!(
                fs::read(&to).unwrap() == bytes[..bytes.len() - 7],
                "append: {append}"
            );
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    fn cache(dir: &Path, max_bytes: u64) -> Cache {
        Cache::new(
            Some(dir.to_path_buf()),
            Mode::ReadWrite,
            max_bytes,
            &helm("v4.3.1"),
        )
    }

    fn template<'a>(chart: &'a ChartSource<PathBuf>, apis: &'a [String]) -> Template<'a> {
        Template {
            release: "r",
            namespace: "n",
            chart,
            values_json: "{}",
            kube_version: None,
            api_versions: apis,
            include_crds: true,
            go_threads: None,
        }
    }

    fn remote(version: Option<&str>) -> ChartSource<PathBuf> {
        ChartSource::Remote(RemoteChart {
            repository: "https://charts.example.com".into(),
            chart: Some("app".into()),
            version: version.map(str::to_string),
        })
    }

    fn key(helm_version: &str, version: Option<&str>, kube: Option<&str>) -> Option<String> {
        let c = Cache::new(None, Mode::ReadWrite, 0, &helm(helm_version));
        let chart = remote(version);
        c.key(&Template {
            kube_version: kube,
            ..template(&chart, &[])
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
    fn api_version_lists_that_join_alike_have_different_keys() {
        let c = Cache::new(None, Mode::ReadWrite, 0, &helm("v4.3.1"));
        let chart = remote(Some("1.0.0"));
        let keys: Vec<String> = [
            vec!["x/v1\ny/v1".to_string()],
            vec!["x/v1".to_string(), "y/v1".to_string()],
            vec!["x/v1y/v1".to_string()],
        ]
        .iter()
        .map(|apis| c.key(&template(&chart, apis)).unwrap())
        .collect();
        assert_ne!(keys[0], keys[1]);
        assert_ne!(keys[0], keys[2]);
        assert_ne!(keys[1], keys[2]);
    }

    #[test]
    fn chart_trees_differing_only_in_a_non_utf8_file_name_have_different_keys() {
        let top = scratch("non-utf8");
        let c = cache(&top, u64::MAX);
        let mut keys = Vec::new();
        for (i, byte) in [0xfeu8, 0xffu8].into_iter().enumerate() {
            let dir = top.join(format!("chart{i}"));
            fs::create_dir_all(dir.join("templates")).unwrap();
            fs::write(dir.join("Chart.yaml"), "name: c\n").unwrap();
            // Both names read as `cm-\u{fffd}.yaml` when converted lossily.
            let name = [b'c', b'm', b'-', byte, b'.', b'y', b'a', b'm', b'l'];
            let path = dir.join("templates").join(OsStr::from_bytes(&name));
            fs::write(path, "kind: ConfigMap\n").unwrap();
            keys.push(c.key(&template(&ChartSource::Local(dir), &[])).unwrap());
        }
        assert_ne!(keys[0], keys[1]);
        let _ = fs::remove_dir_all(&top);
    }

    #[test]
    fn a_chart_is_keyed_by_its_files_content_wherever_it_is() {
        let top = scratch("chart-content");
        let c = cache(&top, u64::MAX);
        let key = |name: &str, files: &[(&str, &str)]| {
            let dir = top.join(name);
            for (file, content) in files {
                fs::create_dir_all(dir.join(file).parent().unwrap()).unwrap();
                fs::write(dir.join(file), content).unwrap();
            }
            c.key(&template(&ChartSource::Local(dir), &[])).unwrap()
        };
        let files = [
            ("Chart.yaml", "name: c\n"),
            ("crds/a.yaml", "kind: A\n"),
            ("crds/b.yaml", "kind: B\n"),
            ("templates/x.yaml", "kind: X\n"),
        ];
        let base = key("one", &files);
        assert_eq!(
            key("two", &files),
            base,
            "another directory, the same content"
        );
        let mut changed = files;
        changed[2].1 = "kind: C\n";
        assert_ne!(key("three", &changed), base, "one file changed");
        let mut swapped = files;
        (swapped[1].1, swapped[2].1) = (files[2].1, files[1].1);
        assert_ne!(
            key("four", &swapped),
            base,
            "contents swapped between files"
        );
        let mut more = files.to_vec();
        more.push(("templates/y.yaml", ""));
        assert_ne!(key("five", &more), base, "an empty file added");
        // Another content under the same inputs: the same first digits, the inputs' own.
        let other = key("three", &changed);
        let inputs = inputs(
            &template(&ChartSource::Local(top.join("one")), &[]),
            "v4.3.1 1 2",
        );
        let inputs = inputs.unwrap().to_hex();
        assert_eq!(base[..SEEN_DIGITS], inputs[..SEEN_DIGITS]);
        assert_eq!(other[..SEEN_DIGITS], inputs[..SEEN_DIGITS]);
        assert_ne!(base[SEEN_DIGITS..], other[SEEN_DIGITS..]);
        let _ = fs::remove_dir_all(&top);
    }

    #[test]
    fn the_seen_file_tells_unseen_inputs_and_errs_only_toward_a_lookup() {
        let dir = scratch("seen");
        // Each asked by a run of its own: a run keeps the file open once it found it.
        let was_seen = |dir: &Path, key: &str| cache(dir, u64::MAX).was_seen(key);
        let (a, b) = ("abcd".repeat(16), "abce".repeat(16));
        assert!(!was_seen(&dir, &a), "no file: nothing was stored");
        mark_seen(&dir, &a).unwrap();
        assert!(was_seen(&dir, &a));
        assert!(!was_seen(&dir, &b), "the next bit of the same byte");
        mark_seen(&dir, &b).unwrap();
        assert!(was_seen(&dir, &a) && was_seen(&dir, &b), "both kept");
        let low = "0000".repeat(16);
        assert!(!was_seen(&dir, &low), "a bit of a byte already in the file");
        let path = dir.join(SEEN);
        let len = fs::metadata(&path).unwrap().len();
        assert_eq!(len, 0xabce / 8 + 1, "as long as its highest byte set");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // Cut short (torn): what is past its end was not seen; mark_seen extends it again.
        fs::write(&path, b"").unwrap();
        assert!(!was_seen(&dir, &a));
        mark_seen(&dir, &a).unwrap();
        assert!(was_seen(&dir, &a) && !was_seen(&dir, &b));
        // One that cannot be written would never have a bit set: the lookup is made.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o400)).unwrap();
        if fs::File::options().write(true).open(&path).is_err() {
            assert!(was_seen(&dir, &b), "read-only");
        }
        // Not a file that can be read: it cannot be told, so the lookup is made.
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        assert!(was_seen(&dir, &a) && was_seen(&dir, &b));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn entries_verify_only_when_whole_and_for_their_own_key() {
        let dir = scratch("verify");
        let c = cache(&dir, u64::MAX);
        let key = "ab".repeat(32);
        // Large enough that both halves are read and hashed on threads of their own; a
        // document with a name that is not ASCII, so the index holds UTF-8 too.
        let small = "---\nkind: ConfigMap\nmetadata:\n  name: caf\u{e9}\n".to_string();
        let large = format!(
            "{small}{}",
            "---\nkind: Secret\n".repeat(parallel::WORTH_A_THREAD / 10)
        );
        for raw in [small, large] {
            c.write(&key, &Output::classify(raw.clone(), true));
            let path = c.entry_path(&key);
            let entry = fs::read(&path).unwrap();
            let read = |bytes: &[u8], key: &str| {
                fs::write(&path, bytes).unwrap();
                c.read(key).map(text)
            };
            assert_eq!(read(&entry, &key).as_deref(), Some(raw.as_str()));
            // Moved: the same file under another key's name.
            let other = "cd".repeat(32);
            fs::create_dir_all(c.entry_path(&other).parent().unwrap()).unwrap();
            fs::copy(&path, c.entry_path(&other)).unwrap();
            assert_eq!(c.read(&other).map(text), None, "moved");
            let n = entry.len();
            assert_eq!(read(&entry[..n - 3], &key), None, "truncated");
            assert_eq!(read(&entry[..TRAILER], &key), None, "no body");
            assert_eq!(read(&entry[n - TRAILER..], &key), None, "the trailer alone");
            assert_eq!(read(&[&entry[..], b"x"].concat(), &key), None, "extended");
            // One byte changed in either half of the output, in the index, in the trailer.
            let body = n - TRAILER;
            for at in [5, raw.len() - 2, raw.len() + 1, body + MAGIC.len() + 70] {
                let mut corrupt = entry.clone();
                corrupt[at] ^= 1;
                assert_eq!(read(&corrupt, &key), None, "corrupt at {at}");
            }
            // An entry of the earlier format (its magic) is a miss, even with its digest right.
            let old = String::from_utf8(entry[body..].to_vec()).unwrap().replacen(
                MAGIC,
                "nyl-cache-v5",
                1,
            );
            assert_eq!(
                read(&[&entry[..body], old.as_bytes()].concat(), &key),
                None,
                "v5"
            );
            assert_eq!(read(b"garbage", &key), None);
            assert_eq!(
                read(&entry, &key).as_deref(),
                Some(raw.as_str()),
                "the control"
            );
        }
        let _ = fs::remove_dir_all(&dir);
    }

    /// The output's text, for an output held in memory.
    fn text(output: Output) -> String {
        match output.raw {
            Raw::Text(raw) => raw.to_string(),
            Raw::Stored(stored) => panic!("stored: {stored:?}"),
        }
    }

    #[test]
    fn a_large_entry_passed_on_as_it_is_stays_in_its_file_and_is_verified_first() {
        let dir = scratch("stored");
        let c = cache(&dir, u64::MAX).with_stored(true);
        let key = "ab".repeat(32);
        // Over STORE_FROM, with a document only the full reader can tell.
        let raw = format!(
            "{}---\nkind: [unsure\n  ]\n",
            "---\nkind: Secret\n".repeat(STORE_FROM / 10)
        );
        c.write(&key, &Output::classify(raw.clone(), true));
        let output = c.read(&key).unwrap();
        let Raw::Stored(stored) = &output.raw else {
            panic!("held in memory")
        };
        let file = stored.bytes.downcast_ref::<fs::File>().unwrap();
        let mut held = vec![0; stored.len];
        file.read_exact_at(&mut held, 0).unwrap();
        assert_eq!(held, raw.as_bytes());
        let unsure = output.docs.last().unwrap();
        assert_eq!(output.source(unsure), Some("---\nkind: [unsure\n  ]\n"));
        assert_eq!(
            output.source(&output.docs[0]),
            None,
            "only what is read is held"
        );
        // A changed byte anywhere in its output is a miss, as for an entry read whole.
        let path = c.entry_path(&key);
        let mut corrupt = fs::read(&path).unwrap();
        corrupt[raw.len() - 3] ^= 1;
        fs::write(&path, &corrupt).unwrap();
        assert!(c.read(&key).is_none());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_entry_written_on_a_thread_of_its_own_is_whole_and_counted_when_the_run_ends() {
        let dir = scratch("later");
        let c = cache(&dir, u64::MAX);
        let key = "ef".repeat(32);
        let raw = "---\nkind: Secret\n".repeat(parallel::WORTH_A_THREAD / 10);
        c.write_later(key.clone(), &Output::classify(raw.clone(), true));
        c.finish();
        assert_eq!(c.writes.load(Ordering::Relaxed), 1, "counted for eviction");
        assert_eq!(c.read(&key).map(text), Some(raw));
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with(".tmp-"))
            .collect();
        assert_eq!(names, Vec::<String>::new(), "no temporary file left");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_hit_moves_only_a_stale_use_time() {
        let dir = scratch("use-time");
        let c = cache(&dir, u64::MAX);
        let key = "ab".repeat(32);
        c.write(
            &key,
            &Output::classify("kind: ConfigMap\n".to_string(), true),
        );
        let path = c.entry_path(&key);
        let set = |t: SystemTime| fs::File::open(&path).unwrap().set_modified(t).unwrap();
        let used = || fs::metadata(&path).unwrap().modified().unwrap();
        let recent = SystemTime::now() - Duration::from_secs(3600);
        set(recent);
        assert!(c.read(&key).is_some());
        assert_eq!(used(), recent, "a hit within the day writes nothing");
        set(SystemTime::now() - USE_REFRESH - Duration::from_secs(60));
        assert!(c.read(&key).is_some());
        assert!(used() > recent, "a stale use time is moved");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_what_the_user_alone_can_write_is_trusted() {
        let dir = scratch("trust");
        let file = dir.join("f");
        fs::write(&file, "x").unwrap();
        let me = euid();
        let set = |mode: u32| fs::set_permissions(&file, fs::Permissions::from_mode(mode)).unwrap();
        set(0o600);
        assert_eq!(distrust(&fs::metadata(&file).unwrap(), me), None);
        set(0o644);
        assert_eq!(distrust(&fs::metadata(&file).unwrap(), me), None);
        // Whoever runs the test, a uid other than the owner's is another user.
        assert_eq!(
            distrust(&fs::metadata(&file).unwrap(), me.wrapping_add(1)),
            Some("is owned by another user")
        );
        for mode in [0o620, 0o602, 0o666] {
            set(mode);
            assert_eq!(
                distrust(&fs::metadata(&file).unwrap(), me),
                Some("is writable by group or others"),
                "{mode:o}"
            );
        }
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_entry_others_can_write_is_not_served() {
        let dir = scratch("planted");
        let c = cache(&dir, u64::MAX);
        let key = "ab".repeat(32);
        let output = Output::classify("kind: ConfigMap\n".to_string(), true);
        c.write(&key, &output);
        let path = c.entry_path(&key);
        assert_eq!(
            fs::metadata(&path).unwrap().mode() & 0o777,
            0o600,
            "entries are private"
        );
        let raw = c.read(&key).map(text);
        assert_eq!(raw.as_deref(), Some("kind: ConfigMap\n"));
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        assert!(c.read(&key).is_none());
        let _ = fs::remove_dir_all(&dir);
    }

    /// Writes `n` entries of `len` bytes each with distinct, increasing use times.
    fn fill(c: &Cache, n: usize, len: usize) -> Vec<String> {
        let keys: Vec<String> = (0..n)
            .map(|i| blake3::hash(&i.to_le_bytes()).to_hex().to_string())
            .collect();
        for (i, key) in keys.iter().enumerate() {
            c.write(key, &Output::classify("x".repeat(len), true));
            let file = fs::File::open(c.entry_path(key)).unwrap();
            file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + i as u64))
                .unwrap();
        }
        keys
    }

    fn entries(dir: &Path) -> Vec<u64> {
        walkdir::WalkDir::new(dir)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "entry"))
            .map(|e| e.metadata().unwrap().len())
            .collect()
    }

    #[test]
    fn the_index_is_written_over_itself_and_one_torn_is_counted_again() {
        let dir = scratch("index-in-place");
        let c = cache(&dir, u64::MAX);
        fill(&c, 3, 1000);
        let index = dir.join("index");
        let inode = fs::metadata(&index).unwrap().ino();
        fill(&c, 3, 2000);
        assert_eq!(fs::metadata(&index).unwrap().ino(), inode);
        let counted = Index::lock(&dir).unwrap().counted();
        assert_eq!(counted, entries(&dir).iter().sum::<u64>());
        // A save cut short by a crash leaves the end of a longer one behind: not an index, so
        // every shard is counted again.
        let mut torn = fs::read_to_string(&index).unwrap();
        torn.push_str(" 12345");
        fs::write(&index, torn).unwrap();
        let shards = fs::read_dir(&dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().is_dir())
            .count();
        assert_eq!(Index::lock(&dir).unwrap().unknown(), shards);
        let c = cache(&dir, u64::MAX);
        c.writes.store(1, Ordering::Relaxed);
        for _ in 0..shards {
            c.evict().unwrap();
        }
        let recounted = Index::lock(&dir).unwrap();
        assert_eq!((recounted.unknown(), recounted.counted()), (0, counted));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn concurrent_evictions_remove_no_more_than_the_excess() {
        let dir = scratch("concurrent-evict");
        fill(&cache(&dir, u64::MAX), 60, 1000);
        let size: u64 = entries(&dir).iter().sum();
        let one = size / 60;
        // Ten entries too many: each process sees the same excess, but they take turns.
        let max = size - 10 * one;
        let sweeps: Vec<Sweep> = std::thread::scope(|s| {
            let runs: Vec<_> = (0..2)
                .map(|_| s.spawn(|| cache(&dir, max).evict().unwrap()))
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let removed: usize = sweeps.iter().map(|s| s.removed).sum();
        assert_eq!(removed, 10, "{sweeps:?}");
        assert_eq!(entries(&dir).iter().sum::<u64>(), max);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn eviction_examines_a_bounded_number_of_entries_and_still_converges() {
        let dir = scratch("bounded-evict");
        // A cache written without an index (as by an earlier nyl): 5000 entries of 100 bytes.
        for i in 0..5000u32 {
            let key = blake3::hash(&i.to_le_bytes()).to_hex().to_string();
            let shard = dir.join(&key[..2]);
            create_private_dir(&shard).unwrap();
            fs::write(shard.join(format!("{key}.entry")), [b'x'; 100]).unwrap();
        }
        let c = cache(&dir, 125_000);
        c.writes.store(1, Ordering::Relaxed);
        let mut runs = 0;
        loop {
            let sweep = c.evict().unwrap();
            runs += 1;
            assert!(
                sweep.examined <= sweep.budget && sweep.budget == SWEEP_BASE + SWEEP_PER_WRITE,
                "{sweep:?}"
            );
            if entries(&dir).iter().sum::<u64>() <= 125_000 {
                break;
            }
            assert!(runs < 20, "the bound is reached over runs");
        }
        // Counting first, removing only what the counted shards exceed: never more than needed.
        let total: u64 = entries(&dir).iter().sum();
        assert!(total > 125_000 - 100, "not over-evicted: {total}");
        let _ = fs::remove_dir_all(&dir);
    }
}
