//! nyl's object kinds, typed: what a document is, and the checked objects read from it.
//!
//! Every decoder first holds the document to its strict shape ([`crate::schema`]) and reports all
//! problems; only a document without problems becomes a typed object.

use indexmap::IndexMap;

use crate::diagnostics::{Code, Diagnostic};
use crate::layouts::Layout;
use crate::provenance::{Layer, Loc, ObjectId};
use crate::schema::{self, Shape};
use crate::value::{Map, Node, Value};

pub const TARGETS_API: &str = "k8s.nyl/v1";
pub const INVOCATION_API: &str = "components.k8s.nyl/v1";
pub const CONTRACT_API: &str = "components.nyl/v1alpha1";

/// API groups that belong to nyl: a document in one of them with an unknown version is an error,
/// not a plain manifest.
const NYL_GROUPS: &[&str] = &["k8s.nyl", "components.k8s.nyl", "components.nyl"];

/// What a YAML document in an app or targets file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocKind {
    Cluster,
    DeploymentTarget,
    HelmChart,
    Invocation,
    /// Anything that is not nyl's: passed through to the output as it is.
    Manifest,
}

/// Classifies a document by `apiVersion` and `kind`.
pub fn classify(doc: &Node) -> Result<DocKind, Diagnostic> {
    let Some(map) = doc.as_map() else {
        return Err(Diagnostic::new(
            Code::InvalidDocument,
            format!("a document must be a mapping, found {}", doc.type_name()),
        )
        .at(doc.prov.loc));
    };
    let Some(api) = map.get("apiVersion").and_then(Node::as_str) else {
        return Ok(DocKind::Manifest);
    };
    let kind = map.get("kind").and_then(Node::as_str);
    match (api, kind) {
        (TARGETS_API, Some("Cluster")) => Ok(DocKind::Cluster),
        (TARGETS_API, Some("DeploymentTarget")) => Ok(DocKind::DeploymentTarget),
        (TARGETS_API, Some("HelmChart")) => Ok(DocKind::HelmChart),
        (TARGETS_API, kind) => Err(Diagnostic::new(
            Code::UnknownKind,
            format!(
                "{TARGETS_API} has no kind {}; it defines Cluster, DeploymentTarget and HelmChart",
                kind.map_or("(none)".to_string(), |k| format!("{k:?}"))
            ),
        )
        .at(doc.prov.loc)),
        (INVOCATION_API, _) => Ok(DocKind::Invocation),
        (api, _) if is_nyl_group(api) => Err(unknown_api_version(doc, api)),
        _ => Ok(DocKind::Manifest),
    }
}

fn is_nyl_group(api: &str) -> bool {
    api.split_once('/')
        .is_some_and(|(group, _)| NYL_GROUPS.contains(&group))
}

pub fn unknown_api_version(doc: &Node, api: &str) -> Diagnostic {
    let loc = doc.get("apiVersion").map_or(doc.prov.loc, |n| n.prov.loc);
    Diagnostic::new(
        Code::UnknownApiVersion,
        format!(
            "unknown apiVersion {api:?}; nyl knows {TARGETS_API} (Cluster, DeploymentTarget), \
             {INVOCATION_API} (invocations) and {CONTRACT_API} (nyl-component.yaml)"
        ),
    )
    .at(loc)
}

/// Holds `doc` to `shape`; `Err` with every problem when it does not fit.
pub fn check_shape(doc: &Node, shape: &Shape, object: Option<&str>) -> Result<(), Vec<Diagnostic>> {
    let mut out = Vec::new();
    schema::check(doc, shape, object, &mut out);
    if out.is_empty() {
        Ok(())
    } else {
        Err(out)
    }
}

/// How the catalog names a document's object: its `kind` and `metadata.name` (`?` when absent).
pub fn object_ref(doc: &Node) -> crate::provenance::ObjectRef {
    crate::provenance::ObjectRef {
        kind: doc
            .field("kind")
            .and_then(Node::as_str)
            .unwrap_or("?")
            .to_string(),
        name: name_of(doc).unwrap_or("?").to_string(),
        loc: doc.prov.loc,
    }
}

/// `metadata.name` of a shape-checked document.
pub fn name_of(doc: &Node) -> Option<&str> {
    doc.field("metadata")
        .and_then(|m| m.field("name"))
        .and_then(Node::as_str)
}

fn strings(node: Option<&Node>) -> Vec<(String, Loc)> {
    node.and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter_map(|n| Some((n.as_str()?.to_string(), n.prov.loc)))
        .collect()
}

/// The values mapping at `node` (an empty one at `fallback` when absent), tagged with `layer`.
fn values(node: Option<&Node>, fallback: Loc, layer: Layer) -> Node {
    let mut values = node.cloned().unwrap_or_else(|| {
        Node::new(
            Value::Map(Map::new()),
            crate::provenance::Prov::written(fallback),
        )
    });
    values.set_layer(layer);
    values
}

#[derive(Clone, Debug)]
pub struct Cluster {
    pub name: String,
    pub object: ObjectId,
    pub loc: Loc,
    pub values: Node,
    pub kube_version: Option<String>,
    pub api_versions: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct DeploymentTarget {
    pub name: String,
    pub object: ObjectId,
    pub loc: Loc,
    pub cluster_ref: String,
    pub cluster_ref_loc: Loc,
    pub values: Node,
    pub apps: Vec<(String, Loc)>,
}

/// A component invocation.
#[derive(Clone, Debug)]
pub struct Invocation {
    pub kind: String,
    pub kind_loc: Loc,
    pub name: String,
    pub namespace: Option<String>,
    pub object: ObjectId,
    pub loc: Loc,
    /// The chart values the invocation sets, tagged as [`Layer::Spec`].
    pub spec: Node,
    pub imports_enabled: bool,
    pub exclude: Vec<(String, Loc)>,
}

impl Invocation {
    /// `kind/name`, the way diagnostics name the invocation.
    pub fn display(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }
}

/// Decodes a Cluster; the caller has registered it as `object`.
pub fn cluster(doc: &Node, object: ObjectId) -> Result<Cluster, Vec<Diagnostic>> {
    let display = format!("Cluster/{}", name_of(doc).unwrap_or("?"));
    check_shape(doc, &schema::CLUSTER, Some(&display))?;
    let name = checked_name(doc, &display, NameRule::Object)?;
    let spec = doc.field("spec");
    let kubernetes = spec.and_then(|s| s.field("kubernetes"));
    Ok(Cluster {
        name,
        object,
        loc: doc.prov.loc,
        values: values(
            spec.and_then(|s| s.field("values")),
            doc.prov.loc,
            Layer::TargetValues { object },
        ),
        kube_version: kubernetes
            .and_then(|k| k.field("kubeVersion"))
            .and_then(Node::as_str)
            .map(str::to_string),
        api_versions: strings(kubernetes.and_then(|k| k.field("apiVersions")))
            .into_iter()
            .map(|(s, _)| s)
            .collect(),
    })
}

/// Decodes a DeploymentTarget; the caller has registered it as `object`.
pub fn deployment_target(
    doc: &Node,
    object: ObjectId,
) -> Result<DeploymentTarget, Vec<Diagnostic>> {
    let display = format!("DeploymentTarget/{}", name_of(doc).unwrap_or("?"));
    check_shape(doc, &schema::DEPLOYMENT_TARGET, Some(&display))?;
    let name = checked_name(doc, &display, NameRule::Object)?;
    let spec = doc.field("spec");
    let cluster_ref = spec
        .and_then(|s| s.field("clusterRef"))
        .and_then(|r| r.field("name"));
    Ok(DeploymentTarget {
        cluster_ref: cluster_ref
            .and_then(Node::as_str)
            .unwrap_or(&name)
            .to_string(),
        cluster_ref_loc: cluster_ref.map_or(doc.prov.loc, |n| n.prov.loc),
        name,
        object,
        loc: doc.prov.loc,
        values: values(
            spec.and_then(|s| s.field("values")),
            doc.prov.loc,
            Layer::TargetValues { object },
        ),
        apps: strings(spec.and_then(|s| s.field("apps"))),
    })
}

/// Decodes an invocation; the caller has registered it as `object`.
pub fn invocation(doc: &Node, object: ObjectId) -> Result<Invocation, Vec<Diagnostic>> {
    let kind = doc.field("kind").and_then(Node::as_str).unwrap_or("?");
    let display = format!("{kind}/{}", name_of(doc).unwrap_or("?"));
    check_shape(doc, &schema::INVOCATION, Some(&display))?;
    let mut problems = Vec::new();
    let name = checked_name(doc, &display, NameRule::Release).map_err(|e| problems.extend(e));
    let namespace = checked_namespace(doc, &display, &mut problems);
    let imports = doc.field("valueImports");
    let (Ok(name), true) = (name, problems.is_empty()) else {
        return Err(problems);
    };
    let kind_node = doc.get("kind");
    Ok(Invocation {
        kind: kind.to_string(),
        kind_loc: kind_node.map_or(doc.prov.loc, |n| n.prov.loc),
        name,
        namespace,
        object,
        loc: doc.prov.loc,
        spec: values(doc.field("spec"), doc.prov.loc, Layer::Spec { object }),
        imports_enabled: imports
            .and_then(|i| i.field("enabled"))
            .and_then(Node::as_bool)
            .unwrap_or(true),
        exclude: strings(imports.and_then(|i| i.field("exclude"))),
    })
}

/// Where a HelmChart's chart comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChartSource {
    /// A chart directory, relative to the file the HelmChart is written in.
    Path(String),
    Remote(RemoteChart),
}

/// A `HelmChart` resource: a chart rendered as it is, with its own values and no contract.
#[derive(Clone, Debug)]
pub struct HelmChart {
    pub name: String,
    pub namespace: Option<String>,
    pub object: ObjectId,
    pub loc: Loc,
    pub chart: ChartSource,
    /// The chart values, tagged as [`Layer::Spec`].
    pub values: Node,
    pub include_crds: bool,
}

/// Decodes a HelmChart; the caller has registered it as `object`.
pub fn helm_chart(doc: &Node, object: ObjectId) -> Result<HelmChart, Vec<Diagnostic>> {
    let display = format!("HelmChart/{}", name_of(doc).unwrap_or("?"));
    check_shape(doc, &schema::HELM_CHART, Some(&display))?;
    let mut problems = Vec::new();
    let name = checked_name(doc, &display, NameRule::Release).map_err(|e| problems.extend(e));
    let namespace = checked_namespace(doc, &display, &mut problems);
    let spec = doc.field("spec");
    let chart_node = spec.and_then(|s| s.field("chart"));
    let text = |key: &str| chart_node.and_then(|c| c.field(key)).and_then(Node::as_str);
    let chart = match (text("path"), text("repository"), text("name")) {
        (Some(path), None, None) => Ok(ChartSource::Path(path.to_string())),
        (None, Some(repository), Some(chart)) if RemoteChart::is_shortcut(repository) => {
            Ok(ChartSource::Remote(RemoteChart {
                repository: repository.trim_end_matches('/').to_string(),
                chart: Some(chart.to_string()),
                version: text("version").map(str::to_string),
            }))
        }
        (None, Some(repository), Some(_)) => Err(format!(
            "`spec.chart.repository` {repository:?} must start with oci://, http:// or https://"
        )),
        _ => Err("`spec.chart` needs either `path`, or `repository` and `name`".to_string()),
    };
    let chart = chart.map_err(|why| {
        let loc = chart_node.map_or(doc.prov.loc, |n| n.prov.loc);
        problems.push(
            Diagnostic::new(Code::InvalidField, why)
                .at(loc)
                .object(&display),
        );
    });
    let (Ok(name), Ok(chart), true) = (name, chart, problems.is_empty()) else {
        return Err(problems);
    };
    Ok(HelmChart {
        name,
        namespace,
        object,
        loc: doc.prov.loc,
        chart,
        values: values(
            spec.and_then(|s| s.field("values")),
            doc.prov.loc,
            Layer::Spec { object },
        ),
        include_crds: spec
            .and_then(|s| s.field("includeCrds"))
            .and_then(Node::as_bool)
            .unwrap_or(true),
    })
}

/// `metadata.namespace`, checked as an RFC 1123 label.
fn checked_namespace(doc: &Node, display: &str, problems: &mut Vec<Diagnostic>) -> Option<String> {
    let node = doc.field("metadata").and_then(|m| m.field("namespace"))?;
    let ns = node.as_str().unwrap_or_default();
    if let Err(why) = check_name(ns, NameRule::Namespace) {
        problems.push(
            Diagnostic::new(Code::InvalidName, format!("namespace {ns:?} {why}"))
                .at(node.prov.loc)
                .object(display),
        );
    }
    Some(ns.to_string())
}

/// The project settings of `nyl.toml`.
#[derive(Clone, Debug)]
pub struct Config {
    pub components_search_paths: Vec<String>,
    pub targets_search_paths: Vec<String>,
    /// Invocation kind -> (component path or remote shortcut, where it was written).
    pub aliases: IndexMap<String, (String, Loc)>,
    pub limits: Limits,
    /// The declared layouts, with where each is written.
    pub layouts: Vec<(Layout, Loc)>,
}

/// `[limits]` of `nyl.toml`: bounds on what one run reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_file_bytes: u64,
    pub max_files: u64,
    pub max_total_bytes: u64,
    pub max_nodes: u64,
    pub max_render_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 4 << 20,
            max_files: 2000,
            max_total_bytes: 64 << 20,
            max_nodes: 500_000,
            max_render_bytes: 64 << 20,
        }
    }
}

impl Default for Config {
    /// The settings of an empty `nyl.toml`.
    fn default() -> Self {
        Config {
            components_search_paths: vec![DEFAULT_COMPONENTS.to_string()],
            targets_search_paths: vec![DEFAULT_TARGETS.to_string()],
            aliases: IndexMap::new(),
            limits: Limits::default(),
            layouts: Vec::new(),
        }
    }
}

const DEFAULT_COMPONENTS: &str = "components";
const DEFAULT_TARGETS: &str = "targets";

/// Decodes `nyl.toml` (already turned into a value tree).
pub fn config(doc: &Node) -> Result<Config, Vec<Diagnostic>> {
    check_shape(doc, &schema::CONFIG, Some("nyl.toml"))?;
    let project = doc.field("project");
    let paths = |key: &str, default: &str| match project.and_then(|p| p.field(key)) {
        Some(list) => strings(Some(list)).into_iter().map(|(s, _)| s).collect(),
        None => vec![default.to_string()],
    };
    let aliases = project
        .and_then(|p| p.field("aliases"))
        .and_then(Node::as_map)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), (v.as_str()?.to_string(), v.prov.loc))))
                .collect()
        })
        .unwrap_or_default();
    let limits = doc.field("limits");
    let limit = |key: &str, default: u64| {
        limits
            .and_then(|l| l.field(key))
            .and_then(|n| match &n.value {
                Value::Number(n) => n.as_u64(),
                _ => None,
            })
            .unwrap_or(default)
    };
    let d = Limits::default();
    let layouts = doc
        .field("layouts")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .map(|l| {
            let text = |k: &str| l.field(k).and_then(Node::as_str).map(str::to_string);
            let layout = Layout {
                name: text("name").unwrap_or_default(),
                id: text("id").unwrap_or_default(),
                app: text("app").unwrap_or_default(),
                chart: text("chart").unwrap_or_default(),
                values: strings(l.field("values"))
                    .into_iter()
                    .map(|(s, _)| s)
                    .collect(),
                target: text("target"),
                namespace: text("namespace"),
                release: text("release"),
            };
            (layout, l.prov.loc)
        })
        .collect();
    Ok(Config {
        layouts,
        limits: Limits {
            max_file_bytes: limit("max_file_bytes", d.max_file_bytes),
            max_files: limit("max_files", d.max_files),
            max_total_bytes: limit("max_total_bytes", d.max_total_bytes),
            max_nodes: limit("max_nodes", d.max_nodes),
            max_render_bytes: limit("max_render_bytes", d.max_render_bytes),
        },
        components_search_paths: paths("components_search_paths", DEFAULT_COMPONENTS),
        targets_search_paths: paths("targets_search_paths", DEFAULT_TARGETS),
        aliases,
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// Cluster and DeploymentTarget names: an RFC 1123 subdomain, like any Kubernetes object.
    Object,
    /// A Helm release name: Helm's own rule, at most 53 characters.
    Release,
    /// A namespace: an RFC 1123 label.
    Namespace,
}

fn checked_name(doc: &Node, display: &str, rule: NameRule) -> Result<String, Vec<Diagnostic>> {
    let node = doc.field("metadata").and_then(|m| m.field("name"));
    let name = node.and_then(Node::as_str).unwrap_or_default();
    check_name(name, rule)
        .map(|()| name.to_string())
        .map_err(|why| {
            vec![
                Diagnostic::new(Code::InvalidName, format!("name {name:?} {why}"))
                    .at(node.map_or(doc.prov.loc, |n| n.prov.loc))
                    .object(display),
            ]
        })
}

/// Checks a name against its rule; `Err` says what is wrong.
pub fn check_name(name: &str, rule: NameRule) -> Result<(), String> {
    let (max, dots, what) = match rule {
        NameRule::Object => (253, true, "an RFC 1123 subdomain"),
        NameRule::Release => (53, true, "a Helm release name"),
        NameRule::Namespace => (63, false, "an RFC 1123 label"),
    };
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let ok = if dots {
        name.split('.').all(label_ok)
    } else {
        label_ok(name)
    };
    if name.len() > max {
        Err(format!(
            "is longer than {max} characters, the limit for {what}"
        ))
    } else if !ok {
        Err(format!(
            "is not {what}: use lowercase letters, digits and '-'{}, starting and ending with a \
             letter or digit",
            if dots { " (and '.' between parts)" } else { "" }
        ))
    } else {
        Ok(())
    }
}

/// Checks the syntax of a local component path such as `example/v1/PostgresDb`: '/'-separated
/// segments of letters, digits, '.', '_' and '-', none of them `.` or `..`, so a kind can never
/// point outside a search path.
pub fn check_component_path(path: &str) -> Result<(), String> {
    let bad = path.split('/').find(|s| {
        s.is_empty()
            || *s == "."
            || *s == ".."
            || !s
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    });
    match bad {
        None => Ok(()),
        Some(segment) => Err(format!(
            "{path:?} is not a component path: segment {segment:?} must be letters, digits, '.', \
             '_' or '-' (and not '.' or '..')"
        )),
    }
}

/// A remote chart shortcut: `<base>[#<chart>][@<version>]` with base `oci://`, `http://` or
/// `https://`. For `oci://` the chart is the last segment of the base unless `#chart` names it;
/// an `http(s)://` base is a chart repository and needs `#chart`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteChart {
    pub repository: String,
    pub chart: Option<String>,
    pub version: Option<String>,
}

impl std::fmt::Display for RemoteChart {
    /// The shortcut as written: `<base>[#<chart>][@<version>]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.repository)?;
        if let Some(chart) = &self.chart {
            write!(f, "#{chart}")?;
        }
        if let Some(version) = &self.version {
            write!(f, "@{version}")?;
        }
        Ok(())
    }
}

impl RemoteChart {
    pub fn is_shortcut(kind: &str) -> bool {
        ["oci://", "http://", "https://"]
            .iter()
            .any(|p| kind.starts_with(p))
    }

    pub fn parse(kind: &str) -> Result<RemoteChart, String> {
        if !Self::is_shortcut(kind) {
            return Err(format!("{kind:?} is not a remote chart shortcut: it must start with oci://, http:// or https://"));
        }
        // The version follows the last '@' after the last '/' or '#', so `https://user@host` is
        // not mistaken for a version.
        let tail_start = kind.rfind(['/', '#']).map_or(0, |i| i + 1);
        let (rest, version) = match kind[tail_start..].rfind('@') {
            Some(i) => (&kind[..tail_start + i], Some(&kind[tail_start + i + 1..])),
            None => (kind, None),
        };
        let (repository, chart) = match rest.split_once('#') {
            Some((base, chart)) => (base, Some(chart)),
            None => (rest, None),
        };
        let empty = |s: Option<&str>| s.is_some_and(str::is_empty);
        if empty(version) || empty(chart) || repository.ends_with("://") {
            return Err(format!("{kind:?} is not a remote chart shortcut `<base>[#<chart>][@<version>]`: a part is empty"));
        }
        if chart.is_none() && !repository.starts_with("oci://") {
            return Err(format!("{kind:?} names a chart repository but no chart: write {repository}#CHART[@VERSION]"));
        }
        Ok(RemoteChart {
            repository: repository.to_string(),
            chart: chart.map(str::to_string),
            version: version.map(str::to_string),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::doc;

    #[test]
    fn documents_are_classified_by_api_version_and_kind() {
        let kind = |t: &str| classify(&doc(t)).map_err(|d| d.code);
        assert_eq!(
            kind("apiVersion: k8s.nyl/v1\nkind: Cluster\n"),
            Ok(DocKind::Cluster)
        );
        assert_eq!(
            kind("apiVersion: k8s.nyl/v1\nkind: DeploymentTarget\n"),
            Ok(DocKind::DeploymentTarget)
        );
        assert_eq!(
            kind("apiVersion: components.k8s.nyl/v1\nkind: a/b\n"),
            Ok(DocKind::Invocation)
        );
        assert_eq!(
            kind("apiVersion: v1\nkind: ConfigMap\n"),
            Ok(DocKind::Manifest)
        );
        assert_eq!(
            kind("apiVersion: k8s.nyl/v1\nkind: Clustr\n"),
            Err(Code::UnknownKind)
        );
        assert_eq!(
            kind("apiVersion: k8s.nyl/v2\nkind: Cluster\n"),
            Err(Code::UnknownApiVersion)
        );
        assert_eq!(
            kind("apiVersion: components.k8s.nyl/v2\nkind: a\n"),
            Err(Code::UnknownApiVersion)
        );
        assert_eq!(kind("- a\n"), Err(Code::InvalidDocument));
    }

    #[test]
    fn remote_shortcuts_parse() {
        let r = RemoteChart::parse("https://charts.example.com/stable#nginx@1.2.3").unwrap();
        assert_eq!(r.repository, "https://charts.example.com/stable");
        assert_eq!(r.chart.as_deref(), Some("nginx"));
        assert_eq!(r.version.as_deref(), Some("1.2.3"));
        let r = RemoteChart::parse("oci://ghcr.io/org/charts/app@0.1.0").unwrap();
        assert_eq!(
            (r.repository.as_str(), r.chart, r.version.as_deref()),
            ("oci://ghcr.io/org/charts/app", None, Some("0.1.0"))
        );
        let r = RemoteChart::parse("https://user@host.example/repo#c").unwrap();
        assert_eq!(
            (r.repository.as_str(), r.version),
            ("https://user@host.example/repo", None)
        );
        for bad in [
            "https://x.example",
            "oci://",
            "https://x#",
            "oci://x@",
            "ftp://x#y",
        ] {
            assert!(RemoteChart::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn release_names_follow_helm() {
        assert!(check_name("app-db", NameRule::Release).is_ok());
        assert!(check_name("app.db", NameRule::Release).is_ok());
        assert!(check_name("App", NameRule::Release).is_err());
        assert!(check_name("-a", NameRule::Release).is_err());
        assert!(check_name(&"a".repeat(54), NameRule::Release).is_err());
        assert!(check_name("a.b", NameRule::Namespace).is_err());
        assert!(check_name("", NameRule::Object).is_err());
    }

    #[test]
    fn component_paths_cannot_escape() {
        assert!(check_component_path("example/v1/PostgresDb").is_ok());
        for bad in ["../x", "a//b", "/a", "a/./b", "a b", "a/"] {
            assert!(check_component_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn deployment_target_cluster_ref_defaults_to_its_name() {
        let d = doc("apiVersion: k8s.nyl/v1\nkind: DeploymentTarget\nmetadata: {name: prod}\n");
        assert_eq!(
            deployment_target(&d, ObjectId(0)).unwrap().cluster_ref,
            "prod"
        );
    }

    #[test]
    fn invocation_spec_is_tagged_as_spec() {
        let d =
            doc("apiVersion: components.k8s.nyl/v1\nkind: a\nmetadata: {name: x}\nspec: {a: 1}\n");
        let inv = invocation(&d, ObjectId(3)).unwrap();
        assert_eq!(
            inv.spec.get("a").unwrap().prov.layer,
            Layer::Spec {
                object: ObjectId(3)
            }
        );
        assert!(inv.imports_enabled);
    }

    #[test]
    fn invalid_release_name_and_namespace_are_both_reported() {
        let d = doc("apiVersion: components.k8s.nyl/v1\nkind: a\nmetadata: {name: Bad_Name, namespace: Also.Bad}\n");
        let errs = invocation(&d, ObjectId(0)).unwrap_err();
        assert_eq!(errs.len(), 2);
        assert!(errs.iter().all(|d| d.code == Code::InvalidName));
    }
}
