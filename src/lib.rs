//! nyl-render: render Kubernetes manifests from Helm-chart components with layered platform values.
//!
//! This crate is the effectful shell and the `nyl` binary; the pure core (values, YAML, schemas,
//! targets, components, coalescing, explain; no filesystem, processes, environment or clock) is the
//! `nyl-core` crate in `crates/nyl-core`, whose `clippy.toml` forbids effects.
//!
//! Shell:
//! - [`project`]: finding the project root and loading its files, within the limits.
//! - [`pipeline`]: one run from paths to releases and manifests.
//! - [`apps`]: layout apps on disk.
//! - [`helm`]: the real `helm`.
//! - [`process`]: child processes bounded in time and output, stopped with nyl.
//! - [`cache`]: the content-addressed render cache.
//! - [`render`]: rendering, level by level and in parallel, fail closed.
//! - [`values_schema`]: `values.schema.json` checked before Helm runs.
//! - [`validate`]: `nyl validate`.
//! - [`cli`]: the command line.

pub mod apps;
pub mod cache;
pub mod cli;
pub mod diff;
pub mod helm;
pub mod pipeline;
pub mod process;
pub mod project;
pub mod render;
pub mod tree;
pub mod validate;
pub mod values_schema;
