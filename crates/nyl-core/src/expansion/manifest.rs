//! Manifests as nyl passes them on: each document's text as it was written or as Helm printed it,
//! the few fields nyl looks at (from a cheap scan, or from the full reader when the scan is
//! unsure or the document is nyl's own), the namespace rule, and the tree only for the outputs
//! that need it (`-o json`, `nyl diff`).
//!
//! A release's output is classified once ([`Output::classify`]) and that is what the render cache
//! stores, so a warm render does no YAML work on it.

use std::any::Any;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

use crate::data::diagnostics::{Code, Diagnostic};
use crate::data::provenance::{Loc, Prov};
use crate::data::value::{Map, Node, Value};
use crate::data::yaml::{self, Head, Limits, Mode};
use crate::parallel;
use crate::project::objects::is_nyl_group;

/// A release's output, split into documents and scanned: what the render cache stores.
#[derive(Debug)]
pub struct Output {
    /// Helm's stdout as it printed it (not part of the index: see [`Output::index`]); shared
    /// by the manifests cut from it, so passing it on copies nothing.
    pub raw: Raw,
    pub docs: Vec<Doc>,
}

/// Helm's stdout: in memory, or kept by the shell outside it.
#[derive(Clone, Debug)]
pub enum Raw {
    Text(Arc<String>),
    Stored(Stored),
}

impl Raw {
    pub fn len(&self) -> usize {
        match self {
            Raw::Text(text) => text.len(),
            Raw::Stored(stored) => stored.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Bytes the shell keeps outside memory (a large release's output, in its cache entry or a file
/// of its own, written to stdout from there): opaque to the core, which knows only their length
/// and passes on ranges of them.
#[derive(Clone)]
pub struct Stored {
    pub bytes: Arc<dyn Any + Send + Sync>,
    pub len: usize,
}

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stored({} bytes)", self.len)
    }
}

/// One document of a release's output.
#[derive(Debug)]
pub struct Doc {
    /// Its bytes in the raw output, and the line they start on.
    pub start: usize,
    pub end: usize,
    pub line: u32,
    /// Its output text, when that is not exactly its bytes (a `---` put in front, a directive
    /// left out, a final newline added).
    pub text: Option<String>,
    /// What the scan found; `None` when only the full reader can tell.
    pub head: Option<Head>,
    /// Its bytes, for the full reader, when the raw output is stored and the document needs
    /// reading ([`needs_reading`]); not part of the index.
    pub source: Option<String>,
}

impl Output {
    /// Splits Helm's stdout into documents and scans each, on two threads for an output of a
    /// megabyte or more when the run may use two (the scan is most of a cold render's own work).
    pub fn classify(raw: String, two_threads: bool) -> Output {
        let workers = parallel::workers_for(raw.len(), parallel::WORTH_A_THREAD, || two_threads);
        let docs = Output::classify_part(&raw, 0, 0, workers, false);
        Output {
            raw: Raw::Text(Arc::new(raw)),
            docs,
        }
    }

    /// The documents of `text`, a part of a stream that starts `offset` bytes and `lines` lines
    /// into it, cut where [`yaml::cut`] allows: what [`Output::classify`] finds there in the
    /// whole stream, scanned on `workers` threads. `sources` keeps the bytes of the documents
    /// the full reader needs, for a stream that is not kept in memory.
    pub fn classify_part(
        text: &str,
        offset: usize,
        lines: u32,
        workers: usize,
        sources: bool,
    ) -> Vec<Doc> {
        let pieces = yaml::split(text);
        let heads = parallel::map(&pieces, workers, |(): &mut (), piece| {
            yaml::scan(piece.text(text))
        });
        pieces
            .into_iter()
            .zip(heads)
            .map(|(piece, head)| Doc {
                source: (sources && needs_reading(head.as_ref()))
                    .then(|| text[piece.start..piece.end].to_string()),
                start: piece.start + offset,
                end: piece.end + offset,
                line: piece.line + lines,
                head,
                text: piece.text,
            })
            .collect()
    }

    /// The document's output text.
    pub fn text(&self, doc: &Doc) -> Text {
        match (&doc.text, &self.raw) {
            (Some(text), _) => Text::Own(text.clone()),
            (None, Raw::Text(raw)) => Text::Shared(raw.clone(), doc.start..doc.end),
            (None, Raw::Stored(stored)) => Text::Stored(stored.clone(), doc.start..doc.end),
        }
    }

    /// The document's source, for the full reader (its lines match the raw output's); `None`
    /// for a stored output's document that needs no reading.
    pub fn source<'a>(&'a self, doc: &'a Doc) -> Option<&'a str> {
        match &self.raw {
            Raw::Text(raw) => Some(&raw[doc.start..doc.end]),
            Raw::Stored(_) => doc.source.as_deref(),
        }
    }

    /// The index of the documents, as a cache entry stores it beside the raw output
    /// ([`Output::decode_index`] and [`Output::new`] read both back): a compact binary list,
    /// each number a LEB128 varint, each string its length and bytes, each optional field a tag
    /// byte (0 absent, 1 present). Its layout is the cache entry's: a change needs a new entry
    /// magic (`src/helm/cache/entry.rs`).
    pub fn index(&self) -> Vec<u8> {
        let mut w = Vec::with_capacity(self.docs.len() * 64);
        put_num(&mut w, self.docs.len());
        for d in &self.docs {
            put_num(&mut w, d.start);
            put_num(&mut w, d.end);
            put_num(&mut w, d.line as usize);
            put_opt(&mut w, d.text.as_ref(), |w, t| put_str(w, t));
            put_opt(&mut w, d.head.as_ref(), put_head);
        }
        w
    }

    /// The documents an [`Output::index`] lists; `None` when it is not one (short, long, or any
    /// field out of place).
    pub fn decode_index(index: &[u8]) -> Option<Vec<Doc>> {
        let mut r = Reader(index);
        let n = r.num()?;
        // Each document takes at least five bytes: a count beyond that is damage, not a reason to
        // allocate.
        let mut docs = Vec::with_capacity(n.min(index.len() / 5));
        for _ in 0..n {
            docs.push(Doc {
                start: r.num()?,
                end: r.num()?,
                line: u32::try_from(r.num()?).ok()?,
                text: r.opt(Reader::string)?,
                head: r.opt(Reader::head)?,
                source: None,
            });
        }
        r.0.is_empty().then_some(docs)
    }

    /// The output of the documents of an index and the raw output they are cut from; `None`
    /// when they do not fit it.
    pub fn new(docs: Vec<Doc>, raw: String) -> Option<Output> {
        let fits = |d: &Doc| {
            d.start <= d.end && raw.is_char_boundary(d.start) && raw.is_char_boundary(d.end)
        };
        docs.iter().all(fits).then(|| Output {
            raw: Raw::Text(Arc::new(raw)),
            docs,
        })
    }

    /// The output of the documents of an index and the stored bytes they are cut from; `None`
    /// when they do not fit them. The shell gives each document that needs reading its
    /// `source` ([`Output::needing_sources`]).
    pub fn stored(docs: Vec<Doc>, stored: Stored) -> Option<Output> {
        docs.iter()
            .all(|d| d.start <= d.end && d.end <= stored.len)
            .then(|| Output {
                raw: Raw::Stored(stored),
                docs,
            })
    }

    /// The documents of a stored output that need their bytes for the full reader.
    pub fn needing_sources(&mut self) -> impl Iterator<Item = &mut Doc> {
        self.docs
            .iter_mut()
            .filter(|d| d.source.is_none() && needs_reading(d.head.as_ref()))
    }
}

/// A document's text: a range of the release output it came from, or its own.
#[derive(Clone, Debug)]
pub enum Text {
    Shared(Arc<String>, Range<usize>),
    Stored(Stored, Range<usize>),
    Own(String),
}

impl Text {
    pub fn len(&self) -> usize {
        match self {
            Text::Shared(_, range) | Text::Stored(_, range) => range.len(),
            Text::Own(text) => text.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The text, when it is in memory.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Text::Shared(raw, range) => Some(&raw[range.clone()]),
            Text::Stored(..) => None,
            Text::Own(text) => Some(text),
        }
    }
}

/// A piece of output: text in memory, or a range of stored bytes.
#[derive(Clone, Debug)]
pub enum Part<'a> {
    Text(&'a str),
    Stored(&'a Stored, Range<usize>),
}

impl Part<'_> {
    pub fn len(&self) -> usize {
        match self {
            Part::Text(text) => text.len(),
            Part::Stored(_, range) => range.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A document that is output: its text, the fields nyl looks at, and its tree when it was read.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// As output shows it: starting a document, ending in a newline (but for `edit`).
    text: Text,
    /// Bytes of `text` replaced by a line nyl inserts (the namespace rule's): the text stays
    /// shared with the release output, and writers write the pieces around the edit.
    edit: Option<(Range<usize>, String)>,
    pub head: Head,
    node: Option<Node>,
    /// The namespace of the release that rendered it; `None` when an app file holds it.
    pub release_namespace: Option<String>,
    /// Where the text starts, for problems the full reader finds later.
    loc: Loc,
}

impl Manifest {
    /// A document the scan was sure of.
    pub fn scanned(text: Text, head: Head, loc: Loc) -> Manifest {
        Manifest {
            text,
            edit: None,
            head,
            node: None,
            release_namespace: None,
            loc,
        }
    }

    /// A document the full reader read.
    pub fn read(doc: yaml::Document) -> Manifest {
        let head = head_of(&doc.node);
        Manifest {
            loc: doc.node.prov.loc,
            text: Text::Own(doc.text),
            edit: None,
            head,
            node: Some(doc.node),
            release_namespace: None,
        }
    }

    /// As output shows it: starting a document, ending in a newline; a copy only when nyl
    /// edited it (writers use [`Manifest::parts`]). `None` for a stored text, which only the
    /// shell's writer reads.
    pub fn text(&self) -> Option<Cow<'_, str>> {
        let text = self.text.as_str()?;
        Some(match &self.edit {
            None => Cow::Borrowed(text),
            Some((removed, inserted)) => {
                Cow::Owned([&text[..removed.start], inserted, &text[removed.end..]].concat())
            }
        })
    }

    /// The text as pieces that, one after the other, make it: what a writer writes without
    /// copying the document.
    pub fn parts(&self) -> [Part<'_>; 3] {
        let whole = |range: Range<usize>| match &self.text {
            Text::Shared(raw, r) => Part::Text(&raw[r.start + range.start..r.start + range.end]),
            Text::Own(text) => Part::Text(&text[range]),
            Text::Stored(stored, r) => {
                Part::Stored(stored, r.start + range.start..r.start + range.end)
            }
        };
        let len = self.text.len();
        match &self.edit {
            None => [whole(0..len), Part::Text(""), Part::Text("")],
            Some((removed, inserted)) => [
                whole(0..removed.start),
                Part::Text(inserted),
                whole(removed.end..len),
            ],
        }
    }

    /// The length of the text in bytes.
    pub fn text_len(&self) -> usize {
        self.parts().iter().map(Part::len).sum()
    }

    /// Where the document starts.
    pub fn loc(&self) -> Loc {
        self.loc
    }

    pub fn from_chart(&self) -> bool {
        self.release_namespace.is_some()
    }

    /// The document's tree, read now when it was not read before.
    pub fn node(&self, limits: &Limits) -> Result<Cow<'_, Node>, Vec<Diagnostic>> {
        if let Some(node) = &self.node {
            return Ok(Cow::Borrowed(node));
        }
        let Some(text) = self.text() else {
            return Err(vec![Diagnostic::new(
                Code::IoError,
                "internal error: a stored document was not read before its tree was needed",
            )
            .at(self.loc)]);
        };
        let parsed =
            yaml::parse_stream_from(&text, self.loc.file, self.loc.line, limits, Mode::Lenient);
        if parsed.diagnostics.iter().any(Diagnostic::is_error) {
            return Err(parsed.diagnostics);
        }
        let null = || Node::new(Value::Null, Prov::written(self.loc));
        Ok(Cow::Owned(
            parsed.docs.into_iter().next().unwrap_or_else(null),
        ))
    }

    /// The namespace rule: a namespaced object that chart output left without a namespace gets
    /// its release's, by inserting the field (or, where only the full reader understood the
    /// document, by writing the document anew from its tree).
    fn place(&mut self, scopes: &Scopes) {
        let Some(namespace) = &self.release_namespace else {
            return;
        };
        if self.head.namespace.is_some() || !scopes.namespaced(&self.head) {
            return;
        }
        if self.head.slot.is_none() {
            self.head.slot = self.following_slot();
        }
        if let Some(slot) = &self.head.slot {
            self.edit = Some(slot.splice(&yaml::scalar(namespace)));
            if let Some(node) = &mut self.node {
                set_namespace(node, namespace);
            }
        } else if let Some(node) = &mut self.node {
            set_namespace(node, namespace);
            self.text = Text::Own(format!("---\n{}", yaml::to_yaml(node, &|_| None)));
            self.edit = None;
        }
        self.head.namespace = Some(namespace.clone());
    }

    /// For a document the full reader read: where its namespace goes, when a scan that follows
    /// multi-line scalars and collections agrees with the tree on every field it read.
    fn following_slot(&self) -> Option<yaml::Edit> {
        // Before any edit: `place` edits once.
        let scanned = yaml::scan_following(self.text.as_str()?)?;
        let agrees = scanned.api_version == self.head.api_version
            && scanned.kind == self.head.kind
            && scanned.name == self.head.name
            && scanned.namespace.is_none();
        agrees.then_some(scanned.slot).flatten()
    }
}

/// The fields nyl looks at, from a tree.
pub fn head_of(node: &Node) -> Head {
    let text = |n: Option<&Node>| n.and_then(Node::as_str).map(str::to_string);
    let meta = node.get("metadata");
    let api_version = text(node.get("apiVersion"));
    let kind = text(node.get("kind"));
    let spec = node.get("spec");
    let crd = (kind.as_deref() == Some("CustomResourceDefinition")
        && api_version
            .as_deref()
            .is_some_and(|a| a.starts_with("apiextensions.k8s.io/")))
    .then(|| {
        Some(yaml::Crd {
            group: text(spec?.get("group"))?,
            kind: text(spec?.get("names")?.get("kind"))?,
            cluster_scoped: text(spec?.get("scope")).as_deref() == Some("Cluster"),
        })
    })
    .flatten();
    Head {
        api_version,
        kind,
        name: text(meta.and_then(|m| m.get("name"))),
        namespace: text(meta.and_then(|m| m.get("namespace"))).filter(|n| !n.is_empty()),
        crd,
        slot: None,
    }
}

fn set_namespace(node: &mut Node, namespace: &str) {
    let prov = node.prov;
    let Value::Map(map) = &mut node.value else {
        return;
    };
    let meta = map
        .entry("metadata".to_string())
        .or_insert_with(|| Node::new(Value::Map(Map::new()), prov));
    if !matches!(meta.value, Value::Map(_)) {
        meta.value = Value::Map(Map::new());
    }
    if let Value::Map(meta) = &mut meta.value {
        meta.insert(
            "namespace".to_string(),
            Node::new(Value::String(namespace.to_string()), prov),
        );
    }
}

/// Whether a document is nyl's own (or only the full reader can tell): then it is read fully.
pub fn needs_reading(head: Option<&Head>) -> bool {
    head.is_none_or(|h| h.api_version.as_deref().is_some_and(is_nyl_group))
}

/// Kubernetes' built-in cluster-scoped kinds, by API group (`""` is the core group), sorted
/// (a test holds it so) for [`Scopes::namespaced`]'s binary search.
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "ComponentStatus"),
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("authentication.k8s.io", "SelfSubjectReview"),
    ("authentication.k8s.io", "TokenReview"),
    ("authorization.k8s.io", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "SelfSubjectRulesReview"),
    ("authorization.k8s.io", "SubjectAccessReview"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("certificates.k8s.io", "ClusterTrustBundle"),
    ("extensions", "PodSecurityPolicy"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("internal.apiserver.k8s.io", "StorageVersion"),
    ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("node.k8s.io", "RuntimeClass"),
    ("policy", "PodSecurityPolicy"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceSlice"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("storage.k8s.io", "VolumeAttributesClass"),
    ("storagemigration.k8s.io", "StorageVersionMigration"),
];

/// Which kinds are cluster-scoped in one render: the built-in ones, the CRDs of the render by
/// their `spec.scope`, and `render.cluster_scoped_kinds` of nyl.toml (`Kind` in any group, or
/// `group/Kind`). Kinds nothing tells are namespaced, as kustomize's namespace transformer has it.
pub struct Scopes {
    /// The configured `group/Kind`s and the render's cluster-scoped CRDs (the built-in kinds are
    /// looked up in their table), and the render's namespaced CRDs: groups by kind, so that a
    /// document's kind and group are looked up as they are, without a key made for each.
    cluster: HashMap<String, HashSet<String>>,
    namespaced: HashMap<String, HashSet<String>>,
    any_group: HashSet<String>,
}

impl Scopes {
    pub fn new<'a>(configured: &[String], manifests: impl Iterator<Item = &'a Manifest>) -> Scopes {
        let mut scopes = Scopes {
            cluster: HashMap::new(),
            namespaced: HashMap::new(),
            any_group: HashSet::new(),
        };
        let add = |set: &mut HashMap<String, HashSet<String>>, group: &str, kind: &str| {
            set.entry(kind.to_string())
                .or_default()
                .insert(group.to_string());
        };
        for entry in configured {
            match entry.rsplit_once('/') {
                Some((group, kind)) => add(&mut scopes.cluster, group, kind),
                None => {
                    scopes.any_group.insert(entry.clone());
                }
            }
        }
        for crd in manifests.filter_map(|m| m.head.crd.as_ref()) {
            let set = if crd.cluster_scoped {
                &mut scopes.cluster
            } else {
                &mut scopes.namespaced
            };
            add(set, &crd.group, &crd.kind);
        }
        scopes
    }

    /// Whether an object of this head is namespaced; one without a kind is not an object to
    /// place.
    pub fn namespaced(&self, head: &Head) -> bool {
        let Some(kind) = head.kind.as_deref() else {
            return false;
        };
        let api = head.api_version.as_deref().unwrap_or("");
        let group = api.rsplit_once('/').map_or("", |(g, _)| g);
        let listed = |set: &HashMap<String, HashSet<String>>| {
            set.get(kind).is_some_and(|groups| groups.contains(group))
        };
        if listed(&self.namespaced) {
            return true;
        }
        // The built-in table is sorted: found without a set built for every render.
        let built_in = CLUSTER_SCOPED.binary_search(&(group, kind)).is_ok();
        !(built_in || listed(&self.cluster) || self.any_group.contains(kind))
    }
}

/// Applies the namespace rule to every manifest of a render.
pub fn place_namespaces(manifests: &mut [Manifest], configured: &[String]) {
    let scopes = Scopes::new(configured, manifests.iter());
    for m in manifests {
        m.place(&scopes);
    }
}

fn put_num(w: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        w.push((n as u8) | 0x80);
        n >>= 7;
    }
    w.push(n as u8);
}

fn put_str(w: &mut Vec<u8>, s: &str) {
    put_num(w, s.len());
    w.extend_from_slice(s.as_bytes());
}

fn put_opt<T>(w: &mut Vec<u8>, v: Option<T>, put: impl FnOnce(&mut Vec<u8>, T)) {
    match v {
        None => w.push(0),
        Some(v) => {
            w.push(1);
            put(w, v);
        }
    }
}

fn put_head(w: &mut Vec<u8>, h: &Head) {
    for field in [&h.api_version, &h.kind, &h.name, &h.namespace] {
        put_opt(w, field.as_deref(), put_str);
    }
    put_opt(w, h.crd.as_ref(), |w, crd| {
        put_str(w, &crd.group);
        put_str(w, &crd.kind);
        w.push(u8::from(crd.cluster_scoped));
    });
    put_opt(w, h.slot.as_ref(), |w, slot| {
        put_num(w, slot.at);
        put_num(w, slot.remove);
        put_str(w, &slot.before);
        put_str(w, &slot.after);
    });
}

/// Reads what [`Output::index`] writes; every read is `None` past the end or on a value out of
/// range, never a panic.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn num(&mut self) -> Option<usize> {
        let mut n: usize = 0;
        for shift in (0..usize::BITS).step_by(7) {
            let b = self.byte()?;
            let bits = usize::from(b & 0x7f);
            // Bits shifted out of a usize: no number this index could hold.
            (bits << shift >> shift == bits).then_some(())?;
            n |= bits << shift;
            if b & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    fn string(&mut self) -> Option<String> {
        let len = self.num()?;
        let bytes = self.0.get(..len)?;
        self.0 = &self.0[len..];
        String::from_utf8(bytes.to_vec()).ok()
    }

    fn flag(&mut self) -> Option<bool> {
        match self.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    /// An optional field: `Some(None)` when absent, `None` when the index is damaged.
    fn opt<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.flag()? {
            read(self).map(Some)
        } else {
            Some(None)
        }
    }

    fn head(&mut self) -> Option<Head> {
        Some(Head {
            api_version: self.opt(Reader::string)?,
            kind: self.opt(Reader::string)?,
            name: self.opt(Reader::string)?,
            namespace: self.opt(Reader::string)?,
            crd: self.opt(|r| {
                Some(yaml::Crd {
                    group: r.string()?,
                    kind: r.string()?,
                    cluster_scoped: r.flag()?,
                })
            })?,
            slot: self.opt(|r| {
                Some(yaml::Edit {
                    at: r.num()?,
                    remove: r.num()?,
                    before: r.string()?,
                    after: r.string()?,
                })
            })?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::provenance::FileId;

    fn chart_doc(text: &str) -> Manifest {
        let mut m = Manifest::scanned(
            Text::Own(text.to_string()),
            yaml::scan(text).unwrap(),
            Loc::new(FileId(0), 1),
        );
        m.release_namespace = Some("monitoring".into());
        m
    }

    #[test]
    fn namespaced_objects_get_the_release_namespace_and_cluster_scoped_ones_do_not() {
        let crd = "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
                   metadata:\n  name: gadgets.example.com\nspec:\n  group: example.com\n  \
                   names: {kind: Gadget, plural: gadgets}\n  scope: Cluster\n";
        let mut docs = vec![
            chart_doc("---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n"),
            chart_doc("---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\n"),
            chart_doc(crd),
            chart_doc("---\napiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n"),
            chart_doc("---\napiVersion: other.example/v1\nkind: Gadget\nmetadata:\n  name: g\n"),
            chart_doc("---\napiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata:\n  name: i\n"),
            chart_doc("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: set\n"),
        ];
        place_namespaces(&mut docs, &["ClusterIssuer".to_string()]);
        let namespaces: Vec<Option<&str>> =
            docs.iter().map(|d| d.head.namespace.as_deref()).collect();
        assert_eq!(
            namespaces,
            [
                Some("monitoring"),
                None,
                None,
                None,
                Some("monitoring"),
                None,
                Some("set")
            ]
        );
        assert_eq!(
            docs[0].text().unwrap(),
            "---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  namespace: monitoring\n  name: sa\n"
        );
        let mut app = chart_doc("---\nkind: ConfigMap\nmetadata: {name: x}\n");
        app.release_namespace = None;
        place_namespaces(std::slice::from_mut(&mut app), &[]);
        assert_eq!(
            app.text().unwrap(),
            "---\nkind: ConfigMap\nmetadata: {name: x}\n",
            "as written"
        );
    }

    #[test]
    fn a_large_output_scanned_on_two_threads_is_classified_as_in_order() {
        // Documents of every kind the scan tells apart, over a megabyte, so two threads scan it.
        let docs = [
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
            "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\n  namespace: x\n",
            "---\nkind: [unsure\n  ]\n",
            "# Source: c/t.yaml\n\n",
        ];
        let raw: String = (0..parallel::WORTH_A_THREAD / 40)
            .map(|i| docs[i % docs.len()])
            .collect();
        let pieces = yaml::split(&raw);
        assert!(raw.len() >= parallel::WORTH_A_THREAD && pieces.len() > 10_000);
        for two_threads in [true, false] {
            let output = Output::classify(raw.clone(), two_threads);
            assert_eq!(output.docs.len(), pieces.len());
            for (doc, piece) in output.docs.iter().zip(&pieces) {
                assert_eq!(
                    (doc.start, doc.end, doc.line),
                    (piece.start, piece.end, piece.line)
                );
                assert_eq!(doc.head, yaml::scan(piece.text(&raw)));
            }
        }
    }

    #[test]
    fn an_output_classified_a_part_at_a_time_is_classified_as_a_whole() {
        let docs = [
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
            "# Source: c/t.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\n",
            "---\nkind: [unsure\n  ]\n",
            "...\n# after an end marker\n",
            "---\nkeep: |+\n  line\n\n\n",
        ];
        let raw: String = (0..3000).map(|i| docs[i % docs.len()]).collect();
        let whole = Output::classify(raw.clone(), false);
        for part in [100, 4096, 65536] {
            let (mut start, mut lines, mut parts, mut window) = (0, 0, Vec::new(), part);
            while start + window < raw.len() {
                // A window without a cut waits for more, as a reading does.
                let Some(cut) = yaml::cut(&raw[start..start + window]) else {
                    window *= 2;
                    continue;
                };
                let text = &raw[start..start + cut];
                parts.extend(Output::classify_part(text, start, lines, 1, true));
                lines += text.matches('\n').count() as u32;
                start += cut;
                window = part;
            }
            // The rest on two threads: the order of the documents is kept.
            parts.extend(Output::classify_part(&raw[start..], start, lines, 2, true));
            assert_eq!(parts.len(), whole.docs.len(), "parts of {part}");
            for (a, b) in parts.iter().zip(&whole.docs) {
                assert_eq!((a.start, a.end, a.line), (b.start, b.end, b.line));
                assert_eq!((&a.text, &a.head), (&b.text, &b.head));
                // The documents to read keep their bytes.
                let source = needs_reading(a.head.as_ref()).then(|| &raw[a.start..a.end]);
                assert_eq!(a.source.as_deref(), source);
            }
        }
    }

    /// Wherever the scan is sure, it finds what the full reader finds: random documents of the
    /// lines that make it unsure or not (multi-line quoted scalars and flows at every depth,
    /// block scalars, duplicates, comments).
    #[test]
    fn the_scan_agrees_with_the_full_reader_wherever_it_is_sure() {
        // A document of the fields the scan reads, with pieces put in at random places.
        const BASE: &[&str] = &[
            "apiVersion: apiextensions.k8s.io/v1\n",
            "kind: CustomResourceDefinition\n",
            "metadata:\n",
            "  name: w.g.io\n",
            "spec:\n",
            "  group: g.io\n",
            "  names:\n",
            "    kind: W\n",
            "  versions:\n",
            "    - name: v1\n",
            "      schema:\n",
            "        openAPIV3Schema:\n",
            "          type: object\n",
            "  scope: Cluster\n",
        ];
        const PIECES: &[&str] = &[
            "          d: 'x\n            y'\n",
            "          e: \"p\n\n            q\"\n",
            "          f: [\n            1]\n",
            "          - 'o\n            p' z\n",
            "          g: 'open\n",
            "'\n",
            "    h: 'm\n      n'\n",
            "  i: 'm\n  n'\n",
            "          j: |\n            'k\n",
            "  k: \"\n    scope: Namespaced\"\n",
            "  l: 'x\nkind: Secret'\n",
            "  m: {a: 1,\n     b: 2}\n",
            "  n: [\n  ]\n",
            "  namespace: ns\n",
            "# c\n",
            "\n",
            "          o: 'a''\n            b'\n",
            "          p: \"a\\\"\n            b\"\n",
            "            x\n",
            "  q: x\n    'y\n",
            // A plain scalar going on with a quote, then a key whose value ends with one.
            "  r: x\n    'y\n  scope: Namespaced'\n",
            "          s: x\n            'y\n  t: 'u\n",
        ];
        let mut rng = crate::data::yaml::Rng(0x9E37_79B9_7F4A_7C15);
        let (mut sure, mut compared) = (0, 0);
        for _ in 0..20_000 {
            let mut lines: Vec<&str> = BASE.to_vec();
            for _ in 0..=rng.below(4) {
                let at = rng.below(lines.len() + 1);
                lines.insert(at, PIECES[rng.below(PIECES.len())]);
            }
            let doc = lines.concat();
            let Some(scanned) = yaml::scan(&doc) else {
                continue;
            };
            sure += 1;
            let parsed =
                yaml::parse_stream_from(&doc, FileId(0), 1, &Limits::default(), Mode::Lenient);
            if parsed.diagnostics.iter().any(Diagnostic::is_error) || parsed.docs.len() != 1 {
                continue;
            }
            compared += 1;
            let read = head_of(&parsed.docs[0]);
            let fields = |h: &Head| {
                (
                    h.api_version.clone(),
                    h.kind.clone(),
                    h.name.clone(),
                    h.namespace.clone(),
                    h.crd.clone(),
                )
            };
            assert_eq!(fields(&scanned), fields(&read), "{doc}");
        }
        assert!(
            sure > 2000 && compared > 1000,
            "{sure} sure, {compared} compared"
        );
    }

    #[test]
    fn the_built_in_cluster_scoped_kinds_are_sorted() {
        assert!(CLUSTER_SCOPED.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn the_cache_index_round_trips_and_rejects_damage() {
        let crd = "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
                   metadata:\n  name: gadgets.example.com\nspec:\n  group: example.com\n  \
                   names: {kind: Gadget, plural: gadgets}\n  scope: Cluster\n";
        // Every field of the index in use: a head with a slot, a CRD, a document with a text of
        // its own (no `---` of its own), one only the full reader can tell.
        let raw = format!(
            "# Source: c/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \u{e9}\n\n\
             {crd}---\nkind: [unsure\n  ]\n"
        );
        let output = Output::classify(raw.clone(), true);
        assert_eq!(output.docs.len(), 3);
        assert!(
            output.docs[0].text.is_some() && output.docs[0].head.as_ref().unwrap().slot.is_some()
        );
        assert!(output.docs[1].head.as_ref().unwrap().crd.is_some());
        assert!(output.docs[2].head.is_none());
        let decode =
            |index: &[u8], raw: &str| Output::new(Output::decode_index(index)?, raw.to_string());
        let index = output.index();
        let back = decode(&index, &raw).unwrap();
        assert!(matches!(&back.raw, Raw::Text(back) if **back == raw));
        for (a, b) in back.docs.iter().zip(&output.docs) {
            assert_eq!((a.start, a.end, a.line), (b.start, b.end, b.line));
            assert_eq!((&a.text, &a.head), (&b.text, &b.head));
        }
        // Any cut is short; anything after is long; a document past the end does not fit.
        for cut in 0..index.len() {
            assert!(
                Output::decode_index(&index[..cut]).is_none(),
                "cut at {cut}"
            );
        }
        assert!(Output::decode_index(&[index.as_slice(), &[0]].concat()).is_none());
        assert!(decode(&index, "short").is_none());
        assert!(Output::decode_index(b"not an index").is_none());
        // A tag that is neither absent nor present, a number too long for a usize.
        assert!(Output::decode_index(&[1, 0, 1, 1, 2]).is_none());
        assert!(Output::decode_index(&[0xff; 11]).is_none());
    }
}
