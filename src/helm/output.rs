//! A release's output as Helm prints it. When the run passes its output on to stdout as it is
//! (`render`, `argocd generate`), it goes into a file of nyl's own in memory (a memfd), moved
//! there by the kernel from Helm's pipe (`splice`) as Helm prints, whether or not it becomes a
//! cache entry: the entry's file on disk is written from it once the output is classified,
//! beside the expansion. Draining Helm's pipe into a file on ext4 held Helm's one large `write`
//! 5 ms longer than into memory (docs/performance.md); and nyl, not Helm, writes every file, as
//! Helm exits 0 with its output cut when a write to its stdout fails. From [`STORE_FROM`] bytes
//! on, a thread of its own follows the file a part at a time (mapped, not copied out), split at
//! the cuts [`yaml::cut`] allows, and classifies and hashes each part. It follows only as far as
//! the file was when Helm's pipe was last found empty: while Helm's single large `write` waits
//! on the pipe, the drain has the core Helm does not use. So that write ends as soon as the pipe
//! is drained, the classifying overlaps Helm's exit (some milliseconds for a Go process of that
//! size) instead of holding Helm back, and nyl holds about a megabyte of the output at a time
//! instead of all of it; a smaller output is read back whole once Helm has ended. Other runs
//! read the pipe into memory. All ways give the same documents.

use std::fs::{self, File};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::SystemTime;

use tracing::debug;

use super::digest::BodyDigest;
use super::failure::Failure;
use crate::process::Sink;
use nyl_core::data::yaml;
use nyl_core::expansion::manifest::{Doc, Output, Stored};
use nyl_core::parallel;

/// The output size from which a release's output in a file is classified as it grows (and its
/// cache entry written from that file), and the size of the parts it is classified in.
pub const STORE_FROM: usize = 1 << 20;

/// A part this large is scanned on two threads when the run allows.
const PART_ON_TWO_THREADS: usize = 256 << 10;

/// Where a large output goes.
#[derive(Debug)]
pub enum Keep {
    /// In memory, whatever its size: the run reads every document (`-o json`, `diff`,
    /// `render-tree`, `validate`).
    Memory,
    /// A file of its own, gone when the output is (`--no-cache`, or a render not stored).
    Scratch,
    /// A new cache entry in this directory: a file of its own, hashed as it is read, from which
    /// the entry is written once the output is classified (whatever its size).
    Entry(PathBuf),
}

/// An output being read.
pub struct Reading {
    two_threads: bool,
    /// All of an output read into memory (one kept there, or whose file could not be made).
    pending: Vec<u8>,
    /// The file the output is moved into.
    spill: Option<Spill>,
    /// The thread that classifies a large output from its file as it is written.
    classifier: Option<Classifier>,
    /// Called once Helm has started.
    started: Option<Box<dyn FnOnce() + Send>>,
}

/// The file an output is moved into, and what it holds so far.
struct Spill {
    file: Arc<File>,
    /// The cache directory its entry goes into, when it is to be stored (the output is then
    /// hashed as it is classified); a file of its own has none.
    store_in: Option<PathBuf>,
    len: usize,
}

impl Spill {
    /// A new file for an output kept as `keep` says, the same for a cache entry's and one of
    /// its own.
    fn create(keep: &Keep) -> io::Result<Spill> {
        let store_in = match keep {
            Keep::Entry(dir) => Some(dir.clone()),
            _ => None,
        };
        Ok(Spill {
            file: Arc::new(scratch_file()?),
            store_in,
            len: 0,
        })
    }
}

/// How far a large output's file is written, shared by the thread that writes it and the one
/// that classifies it.
#[derive(Default)]
struct Progress {
    state: Mutex<Written>,
    changed: Condvar,
}

#[derive(Clone, Copy, Default)]
struct Written {
    len: usize,
    /// Helm's stdout has ended: `len` is all of it.
    ended: bool,
    /// The classifying is no longer wanted (the run failed).
    dropped: bool,
    /// The classifying failed: the run is to stop.
    failed: bool,
}

impl Progress {
    /// Changes the state and wakes the waiting thread; returns the new state.
    fn update(&self, change: impl FnOnce(&mut Written)) -> Written {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        change(&mut state);
        self.changed.notify_all();
        *state
    }

    /// Waits until at least `len` bytes are written, or the output ended or is dropped.
    fn wait_for(&self, len: usize) -> Written {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = self
            .changed
            .wait_while(state, |w| w.len < len && !w.ended && !w.dropped)
            .unwrap_or_else(PoisonError::into_inner);
        *state
    }
}

/// The thread that classifies a large output from its file as it is written.
struct Classifier {
    progress: Arc<Progress>,
    thread: Option<JoinHandle<Result<Classified, String>>>,
}

impl Drop for Classifier {
    fn drop(&mut self) {
        self.progress.update(|w| w.dropped = true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What the classifying thread found: the documents, and the digest of the bytes when asked.
#[derive(Default)]
struct Classified {
    docs: Vec<Doc>,
    /// Where the next part starts: bytes and lines.
    offset: usize,
    lines: u32,
    digest: Option<BodyDigest>,
}

impl Classified {
    /// Classifies and hashes `text`, the next part (whole documents), on two threads when
    /// `two_threads`.
    fn add(&mut self, text: &str, two_threads: bool) {
        // A part is about a megabyte: worth a second thread, as a whole output of that size is.
        let workers = parallel::workers_for(text.len(), PART_ON_TWO_THREADS, || two_threads);
        let docs = Output::classify_part(text, self.offset, self.lines, workers, true);
        self.docs.extend(docs);
        self.lines += memchr::memchr_iter(b'\n', text.as_bytes()).count() as u32;
        self.offset += text.len();
        if let Some(digest) = &mut self.digest {
            digest.update(text.as_bytes());
        }
    }
}

/// Classifies the output being written to `file`, a part at a time, until it ends.
fn classify(
    file: &File,
    progress: &Progress,
    hash: bool,
    two_threads: bool,
) -> Result<Classified, String> {
    // Where a part is read to when the file cannot be mapped.
    let mut copy = Vec::new();
    let mut found = Classified {
        digest: hash.then(BodyDigest::default),
        ..Classified::default()
    };
    // How much past the last part must be written before a cut is tried: any byte once a part
    // is done, so that what Helm printed is classified while the thread would wait anyway.
    let mut need = 1;
    loop {
        let written = progress.wait_for(found.offset + need);
        if written.dropped {
            return Err("stopped".into());
        }
        // About a megabyte at a time, more only for a document that big.
        let end = written.len.min(found.offset + need.max(STORE_FROM));
        let last = written.ended && end == written.len;
        let mapped = Mapped::new(file, found.offset, end - found.offset);
        let part = part_of(file, &mapped, found.offset, end - found.offset, &mut copy)
            .map_err(|e| not_read(&e))?;
        // Whole lines, unless this is the end.
        let complete = if last {
            part.len()
        } else {
            memchr::memrchr(b'\n', part).map_or(0, |i| i + 1)
        };
        let text = utf8(&part[..complete])?;
        let cut = if last {
            Some(text.len())
        } else {
            yaml::cut(text)
        };
        match cut {
            // A second thread only once Helm has printed all: before, the second core is
            // Helm's, printing or ending (a Go process of some 90 MB takes milliseconds to end).
            Some(cut) if cut > 0 || last => {
                found.add(&text[..cut], two_threads && written.ended);
                need = 1;
            }
            // Without a cut (the last document so far, one of megabytes, or no document
            // markers at all), the next try waits until twice as much is written: looking
            // again at every piece would cost the square of the output.
            _ => need = 2 * part.len().max(1),
        }
        if last {
            return Ok(found);
        }
    }
}

/// `len` bytes of `file` from `offset`: where they are `mapped`, else (a file system that
/// cannot map the file) a copy in `copy`.
fn part_of<'a>(
    file: &File,
    mapped: &'a io::Result<Mapped>,
    offset: usize,
    len: usize,
    copy: &'a mut Vec<u8>,
) -> io::Result<&'a [u8]> {
    if let Ok(mapped) = mapped {
        return Ok(mapped.bytes());
    }
    copy.resize(len, 0);
    file.read_exact_at(copy, offset as u64)?;
    Ok(copy)
}

/// Bytes of a file mapped into memory, read where the kernel keeps them instead of copied out
/// (a copy of 5 MB, and the pages to copy it into, cost a cold render a millisecond or two).
/// Only for a file nyl made and does not truncate: a mapped page past a file's end is a `SIGBUS`.
struct Mapped {
    map: *mut libc::c_void,
    /// The mapping's length, from the page `offset` is on.
    len: usize,
    /// Where the bytes asked for start in the mapping.
    skip: usize,
}

impl Mapped {
    /// `len` bytes of `file` from `offset`, all already written.
    fn new(file: &File, offset: usize, len: usize) -> io::Result<Mapped> {
        if len == 0 {
            return Ok(Mapped {
                map: std::ptr::null_mut(),
                len: 0,
                skip: 0,
            });
        }
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let skip = offset % page;
        let at = libc::off_t::try_from(offset - skip).map_err(io::Error::other)?;
        // SAFETY: a new read-only mapping of a file this process has open, at an address the
        // kernel picks; nothing else in the process is touched. `MAP_POPULATE` maps the pages
        // in one call rather than a fault at a time.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                skip + len,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                file.as_raw_fd(),
                at,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapped {
            map,
            len: skip + len,
            skip,
        })
    }

    fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the mapping holds `len` readable bytes for as long as `self` lives, all within
        // the file's written length; nyl writes the file only past them, and never truncates it.
        unsafe {
            std::slice::from_raw_parts(self.map.cast::<u8>().add(self.skip), self.len - self.skip)
        }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: unmaps exactly the mapping `new` made, which no reference outlives.
            unsafe {
                libc::munmap(self.map, self.len);
            }
        }
    }
}

/// A large output to be stored: the file it is kept in, from which [`super::cache::Cache`]
/// writes its entry.
pub struct Unstored {
    pub file: Arc<File>,
    pub len: usize,
    /// The cache directory the entry goes into.
    pub dir: PathBuf,
    /// The digest of the output, as the entry's body starts (a file of its own is not hashed:
    /// nothing verifies it, and hashing cost a `--no-cache` render 2 ms of 5 MB).
    pub digest: BodyDigest,
}

/// A finished output, with what its cache entry is written from when it is large and to be
/// stored (a small one's is written from memory).
pub struct Read {
    pub output: Output,
    pub entry: Option<Unstored>,
}

impl Reading {
    /// A reading that keeps the output as `keep` says: in memory, or in a file of its own (made
    /// here, before Helm starts; an output whose file cannot be made is read into memory).
    pub fn new(keep: Keep, two_threads: bool) -> Reading {
        let spill = match keep {
            Keep::Memory => None,
            keep => Spill::create(&keep)
                .inspect_err(|e| {
                    debug!("cannot keep helm's output in a file ({e}); holding it in memory");
                })
                .ok(),
        };
        Reading {
            two_threads,
            pending: Vec::new(),
            spill,
            classifier: None,
            started: None,
        }
    }

    /// Calls `f` once Helm has started (not at all if it never does).
    pub fn when_started(&mut self, f: impl FnOnce() + Send + 'static) {
        self.started = Some(Box::new(f));
    }

    /// Starts classifying a large output in its file as it grows.
    fn classify_when_large(&mut self) -> Result<(), String> {
        let Some(spill) = &self.spill else {
            return Ok(());
        };
        match &mut self.classifier {
            Some(classifier) => classifier.grew(spill.len),
            None if spill.len >= STORE_FROM => {
                let classifier = Classifier::start(spill, self.two_threads)
                    .map_err(|e| format!("cannot start a thread to classify Helm's output: {e}"))?;
                self.classifier = Some(classifier);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// The output, once Helm has ended well.
    pub fn finish(mut self) -> Result<Read, Failure> {
        let Some(spill) = self.spill.take() else {
            let raw = String::from_utf8(std::mem::take(&mut self.pending))
                .map_err(|_| Failure::Failed(NOT_UTF8.to_string()))?;
            return Ok(Read {
                output: Output::classify(raw, self.two_threads),
                entry: None,
            });
        };
        let Some(mut classifier) = self.classifier.take() else {
            // A small output, read back whole and held in memory: its entry, if it is stored,
            // is written from memory as any other (no file to write it from).
            let mut raw = vec![0; spill.len];
            spill
                .file
                .read_exact_at(&mut raw, 0)
                .map_err(|e| Failure::Failed(not_read(&e)))?;
            let raw = String::from_utf8(raw).map_err(|_| Failure::Failed(NOT_UTF8.to_string()))?;
            let output = Output::classify(raw, self.two_threads);
            return Ok(Read {
                output,
                entry: None,
            });
        };
        // The reader said so at the end of stdout (`Sink::ended`); said again here, as the join
        // below must never wait on a thread that was not told.
        classifier.progress.update(|w| w.ended = true);
        let thread = classifier.thread.take();
        let found = thread
            .map_or(Err("the output was not classified".into()), |t| {
                t.join()
                    .unwrap_or_else(|_| Err("the classifying thread panicked".into()))
            })
            .map_err(Failure::Failed)?;
        let stored = Stored {
            bytes: spill.file.clone(),
            len: spill.len,
        };
        let output = Output::stored(found.docs, stored).ok_or_else(|| {
            Failure::Failed("internal error: a document past the end of the output".into())
        })?;
        // A file of its own stays open as long as the output does.
        let entry = spill
            .store_in
            .zip(found.digest)
            .map(|(dir, digest)| Unstored {
                file: spill.file,
                len: spill.len,
                dir,
                digest,
            });
        Ok(Read { output, entry })
    }
}

impl Classifier {
    /// Starts classifying the output in `spill`'s file as it grows.
    fn start(spill: &Spill, two_threads: bool) -> io::Result<Classifier> {
        let progress = Arc::new(Progress::default());
        progress.update(|w| w.len = spill.len);
        let thread = {
            let (file, progress) = (spill.file.clone(), progress.clone());
            let hash = spill.store_in.is_some();
            let classified = move || {
                let found = classify(&file, &progress, hash, two_threads);
                if found.is_err() {
                    progress.update(|w| w.failed = true);
                }
                found
            };
            std::thread::Builder::new().spawn(classified)?
        };
        Ok(Classifier {
            progress,
            thread: Some(thread),
        })
    }

    /// The file has grown to `len`; the thread's own message if it failed, which ends the run.
    fn grew(&mut self, len: usize) -> Result<(), String> {
        if !self.progress.update(|w| w.len = len).failed {
            return Ok(());
        }
        let thread = self.thread.take();
        Err(thread
            .and_then(|t| t.join().ok())
            .and_then(Result::err)
            .unwrap_or_else(|| "the output could not be classified".into()))
    }
}

impl Sink for Reading {
    fn push(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.pending.extend_from_slice(bytes);
        Ok(())
    }

    fn file(&self) -> Option<&File> {
        self.spill.as_ref().map(|spill| &*spill.file)
    }

    fn started(&mut self) {
        if let Some(f) = self.started.take() {
            f();
        }
    }

    // The last document is classified as soon as stdout ends: Helm's exit takes a while more.
    fn ended(&mut self) {
        if let Some(classifier) = &self.classifier {
            classifier.progress.update(|w| w.ended = true);
        }
    }

    fn moved(&mut self, n: usize) -> Result<(), String> {
        if let Some(spill) = &mut self.spill {
            spill.len += n;
        }
        Ok(())
    }

    // What is written is classified once Helm's pipe is empty, not while Helm waits on it to
    // be drained: on two cores Helm's write, the drain and the classifying do not all run at once.
    fn emptied(&mut self) -> Result<(), String> {
        self.classify_when_large()
    }
}

/// Sends `range` of `file` to `fd` by `sendfile` (which reads at an offset of its own and leaves
/// the file's position alone); where the first call says the kernel cannot, nothing is sent.
/// Returns where the bytes not sent start.
pub fn send(fd: RawFd, file: &File, range: std::ops::Range<usize>) -> io::Result<usize> {
    let mut at = range.start;
    while at < range.end {
        let mut offset = libc::off_t::try_from(at).map_err(io::Error::other)?;
        // SAFETY: sendfile copies between two open descriptors inside the kernel, at the offset
        // given; the only memory it writes is `offset`, a local.
        let n = unsafe { libc::sendfile(fd, file.as_raw_fd(), &raw mut offset, range.end - at) };
        match usize::try_from(n) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => at += n,
            Err(_) => {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => {}
                    Some(libc::EINVAL | libc::ENOSYS) if at == range.start => break,
                    _ => return Err(e),
                }
            }
        }
    }
    Ok(at)
}

/// A new temporary file's path in `dir`, unique to this process and thread.
pub fn temp_path(dir: &Path) -> PathBuf {
    dir.join(format!(
        ".tmp-{}-{:?}-{}",
        std::process::id(),
        std::thread::current().id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ))
}

const NOT_UTF8: &str = "helm printed output that is not UTF-8";

/// The message of a failed read of Helm's output back from its file, which ends the run.
fn not_read(e: &io::Error) -> String {
    format!("cannot read Helm's output back from its file: {e}")
}

fn utf8(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|_| NOT_UTF8.to_string())
}

/// A file of nyl's own in memory (a memfd, sealed against shrinking, as a mapped page past a
/// file's end is a `SIGBUS`); where the kernel has none, a file without a name in the temporary
/// directory (`O_TMPFILE`), or a new file removed at once. Either way it goes when nyl closes it.
/// In memory, an output of the budget's size (64 MiB by default) is that much memory until the
/// render ends, as it was page cache before; what a move into it saves is the file system's work
/// for each page while Helm waits.
fn scratch_file() -> io::Result<File> {
    // SAFETY: a NUL-terminated name and flags; returns a new descriptor or -1.
    let memfd = unsafe {
        libc::memfd_create(
            c"nyl-output".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    if memfd >= 0 {
        // SAFETY: a descriptor just returned to this thread, owned by nothing else.
        let file = unsafe { File::from_raw_fd(memfd) };
        // SAFETY: fcntl on a descriptor this function owns; it touches no memory.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_SHRINK) } == 0 {
            return Ok(file);
        }
    }
    let dir = std::env::temp_dir();
    let unnamed = File::options()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(&dir);
    unnamed.or_else(|_| {
        let path = temp_path(&dir);
        let file = new_file(&path)?;
        fs::remove_file(&path)?;
        Ok(file)
    })
}

/// A new file only this user can read and write, open for both.
fn new_file(path: &Path) -> io::Result<File> {
    File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process;
    use nyl_core::expansion::manifest::Raw;
    use std::io::Write;
    use std::process::Command;
    use std::sync::atomic::AtomicU64;
    use std::time::Duration;

    fn outputs() -> [String; 3] {
        let many =
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: |+\n    v\n\n"
                .repeat(STORE_FROM / 40);
        // One document of megabytes: no cut until its end.
        let giant = format!(
            "---\nkind: Big\ndata:\n{}",
            "  k: v\n".repeat(3 * STORE_FROM / 7)
        );
        [many, giant, "kind: Small\n".to_string()]
    }

    /// `output` holds `raw`, in the same documents as `raw` read whole.
    fn assert_same(output: &Output, raw: &str) {
        let held = match &output.raw {
            Raw::Stored(stored) => {
                let file = stored.bytes.downcast_ref::<File>().unwrap();
                let mut held = vec![0; stored.len];
                file.read_exact_at(&mut held, 0).unwrap();
                String::from_utf8(held).unwrap()
            }
            Raw::Text(text) => {
                assert!(raw.len() < STORE_FROM, "a large output held in memory");
                text.to_string()
            }
        };
        assert_eq!(held, raw);
        let whole = Output::classify(raw.to_string(), false);
        assert_eq!(output.docs.len(), whole.docs.len());
        for (a, b) in output.docs.iter().zip(&whole.docs) {
            assert_eq!((a.start, a.end, a.line), (b.start, b.end, b.line));
            assert_eq!((&a.text, &a.head), (&b.text, &b.head));
        }
    }

    /// Writes `bytes` at the end of the reading's file and tells it, as a move from Helm's pipe
    /// does.
    fn write(reading: &mut Reading, bytes: &[u8]) {
        (&*reading.spill.as_ref().unwrap().file)
            .write_all(bytes)
            .unwrap();
        reading.moved(bytes.len()).unwrap();
    }

    #[test]
    fn a_large_output_moved_a_piece_at_a_time_is_the_output_read_whole() {
        // The pipe is found empty after every piece (a child that prints as it goes: the pieces
        // end anywhere in a line), or only at the end (one large write).
        for two_threads in [true, false] {
            for raw in outputs() {
                for (piece, each) in [(4096, true), (300_000, true), (300_000, false)] {
                    let mut reading = Reading::new(Keep::Scratch, two_threads);
                    for chunk in raw.as_bytes().chunks(piece) {
                        write(&mut reading, chunk);
                        if each {
                            reading.emptied().unwrap();
                        }
                    }
                    reading.emptied().unwrap();
                    reading.ended();
                    let large = raw.len() >= STORE_FROM;
                    assert_eq!(reading.classifier.is_some(), large, "classified behind");
                    let read = reading.finish().ok().unwrap();
                    assert!(read.entry.is_none(), "a file of its own is no entry");
                    assert_same(&read.output, &raw);
                }
            }
        }
    }

    #[test]
    fn an_output_read_from_a_pipe_is_the_output_read_whole() {
        for raw in outputs() {
            let mut reading = Reading::new(Keep::Memory, true);
            assert!(reading.file().is_none(), "kept in memory, read from a pipe");
            for chunk in raw.as_bytes().chunks(65536) {
                reading.push(chunk).unwrap();
            }
            reading.ended();
            let read = reading.finish().ok().unwrap();
            let whole = Output::classify(raw.clone(), false);
            assert_eq!(read.output.docs.len(), whole.docs.len());
            assert!(matches!(&read.output.raw, Raw::Text(text) if **text == *raw));
        }
    }

    /// The way Helm's output comes: a child's stdout moved from its pipe into the output's file,
    /// classified and hashed (for an entry) as it arrives.
    #[test]
    fn an_output_moved_from_a_childs_pipe_is_the_output_read_whole() {
        let dir = std::env::temp_dir().join(format!("nyl-output-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        for (i, (raw, two_threads)) in outputs()
            .iter()
            .flat_map(|raw| [(raw, true), (raw, false)])
            .enumerate()
        {
            let printed = dir.join(format!("printed-{i}"));
            fs::write(&printed, raw).unwrap();
            let mut reading = Reading::new(Keep::Entry(dir.clone()), two_threads);
            let budget = AtomicU64::new(u64::MAX);
            let mut cat = Command::new("cat");
            cat.arg(&printed);
            let done = process::run(
                &mut cat,
                Vec::new(),
                Duration::from_secs(60),
                &budget,
                &mut reading,
            );
            assert!(done.unwrap().status.success());
            let read = reading.finish().ok().unwrap();
            assert_same(&read.output, raw);
            assert_eq!(
                u64::MAX - budget.into_inner(),
                raw.len() as u64,
                "all taken from the budget"
            );
            // A small output is held in memory, its entry written from there.
            let Some(entry) = read.entry else {
                assert!(raw.len() < STORE_FROM, "a large output with no entry");
                continue;
            };
            let mut digest = BodyDigest::default();
            digest.update(raw.as_bytes());
            let hashed = entry.digest.finalize();
            assert_eq!(hashed, digest.finalize());
            assert_eq!(entry.len, raw.len());
        }
        let left: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 6, "no file but the printed ones: {left:?}");
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Helm's one large write is not classified while it waits on the pipe: only what was
    /// written when the pipe was last found empty.
    #[test]
    fn an_output_is_classified_only_as_far_as_the_pipe_was_emptied() {
        let [many, ..] = outputs();
        let mut reading = Reading::new(Keep::Scratch, false);
        let (first, rest) = many.as_bytes().split_at(STORE_FROM + 4096);
        write(&mut reading, first);
        assert!(
            reading.classifier.is_none(),
            "the pipe was never found empty"
        );
        reading.emptied().unwrap();
        let progress = reading.classifier.as_ref().unwrap().progress.clone();
        write(&mut reading, rest);
        assert_eq!(progress.state.lock().unwrap().len, first.len());
        reading.emptied().unwrap();
        assert_eq!(progress.state.lock().unwrap().len, many.len());
        reading.ended();
        let read = reading.finish().ok().unwrap();
        assert_same(&read.output, &many);
    }

    #[test]
    fn a_part_is_the_same_mapped_or_copied() {
        let dir = std::env::temp_dir().join(format!("nyl-part-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let bytes: Vec<u8> = (0..3 * 4096 + 100usize)
            .map(|i| u8::try_from(i % 251).unwrap())
            .collect();
        let path = dir.join("part");
        fs::write(&path, &bytes).unwrap();
        let file = File::open(&path).unwrap();
        let mut copy = Vec::new();
        // From a page's start, from within one, across pages, to the end, and nothing.
        for (offset, len) in [
            (0, 10),
            (4096, 4096),
            (5000, 7000),
            (100, bytes.len() - 100),
            (7, 0),
        ] {
            let mapped = Mapped::new(&file, offset, len);
            assert!(mapped.is_ok(), "a regular file maps");
            let part = part_of(&file, &mapped, offset, len, &mut copy).unwrap();
            assert_eq!(part, &bytes[offset..offset + len]);
        }
        fs::remove_dir_all(&dir).unwrap();
        // A file the kernel does not map (procfs): the same bytes, copied.
        let proc = File::open("/proc/self/cmdline").unwrap();
        let whole = fs::read("/proc/self/cmdline").unwrap();
        let mapped = Mapped::new(&proc, 1, whole.len() - 1);
        assert!(mapped.is_err(), "procfs files are not mapped");
        let part = part_of(&proc, &mapped, 1, whole.len() - 1, &mut copy).unwrap();
        assert_eq!(part, &whole[1..]);
    }

    #[test]
    fn output_that_is_not_utf8_is_refused() {
        let mut raw = "---\nkind: A\n".repeat(STORE_FROM / 10).into_bytes();
        raw.extend_from_slice(b"---\nkind: \xff\n");
        raw.extend_from_slice("---\nkind: B\n".repeat(STORE_FROM / 10).as_bytes());
        let mut reading = Reading::new(Keep::Scratch, false);
        // Found by the classifying thread: the next piece, or the end, says so.
        let mut piece = |c: &[u8]| {
            write(&mut reading, c);
            reading.emptied()
        };
        let refused = match raw.chunks(65536).find_map(|c| piece(c).err()) {
            Some(refused) => refused,
            None => match reading.finish() {
                Err(Failure::Failed(why)) => why,
                _ => panic!("output that is not UTF-8 was taken"),
            },
        };
        assert_eq!(refused, NOT_UTF8);
    }
}
