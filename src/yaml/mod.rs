//! YAML as Helm reads it (YAML 1.1 scalars, merge keys), into and out of the value tree, and
//! values as Helm must receive them.

mod json;
mod read;
mod split;
mod write;

pub use json::to_helm_json;
pub use read::{
    parse_stream, parse_stream_from, resolve_plain, Limits, Mode, Parsed, Scalar, Spent, MAX_BYTES,
    MAX_DEPTH, MAX_NODES,
};
pub use split::{parse_documents, Document};
pub use write::to_yaml;

/// The first document of `text`, for unit tests.
#[cfg(test)]
pub(crate) fn doc(text: &str) -> crate::value::Node {
    parse_stream(text, crate::provenance::FileId(0), &Limits::default())
        .docs
        .remove(0)
}
