//! nyl-render: render Kubernetes manifests from Helm-chart components with layered platform values.
//!
//! The library is a pure core and a thin effectful shell.
//!
//! Core (data in, data out; no filesystem, processes or environment):
//! - [`provenance`]: files, objects and layers that every value is tagged with.
//! - [`value`]: the value tree ([`value::Node`]) that carries provenance on every node.
//! - [`yaml`]: reading YAML the way Helm does (YAML 1.1) into that tree, and writing it back.
//! - [`pointer`](mod@pointer): RFC 6901 JSON Pointers.
//! - [`merge`]: the merge rules (maps merge, everything else replaces, null survives).
//! - [`coalesce`]: Helm's coalescing of values over chart defaults and subcharts.
//! - [`diagnostics`]: the registry of stable codes and the diagnostics that carry them.
//! - [`schema`]: strict shapes of nyl's file kinds, checked with every problem reported.
//! - [`reference`](mod@reference): the reference page and JSON Schemas, generated from those shapes.
//! - [`objects`]: the typed nyl objects (nyl.toml, Cluster, DeploymentTarget, invocation, HelmChart).
//! - [`targets`]: choosing the target and computing its effective values.
//! - [`components`]: component contracts and value imports.
//! - [`layouts`]: layout patterns, placeholders and app ids.
//! - [`glob`]: the globs of `spec.apps`.
//! - [`explain`]: the history of one value through the layers.
//! - [`argocd`]: the Argo CD plugin's parameters and environment.
//! - [`report`]: what `nyl values` and `nyl explain` print.
//! - [`manifest`]: documents passed on as text, scanned, and the namespace rule.
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
pub mod argocd;
pub mod cache;
pub mod cli;
pub mod coalesce;
pub mod components;
pub mod diagnostics;
pub mod diff;
pub mod explain;
pub mod glob;
pub mod helm;
pub mod layouts;
pub mod manifest;
pub mod merge;
pub mod objects;
pub mod pipeline;
pub mod pointer;
pub mod process;
pub mod project;
pub mod provenance;
pub mod reference;
pub mod render;
pub mod report;
pub mod schema;
pub mod targets;
pub mod tree;
pub mod validate;
pub mod value;
pub mod values_schema;
pub mod yaml;
