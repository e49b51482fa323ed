//! A release's output as Helm prints it: kept in memory while it is small; from
//! [`STORE_FROM`] bytes on, when the run passes its output on to stdout as it is, moved into a
//! file (the cache entry being written, or a file of its own) by the kernel as Helm prints it,
//! while a thread of its own reads it back from that file a part at a time, split at the cuts
//! [`yaml::cut`] allows, and classifies and hashes each part. So Helm's single large `write`
//! ends as soon as the pipe is drained, and the classifying overlaps Helm's exit (some
//! milliseconds for a Go process of that size) instead of holding Helm back; and nyl holds about a
//! megabyte of the output at a time instead of all of it. Both ways give the same documents.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::SystemTime;

use tracing::debug;

use super::digest::BodyDigest;
use super::Failure;
use crate::process::Sink;
use nyl_core::data::yaml;
use nyl_core::expansion::manifest::{Doc, Output, Stored};
use nyl_core::parallel;

/// The output size from which a release's output is kept in a file rather than in memory, and
/// the size of the parts it is then classified in.
pub const STORE_FROM: usize = 1 << 20;

/// A part this large is scanned on two threads when the run allows.
const PART_ON_TWO_THREADS: usize = 256 << 10;

/// Where a large output goes.
#[derive(Clone, Debug)]
pub enum Keep {
    /// In memory, whatever its size: the run reads every document (`-o json`, `diff`,
    /// `render-tree`, `validate`).
    Memory,
    /// A file of its own, gone when the output is (`--no-cache`, or a render not stored).
    Scratch,
    /// A new cache entry in this directory, its body written as it is read.
    Entry(PathBuf),
}

/// An output being read.
pub struct Reading {
    keep: Keep,
    two_threads: bool,
    /// What is read and held: all of a small output, the start of a large one.
    pending: Vec<u8>,
    /// A large output's file and the thread that classifies it.
    large: Option<(Spill, Classifier)>,
}

/// The file a large output is written to, and what it holds so far.
pub struct Spill {
    pub file: Arc<File>,
    /// What a cache entry being written has beside its bytes; a file of its own has nothing.
    pub entry: Option<Unplaced>,
    pub len: usize,
}

/// A cache entry not yet moved into place.
pub struct Unplaced {
    /// Its temporary path; removed with the [`Spill`] unless the entry is taken from it.
    pub tmp: PathBuf,
    /// The digest of what was written, as the entry's body starts (a file of its own is not
    /// hashed: nothing verifies it, and hashing cost a `--no-cache` render 2 ms of 5 MB).
    pub digest: BodyDigest,
}

impl Drop for Spill {
    fn drop(&mut self) {
        if let Some(entry) = &self.entry {
            let _ = fs::remove_file(&entry.tmp);
        }
    }
}

impl Spill {
    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        (&*self.file).write_all(bytes)?;
        if let Some(entry) = &mut self.entry {
            entry.digest.update(bytes);
        }
        self.len += bytes.len();
        Ok(())
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
    /// Classifies and hashes `text`, the next part (whole documents).
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

/// Classifies the output being written to `file`, a part at a time, until it ends; `part` is
/// the buffer to read the parts into.
fn classify(
    file: &File,
    progress: &Progress,
    hash: bool,
    two_threads: bool,
    mut part: Vec<u8>,
) -> Result<Classified, String> {
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
        part.resize(end - found.offset, 0);
        file.read_exact_at(&mut part, found.offset as u64)
            .map_err(|e| format!("cannot read Helm's output back from its file: {e}"))?;
        // Whole lines, unless this is the end.
        let complete = if last {
            part.len()
        } else {
            memchr::memrchr(b'\n', &part).map_or(0, |i| i + 1)
        };
        let text = utf8(&part[..complete])?;
        let cut = if last {
            Some(text.len())
        } else {
            yaml::cut(text)
        };
        match cut {
            Some(cut) if cut > 0 || last => {
                found.add(&text[..cut], two_threads);
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

/// A finished output, with the file it is stored in when it is a cache entry still to be
/// completed ([`super::cache::Cache`] appends the index and trailer and moves it into place).
pub struct Read {
    pub output: Output,
    pub entry: Option<Spill>,
}

impl Reading {
    pub fn new(keep: Keep, two_threads: bool) -> Reading {
        Reading {
            keep,
            two_threads,
            pending: Vec::new(),
            large: None,
        }
    }

    /// The output, once Helm has ended well.
    pub fn finish(mut self) -> Result<Read, Failure> {
        let Some((mut spill, mut classifier)) = self.large.take() else {
            let raw = String::from_utf8(std::mem::take(&mut self.pending))
                .map_err(|_| Failure::Failed(NOT_UTF8.to_string()))?;
            return Ok(Read {
                output: Output::classify(raw, self.two_threads),
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
        if let (Some(entry), Some(digest)) = (&mut spill.entry, found.digest) {
            entry.digest = digest;
        }
        let stored = Stored {
            bytes: spill.file.clone(),
            len: spill.len,
        };
        let output = Output::stored(found.docs, stored).ok_or_else(|| {
            Failure::Failed("internal error: a document past the end of the output".into())
        })?;
        // A file of its own stays open as long as the output does.
        let entry = spill.entry.is_some().then_some(spill);
        Ok(Read { output, entry })
    }

    /// A file holding what is held.
    fn store(&self) -> io::Result<Spill> {
        let (file, entry) = match &self.keep {
            Keep::Entry(dir) => {
                let tmp = temp_path(dir);
                let file = new_file(&tmp)?;
                let digest = BodyDigest::default();
                (file, Some(Unplaced { tmp, digest }))
            }
            _ => (scratch_file()?, None),
        };
        let mut spill = Spill {
            file: Arc::new(file),
            entry,
            len: 0,
        };
        // Hashed by the classifying thread, with the rest.
        (&*spill.file).write_all(&self.pending)?;
        spill.len = self.pending.len();
        Ok(spill)
    }

    /// Starts classifying the output in `spill`'s file as it grows.
    fn classify_in_background(&mut self, spill: Spill) -> io::Result<()> {
        let progress = Arc::new(Progress::default());
        progress.update(|w| w.len = spill.len);
        // What was held is the buffer the parts are read back into: the same megabyte, not a
        // second one.
        let mut buffer = std::mem::take(&mut self.pending);
        buffer.clear();
        let thread = {
            let (file, progress) = (spill.file.clone(), progress.clone());
            let (hash, two_threads) = (spill.entry.is_some(), self.two_threads);
            let classified = move || {
                let found = classify(&file, &progress, hash, two_threads, buffer);
                if found.is_err() {
                    progress.update(|w| w.failed = true);
                }
                found
            };
            std::thread::Builder::new().spawn(classified)?
        };
        let classifier = Classifier {
            progress,
            thread: Some(thread),
        };
        self.large = Some((spill, classifier));
        Ok(())
    }
}

impl Sink for Reading {
    fn push(&mut self, bytes: &[u8]) -> Result<(), String> {
        if let Some((spill, _)) = &mut self.large {
            (&*spill.file)
                .write_all(bytes)
                .map_err(|e| format!("cannot write Helm's output to a file: {e}"))?;
            return self.moved(bytes.len());
        }
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= STORE_FROM && !matches!(self.keep, Keep::Memory) {
            match self.store() {
                Ok(spill) => self
                    .classify_in_background(spill)
                    .map_err(|e| format!("cannot start a thread to classify Helm's output: {e}"))?,
                Err(e) => {
                    // The same output, held in memory instead.
                    debug!("cannot keep a large output in a file ({e}); holding it in memory");
                    self.keep = Keep::Memory;
                }
            }
        }
        Ok(())
    }

    fn file(&self) -> Option<&File> {
        self.large.as_ref().map(|(spill, _)| &*spill.file)
    }

    // The last document is classified as soon as stdout ends: Helm's exit takes a while more.
    fn ended(&mut self) {
        if let Some((_, classifier)) = &self.large {
            classifier.progress.update(|w| w.ended = true);
        }
    }

    fn moved(&mut self, n: usize) -> Result<(), String> {
        let Some((spill, classifier)) = &mut self.large else {
            return Ok(());
        };
        spill.len += n;
        let len = spill.len;
        if !classifier.progress.update(|w| w.len = len).failed {
            return Ok(());
        }
        // The thread's own message, which ends the run.
        let thread = classifier.thread.take();
        Err(thread
            .and_then(|t| t.join().ok())
            .and_then(Result::err)
            .unwrap_or_else(|| "the output could not be classified".into()))
    }
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

fn utf8(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|_| NOT_UTF8.to_string())
}

/// A file without a name in the temporary directory (`O_TMPFILE`), or, where the file system
/// cannot make one, a new file removed at once: either way it goes when nyl closes it.
fn scratch_file() -> io::Result<File> {
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

    #[test]
    fn a_large_output_read_a_piece_at_a_time_is_the_output_read_whole() {
        for raw in outputs() {
            for piece in [4096, 300_000] {
                let mut reading = Reading::new(Keep::Scratch, true);
                for chunk in raw.as_bytes().chunks(piece) {
                    reading.push(chunk).unwrap();
                }
                let read = reading.finish().ok().unwrap();
                assert!(read.entry.is_none(), "a file of its own is no entry");
                assert_same(&read.output, &raw);
            }
        }
    }

    /// The way Helm's output comes: the rest of a child's stdout moved into the entry's file
    /// from its pipe, classified and hashed as it arrives.
    #[test]
    fn a_large_output_moved_from_a_childs_pipe_is_the_output_read_whole() {
        let dir = std::env::temp_dir().join(format!("nyl-output-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        for (i, raw) in outputs().iter().enumerate() {
            let printed = dir.join(format!("printed-{i}"));
            fs::write(&printed, raw).unwrap();
            let mut reading = Reading::new(Keep::Entry(dir.clone()), true);
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
            match read.entry {
                Some(entry) => {
                    let mut digest = BodyDigest::default();
                    digest.update(raw.as_bytes());
                    let hashed = entry.entry.as_ref().unwrap().digest.finalize();
                    assert_eq!(hashed, digest.finalize());
                    assert_eq!(entry.len, raw.len());
                }
                None => assert!(raw.len() < STORE_FROM, "a large output with no entry"),
            }
        }
        let left: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 3, "the entries' files go with them: {left:?}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn output_that_is_not_utf8_is_refused() {
        let mut raw = "---\nkind: A\n".repeat(STORE_FROM / 10).into_bytes();
        raw.extend_from_slice(b"---\nkind: \xff\n");
        raw.extend_from_slice("---\nkind: B\n".repeat(STORE_FROM / 10).as_bytes());
        let mut reading = Reading::new(Keep::Scratch, false);
        // Found by the classifying thread: the next piece, or the end, says so.
        let refused = match raw.chunks(65536).find_map(|c| reading.push(c).err()) {
            Some(refused) => refused,
            None => match reading.finish() {
                Err(Failure::Failed(why)) => why,
                _ => panic!("output that is not UTF-8 was taken"),
            },
        };
        assert_eq!(refused, NOT_UTF8);
    }
}
