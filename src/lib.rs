//! nyl-render: render Kubernetes manifests from Helm-chart components with layered platform values.
//!
//! This crate is the effectful shell and the `nyl` binary; the pure core (values, YAML, schemas,
//! targets, components, coalescing, explain; no filesystem, processes, environment or clock) is the
//! `nyl-core` crate in `crates/nyl-core`, whose `clippy.toml` forbids effects.
//!
//! The folders follow the data, after the core's:
//! - [`project`]: repository -> project: finding the project root and loading its files, within
//!   the limits.
//! - [`apps`]: apps and invocations: layout apps on disk, and the [`apps::pipeline`] that reads an
//!   app's files into releases (with their values) and manifests, each session on a shallow copy
//!   of the project the run loaded once: one catalog, clusters and targets shared by all, each
//!   session adding its own files and objects over the catalog.
//! - [`helm`]: the real `helm`, its render cache, and `values.schema.json` checked before it runs.
//! - [`expansion`]: rendering, level by level and in parallel, fail closed; a run's app renders
//!   share one [`expansion::render::Run`] (project, helm, render cache, values schemas).
//! - [`outputs`]: render trees, diffs between revisions, the validate report.
//! - [`commands`]: the command line, one module per command.
//! - [`process`]: child processes bounded in time and output, stopped with nyl.
//! - [`progress`]: progress and summary of long runs on a terminal.

pub(crate) mod apps;
pub mod commands;
pub(crate) mod expansion;
pub(crate) mod helm;
pub(crate) mod outputs;
pub(crate) mod process;
pub(crate) mod progress;
pub(crate) mod project;

// The surface the binary and the tests use; everything else is the crate's own.
pub use project::{parse_config, Project};
