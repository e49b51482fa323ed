//! A release's output as Helm prints it: kept in memory while it is small; from
//! [`STORE_FROM`] bytes on, when the run passes its output on to stdout as it is, split at the
//! cuts [`yaml::cut`] allows while Helm is still printing, each part classified and written to a
//! file (the cache entry being written, or a file of its own), so that nyl holds about a
//! megabyte of it at a time instead of all of it. Both ways give the same documents.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use tracing::debug;

use super::digest::BodyDigest;
use super::Failure;
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
    /// What is read and not yet classified (all of it, until it is stored).
    pending: Vec<u8>,
    stored: Parts,
    file: Option<Spill>,
    /// How much is held before the next cut is tried.
    next_cut: usize,
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

/// The documents of the parts stored so far, and where the next part starts: bytes and lines.
#[derive(Default)]
struct Parts {
    docs: Vec<Doc>,
    offset: usize,
    lines: u32,
}

impl Parts {
    /// Classifies `text`, the next part (whole documents), and writes it to `spill`.
    fn store(&mut self, text: &str, spill: &mut Spill, two_threads: bool) -> Result<(), String> {
        // A part is about a megabyte: worth a second thread, as a whole output of that size is.
        let workers = parallel::workers_for(text.len(), PART_ON_TWO_THREADS, || two_threads);
        let docs = Output::classify_part(text, self.offset, self.lines, workers, true);
        self.docs.extend(docs);
        self.lines += memchr::memchr_iter(b'\n', text.as_bytes()).count() as u32;
        self.offset += text.len();
        spill
            .write(text.as_bytes())
            .map_err(|e| format!("cannot write Helm's output to a file: {e}"))
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
            stored: Parts::default(),
            file: None,
            next_cut: STORE_FROM,
        }
    }

    /// Takes the next bytes Helm printed.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.pending.extend_from_slice(bytes);
        if self.pending.len() < self.next_cut || matches!(self.keep, Keep::Memory) {
            return Ok(());
        }
        let mut spill = match self.file.take() {
            Some(spill) => spill,
            None => match self.open() {
                Ok(spill) => spill,
                Err(e) => {
                    // The same output, held in memory instead.
                    debug!("cannot keep a large output in a file ({e}); holding it in memory");
                    self.keep = Keep::Memory;
                    return Ok(());
                }
            },
        };
        let complete = memchr::memrchr(b'\n', &self.pending).map_or(0, |i| i + 1);
        let text = utf8(&self.pending[..complete])?;
        let cut = yaml::cut(text);
        // Without a cut (one document of megabytes, or no document markers at all), the next
        // try waits until twice as much is held: looking again at every read would cost the
        // square of the output.
        self.next_cut = match cut {
            Some(_) => STORE_FROM,
            None => self.pending.len() * 2,
        };
        let stored = cut.map_or(Ok(()), |cut| {
            self.stored
                .store(&text[..cut], &mut spill, self.two_threads)
        });
        if let Some(cut) = cut {
            self.pending.drain(..cut);
        }
        self.file = Some(spill);
        stored
    }

    /// The output, once Helm has ended well.
    pub fn finish(mut self) -> Result<Read, Failure> {
        let Some(mut spill) = self.file.take() else {
            let raw = String::from_utf8(self.pending)
                .map_err(|_| Failure::Failed(NOT_UTF8.to_string()))?;
            return Ok(Read {
                output: Output::classify(raw, self.two_threads),
                entry: None,
            });
        };
        let text = utf8(&self.pending).map_err(Failure::Failed)?;
        self.stored
            .store(text, &mut spill, self.two_threads)
            .map_err(Failure::Failed)?;
        let stored = Stored {
            bytes: spill.file.clone(),
            len: spill.len,
        };
        let output = Output::stored(self.stored.docs, stored).ok_or_else(|| {
            Failure::Failed("internal error: a document past the end of the output".into())
        })?;
        // A file of its own stays open as long as the output does.
        let entry = spill.entry.is_some().then_some(spill);
        Ok(Read { output, entry })
    }

    fn open(&self) -> io::Result<Spill> {
        let (file, entry) = match &self.keep {
            Keep::Entry(dir) => {
                let tmp = temp_path(dir);
                let file = new_file(&tmp)?;
                let digest = BodyDigest::default();
                (file, Some(Unplaced { tmp, digest }))
            }
            _ => (scratch_file()?, None),
        };
        Ok(Spill {
            file: Arc::new(file),
            entry,
            len: 0,
        })
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
    use nyl_core::expansion::manifest::Raw;
    use std::os::unix::fs::FileExt;

    /// Reads `raw` as Helm would print it, `piece` bytes at a time, into a file of its own.
    fn read(raw: &str, piece: usize) -> Output {
        let mut reading = Reading::new(Keep::Scratch, true);
        for chunk in raw.as_bytes().chunks(piece) {
            reading.push(chunk).unwrap();
        }
        let read = reading.finish().ok().unwrap();
        assert!(read.entry.is_none(), "a file of its own is no entry");
        read.output
    }

    #[test]
    fn a_large_output_read_a_piece_at_a_time_is_the_output_read_whole() {
        let many =
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: |+\n    v\n\n"
                .repeat(STORE_FROM / 40);
        // One document of megabytes: no cut until its end.
        let giant = format!(
            "---\nkind: Big\ndata:\n{}",
            "  k: v\n".repeat(3 * STORE_FROM / 7)
        );
        for raw in [many, giant, "kind: Small\n".to_string()] {
            let whole = Output::classify(raw.clone(), false);
            for piece in [4096, 300_000] {
                let output = read(&raw, piece);
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
                assert_eq!(output.docs.len(), whole.docs.len());
                for (a, b) in output.docs.iter().zip(&whole.docs) {
                    assert_eq!((a.start, a.end, a.line), (b.start, b.end, b.line));
                    assert_eq!((&a.text, &a.head), (&b.text, &b.head));
                }
            }
        }
    }

    #[test]
    fn output_that_is_not_utf8_is_refused() {
        let mut raw = "---\nkind: A\n".repeat(STORE_FROM / 10).into_bytes();
        raw.extend_from_slice(b"---\nkind: \xff\n");
        raw.extend_from_slice("---\nkind: B\n".repeat(STORE_FROM / 10).as_bytes());
        let mut reading = Reading::new(Keep::Scratch, false);
        let refused = raw.chunks(65536).find_map(|c| reading.push(c).err());
        assert_eq!(refused.as_deref(), Some(NOT_UTF8));
    }
}
