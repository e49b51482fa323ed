//! nyl-core: the pure core of nyl-render. Data in, data out: this crate performs no effects (no
//! filesystem, processes, environment or clock); `clippy.toml` beside its manifest forbids them, and
//! its dependencies cannot reach them. The `nyl-render` crate holds the effects and the commands.
//!
//! The modules follow the data:
//! - [`data`]: the value tree with provenance, YAML, JSON Pointers, diagnostics (shared by all).
//! - [`repository`]: the Argo CD plugin's parameters and environment.
//! - [`project`]: the project's files, their shapes and typed objects, layouts and globs, app
//!   files rendered as templates.
//! - [`values`]: targets, component contracts and imports, merging, coalescing, explain.
//! - [`expansion`]: rendered documents, scanned, and the namespace rule.
//! - [`outputs`]: what `nyl values` and `nyl explain` print.
//! - [`parallel`]: work split over two threads, with the results of doing it in order.

pub mod data;
pub mod expansion;
pub mod outputs;
pub mod parallel;
pub mod project;
pub mod repository;
pub mod values;
