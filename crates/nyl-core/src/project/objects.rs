//! nyl's object kinds, typed: what a document is, and the checked objects read from it.
//!
//! Every decoder first holds the document to its strict shape ([`crate::project::schema`]) and reports all
//! problems; only a document without problems becomes a typed object.

use indexmap::IndexMap;

use crate::data::diagnostics::{Code, Diagnostic};
use crate::data::provenance::{Layer, Loc, ObjectId};
use crate::data::provenance::{ObjectName, ResourceName};
use crate::data::value::{Map, Node, Value};
use crate::project::layouts::Layout;
use crate::project::schema::{self, names, Shape};

pub const TARGETS_API: &str = "k8s.nyl/v1";
pub const INVOCATION_API: &str = "components.k8s.nyl/v1";
pub const CONTRACT_API: &str = "components.nyl/v1alpha1";
/// Nyl's group for its GitOps control resources; nyl reads its Cluster and DeploymentTarget as
/// its own (the same objects under Nyl's name) and passes over the others where they are kept.
pub const GITOPS_API: &str = "k8s.gitops.nyl/v1";

/// API groups that belong to nyl: a document in one of them with an unknown version is an error,
/// not a plain manifest.
const NYL_GROUPS: &[&str] = &["k8s.nyl", "components.k8s.nyl", "components.nyl"];

/// Nyl's API groups whose kinds nyl-render does not read as they are: each row is a group (matched
/// exactly), a kind (`None`: every kind of the group) and what to write instead. Nyl's older groups
/// say what Nyl itself calls them today, as Nyl's own message does. Accepting one of these kinds
/// means turning its row into a [`DocKind`] here.
const NYL_RENAMED: &[(&str, Option<&str>, &str)] = &[
    (
        "gitops.nyl",
        None,
        "Nyl calls its group k8s.gitops.nyl/v1 now; set apiVersion to \"k8s.gitops.nyl/v1\"",
    ),
    (
        "nyl.niklasrosenstein.github.com",
        None,
        "Nyl calls its group k8s.nyl/v1 now; set apiVersion to \"k8s.nyl/v1\"",
    ),
    (
        "components.nyl.niklasrosenstein.github.com",
        None,
        "Nyl calls its group components.k8s.nyl/v1 now; set apiVersion to \
         \"components.k8s.nyl/v1\"",
    ),
];

/// What a YAML document nyl reads is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocKind {
    Cluster,
    DeploymentTarget,
    HelmChart,
    Invocation,
    /// A Kubernetes object: passed through to the output as it is.
    Manifest,
    /// Nyl's `Release` in an app file: the file's namespace and included files; never emitted.
    Release,
    /// One of Nyl's GitOps control resources (a repository, project or application group in
    /// `k8s.gitops.nyl/v1`) kept beside the targets: it configures Nyl's own Argo CD
    /// publication, which nyl does not do, so it is read and passed over.
    NylControl,
}

/// Where a document was read, which decides what may stand there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// An app file: invocations, HelmCharts and Kubernetes objects.
    App,
    /// A file under a targets search path: Clusters and DeploymentTargets only.
    Targets,
    /// A chart's output: nyl's own kinds are checked; anything else is Helm's to deliver.
    ChartOutput,
}

/// `[project.aliases]` of nyl.toml: an invocation kind and what it stands for, with where.
pub type Aliases = IndexMap<String, (String, Loc)>;

/// The kind of an invocation written Nyl's alias way (`apiVersion: myapi.io/v1`, `kind: MyKind`
/// for the alias `myapi.io/v1/MyKind`): `apiVersion/kind`. `None` for any other document.
fn alias_kind(api: Option<&str>, kind: Option<&str>) -> Option<String> {
    match (api, kind) {
        (Some(api), Some(kind)) if api != INVOCATION_API => Some(format!("{api}/{kind}")),
        _ => None,
    }
}

/// Classifies a document read at `place`: exactly one [`DocKind`], or an error that says what the
/// document looks like and what to do. This is the one rule every command reads documents by.
/// Outside the targets, a document whose `apiVersion/kind` is a key of `aliases` is an invocation
/// of that alias, as Nyl reads it.
pub fn classify(doc: &Node, place: Place, aliases: &Aliases) -> Result<DocKind, Diagnostic> {
    let Some(map) = doc.as_map() else {
        return Err(Diagnostic::new(
            Code::InvalidDocument,
            format!("a document must be a mapping, found {}", doc.type_name()),
        )
        .at(doc.prov.loc));
    };
    let api = map.get(names::API_VERSION).and_then(Node::as_str);
    let kind = map.get(names::KIND).and_then(Node::as_str);
    let aliased = || alias_kind(api, kind).is_some_and(|k| aliases.contains_key(&k));
    let unsupported = |why: &str| {
        Err(Diagnostic::new(Code::UnsupportedNylFeature, why)
            .at(doc.prov.loc)
            .object(object_display(doc)))
    };
    if place != Place::Targets && policy_scope(doc).is_some() {
        return unsupported(&format!(
            "a Kyverno policy with the annotation {KYVERNO_SCOPE} is one Nyl applies to the \
             rendered manifests; nyl does not run Kyverno: write the change into the chart values \
             or templates, or remove the annotation to deploy the policy to the cluster"
        ));
    }
    let nyl = match (api, kind) {
        (Some(TARGETS_API), Some("RemoteManifest")) => {
            return unsupported(
                "RemoteManifest (Nyl fetches manifests from a URL while rendering) is not \
                 supported: nyl renders only what the repository holds; save the manifests in \
                 the app directory as YAML",
            )
        }
        _ if place != Place::Targets && aliased() => Some(DocKind::Invocation),
        (Some(TARGETS_API | GITOPS_API), Some("Cluster")) => Some(DocKind::Cluster),
        (Some(TARGETS_API | GITOPS_API), Some("DeploymentTarget")) => {
            Some(DocKind::DeploymentTarget)
        }
        (Some(GITOPS_API), Some("Release")) => Some(DocKind::Release),
        (Some(GITOPS_API), Some(_)) if place == Place::Targets => Some(DocKind::NylControl),
        (Some(TARGETS_API), Some("HelmChart")) => Some(DocKind::HelmChart),
        (Some(TARGETS_API), kind) => {
            return Err(Diagnostic::new(
                Code::UnknownKind,
                format!(
                "{TARGETS_API} has no kind {}; it defines Cluster, DeploymentTarget and HelmChart",
                kind.map_or("(none)".to_string(), |k| format!("{k:?}"))
            ),
            )
            .at(doc.prov.loc))
        }
        (Some(INVOCATION_API), _) => Some(DocKind::Invocation),
        (Some(api), _) => {
            if let Some(now) = renamed(api, kind) {
                return Err(Diagnostic::new(
                    Code::RenamedApiVersion,
                    format!("{api} {} is Nyl's: {now}", kind.unwrap_or("(no kind)")),
                )
                .at(api_loc(doc))
                .object(object_display(doc)));
            }
            if is_nyl_group(api) {
                return Err(unknown_api_version(doc, api).object(object_display(doc)));
            }
            None
        }
        (None, _) => None,
    };
    let misplaced = |what: &str, belongs: &str| {
        Err(Diagnostic::new(
            Code::MisplacedDocument,
            format!("{what} does not belong here: {belongs}"),
        )
        .at(doc.prov.loc)
        .object(object_display(doc)))
    };
    match (place, nyl) {
        (
            Place::Targets,
            Some(k @ (DocKind::Cluster | DocKind::DeploymentTarget | DocKind::NylControl)),
        ) => Ok(k),
        (Place::Targets, _) => misplaced(
            "a document that is not a Cluster or DeploymentTarget",
            "a targets search path holds only those; move it to an app directory, or out of the \
             search paths of nyl.toml",
        ),
        (Place::ChartOutput, Some(DocKind::Release)) => misplaced(
            "a Release",
            "it names an app file's namespace and includes, so it stands in an app file",
        ),
        (_, Some(DocKind::Cluster | DocKind::DeploymentTarget)) => misplaced(
            "a Cluster or DeploymentTarget",
            "it is read from the targets search paths of nyl.toml ([project] \
             targets_search_paths), never from an app",
        ),
        (_, Some(k)) => Ok(k),
        (Place::ChartOutput, None) => Ok(DocKind::Manifest),
        (Place::App, None) => kubernetes_object(doc, api, kind),
    }
}

/// A plain document of an app file must be a Kubernetes object: string `apiVersion` and `kind`,
/// and `metadata.name` or `metadata.generateName`.
fn kubernetes_object(
    doc: &Node,
    api: Option<&str>,
    kind: Option<&str>,
) -> Result<DocKind, Diagnostic> {
    let meta = doc.get(names::METADATA);
    let named = [names::NAME, "generateName"]
        .iter()
        .any(|k| meta.and_then(|m| m.get(k)).and_then(Node::as_str).is_some());
    let kustomization = api.is_some_and(|a| a.starts_with("kustomize.config.k8s.io/"));
    if api.is_some() && kind.is_some() && named && !kustomization {
        return Ok(DocKind::Manifest);
    }
    let hint = if kustomization {
        "it is a kustomization.yaml: nyl does not run kustomize, and the GitOps engine would \
         apply it as an object; move it out of the app directory (render-tree writes its own)"
            .to_string()
    } else if api.is_none() && kind.is_none() && doc.get(names::METADATA).is_none() {
        "it looks like chart values: values go in an invocation's `spec`, a HelmChart's \
         `spec.values`, or a layout's values file, never beside them as a document; name it with \
         a leading '.' to keep it in the directory unread"
            .to_string()
    } else {
        let missing: Vec<&str> = [
            (names::API_VERSION, api.is_some()),
            (names::KIND, kind.is_some()),
            ("metadata.name", named),
        ]
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(k, _)| *k)
        .collect();
        format!(
            "a Kubernetes object needs a string apiVersion, kind and metadata.name (or \
             generateName); this one has no {}",
            missing.join(", no ")
        )
    };
    Err(Diagnostic::new(
        Code::NotAnObject,
        format!("a document that is neither a nyl object nor a Kubernetes object: {hint}"),
    )
    .at(doc.prov.loc))
}

/// The annotation by which Nyl applies a Kyverno policy to the manifests it renders.
const KYVERNO_SCOPE: &str = "nyl.niklasrosenstein.github.com/apply-policy-scope";

fn policy_scope(doc: &Node) -> Option<&Node> {
    doc.get(names::METADATA)?
        .get(names::ANNOTATIONS)?
        .get(KYVERNO_SCOPE)
}

/// `template_expression` for every string of an app file's document that holds a template
/// expression as Nyl writes them (`{{ ... }}`, `{% ... %}`) while templating is
/// [`Templating::Unset`]: passed on, the expression would be delivered as text.
pub fn template_expressions(doc: &Node) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut stack = vec![doc];
    while let Some(node) = stack.pop() {
        match &node.value {
            Value::String(s) if s.contains("{{") || s.contains("{%") => out.push(
                Diagnostic::new(
                    Code::TemplateExpression,
                    format!(
                        "{s:?} is a template expression as Nyl writes them, and this project does \
                         not say whether its app files are templates: set `templating = true` \
                         under [project] in nyl.toml to render them as Nyl does (with `values`, \
                         `cluster` and `target`), or `templating = false` to pass the text on as \
                         written; target values also reach charts through value imports \
                         (nyl-component.yaml)"
                    ),
                )
                .at(node.prov.loc)
                .object(object_display(doc)),
            ),
            Value::Seq(items) => stack.extend(items.iter().rev()),
            Value::Map(map) => stack.extend(map.values().rev()),
            _ => {}
        }
    }
    out
}

/// `Kind/name` of any document, for diagnostics.
fn object_display(doc: &Node) -> String {
    object_ref(doc).to_string()
}

/// `Kind/name` of a document of a known kind, for diagnostics.
fn display_as(kind: &str, doc: &Node) -> String {
    crate::data::provenance::ObjectRef {
        kind: kind.to_string(),
        ..object_ref(doc)
    }
    .to_string()
}

fn api_loc(doc: &Node) -> Loc {
    doc.get(names::API_VERSION)
        .map_or(doc.prov.loc, |n| n.prov.loc)
}

/// What nyl-render calls a kind of one of Nyl's groups.
fn renamed(api: &str, kind: Option<&str>) -> Option<&'static str> {
    let group = api.split_once('/').map_or(api, |(g, _)| g);
    NYL_RENAMED
        .iter()
        .find_map(|(g, k, now)| (group == *g && (k.is_none() || *k == kind)).then_some(*now))
}

/// A group of nyl's, of Nyl's, or within two edits of one of nyl's (`component.k8s.nyl`).
pub fn is_nyl_group(api: &str) -> bool {
    let Some((group, _)) = api.split_once('/') else {
        return false;
    };
    // Names whose lengths differ by more than two are more than two edits apart: most groups
    // (`""`, `apps`) are told without the distance.
    let len = group.chars().count();
    NYL_GROUPS
        .iter()
        .any(|g| len.abs_diff(g.chars().count()) <= 2 && edit_distance(group, g) <= 2)
        || NYL_RENAMED.iter().any(|(g, _, _)| {
            group
                .strip_suffix(g)
                .is_some_and(|rest| rest.is_empty() || rest.ends_with('.'))
        })
}

/// Levenshtein distance, for names that are close to one nyl knows.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(prev + usize::from(ca != *cb));
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

pub fn unknown_api_version(doc: &Node, api: &str) -> Diagnostic {
    Diagnostic::new(
        Code::UnknownApiVersion,
        format!(
            "unknown apiVersion {api:?}; nyl knows {TARGETS_API} (Cluster, DeploymentTarget, \
             HelmChart), {GITOPS_API} (Cluster, DeploymentTarget, as Nyl writes them), \
             {INVOCATION_API} (invocations) and {CONTRACT_API} (nyl-component.yaml)"
        ),
    )
    .at(api_loc(doc))
}

/// Two objects with the same group, kind, namespace and name: the GitOps engine would apply one
/// over the other. Each repeat is reported with where the first one came from.
pub fn duplicate_objects<'a>(
    docs: impl Iterator<Item = (&'a crate::data::yaml::Head, Loc)>,
) -> Vec<Diagnostic> {
    // Keyed by borrowed parts: an app prints thousands of objects, and only a duplicate needs
    // its key owned.
    let mut seen: std::collections::HashMap<[&str; 4], Loc> =
        std::collections::HashMap::with_capacity(docs.size_hint().0);
    let mut out = Vec::new();
    for (head, loc) in docs {
        let Some(parts) = key_parts(head) else {
            continue;
        };
        match seen.entry(parts) {
            std::collections::hash_map::Entry::Occupied(first) => out.push(
                duplicate_object(&owned_key(parts), "is output twice by one app")
                    .at(loc)
                    .related(*first.get()),
            ),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(loc);
            }
        }
    }
    out
}

/// What identifies an object to the cluster: its API group and its name within the group.
pub type ObjectKey = (String, ResourceName);

/// The object's [`ObjectKey`]; `None` for one that the server names (`generateName`).
pub fn object_key(head: &crate::data::yaml::Head) -> Option<ObjectKey> {
    key_parts(head).map(owned_key)
}

/// The parts of the object's key as `head` has them: API group, kind, namespace and name.
fn key_parts(head: &crate::data::yaml::Head) -> Option<[&str; 4]> {
    fn text(s: Option<&String>) -> &str {
        s.map_or("", String::as_str)
    }
    let name = text(head.name.as_ref());
    if name.is_empty() {
        return None;
    }
    let group = text(head.api_version.as_ref())
        .rsplit_once('/')
        .map_or("", |(g, _)| g);
    Some([
        group,
        text(head.kind.as_ref()),
        text(head.namespace.as_ref()),
        name,
    ])
}

fn owned_key([group, kind, namespace, name]: [&str; 4]) -> ObjectKey {
    let id = ResourceName {
        kind: kind.to_string(),
        namespace: namespace.to_string(),
        name: name.to_string(),
    };
    (group.to_string(), id)
}

/// `duplicate_object` for the object `key`, which `how` (`is output twice by one app`).
pub fn duplicate_object((_, id): &ObjectKey, how: &str) -> Diagnostic {
    let ResourceName {
        kind,
        namespace,
        name,
    } = id;
    let ns = if namespace.is_empty() {
        String::new()
    } else {
        format!(" in namespace {namespace:?}")
    };
    Diagnostic::new(
        Code::DuplicateObject,
        format!(
            "{kind} {name:?}{ns} {how}; the GitOps engine would apply one over the other. Remove \
             or rename one"
        ),
    )
    .object(id.object().to_string())
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

/// How the catalog names a document's object: its `kind` (`?` when absent) and `metadata.name`
/// (empty when absent).
pub fn object_ref(doc: &Node) -> crate::data::provenance::ObjectRef {
    crate::data::provenance::ObjectRef {
        kind: doc
            .field(names::KIND)
            .and_then(Node::as_str)
            .unwrap_or("?")
            .to_string(),
        name: name_of(doc).unwrap_or_default().to_string(),
        loc: doc.prov.loc,
    }
}

/// `metadata.name` of a shape-checked document.
pub fn name_of(doc: &Node) -> Option<&str> {
    doc.field(names::METADATA)
        .and_then(|m| m.field(names::NAME))
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
            crate::data::provenance::Prov::written(fallback),
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
    /// The document as templates see it (`cluster`): without `spec.live`, which nyl never shows.
    pub document: Node,
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
    /// The document as templates see it (`target`).
    pub document: Node,
    pub values: Node,
    pub apps: Vec<(crate::project::glob::Glob, Loc)>,
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
        ObjectName::new(&self.kind, &self.name).to_string()
    }
}

/// Decodes a Cluster; the caller has registered it as `object`.
pub fn cluster(doc: &Node, object: ObjectId) -> Result<Cluster, Vec<Diagnostic>> {
    let display = display_as("Cluster", doc);
    check_shape(doc, &schema::CLUSTER, Some(&display))?;
    let name = checked_name(doc, &display, NameRule::Object)?;
    let spec = doc.field(names::SPEC);
    let kubernetes = spec.and_then(|s| s.field(names::KUBERNETES));
    let api_versions = strings(kubernetes.and_then(|k| k.field(names::API_VERSIONS)));
    let problems: Vec<Diagnostic> = api_versions
        .iter()
        .filter_map(|(entry, loc)| {
            check_api_version(entry).err().map(|why| {
                Diagnostic::new(Code::InvalidApiVersionEntry, why)
                    .at(*loc)
                    .object(&display)
                    .path("spec.kubernetes.apiVersions")
            })
        })
        .collect();
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Cluster {
        name,
        object,
        loc: doc.prov.loc,
        document: without_live(doc),
        values: values(
            spec.and_then(|s| s.field(names::VALUES)),
            doc.prov.loc,
            Layer::TargetValues { object },
        ),
        kube_version: kubernetes
            .and_then(|k| k.field(names::KUBE_VERSION))
            .and_then(Node::as_str)
            .map(str::to_string),
        api_versions: api_versions.into_iter().map(|(s, _)| s).collect(),
    })
}

/// A Cluster document without `spec.live` (how Nyl reaches the cluster: never shown).
fn without_live(doc: &Node) -> Node {
    let mut doc = doc.clone();
    if let Value::Map(top) = &mut doc.value {
        if let Some(Value::Map(spec)) = top.get_mut(names::SPEC).map(|s| &mut s.value) {
            spec.shift_remove(names::LIVE);
        }
    }
    doc
}

/// Decodes a DeploymentTarget; the caller has registered it as `object`.
pub fn deployment_target(
    doc: &Node,
    object: ObjectId,
) -> Result<DeploymentTarget, Vec<Diagnostic>> {
    let display = display_as("DeploymentTarget", doc);
    check_shape(doc, &schema::DEPLOYMENT_TARGET, Some(&display))?;
    let name = checked_name(doc, &display, NameRule::Object)?;
    let spec = doc.field(names::SPEC);
    let cluster_ref = spec
        .and_then(|s| s.field(names::CLUSTER_REF))
        .and_then(|r| r.field(names::NAME));
    let mut apps = Vec::new();
    let mut problems = Vec::new();
    for (pattern, loc) in strings(spec.and_then(|s| s.field(names::APPS))) {
        match crate::project::glob::Glob::new(&pattern) {
            Ok(glob) => apps.push((glob, loc)),
            Err(why) => problems.push(
                Diagnostic::new(
                    Code::AppsGlobInvalid,
                    format!("spec.apps glob {pattern:?} is not a valid glob: {why}"),
                )
                .at(loc)
                .object(display.clone()),
            ),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(DeploymentTarget {
        cluster_ref: cluster_ref
            .and_then(Node::as_str)
            .unwrap_or(&name)
            .to_string(),
        cluster_ref_loc: cluster_ref.map_or(doc.prov.loc, |n| n.prov.loc),
        name,
        object,
        loc: doc.prov.loc,
        document: doc.clone(),
        values: values(
            spec.and_then(|s| s.field(names::VALUES)),
            doc.prov.loc,
            Layer::TargetValues { object },
        ),
        apps,
    })
}

/// Nyl's `Release` of an app file.
#[derive(Clone, Debug)]
pub struct Release {
    pub name: String,
    pub namespace: Option<String>,
    /// Included files as written (relative to the Release's file), with where.
    pub include: Vec<(String, Loc)>,
}

/// Decodes a Release.
pub fn release(doc: &Node) -> Result<Release, Vec<Diagnostic>> {
    let display = ObjectName::new("Release", name_of(doc).unwrap_or_default()).to_string();
    check_shape(doc, &schema::RELEASE, Some(&display))?;
    let mut problems = Vec::new();
    let name = checked_name(doc, &display, NameRule::Object).map_err(|e| problems.extend(e));
    let namespace = checked_namespace(doc, &display, &mut problems);
    let (Ok(name), true) = (name, problems.is_empty()) else {
        return Err(problems);
    };
    Ok(Release {
        name,
        namespace,
        include: strings(doc.field(names::SPEC).and_then(|s| s.field(names::INCLUDE))),
    })
}

/// Decodes an invocation; the caller has registered it as `object`.
pub fn invocation(doc: &Node, object: ObjectId) -> Result<Invocation, Vec<Diagnostic>> {
    let written = doc.field(names::KIND).and_then(Node::as_str);
    let api = doc.field(names::API_VERSION).and_then(Node::as_str);
    // Classified as an invocation under any other apiVersion only as an alias written Nyl's way.
    let kind = alias_kind(api, written).unwrap_or_else(|| written.unwrap_or("?").to_string());
    let display = display_as(&kind, doc);
    check_shape(doc, &schema::INVOCATION, Some(&display))?;
    let mut problems = Vec::new();
    let name = checked_name(doc, &display, NameRule::Release).map_err(|e| problems.extend(e));
    let namespace = checked_namespace(doc, &display, &mut problems);
    let imports = doc.field(names::VALUE_IMPORTS);
    let (Ok(name), true) = (name, problems.is_empty()) else {
        return Err(problems);
    };
    let kind_node = doc.get(names::KIND);
    Ok(Invocation {
        kind,
        kind_loc: kind_node.map_or(doc.prov.loc, |n| n.prov.loc),
        name,
        namespace,
        object,
        loc: doc.prov.loc,
        spec: values(doc.field(names::SPEC), doc.prov.loc, Layer::Spec { object }),
        imports_enabled: imports
            .and_then(|i| i.field(names::ENABLED))
            .and_then(Node::as_bool)
            .unwrap_or(true),
        exclude: strings(imports.and_then(|i| i.field(names::EXCLUDE))),
    })
}

/// Where a chart comes from, at every stage of a run: a local chart directory, or a chart in a
/// repository. `L` is what the stage knows of the local chart: how a HelmChart names it
/// ([`LocalChart`]), the component an invocation's kind resolved to, or, in a release, its
/// directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChartSource<L> {
    Local(L),
    Remote(RemoteChart),
}

/// How a HelmChart names a local chart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocalChart {
    /// A chart directory, relative to the file the HelmChart is written in.
    Path(String),
    /// `spec.chart.name` alone, as Nyl writes a local chart: a name with a `/` is a path from the
    /// project root, any other a directory in `helm_chart_search_paths` (see
    /// `Project::resolve_chart_name` in nyl-render).
    Named(String),
}

/// A `HelmChart` resource: a chart rendered as it is, with its own values and no contract.
#[derive(Clone, Debug)]
pub struct HelmChart {
    pub name: String,
    pub namespace: Option<String>,
    pub object: ObjectId,
    pub loc: Loc,
    pub chart: ChartSource<LocalChart>,
    /// The chart values, tagged as [`Layer::Spec`].
    pub values: Node,
    pub include_crds: bool,
}

/// Decodes a HelmChart; the caller has registered it as `object`.
pub fn helm_chart(doc: &Node, object: ObjectId) -> Result<HelmChart, Vec<Diagnostic>> {
    let display = display_as("HelmChart", doc);
    check_shape(doc, &schema::HELM_CHART, Some(&display))?;
    let mut problems = Vec::new();
    let name = checked_name(doc, &display, NameRule::Release).map_err(|e| problems.extend(e));
    let namespace = checked_namespace(doc, &display, &mut problems);
    let spec = doc.field(names::SPEC);
    let chart_node = spec.and_then(|s| s.field(names::CHART));
    let text = |key: &str| chart_node.and_then(|c| c.field(key)).and_then(Node::as_str);
    let chart = match (
        text(names::PATH),
        text(names::REPOSITORY),
        text(names::NAME),
    ) {
        (Some(path), None, None) => Ok(ChartSource::Local(LocalChart::Path(path.to_string()))),
        (None, None, Some(name)) => Ok(ChartSource::Local(LocalChart::Named(name.to_string()))),
        (None, Some(repository), Some(chart)) if RemoteChart::is_shortcut(repository) => {
            Ok(ChartSource::Remote(RemoteChart {
                repository: repository.trim_end_matches('/').to_string(),
                chart: Some(chart.to_string()),
                version: text(names::VERSION).map(str::to_string),
            }))
        }
        (None, Some(repository), _) if repository.starts_with("git+") => Err((
            Code::UnsupportedNylFeature,
            format!(
                "`spec.chart.repository` {repository:?} is a Git chart source (Nyl clones it \
                 while rendering), which nyl does not support: vendor the chart into the \
                 repository and name it with `path`, or publish it to a chart repository"
            ),
        )),
        (None, Some(repository), Some(_)) => Err((
            Code::InvalidField,
            format!(
                "`spec.chart.repository` {repository:?} must start with oci://, http:// or https://"
            ),
        )),
        _ => Err((
            Code::InvalidField,
            "`spec.chart` needs either `path`, `repository` and `name`, or `name` alone"
                .to_string(),
        )),
    };
    let chart_loc = chart_node.map_or(doc.prov.loc, |n| n.prov.loc);
    let chart = chart.map_err(|(code, why)| {
        problems.push(Diagnostic::new(code, why).at(chart_loc).object(&display));
    });
    if let Ok(ChartSource::Remote(remote)) = &chart {
        if let Err((part, why)) = remote.check() {
            let loc = chart_node
                .and_then(|c| c.field(part))
                .map_or(chart_loc, |n| n.prov.loc);
            problems.push(
                Diagnostic::new(Code::InvalidChartReference, why)
                    .at(loc)
                    .object(&display)
                    .path(&format!("spec.chart.{part}")),
            );
        }
    }
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
            spec.and_then(|s| s.field(names::VALUES)),
            doc.prov.loc,
            Layer::Spec { object },
        ),
        include_crds: spec
            .and_then(|s| s.field(names::INCLUDE_CRDS))
            .and_then(Node::as_bool)
            .unwrap_or(true),
    })
}

/// `metadata.namespace`, checked as an RFC 1123 label.
fn checked_namespace(doc: &Node, display: &str, problems: &mut Vec<Diagnostic>) -> Option<String> {
    let node = doc
        .field(names::METADATA)
        .and_then(|m| m.field(names::NAMESPACE))?;
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

/// Whether app files are templates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Templating {
    /// App files are MiniJinja templates, rendered before their YAML is read (as in Nyl).
    On,
    /// Template syntax is text, passed on as written (for charts that `tpl` their values).
    Off,
    /// Not said, in a project not in Nyl's shape: a string holding template syntax is refused
    /// (`template_expression`), naming both settings, rather than guessed at.
    Unset,
}

impl Templating {
    /// `[project] templating` when written; unset, on for a project in Nyl's shape (its targets
    /// in `k8s.gitops.nyl/v1`, or nyl.toml holding Nyl's own keys), so that a Nyl repository
    /// renders unchanged, and [`Templating::Unset`] otherwise, so that a project that never
    /// templated does not start to.
    pub fn resolve(written: Option<bool>, nyl_shaped: bool) -> Templating {
        match (written, nyl_shaped) {
            (Some(true), _) | (None, true) => Templating::On,
            (Some(false), _) => Templating::Off,
            (None, false) => Templating::Unset,
        }
    }
}

/// The project settings of `nyl.toml`.
#[derive(Clone, Debug)]
pub struct Config {
    pub components_search_paths: Vec<String>,
    pub targets_search_paths: Vec<String>,
    /// Where a HelmChart's chart named without a repository is looked for.
    pub helm_chart_search_paths: Vec<String>,
    /// `[project] templating` as written; unset, the project's shape decides
    /// ([`Templating::resolve`]).
    pub templating: Option<bool>,
    /// nyl.toml holds keys only Nyl writes (`[profile]`, `gitops_scaffold_path`).
    pub nyl_keys: bool,
    /// `targets_search_paths` is written in `nyl.toml` (the default may be absent).
    pub targets_search_paths_set: bool,
    /// Invocation kind -> (component path or remote shortcut, where it was written).
    pub aliases: Aliases,
    pub limits: Limits,
    /// The declared layouts, with where each is written.
    pub layouts: Vec<(Layout, Loc)>,
    /// `render.cluster_scoped_kinds`: `Kind` or `group/Kind`.
    pub cluster_scoped_kinds: Vec<String>,
}

/// Bounds on what one run reads and keeps. The operator sets each (`NYL_MAX_*` in the
/// environment, else the default); `[limits]` of a repository's `nyl.toml` may only lower them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_file_bytes: u64,
    pub max_files: u64,
    pub max_total_bytes: u64,
    pub max_nodes: u64,
    pub max_value_bytes: u64,
    pub max_render_bytes: u64,
    /// Lowers the operator's `--helm-timeout` (`NYL_HELM_TIMEOUT`); it can never raise it.
    pub helm_timeout_seconds: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 4 << 20,
            max_files: 2000,
            max_total_bytes: 64 << 20,
            max_nodes: crate::data::yaml::MAX_NODES as u64,
            max_value_bytes: crate::data::yaml::MAX_BYTES as u64,
            max_render_bytes: 64 << 20,
            helm_timeout_seconds: None,
        }
    }
}

impl Limits {
    /// Each limit by its name (its key in `[limits]`).
    fn entries_mut(&mut self) -> [(&'static str, &mut u64); 6] {
        [
            (names::MAX_FILE_BYTES, &mut self.max_file_bytes),
            (names::MAX_FILES, &mut self.max_files),
            (names::MAX_TOTAL_BYTES, &mut self.max_total_bytes),
            (names::MAX_NODES, &mut self.max_nodes),
            (names::MAX_VALUE_BYTES, &mut self.max_value_bytes),
            (names::MAX_RENDER_BYTES, &mut self.max_render_bytes),
        ]
    }

    /// The default of the limit `name`, if there is one by that name.
    pub fn default_of(name: &str) -> Option<u64> {
        Limits::default()
            .entries_mut()
            .into_iter()
            .find_map(|(n, value)| (n == name).then_some(*value))
    }

    /// The environment variable by which the operator sets the limit `name`.
    pub fn variable(name: &str) -> String {
        format!("NYL_{}", name.to_ascii_uppercase())
    }

    /// A limit as messages name it: `limits.NAME (VALUE)` and who sets it.
    pub fn describe(name: &str, value: u64) -> String {
        format!(
            "limits.{name} ({value}; the operator's {} sets it, [limits] in nyl.toml may lower it)",
            Limits::variable(name)
        )
    }

    /// The operator's ceilings: each default replaced by its `NYL_MAX_*` variable where `env`
    /// has one. A variable that is not a whole number is an error: a ceiling is never guessed.
    pub fn ceilings(env: &dyn Fn(&str) -> Option<String>) -> Result<Limits, Vec<Diagnostic>> {
        let mut limits = Limits::default();
        let mut problems = Vec::new();
        for (name, value) in limits.entries_mut() {
            let variable = Limits::variable(name);
            let Some(text) = env(&variable) else {
                continue;
            };
            match text.trim().parse() {
                Ok(n) => *value = n,
                Err(_) => problems.push(Diagnostic::new(
                    Code::InvalidCeiling,
                    format!("{variable}={text:?} is not a whole number of {name}"),
                )),
            }
        }
        if problems.is_empty() {
            Ok(limits)
        } else {
            Err(problems)
        }
    }
}

impl Default for Config {
    /// The settings of an empty `nyl.toml`.
    fn default() -> Self {
        Config {
            components_search_paths: vec![DEFAULT_COMPONENTS.to_string()],
            targets_search_paths: DEFAULT_TARGETS.iter().map(ToString::to_string).collect(),
            helm_chart_search_paths: vec![DEFAULT_HELM_CHARTS.to_string()],
            templating: None,
            nyl_keys: false,
            targets_search_paths_set: false,
            aliases: IndexMap::new(),
            limits: Limits::default(),
            layouts: Vec::new(),
            cluster_scoped_kinds: Vec::new(),
        }
    }
}

const DEFAULT_COMPONENTS: &str = "components";
/// The project root, as in Nyl.
const DEFAULT_HELM_CHARTS: &str = ".";
/// `targets`, nyl's own place, and `config`, where a Nyl repository keeps them.
const DEFAULT_TARGETS: &[&str] = &["targets", "config"];

/// Decodes `nyl.toml` (already turned into a value tree), its `[limits]` held to the operator's
/// `ceilings`: a limit above its ceiling is clamped to it, with a warning (beside the config).
pub fn config(doc: &Node, ceilings: &Limits) -> Result<(Config, Vec<Diagnostic>), Vec<Diagnostic>> {
    check_shape(doc, &schema::CONFIG, Some("nyl.toml"))?;
    let project = doc.field(names::PROJECT);
    let paths = |key: &str, default: &[&str]| match project.and_then(|p| p.field(key)) {
        Some(list) => strings(Some(list)).into_iter().map(|(s, _)| s).collect(),
        None => default.iter().map(ToString::to_string).collect(),
    };
    let aliases = project
        .and_then(|p| p.field(names::ALIASES))
        .and_then(Node::as_map)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), (v.as_str()?.to_string(), v.prov.loc))))
                .collect()
        })
        .unwrap_or_default();
    let mut limits = *ceilings;
    let mut warnings = Vec::new();
    for (name, ceiling) in limits.entries_mut() {
        let Some(node) = doc.field(names::LIMITS).and_then(|l| l.field(name)) else {
            continue;
        };
        let Value::Number(n) = &node.value else {
            continue;
        };
        match n.as_u64() {
            Some(n) if n > *ceiling => warnings.push(
                Diagnostic::new(
                    Code::LimitAboveCeiling,
                    format!(
                        "limits.{name} = {n} is above the ceiling {ceiling} the operator set \
                         ({}, else the default); {ceiling} applies",
                        Limits::variable(name)
                    ),
                )
                .at(node.prov.loc)
                .object("nyl.toml"),
            ),
            Some(n) => *ceiling = n,
            None => {}
        }
    }
    // Held to the operator's --helm-timeout where the render applies it.
    limits.helm_timeout_seconds = doc
        .field(names::LIMITS)
        .and_then(|l| l.field(names::HELM_TIMEOUT_SECONDS))
        .and_then(|n| match &n.value {
            Value::Number(n) => n.as_u64(),
            _ => None,
        });
    let layouts = doc
        .field(names::LAYOUTS)
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .map(|l| {
            let text = |k: &str| l.field(k).and_then(Node::as_str).map(str::to_string);
            let layout = Layout {
                name: text(names::NAME).unwrap_or_default(),
                id: text(names::ID).unwrap_or_default(),
                app: text(names::APP).unwrap_or_default(),
                chart: text(names::CHART).unwrap_or_default(),
                values: strings(l.field(names::VALUES))
                    .into_iter()
                    .map(|(s, _)| s)
                    .collect(),
                target: text(names::TARGET),
                namespace: text(names::NAMESPACE),
                release: text(names::RELEASE),
            };
            (layout, l.prov.loc)
        })
        .collect();
    let config = Config {
        layouts,
        limits,
        components_search_paths: paths(names::COMPONENTS_SEARCH_PATHS, &[DEFAULT_COMPONENTS]),
        targets_search_paths: paths(names::TARGETS_SEARCH_PATHS, DEFAULT_TARGETS),
        helm_chart_search_paths: paths(names::HELM_CHART_SEARCH_PATHS, &[DEFAULT_HELM_CHARTS]),
        templating: project
            .and_then(|p| p.field(names::TEMPLATING))
            .and_then(Node::as_bool),
        nyl_keys: doc.field(names::PROFILE).is_some()
            || project.is_some_and(|p| p.field(names::GITOPS_SCAFFOLD_PATH).is_some()),
        targets_search_paths_set: project
            .and_then(|p| p.field(names::TARGETS_SEARCH_PATHS))
            .is_some(),
        aliases,
        cluster_scoped_kinds: strings(
            doc.field(names::RENDER)
                .and_then(|r| r.field(names::CLUSTER_SCOPED_KINDS)),
        )
        .into_iter()
        .map(|(s, _)| s)
        .collect(),
    };
    Ok((config, warnings))
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
    let node = doc
        .field(names::METADATA)
        .and_then(|m| m.field(names::NAME));
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

/// Checks an entry of Helm's `--api-versions`: `version`, `group/version` or
/// `group/version/Kind`, each part letters, digits, '.' and '-' starting with a letter or digit.
/// Helm reads the flag as a line of comma-separated values, so an entry holding a comma, a quote, a
/// newline or whitespace would reach `.Capabilities.APIVersions` as something else than written.
pub fn check_api_version(entry: &str) -> Result<(), String> {
    let part_ok = |p: &str| {
        p.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-".contains(&b))
    };
    let parts = entry.split('/').count();
    if (1..=3).contains(&parts) && entry.split('/').all(part_ok) {
        Ok(())
    } else {
        Err(format!(
            "API version {entry:?} is not `version`, `group/version` or `group/version/Kind` \
             (letters, digits, '.' and '-'); give each API version as an entry of its own, not \
             joined by commas, spaces or newlines"
        ))
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

    /// A shortcut parsed (a syntax problem is a `syntax` diagnostic) and [`checked`](Self::check).
    pub fn parse_checked(kind: &str, syntax: Code) -> Result<RemoteChart, Diagnostic> {
        let remote = Self::parse(kind).map_err(|why| Diagnostic::new(syntax, why))?;
        remote
            .check()
            .map_err(|(_, why)| Diagnostic::new(Code::InvalidChartReference, why))?;
        Ok(remote)
    }

    /// Checks each part as Helm would accept it, so that none can be taken for a flag on Helm's
    /// command line: the chart name in Helm's own character set (`[A-Za-z0-9._-]`, as
    /// `helm create` checks it) and not starting with `-`; the version in the characters of a
    /// version or a range (`>=1.2, <2`); the repository URL (which starts with its scheme)
    /// without whitespace or control characters. `Err` names the part and says why.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let chart_char = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
        let version_char = |c: char| c.is_ascii_alphanumeric() || ".+-_~^*<>=!,| ".contains(c);
        if self
            .repository
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
        {
            return Err((
                names::REPOSITORY,
                format!(
                    "the chart repository {:?} holds whitespace or control characters",
                    self.repository
                ),
            ));
        }
        if let Some(chart) = &self.chart {
            if !chart.chars().all(chart_char)
                || chart.starts_with('-')
                || chart == "."
                || chart == ".."
            {
                return Err((
                    names::NAME,
                    format!(
                        "the chart name {chart:?} is not a Helm chart name: use letters, digits, \
                         '.', '_' and '-', not starting with '-'"
                    ),
                ));
            }
        }
        if let Some(version) = &self.version {
            if !version.chars().all(version_char) || version.starts_with('-') {
                return Err((
                    names::VERSION,
                    format!(
                        "the chart version {version:?} is not a version or a version range: use \
                         letters, digits and '.+-_~^*<>=!,| ', not starting with '-'"
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::provenance::FileId;
    use crate::data::yaml::doc;

    #[test]
    fn documents_are_classified_by_api_version_and_kind() {
        let none = Aliases::new();
        let kind = |t: &str| classify(&doc(t), Place::App, &none).map_err(|d| d.code);
        let target = |t: &str| classify(&doc(t), Place::Targets, &none).map_err(|d| d.code);
        assert_eq!(
            target("apiVersion: k8s.nyl/v1\nkind: Cluster\n"),
            Ok(DocKind::Cluster)
        );
        // Nyl's group for the same targets, and its other control resources kept beside them.
        assert_eq!(
            target("apiVersion: k8s.gitops.nyl/v1\nkind: Cluster\n"),
            Ok(DocKind::Cluster)
        );
        assert_eq!(
            target("apiVersion: k8s.gitops.nyl/v1\nkind: DeploymentTarget\n"),
            Ok(DocKind::DeploymentTarget)
        );
        assert_eq!(
            target("apiVersion: k8s.gitops.nyl/v1\nkind: ApplicationGroup\n"),
            Ok(DocKind::NylControl)
        );
        assert_eq!(
            target("apiVersion: k8s.gitops.nyl/v1\nkind: Release\n"),
            Err(Code::MisplacedDocument)
        );
        assert_eq!(
            kind("apiVersion: k8s.gitops.nyl/v1\nkind: Release\n"),
            Ok(DocKind::Release)
        );
        assert_eq!(
            kind("apiVersion: k8s.gitops.nyl/v1\nkind: ApplicationGroup\n"),
            Err(Code::UnknownApiVersion)
        );
        // An alias written Nyl's way: `apiVersion/kind` is the alias key.
        let mut aliases = Aliases::new();
        aliases.insert(
            "my.io/v1/Site".to_string(),
            ("example/v1/Web".to_string(), Loc::new(FileId(0), 1)),
        );
        let site = doc("apiVersion: my.io/v1\nkind: Site\nmetadata: {name: a}\n");
        assert_eq!(
            classify(&site, Place::App, &aliases).map_err(|d| d.code),
            Ok(DocKind::Invocation)
        );
        assert_eq!(
            invocation(&site, ObjectId(0)).map(|i| i.kind),
            Ok("my.io/v1/Site".to_string())
        );
        assert_eq!(
            kind("apiVersion: my.io/v1\nkind: Site\nmetadata: {name: a}\n"),
            Ok(DocKind::Manifest)
        );
        assert_eq!(
            target("apiVersion: k8s.nyl/v1\nkind: DeploymentTarget\n"),
            Ok(DocKind::DeploymentTarget)
        );
        assert_eq!(
            kind("apiVersion: k8s.nyl/v1\nkind: Cluster\n"),
            Err(Code::MisplacedDocument)
        );
        assert_eq!(
            target("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"),
            Err(Code::MisplacedDocument)
        );
        assert_eq!(
            kind("apiVersion: components.k8s.nyl/v1\nkind: a/b\n"),
            Ok(DocKind::Invocation)
        );
        assert_eq!(
            kind("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"),
            Ok(DocKind::Manifest)
        );
        assert_eq!(
            kind("apiVersion: v1\nkind: Pod\nmetadata: {generateName: a-}\n"),
            Ok(DocKind::Manifest)
        );
        for not_an_object in [
            "replicas: 2\n",
            "apiVersion: v1\nkind: ConfigMap\n",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata: {name: a}\n",
        ] {
            assert_eq!(kind(not_an_object), Err(Code::NotAnObject), "{not_an_object}");
        }
        assert_eq!(
            classify(&doc("replicas: 2\n"), Place::ChartOutput, &none).map_err(|d| d.code),
            Ok(DocKind::Manifest)
        );
        assert_eq!(
            kind("apiVersion: component.k8s.nyl/v1\nkind: a\n"),
            Err(Code::UnknownApiVersion)
        );
        for nyl in [
            "apiVersion: gitops.nyl/v1\nkind: Cluster\n",
            "apiVersion: nyl.niklasrosenstein.github.com/v1\nkind: HelmChart\n",
            "apiVersion: nyl.niklasrosenstein.github.com/v1\nkind: RemoteManifest\n",
            "apiVersion: components.nyl.niklasrosenstein.github.com/v1\nkind: example/v1/App\n",
        ] {
            assert_eq!(kind(nyl), Err(Code::RenamedApiVersion), "{nyl}");
        }
        assert_eq!(
            kind("apiVersion: inline.nyl.niklasrosenstein.github.com/v1\nkind: Other\n"),
            Err(Code::UnknownApiVersion)
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
    fn chart_references_are_checked_as_helm_takes_them() {
        let code =
            |kind: &str| RemoteChart::parse_checked(kind, Code::InvalidName).map_err(|d| d.code);
        for good in [
            "https://c.example/repo#nginx-ingress_2.x@1.2.3-rc.1+build",
            "https://c.example/repo#app@>=1.2.0, <2",
            "oci://r.example/charts/app@^0.1",
        ] {
            assert!(code(good).is_ok(), "{good}");
        }
        for bad in [
            "https://c.example/repo#--set-file=x=/proc/self/environ",
            "https://c.example/repo#-x",
            "https://c.example/repo#..",
            "https://c.example/repo#a/b",
            "https://c.example/repo#app@--output-dir=/tmp",
            "https://c.example/repo#app@1.0;rm",
            "https://c.example/re po#app",
            "oci://r.example/charts#--post-renderer=x",
        ] {
            assert_eq!(code(bad), Err(Code::InvalidChartReference), "{bad}");
        }
        assert_eq!(code("https://c.example/repo#"), Err(Code::InvalidName));
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
