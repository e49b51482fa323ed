//! From a target and an invocation to a release's values: the target's effective values,
//! component contracts and imports, the merge rules, Helm's coalescing, explain's history, and
//! the release built from them.

pub mod coalesce;
pub mod components;
pub mod explain;
pub mod merge;
pub mod release;
pub mod targets;
