//! YAML as Helm reads it (YAML 1.1 scalars, merge keys), into and out of the value tree.

mod read;
mod write;

pub use read::{parse_stream, resolve_plain, Limits, Parsed, Scalar};
pub use write::to_yaml;
