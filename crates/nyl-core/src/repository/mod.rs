//! The repository as Argo CD hands it over: the plugin's parameters and environment.

pub mod argocd;
