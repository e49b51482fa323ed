//! YAML as Helm reads it (YAML 1.1 scalars, merge keys), into and out of the value tree, and
//! values as Helm must receive them; and documents as text: split byte for byte, and scanned for
//! the few fields nyl must look at.

mod json;
mod lines;
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
