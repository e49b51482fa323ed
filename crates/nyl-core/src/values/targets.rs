//! Choosing the target of a run and computing its effective values.
//!
//! `--target NAME` picks the DeploymentTarget NAME; when there is none, the Cluster NAME alone is
//! the target. The effective values are the Cluster's values with the DeploymentTarget's merged
//! over them (the target wins), by the one merge rule of [`crate::values::merge`].

use std::collections::HashMap;

use crate::data::diagnostics::{Code, Diagnostic};
use crate::data::provenance::ObjectName;
use crate::data::value::Node;
use crate::project::objects::{Cluster, DeploymentTarget};
use crate::project::template;
use crate::values::merge::merge;

/// The target of a run.
#[derive(Clone, Debug)]
pub struct Target {
    /// The name `--target` used.
    pub name: String,
    /// `DeploymentTarget/NAME` or `Cluster/NAME`.
    pub display: String,
    pub cluster: String,
    /// The Cluster and DeploymentTarget documents, as templates see them (`cluster`, `target`);
    /// no DeploymentTarget when the target is a Cluster alone.
    pub cluster_document: Node,
    pub target_document: Option<Node>,
    /// Cluster values merged with the DeploymentTarget's values.
    pub values: Node,
    pub kube_version: Option<String>,
    pub api_versions: Vec<String>,
}

impl Target {
    /// What app file templates see when rendering for this target.
    pub fn template_context(&self) -> template::Context {
        template::Context {
            values: Some(self.values.clone()),
            cluster: Some(self.cluster_document.clone()),
            target: self.target_document.clone(),
            target_name: Some(self.name.clone()),
        }
    }
}

pub fn select(
    name: &str,
    clusters: &[Cluster],
    targets: &[DeploymentTarget],
) -> Result<Target, Diagnostic> {
    let find_cluster = |n: &str| clusters.iter().find(|c| c.name == n);
    let Some(target) = targets.iter().find(|t| t.name == name) else {
        return match find_cluster(name) {
            Some(c) => Ok(Target {
                name: name.to_string(),
                display: ObjectName::new("Cluster", name).to_string(),
                cluster: c.name.clone(),
                cluster_document: c.document.clone(),
                target_document: None,
                values: c.values.clone(),
                kube_version: c.kube_version.clone(),
                api_versions: c.api_versions.clone(),
            }),
            None => Err(Diagnostic::new(
                Code::TargetNotFound,
                format!(
                    "no DeploymentTarget or Cluster is named {name:?}; known: {}",
                    known(clusters, targets)
                ),
            )),
        };
    };
    let Some(cluster) = find_cluster(&target.cluster_ref) else {
        return Err(Diagnostic::new(
            Code::ClusterNotFound,
            format!(
                "DeploymentTarget {name:?} deploys to Cluster {:?}, which does not exist; set \
                 spec.clusterRef.name to one of: {}",
                target.cluster_ref,
                names(clusters.iter().map(|c| c.name.as_str()))
            ),
        )
        .at(target.cluster_ref_loc)
        .object(ObjectName::new("DeploymentTarget", name).to_string()));
    };
    Ok(Target {
        name: name.to_string(),
        display: ObjectName::new("DeploymentTarget", name).to_string(),
        cluster: cluster.name.clone(),
        cluster_document: cluster.document.clone(),
        target_document: Some(target.document.clone()),
        values: merge(cluster.values.clone(), target.values.clone()),
        kube_version: cluster.kube_version.clone(),
        api_versions: cluster.api_versions.clone(),
    })
}

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut all: Vec<_> = names.collect();
    all.sort_unstable();
    all.dedup();
    if all.is_empty() {
        "(none)".to_string()
    } else {
        all.join(", ")
    }
}

fn known(clusters: &[Cluster], targets: &[DeploymentTarget]) -> String {
    names(
        clusters
            .iter()
            .map(|c| c.name.as_str())
            .chain(targets.iter().map(|t| t.name.as_str())),
    )
}

/// `duplicate_object` for every Cluster or DeploymentTarget whose name an earlier one has.
pub fn check_unique(clusters: &[Cluster], targets: &[DeploymentTarget]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let entries = clusters
        .iter()
        .map(|c| ("Cluster", &c.name, c.loc))
        .chain(targets.iter().map(|t| ("DeploymentTarget", &t.name, t.loc)));
    let mut seen = HashMap::new();
    for (kind, name, loc) in entries {
        if let Some(first) = seen.insert((kind, name), loc) {
            out.push(
                Diagnostic::new(
                    Code::DuplicateObject,
                    format!("{kind} {name:?} is defined more than once; rename or remove one"),
                )
                .at(loc)
                .related(first)
                .object(ObjectName::new(kind, name).to_string()),
            );
        }
    }
    out
}
