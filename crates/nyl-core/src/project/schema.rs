//! Strict shapes of nyl's file kinds, and the checker that holds a document to them.
//!
//! A shape says which fields an object has, their types, which are required, their defaults and
//! what they mean. The same statics drive the strict check here and the reference documentation,
//! so the two cannot drift apart. The check reports every problem of a document, not only the
//! first: unknown fields, wrong types and missing required fields, each with its line.
//!
//! For nyl's own fields an explicit null counts as absent (`spec:` with nothing after it); inside
//! Helm values (`Shape::Values`) null is data and is kept.

use crate::data::diagnostics::{Code, Diagnostic};
use crate::data::value::{Node, Value};

/// The names of the fields of nyl's file kinds, spelled once: the shapes below declare them and
/// the decoders (`objects`) read them.
pub mod names {
    pub const ALIASES: &str = "aliases";
    pub const ANNOTATIONS: &str = "annotations";
    pub const API_VERSION: &str = "apiVersion";
    pub const API_VERSIONS: &str = "apiVersions";
    pub const APP: &str = "app";
    pub const APPLICATION_GROUP_SELECTOR: &str = "applicationGroupSelector";
    pub const APPS: &str = "apps";
    pub const ARGOCD_REF: &str = "argocdRef";
    pub const CHART: &str = "chart";
    pub const CLUSTER_REF: &str = "clusterRef";
    pub const CLUSTER_SCOPED_KINDS: &str = "cluster_scoped_kinds";
    pub const COMPONENTS_SEARCH_PATHS: &str = "components_search_paths";
    pub const DESTINATION: &str = "destination";
    pub const ENABLED: &str = "enabled";
    pub const EXCLUDE: &str = "exclude";
    pub const FROM: &str = "from";
    pub const GITOPS_SCAFFOLD_PATH: &str = "gitops_scaffold_path";
    pub const HELM_CHART_SEARCH_PATHS: &str = "helm_chart_search_paths";
    pub const HELM_TIMEOUT_SECONDS: &str = "helm_timeout_seconds";
    pub const ID: &str = "id";
    pub const INCLUDE: &str = "include";
    pub const INCLUDE_CRDS: &str = "includeCrds";
    pub const KIND: &str = "kind";
    pub const KUBE_VERSION: &str = "kubeVersion";
    pub const KUBERNETES: &str = "kubernetes";
    pub const LABELS: &str = "labels";
    pub const LAYOUTS: &str = "layouts";
    pub const LIMITS: &str = "limits";
    pub const LIVE: &str = "live";
    pub const MAX_FILE_BYTES: &str = "max_file_bytes";
    pub const MAX_FILES: &str = "max_files";
    pub const MAX_NODES: &str = "max_nodes";
    pub const MAX_RENDER_BYTES: &str = "max_render_bytes";
    pub const MAX_TOTAL_BYTES: &str = "max_total_bytes";
    pub const MAX_VALUE_BYTES: &str = "max_value_bytes";
    pub const METADATA: &str = "metadata";
    pub const NAME: &str = "name";
    pub const NAMESPACE: &str = "namespace";
    pub const PATH: &str = "path";
    pub const PROFILE: &str = "profile";
    pub const PROJECT: &str = "project";
    pub const PUBLICATION: &str = "publication";
    pub const RELEASE: &str = "release";
    pub const RELEASE_INPUTS: &str = "releaseInputs";
    pub const RENDER: &str = "render";
    pub const REPOSITORY: &str = "repository";
    pub const REQUIRED: &str = "required";
    pub const SPEC: &str = "spec";
    pub const TARGET: &str = "target";
    pub const TARGETS_SEARCH_PATHS: &str = "targets_search_paths";
    pub const TEMPLATING: &str = "templating";
    pub const TO: &str = "to";
    pub const VALUE_IMPORTS: &str = "valueImports";
    pub const VALUES: &str = "values";
    pub const VERSION: &str = "version";
}

#[derive(Debug)]
pub enum Shape {
    /// Any value (inside Helm values).
    Any,
    /// A mapping of Helm values.
    Values,
    String,
    Bool,
    /// A whole number of at least 1.
    Count,
    List(&'static Shape),
    /// A mapping from string keys to values of one shape.
    MapOf(&'static Shape),
    Object(&'static [Field]),
}

#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub shape: &'static Shape,
    pub required: bool,
    pub default: Option<FieldDefault>,
    pub doc: &'static str,
}

/// What a field defaults to.
#[derive(Clone, Copy, Debug)]
pub enum FieldDefault {
    /// Written out: a JSON value, or words.
    Text(&'static str),
    /// The default of the `[limits]` entry of the field's name, kept with the limits themselves
    /// (`objects::Limits`).
    Limit,
}

const fn field(name: &'static str, shape: &'static Shape, doc: &'static str) -> Field {
    Field {
        name,
        shape,
        required: false,
        default: None,
        doc,
    }
}

const fn required(name: &'static str, shape: &'static Shape, doc: &'static str) -> Field {
    Field {
        required: true,
        ..field(name, shape, doc)
    }
}

const fn defaulted(
    name: &'static str,
    shape: &'static Shape,
    default: &'static str,
    doc: &'static str,
) -> Field {
    Field {
        default: Some(FieldDefault::Text(default)),
        ..field(name, shape, doc)
    }
}

/// A `[limits]` entry: a count that defaults to the limit's default.
const fn limit(name: &'static str, doc: &'static str) -> Field {
    Field {
        default: Some(FieldDefault::Limit),
        ..field(name, &Shape::Count, doc)
    }
}

const STRINGS: Shape = Shape::List(&Shape::String);
const STRING_MAP: Shape = Shape::MapOf(&Shape::String);

const API_VERSION: Field = required(
    names::API_VERSION,
    &Shape::String,
    "The API version of the object.",
);
const KIND: Field = required(names::KIND, &Shape::String, "The kind of the object.");

/// Nyl's `spec.destination` of a Cluster or DeploymentTarget, read and ignored by nyl.
const NYL_DESTINATION: Field = field(
    names::DESTINATION,
    &Shape::Any,
    "Nyl's: where Argo CD deploys. Read and ignored: the Application names its destination \
     itself.",
);
const LABELS: Field = field(
    names::LABELS,
    &STRING_MAP,
    "Labels, as on any Kubernetes object; nyl does not read them.",
);
const ANNOTATIONS: Field = field(
    names::ANNOTATIONS,
    &STRING_MAP,
    "Annotations, as on any Kubernetes object; nyl does not read them.",
);

const RELEASE_METADATA: Field = required(
    names::METADATA,
    &Shape::Object(&[
        required(names::NAME, &Shape::String, "The Helm release name."),
        field(names::NAMESPACE, &Shape::String, "The release namespace."),
        LABELS,
        ANNOTATIONS,
    ]),
    "The release's name and namespace.",
);

const TARGET_METADATA: Shape = Shape::Object(&[
    required(
        names::NAME,
        &Shape::String,
        "The name `--target` and `clusterRef` refer to.",
    ),
    LABELS,
    ANNOTATIONS,
]);

/// nyl.toml.
pub const CONFIG: Shape = Shape::Object(&[
    PROJECT,
    field(
        names::PROFILE,
        &Shape::Any,
        "Nyl's older profile values for its templates. Read and ignored: templates see the \
         target's values as `values` (Nyl itself now refuses profiles for targets).",
    ),
    field(
        names::LAYOUTS,
        &Shape::List(&Shape::Object(&[
            required(
                names::NAME,
                &Shape::String,
                "The layout's name, for diagnostics.",
            ),
            required(
                names::ID,
                &Shape::String,
                "The id of each app, from placeholders: `{cluster}.{group}.{app}`.",
            ),
            required(
                names::APP,
                &Shape::String,
                "The app directories, relative to the project root; each `{name}` segment binds \
                 one path segment: `clusters/{cluster}/{group}/in-cluster/{app}`.",
            ),
            required(
                names::CHART,
                &Shape::String,
                "The chart directory of an app, relative to the project root.",
            ),
            field(
                names::VALUES,
                &STRINGS,
                "Values files layered over the chart's values, lowest first; a missing one \
                 contributes nothing.",
            ),
            field(
                names::TARGET,
                &Shape::String,
                "The target whose values feed the chart's value imports; else `--target`.",
            ),
            field(
                names::NAMESPACE,
                &Shape::String,
                "The release namespace; else the default namespace.",
            ),
            defaulted(
                names::RELEASE,
                &Shape::String,
                "the app directory's name",
                "The Helm release name.",
            ),
        ])),
        "Apps found by where they sit in the tree: one chart each, with layered values files.",
    ),
    field(
        names::LIMITS,
        &Shape::Object(&[
            limit(
                names::MAX_FILE_BYTES,
                "The largest YAML file nyl reads (also bounds `nyl.toml` itself).",
            ),
            limit(names::MAX_FILES, "The most YAML files one run reads."),
            limit(
                names::MAX_TOTAL_BYTES,
                "The most YAML one run reads, all files together (and the most a packaged \
                 subchart decompresses to when its schemas are checked).",
            ),
            limit(
                names::MAX_NODES,
                "The most YAML nodes one run keeps: all documents of all files, runtime values \
                 and Helm's output together, every alias expansion counted.",
            ),
            limit(
                names::MAX_VALUE_BYTES,
                "The most bytes of YAML keys and scalars one run keeps, counted like `max_nodes`.",
            ),
            limit(
                names::MAX_RENDER_BYTES,
                "The largest rendered app; also all that one render takes in from Helm, all \
                 releases together (Helm is stopped past it).",
            ),
            defaulted(
                names::HELM_TIMEOUT_SECONDS,
                &Shape::Count,
                "30, or the operator's --helm-timeout (NYL_HELM_TIMEOUT)",
                "Seconds one release may spend in Helm (a remote chart's `helm pull` and its `helm \
                 template`) before it is stopped. It can only lower the operator's setting, never \
                 raise it.",
            ),
        ]),
        "Limits on what one run reads and keeps, so that no repository can exhaust the \
         sidecar's memory. The operator sets each one with an environment variable, `NYL_` and \
         the key in capitals (`NYL_MAX_NODES`), and the default applies where none is set. A \
         repository's `[limits]` may only lower a limit: a value above it is held to it, with \
         warning `limit_above_ceiling`.",
    ),
    field(
        names::RENDER,
        &Shape::Object(&[field(
            names::CLUSTER_SCOPED_KINDS,
            &STRINGS,
            "Kinds that are cluster-scoped beyond Kubernetes' built-in ones and the CRDs of the \
             render, as `Kind` (any API group) or `group/Kind`: chart output of these kinds is \
             not given the release namespace.",
        )]),
        "How chart output is passed on.",
    ),
]);

const PROJECT: Field = field(
    names::PROJECT,
    &Shape::Object(&[
        defaulted(
            names::COMPONENTS_SEARCH_PATHS,
            &STRINGS,
            r#"["components"]"#,
            "Directories, relative to nyl.toml's directory, searched in order for component charts.",
        ),
        defaulted(
            names::TARGETS_SEARCH_PATHS,
            &STRINGS,
            r#"["targets", "config"]"#,
            "Directories, relative to nyl.toml's directory, whose YAML files (recursively) hold the \
             Clusters and DeploymentTargets (`config` is where a Nyl repository keeps them). Nyl's \
             other GitOps control resources (`k8s.gitops.nyl/v1`) there are read and passed over.",
        ),
        field(
            names::ALIASES,
            &STRING_MAP,
            "Maps an invocation kind to a local component path or a remote chart shortcut. A key \
             `<apiVersion>/<kind>` also makes every app document of that apiVersion and kind an \
             invocation of the alias, as Nyl reads it.",
        ),
        defaulted(
            names::HELM_CHART_SEARCH_PATHS,
            &STRINGS,
            r#"["."]"#,
            "Directories, relative to nyl.toml's directory, searched in order for the chart of a \
             HelmChart that gives `spec.chart.name` alone (Nyl's form).",
        ),
        field(
            names::TEMPLATING,
            &Shape::Bool,
            "Whether app files are MiniJinja templates, as in Nyl. `true` renders them with the \
             target's `values`, `cluster` and `target` before their YAML is read; `false` passes \
             template syntax on as written (for charts that `tpl` their values). Unset, it is \
             `true` for a project in Nyl's shape (targets in `k8s.gitops.nyl/v1`, or Nyl's own \
             keys in nyl.toml), and otherwise a string holding `{{` or `{%` is refused \
             (`template_expression`).",
        ),
        field(
            names::GITOPS_SCAFFOLD_PATH,
            &Shape::String,
            "Nyl's: where `nyl new gitops` writes its scaffolds. Read and ignored.",
        ),
    ]),
    "Project settings.",
);

/// `Cluster` (`k8s.nyl/v1`).
pub const CLUSTER: Shape = Shape::Object(&[
    API_VERSION,
    KIND,
    required(names::METADATA, &TARGET_METADATA, "The Cluster's name."),
    field(
        names::SPEC,
        &Shape::Object(&[
            field(
                names::VALUES,
                &Shape::Values,
                "Values every target on this cluster provides to value imports.",
            ),
            field(
                names::KUBERNETES,
                &Shape::Object(&[
                    field(
                        names::KUBE_VERSION,
                        &Shape::String,
                        "The cluster's Kubernetes version, for Helm's `.Capabilities.KubeVersion`.",
                    ),
                    field(
                        names::API_VERSIONS,
                        &STRINGS,
                        "API versions the cluster serves, for Helm's `.Capabilities.APIVersions`.",
                    ),
                ]),
                "Facts about the cluster handed to Helm.",
            ),
            NYL_DESTINATION,
            field(
                names::ARGOCD_REF,
                &Shape::Any,
                "Nyl's: the Argo CD instance that manages the cluster. Read and ignored.",
            ),
            field(
                names::LIVE,
                &Shape::Any,
                "Nyl's: how Nyl reaches the live cluster. Read and ignored, and never shown: \
                 nyl renders without a cluster connection.",
            ),
        ]),
        "The Cluster's settings.",
    ),
]);

/// `DeploymentTarget` (`k8s.nyl/v1`).
pub const DEPLOYMENT_TARGET: Shape = Shape::Object(&[
    API_VERSION,
    KIND,
    required(
        names::METADATA,
        &TARGET_METADATA,
        "The target's name, as `--target` names it.",
    ),
    field(
        names::SPEC,
        &Shape::Object(&[
            defaulted(
                names::CLUSTER_REF,
                &Shape::Object(&[required(names::NAME, &Shape::String, "The Cluster's name.")]),
                "the target's own name",
                "The Cluster this target deploys to.",
            ),
            field(
                names::VALUES,
                &Shape::Values,
                "Values merged over the Cluster's values (the target wins) for value imports.",
            ),
            field(
                names::APPS,
                &STRINGS,
                "Globs, relative to the project root, naming the app files or directories \
                 deployed to this target.",
            ),
            NYL_DESTINATION,
            field(
                names::ARGOCD_REF,
                &Shape::Any,
                "Nyl's: the Argo CD instance Nyl publishes to. Read and ignored.",
            ),
            field(
                names::PUBLICATION,
                &Shape::Any,
                "Nyl's: the repository and revision Nyl publishes rendered manifests to. Read and \
                 ignored: Argo CD renders through the plugin instead.",
            ),
            field(
                names::APPLICATION_GROUP_SELECTOR,
                &Shape::Any,
                "Nyl's: which ApplicationGroups Nyl publishes for this target. Read and ignored: \
                 `apps` and the Argo CD Application choose what a target renders.",
            ),
            field(
                names::RELEASE_INPUTS,
                &Shape::Any,
                "Nyl's: inputs its Releases declare, resolved from Git. Read and ignored.",
            ),
        ]),
        "The target's settings.",
    ),
]);

/// A component invocation (`components.k8s.nyl/v1`).
pub const INVOCATION: Shape = Shape::Object(&[
    API_VERSION,
    required(
        names::KIND,
        &Shape::String,
        "The component: a path under a components search path, an alias, or a remote chart \
         shortcut `<base>[#<chart>][@<version>]`.",
    ),
    RELEASE_METADATA,
    field(
        names::SPEC,
        &Shape::Values,
        "The invocation's own chart values; they win over imports.",
    ),
    field(
        names::VALUE_IMPORTS,
        &Shape::Object(&[
            defaulted(
                names::ENABLED,
                &Shape::Bool,
                "true",
                "`false` skips every value import.",
            ),
            field(
                names::EXCLUDE,
                &STRINGS,
                "Names of imports to skip, required ones included. Each must be declared by the \
                 component.",
            ),
        ]),
        "Which of the component's value imports apply.",
    ),
]);

/// `Release` (`k8s.gitops.nyl/v1`, Nyl's): an app file's name, namespace and included files.
pub const RELEASE: Shape = Shape::Object(&[
    API_VERSION,
    KIND,
    required(
        names::METADATA,
        &Shape::Object(&[
            required(
                names::NAME,
                &Shape::String,
                "The app's name (Nyl's Argo CD Application); nyl logs it.",
            ),
            field(
                names::NAMESPACE,
                &Shape::String,
                "The namespace of the invocations and HelmCharts of this file and its included \
                 files that set none.",
            ),
            LABELS,
            ANNOTATIONS,
        ]),
        "The app's name and namespace.",
    ),
    field(
        names::SPEC,
        &Shape::Object(&[field(
            names::INCLUDE,
            &STRINGS,
            "Files, relative to this one, whose documents render as part of it (once, even when \
             they sit in a directory being rendered).",
        )]),
        "What the release includes.",
    ),
]);

/// `HelmChart` (`k8s.nyl/v1`): a chart rendered as it is, with no contract.
pub const HELM_CHART: Shape = Shape::Object(&[
    API_VERSION,
    KIND,
    RELEASE_METADATA,
    required(
        names::SPEC,
        &Shape::Object(&[
            required(
                names::CHART,
                &Shape::Object(&[
                    field(
                        names::REPOSITORY,
                        &Shape::String,
                        "A chart repository URL (`https://`, `http://`) or an OCI base (`oci://`).",
                    ),
                    field(
                        names::NAME,
                        &Shape::String,
                        "The chart's name in the repository. Alone, a local chart as Nyl names it: \
                         with a `/`, a path from the project root; else a directory in \
                         `helm_chart_search_paths`.",
                    ),
                    field(
                        names::VERSION,
                        &Shape::String,
                        "The chart version; the newest when absent.",
                    ),
                    field(
                        names::PATH,
                        &Shape::String,
                        "A local chart directory, relative to this file, instead of a repository.",
                    ),
                ]),
                "Where the chart comes from: `repository` and `name` (and `version`), or `path`.",
            ),
            field(names::VALUES, &Shape::Values, "The chart values."),
            defaulted(
                names::INCLUDE_CRDS,
                &Shape::Bool,
                "true",
                "Render the chart's `crds/` too.",
            ),
        ]),
        "The chart and its values.",
    ),
]);

/// `nyl-component.yaml` (`components.nyl/v1alpha1`).
pub const CONTRACT: Shape = Shape::Object(&[
    API_VERSION,
    field(
        names::VALUE_IMPORTS,
        &Shape::List(&Shape::Object(&[
            required(
                names::NAME,
                &Shape::String,
                "Unique name, used in diagnostics and opt-outs.",
            ),
            required(
                names::FROM,
                &Shape::String,
                "JSON Pointer into the effective target values.",
            ),
            required(
                names::TO,
                &Shape::String,
                "JSON Pointer into the chart values.",
            ),
            defaulted(
                names::REQUIRED,
                &Shape::Bool,
                "false",
                "`true` fails the render when `from` is absent.",
            ),
        ])),
        "The target values this component imports, and where they land.",
    ),
]);

/// A file kind nyl reads, as the reference and `nyl schema` name it.
#[derive(Debug)]
pub struct FileKind {
    /// The name `nyl schema` takes.
    pub name: &'static str,
    pub title: &'static str,
    /// Where such files live.
    pub location: &'static str,
    /// The fixed `apiVersion` and `kind`, for YAML kinds.
    /// The apiVersions this kind is read under (empty: none, nyl.toml).
    pub api_versions: &'static [&'static str],
    pub kind: Option<&'static str>,
    pub shape: &'static Shape,
}

/// Every file kind, in the order the reference lists them.
pub const FILE_KINDS: &[FileKind] = &[
    FileKind {
        name: "config",
        title: "nyl.toml",
        location: "`nyl.toml` at the project root, or `nyl/nyl.toml` at the root of a Git \
                   worktree (TOML).",
        api_versions: &[],
        kind: None,
        shape: &CONFIG,
    },
    FileKind {
        name: "cluster",
        title: "Cluster",
        location: "Any YAML file below a targets search path.",
        api_versions: &["k8s.nyl/v1", "k8s.gitops.nyl/v1"],
        kind: Some("Cluster"),
        shape: &CLUSTER,
    },
    FileKind {
        name: "deployment-target",
        title: "DeploymentTarget",
        location: "Any YAML file below a targets search path.",
        api_versions: &["k8s.nyl/v1", "k8s.gitops.nyl/v1"],
        kind: Some("DeploymentTarget"),
        shape: &DEPLOYMENT_TARGET,
    },
    FileKind {
        name: "invocation",
        title: "Component invocation",
        location: "App files.",
        api_versions: &["components.k8s.nyl/v1"],
        kind: None,
        shape: &INVOCATION,
    },
    FileKind {
        name: "release",
        title: "Release",
        location: "App files, at most one per file; never in the output.",
        api_versions: &["k8s.gitops.nyl/v1"],
        kind: Some("Release"),
        shape: &RELEASE,
    },
    FileKind {
        name: "helm-chart",
        title: "HelmChart",
        location: "App files.",
        api_versions: &["k8s.nyl/v1"],
        kind: Some("HelmChart"),
        shape: &HELM_CHART,
    },
    FileKind {
        name: "component",
        title: "nyl-component.yaml",
        location: "`nyl-component.yaml` beside a component's `Chart.yaml`.",
        api_versions: &["components.nyl/v1alpha1"],
        kind: None,
        shape: &CONTRACT,
    },
];

/// Checks `node` against `shape`, pushing one diagnostic per problem.
pub fn check(node: &Node, shape: &Shape, object: Option<&str>, out: &mut Vec<Diagnostic>) {
    let mut checker = Checker { object, out };
    checker.check(node, shape, &mut String::new());
}

struct Checker<'a> {
    object: Option<&'a str>,
    out: &'a mut Vec<Diagnostic>,
}

impl Checker<'_> {
    fn report(&mut self, code: Code, node: &Node, path: &str, message: String) {
        let mut d = Diagnostic::new(code, message).at(node.prov.loc).path(path);
        if let Some(object) = self.object {
            d = d.object(object);
        }
        self.out.push(d);
    }

    fn check(&mut self, node: &Node, shape: &Shape, path: &mut String) {
        match (shape, &node.value) {
            (Shape::Any, _)
            | (Shape::Values, Value::Map(_))
            | (Shape::String, Value::String(_))
            | (Shape::Bool, Value::Bool(_)) => {}
            (Shape::Count, Value::Number(n)) if n.as_u64().is_some_and(|n| n >= 1) => {}
            (Shape::List(item), Value::Seq(items)) => {
                for (i, n) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    self.check(n, item, path);
                    path.truncate(len);
                }
            }
            (Shape::MapOf(value), Value::Map(map)) => {
                for (key, n) in map {
                    let len = path.len();
                    push_key(path, key);
                    self.check(n, value, path);
                    path.truncate(len);
                }
            }
            (Shape::Object(fields), Value::Map(map)) => self.check_object(node, fields, map, path),
            _ => {
                let hint = match (shape, &node.value) {
                    (Shape::String, Value::Number(_) | Value::Bool(_)) => {
                        "; quote it to make it a string"
                    }
                    _ => "",
                };
                let message = format!(
                    "{} must be {}, found {}{hint}",
                    display_path(path),
                    expected(shape),
                    node.type_name()
                );
                self.report(Code::InvalidField, node, path, message);
            }
        }
    }

    fn check_object(
        &mut self,
        node: &Node,
        fields: &[Field],
        map: &crate::data::value::Map,
        path: &mut String,
    ) {
        for (key, n) in map {
            let len = path.len();
            push_key(path, key);
            match fields.iter().find(|f| f.name == key) {
                Some(f) if n.is_null() => {
                    if f.required {
                        let message = format!("{} is required but null", display_path(path));
                        self.report(Code::MissingField, n, path, message);
                    }
                }
                Some(f) => self.check(n, f.shape, path),
                None => {
                    let known: Vec<_> = fields.iter().map(|f| f.name).collect();
                    let message = format!(
                        "unknown field {} (known fields here: {})",
                        display_path(path),
                        known.join(", ")
                    );
                    self.report(Code::UnknownField, n, path, message);
                }
            }
            path.truncate(len);
        }
        for f in fields
            .iter()
            .filter(|f| f.required && !map.contains_key(f.name))
        {
            let len = path.len();
            push_key(path, f.name);
            let message = format!("missing required field {}", display_path(path));
            let field_path = path.clone();
            path.truncate(len);
            self.report(Code::MissingField, node, &field_path, message);
        }
    }
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

fn display_path(path: &str) -> String {
    if path.is_empty() {
        "the document".to_string()
    } else {
        format!("`{path}`")
    }
}

/// How a shape reads in a message or the reference: "a string", "a list of strings".
pub fn expected(shape: &Shape) -> String {
    match shape {
        Shape::Any => "any value".into(),
        Shape::Values => "a mapping of values".into(),
        Shape::String => "a string".into(),
        Shape::Bool => "a boolean".into(),
        Shape::Count => "a whole number of at least 1".into(),
        Shape::List(item) => format!("a list of {}", plural(item)),
        Shape::MapOf(value) => format!("a mapping of {}", plural(value)),
        Shape::Object(_) => "a mapping".into(),
    }
}

fn plural(shape: &Shape) -> String {
    match shape {
        Shape::String => "strings".into(),
        Shape::Bool => "booleans".into(),
        Shape::Object(_) => "mappings".into(),
        other => format!("({})", expected(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::provenance::FileId;
    use crate::data::yaml::{parse_stream, Limits};

    fn problems(text: &str, shape: &Shape) -> Vec<(String, u32, String)> {
        let node = parse_stream(text, FileId(0), &Limits::default())
            .docs
            .remove(0);
        let mut out = Vec::new();
        check(&node, shape, None, &mut out);
        out.into_iter()
            .map(|d| (d.code.name().to_string(), d.loc.unwrap().line, d.message))
            .collect()
    }

    #[test]
    fn a_valid_invocation_has_no_problems() {
        let text = "apiVersion: components.k8s.nyl/v1\nkind: a/b\nmetadata: {name: x}\n\
                    spec: {any: [thing, 1, null]}\nvalueImports: {enabled: false, exclude: [a]}\n";
        assert_eq!(problems(text, &INVOCATION), []);
    }

    #[test]
    fn every_problem_of_a_document_is_reported_with_its_line() {
        let text = "apiVersion: components.k8s.nyl/v1\nkind: a/b\nmetadata:\n  namespace: 5\n\
                    spce: {}\nvalueImports:\n  enabled: yes\n  exlude: [a]\n";
        let found = problems(text, &INVOCATION);
        let codes: Vec<_> = found.iter().map(|(c, l, _)| (c.as_str(), *l)).collect();
        assert_eq!(
            codes,
            [
                ("invalid_field", 4),
                ("missing_field", 3),
                ("unknown_field", 5),
                ("unknown_field", 8),
            ]
        );
        assert!(found[0]
            .2
            .contains("`metadata.namespace` must be a string, found number; quote it"));
        assert!(found[1]
            .2
            .contains("missing required field `metadata.name`"));
        assert!(found[3].2.contains("`valueImports.exlude`"));
        assert!(found[3].2.contains("known fields here: enabled, exclude"));
    }

    #[test]
    fn list_items_are_checked_with_their_index() {
        let text = "apiVersion: components.nyl/v1alpha1\nvalueImports:\n  - name: a\n    from: /a\n    to: 7\n";
        let found = problems(text, &CONTRACT);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].0.as_str(), found[0].1), ("invalid_field", 5));
        assert!(found[0]
            .2
            .contains("`valueImports[0].to` must be a string, found number"));
    }

    #[test]
    fn null_is_absent_for_optional_fields_and_missing_for_required_ones() {
        let text = "apiVersion: components.k8s.nyl/v1\nkind: a\nmetadata:\n  name: null\nspec:\n";
        let found = problems(text, &INVOCATION);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "missing_field");
    }

    #[test]
    fn a_values_field_must_be_a_mapping() {
        let text = "apiVersion: components.k8s.nyl/v1\nkind: a\nmetadata: {name: x}\nspec: [1]\n";
        let found = problems(text, &INVOCATION);
        assert_eq!(found[0].0, "invalid_field");
        assert!(found[0]
            .2
            .contains("`spec` must be a mapping of values, found sequence"));
    }
}
