//! A Helm release to render: its chart, its values with their provenance and import report, and
//! the layers explain lists.

use std::path::PathBuf;

use crate::data::provenance::Loc;
use crate::data::value::Node;
use crate::project::objects::ChartSource;
use crate::values::components::ImportReport;
use crate::values::targets::Target;

/// A Helm release to render: its values (with provenance and import report) and its chart.
#[derive(Clone, Debug)]
pub struct Release {
    pub values: InvocationValues,
    /// As Helm is to be given it: a local chart's directory, or the remote chart.
    pub chart: ChartSource<PathBuf>,
    pub include_crds: bool,
    /// The release's target's cluster facts, for Helm's capabilities (flags win over them).
    pub kube_version: Option<String>,
    pub api_versions: Vec<String>,
    /// The layers whose merge `values.values` is, lowest first (for explain).
    pub layers: Vec<ExplainLayer>,
}

impl Release {
    /// The one way to build a release: Helm's capabilities come from the target's cluster facts.
    pub fn new(
        values: InvocationValues,
        chart: ChartSource<PathBuf>,
        target: Option<&Target>,
        include_crds: bool,
        layers: Vec<ExplainLayer>,
    ) -> Release {
        Release {
            values,
            chart,
            include_crds,
            kube_version: target.and_then(|t| t.kube_version.clone()),
            api_versions: target.map(|t| t.api_versions.clone()).unwrap_or_default(),
            layers,
        }
    }
}

/// One layer of a release's values, as explain lists it.
#[derive(Clone, Debug)]
pub struct ExplainLayer {
    /// `imports`, `spec`, `layer 2 FILE`, `runtime values`.
    pub label: String,
    /// `None` for a layout values file that does not exist (it contributes nothing).
    pub node: Option<Node>,
}

impl ExplainLayer {
    pub fn new(label: impl Into<String>, node: Option<Node>) -> Self {
        ExplainLayer {
            label: label.into(),
            node,
        }
    }
}

/// The evaluated values of one invocation.
#[derive(Clone, Debug)]
pub struct InvocationValues {
    /// Where the invocation is written.
    pub loc: Loc,
    pub kind: String,
    /// The resolved chart: a component path, or the remote shortcut.
    pub chart: String,
    pub name: String,
    pub namespace: String,
    pub target: Option<String>,
    pub values: Node,
    pub imports: Vec<ImportReport>,
}
