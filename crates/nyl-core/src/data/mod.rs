//! What every stage passes on: the value tree with provenance, YAML read the way Helm reads it,
//! JSON Pointers, and the diagnostics with their registry of codes.

pub mod diagnostics;
pub mod pointer;
pub mod provenance;
pub mod value;
pub mod yaml;
