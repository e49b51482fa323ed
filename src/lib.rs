//! nyl-render: render Kubernetes manifests from Helm-chart components with layered platform values.
//!
//! The library is a pure core and a thin effectful shell.
//!
//! Core (data in, data out; no filesystem, processes or environment):
//! - [`provenance`]: files, objects and layers that every value is tagged with.
//! - [`value`]: the value tree ([`value::Node`]) that carries provenance on every node.
//! - [`yaml`]: reading YAML the way Helm does (YAML 1.1) into that tree, and writing it back.
//! - [`pointer`]: RFC 6901 JSON Pointers.
//! - [`merge`]: the merge rules (maps merge, everything else replaces, null survives).
//! - [`diagnostics`]: the registry of stable codes and the diagnostics that carry them.
//! - [`schema`]: strict shapes of nyl's file kinds, checked with every problem reported.
//! - [`objects`]: the typed nyl objects (nyl.toml, Cluster, DeploymentTarget, invocation, contract).
//! - [`targets`]: choosing the target and computing its effective values.
//! - [`components`]: component contracts and value imports.
//! - [`report`]: what `nyl values` prints.
//!
//! Shell:
//! - [`project`]: finding the project root and loading its files.
//! - [`pipeline`]: one run from paths to evaluated values.
//! - [`cli`]: the command line.

pub mod apps;
pub mod argocd;
pub mod cache;
pub mod cli;
pub mod coalesce;
pub mod components;
pub mod diagnostics;
pub mod explain;
pub mod glob;
pub mod helm;
pub mod layouts;
pub mod merge;
pub mod objects;
pub mod pipeline;
pub mod pointer;
pub mod project;
pub mod provenance;
pub mod reference;
pub mod render;
pub mod report;
pub mod schema;
pub mod targets;
pub mod validate;
pub mod value;
pub mod values_schema;
pub mod yaml;
