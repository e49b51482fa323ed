//! The edge of every command: the one printer of diagnostics and the exit status they imply,
//! and the writer of stdout (a closed pipe is no error; a large output passed on from its file).

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;
use std::process::ExitCode;

use crate::helm;
use nyl_core::data::diagnostics::{self, Diagnostic};
use nyl_core::data::provenance::Catalog;
use nyl_core::expansion::manifest::Part;

/// A JSON array, pretty-printed, with a final line break.
pub(super) fn json_text(items: &[serde_json::Value]) -> String {
    let mut text = serde_json::to_string_pretty(items).unwrap_or_else(|_| "[]".into());
    text.push('\n');
    text
}

/// Prints every diagnostic of one run to stderr, in a stable order, and returns the exit status
/// they imply.
pub(super) fn report_diagnostics(mut diags: Vec<Diagnostic>, catalog: &Catalog) -> u8 {
    diagnostics::sort(&mut diags, catalog);
    print_diagnostics(diags.iter().map(|d| (d, catalog)))
}

/// The one printer of diagnostics: each to stderr, in the order given (each with the catalog its
/// locations point into); returns the exit status they imply, the one rule of every command.
pub(super) fn print_diagnostics<'a>(
    diags: impl IntoIterator<Item = (&'a Diagnostic, &'a Catalog)>,
) -> u8 {
    let mut stderr = io::stderr().lock();
    let mut status = 0;
    for (d, catalog) in diags {
        let _ = writeln!(stderr, "{}", d.render(catalog));
        status = status.max(diagnostics::exit_status(std::slice::from_ref(d)));
    }
    status
}

/// Writes the whole result at once; a closed pipe (`nyl values | head`) is not an error.
pub(super) fn write_stdout(text: &str) -> ExitCode {
    write_stdout_parts([Part::Text(text)])
}

/// Writes the parts to stdout; a closed pipe is no error (the reader has seen enough).
pub(super) fn write_stdout_parts<'a>(parts: impl IntoIterator<Item = Part<'a>>) -> ExitCode {
    let mut stdout = io::stdout().lock();
    let fd = stdout.as_raw_fd();
    let written = write_all_parts(&mut stdout, Some(fd), parts).and_then(|()| stdout.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write output: {e}");
            ExitCode::from(2)
        }
    }
}

/// Writes the parts as they are, in few system calls and without the whole output in memory:
/// text gathered (`writev`), not copied into a buffer first (the output can be megabytes, most
/// of it slices of Helm's output); stored bytes that follow each other in their file joined into
/// one run, a long run sent from the file by the kernel (`sendfile`), short ones (between the
/// lines nyl inserts) read a block at a time and written with the text around them.
fn write_all_parts<'a>(
    out: &mut impl Write,
    fd: Option<RawFd>,
    parts: impl IntoIterator<Item = Part<'a>>,
) -> io::Result<()> {
    let mut gather = Gather {
        fd,
        segments: Vec::new(),
        buf: Vec::new(),
        window: None,
    };
    let mut run: Option<(&File, std::ops::Range<usize>)> = None;
    for part in parts {
        match part {
            Part::Text("") => {}
            Part::Text(text) => {
                if let Some((file, range)) = run.take() {
                    gather.stored(out, file, range)?;
                }
                gather.segments.push(Segment::Text(text));
            }
            Part::Stored(stored, range) => {
                let file = stored.bytes.downcast_ref::<File>().ok_or_else(|| {
                    io::Error::other("internal error: stored output not in a file")
                })?;
                run = match run.take() {
                    Some((f, r)) if std::ptr::eq(f, file) && r.end == range.start => {
                        Some((f, r.start..range.end))
                    }
                    Some((f, r)) => {
                        gather.stored(out, f, r)?;
                        Some((file, range))
                    }
                    None => Some((file, range)),
                };
            }
        }
    }
    if let Some((file, range)) = run {
        gather.stored(out, file, range)?;
    }
    gather.flush(out)
}

/// A run of stored bytes this long goes by `sendfile`; shorter ones are read into the buffer.
const SEND_FROM: usize = 64 << 10;
/// The buffer for short runs of stored bytes.
const GATHER_BYTES: usize = 256 << 10;

/// What is gathered for the next `writev`.
struct Gather<'a> {
    fd: Option<RawFd>,
    segments: Vec<Segment<'a>>,
    /// A window of a stored file (which, and where it starts), read a block at a time: the
    /// short runs between lines nyl inserts are served from it in order, not read one by one.
    buf: Vec<u8>,
    window: Option<(&'a File, usize)>,
}

enum Segment<'a> {
    Text(&'a str),
    /// A range of the buffer.
    Buf(std::ops::Range<usize>),
}

impl<'a> Gather<'a> {
    /// A run of stored bytes, sent or gathered.
    fn stored(
        &mut self,
        out: &mut impl Write,
        file: &'a File,
        mut range: std::ops::Range<usize>,
    ) -> io::Result<()> {
        if range.len() >= SEND_FROM {
            if let Some(fd) = self.fd {
                self.flush(out)?;
                // What `out` holds goes first.
                out.flush()?;
                range.start = helm::output::send(fd, file, range.clone())?;
            }
        }
        while !range.is_empty() {
            match self.window {
                Some((f, at))
                    if std::ptr::eq(f, file)
                        && at <= range.start
                        && range.start < at + self.buf.len() =>
                {
                    let end = range.end.min(at + self.buf.len());
                    self.segments.push(Segment::Buf(range.start - at..end - at));
                    range.start = end;
                }
                _ => {
                    // The segments point into the window: out before it moves.
                    self.flush(out)?;
                    self.buf.resize(GATHER_BYTES, 0);
                    let n = read_at_most(file, &mut self.buf, range.start)?;
                    if n == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    self.buf.truncate(n);
                    self.window = Some((file, range.start));
                }
            }
        }
        Ok(())
    }

    fn flush(&mut self, out: &mut impl Write) -> io::Result<()> {
        let mut slices: Vec<io::IoSlice> = self
            .segments
            .iter()
            .map(|s| match s {
                Segment::Text(text) => io::IoSlice::new(text.as_bytes()),
                Segment::Buf(range) => io::IoSlice::new(&self.buf[range.clone()]),
            })
            .collect();
        let mut rest = &mut slices[..];
        while !rest.is_empty() {
            match out.write_vectored(rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => io::IoSlice::advance_slices(&mut rest, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.segments.clear();
        self.buf.clear();
        self.window = None;
        Ok(())
    }
}

/// Reads from `at` into `buf` until it is full or the file ends; the bytes read.
fn read_at_most(file: &File, buf: &mut [u8], at: usize) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], (at + n) as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nyl_core::expansion::manifest::Stored;

    /// Takes at most 3 bytes of one slice per call, as a pipe may take less than offered.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(3);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn parts_are_written_whole_and_in_order_however_little_each_write_takes() {
        let texts = ["---\n", "", "kind: A\n", "metadata:\n  namespace: x\n", "b"];
        // Stored bytes between the texts, from a file, as a large release's output is passed on.
        let path = std::env::temp_dir().join(format!("nyl-parts-{}", std::process::id()));
        let stored_text = "x".repeat(300 << 10) + "---\nkind: B\n";
        std::fs::write(&path, format!("junk{stored_text}junk")).unwrap();
        let stored = Stored {
            bytes: std::sync::Arc::new(File::open(&path).unwrap()),
            len: stored_text.len() + 8,
        };
        std::fs::remove_file(&path).unwrap();
        let range = 4..4 + stored_text.len();
        let text_parts = || texts.iter().map(|t| Part::Text(t));
        let parts = || {
            let stored = Part::Stored(&stored, range.clone());
            text_parts()
                .take(3)
                .chain([stored])
                .chain(text_parts().skip(3))
        };
        let expected = [
            &texts[..3].concat(),
            stored_text.as_str(),
            &texts[3..].concat(),
        ]
        .concat();
        let mut out = Trickle(Vec::new());
        write_all_parts(&mut out, None, parts()).unwrap();
        assert_eq!(out.0, expected.as_bytes());
        let mut out = Vec::new();
        write_all_parts(&mut out, None, parts()).unwrap();
        assert_eq!(out, expected.as_bytes());
        // Into a file's descriptor: the stored bytes by `sendfile`, in their place.
        let target = std::env::temp_dir().join(format!("nyl-parts-out-{}", std::process::id()));
        let mut file = File::create(&target).unwrap();
        let fd = file.as_raw_fd();
        write_all_parts(&mut file, Some(fd), parts()).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), expected);
        // Documents one after another in their file, some with a line inserted between: runs
        // joined where nothing is between, each byte in its place.
        let pieces: Vec<std::ops::Range<usize>> = (0..stored_text.len())
            .step_by(1000)
            .map(|s| 4 + s..4 + (s + 1000).min(stored_text.len()))
            .collect();
        let many = || {
            pieces.iter().enumerate().flat_map(|(i, r)| {
                let between = if i % 7 == 0 { "  namespace: x\n" } else { "" };
                [Part::Stored(&stored, r.clone()), Part::Text(between)]
            })
        };
        let expected: String = pieces
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let between = if i % 7 == 0 { "  namespace: x\n" } else { "" };
                format!("{}{between}", &stored_text[r.start - 4..r.end - 4])
            })
            .collect();
        let mut file = File::create(&target).unwrap();
        let fd = file.as_raw_fd();
        write_all_parts(&mut file, Some(fd), many()).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), expected);
        let mut out = Trickle(Vec::new());
        write_all_parts(&mut out, None, many()).unwrap();
        assert_eq!(out.0, expected.as_bytes());
        std::fs::remove_file(&target).unwrap();
    }
}
