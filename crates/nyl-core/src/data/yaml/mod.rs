//! YAML as Helm reads it (YAML 1.1 scalars, merge keys), into and out of the value tree, and
//! values as Helm must receive them; and documents as text: split byte for byte, and scanned for
//! the few fields nyl must look at.

mod json;
mod read;
mod scan;
mod split;
mod write;

pub use json::to_helm_json;
pub use read::{
    parse_stream, parse_stream_from, resolve_plain, Limits, Mode, Parsed, Scalar, Spent, MAX_BYTES,
    MAX_DEPTH, MAX_NODES,
};
pub use scan::{scan, scan_following, Crd, Edit, Head};
pub use split::{cut, parse_documents, split, with_template, Document, Piece};
pub use write::to_yaml;

/// `s` as a YAML scalar that reads back as the string `s` (plain when that is safe).
pub fn scalar(s: &str) -> String {
    write::quoted_if_needed(s)
}

/// The lines of `text` with their line breaks: `\n`, `\r\n`, or a `\r` alone, as YAML reads them.
/// `memchr` finds the breaks: splitting and scanning Helm's output is most of a cold render.
fn lines_inclusive(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let end = line_end(text.as_bytes(), start);
        let line = &text[start..end];
        start = end;
        Some(line)
    })
}

/// Where the line that starts at `start` ends, its line break included.
fn line_end(bytes: &[u8], start: usize) -> usize {
    match memchr::memchr2(b'\n', b'\r', &bytes[start..]) {
        Some(i) if bytes[start + i] == b'\r' && bytes.get(start + i + 1) == Some(&b'\n') => {
            start + i + 2
        }
        Some(i) => start + i + 1,
        None => bytes.len(),
    }
}

/// The first document of `text`, for unit tests.
#[cfg(test)]
pub(crate) fn doc(text: &str) -> crate::data::value::Node {
    parse_stream(text, crate::data::provenance::FileId(0), &Limits::default())
        .docs
        .remove(0)
}

/// xorshift64*: a small deterministic generator for the randomized tests, so failures reproduce.
#[cfg(test)]
pub(crate) struct Rng(pub u64);

#[cfg(test)]
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_are_split_as_split_inclusive_splits_them() {
        for text in ["", "a", "a\n", "a\nb", "\n\nb\n", "é\r\nü\n\n"] {
            assert_eq!(
                super::lines_inclusive(text).collect::<Vec<_>>(),
                text.split_inclusive('\n').collect::<Vec<_>>(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_carriage_return_alone_ends_a_line() {
        assert_eq!(
            super::lines_inclusive("a\rb\r\nc\r").collect::<Vec<_>>(),
            ["a\r", "b\r\n", "c\r"]
        );
    }
}
