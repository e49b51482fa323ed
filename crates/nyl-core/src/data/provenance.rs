//! Where a value came from: source files, nyl objects, and the layer a value belongs to.
//!
//! Every [`Node`](crate::data::value::Node) carries a [`Prov`]: a small copyable tag (file, line, layer) that
//! points into a [`Catalog`], the side table of file paths and objects (the shape Figment uses, with
//! per-line positions). The merge keeps these tags on every node, so provenance is a property of the
//! merged tree and not something reconstructed afterwards.

use std::fmt;

/// Index of a source file in a [`Catalog`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// Index of a nyl object (Cluster, DeploymentTarget, invocation) in a [`Catalog`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(pub u32);

/// A position in a source file. Lines are 1-based; `line == 0` means "unknown line".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Loc {
    pub file: FileId,
    pub line: u32,
}

impl Loc {
    pub fn new(file: FileId, line: u32) -> Self {
        Loc { file, line }
    }
}

/// The layer of the value pipeline a node belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    /// As read from a file, not yet attributed to a layer.
    Written,
    /// The `spec.values` of a Cluster or DeploymentTarget.
    TargetValues { object: ObjectId },
    /// Imported through value import number `index` of the component's contract; `object` is the
    /// Cluster or DeploymentTarget whose values held it.
    Import { index: u32, object: ObjectId },
    /// The `spec` of an invocation.
    Spec { object: ObjectId },
    /// Created by the pipeline to hold an import's destination; `index` is the import.
    ImportPath { index: u32 },
    /// A layout's values file (the file is the node's location), number `index` of the layout.
    LayerFile { index: u32 },
    /// Values given at run time as YAML strings: the `values` or `target-values` parameter, the
    /// `--values-yaml` or `--target-values` flag.
    Runtime { target: bool },
    /// A values file given at run time (`-f FILE`, `-f -` for stdin); the node's location is in it.
    ValuesFile,
    /// The chart's own `values.yaml`.
    ChartDefault,
}

/// Provenance of one node: where it was written and which layer it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prov {
    pub loc: Loc,
    pub layer: Layer,
}

impl Prov {
    pub fn written(loc: Loc) -> Self {
        Prov {
            loc,
            layer: Layer::Written,
        }
    }
}

/// A nyl object as diagnostics and provenance name it: `Cluster/prod-eu-1`, or the kind alone
/// while the document has no name (its missing name is a problem of its own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    pub kind: String,
    /// Empty when the document has none.
    pub name: String,
    pub loc: Loc,
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        ObjectName::new(&self.kind, &self.name).fmt(f)
    }
}

/// How users read a nyl object's identity, everywhere: `Cluster/prod-eu-1`, or the kind alone
/// while the object has no name (never a placeholder).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectName<'a> {
    pub kind: &'a str,
    pub name: &'a str,
}

impl<'a> ObjectName<'a> {
    pub fn new(kind: &'a str, name: &'a str) -> Self {
        ObjectName { kind, name }
    }
}

impl fmt::Display for ObjectName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.is_empty() {
            f.write_str(self.kind)
        } else {
            write!(f, "{}/{}", self.kind, self.name)
        }
    }
}

/// A Kubernetes object's identity within its API group: kind, namespace (empty for a
/// cluster-scoped one) and name. Shown as `Deployment web/api` (`ClusterRole admin` without a
/// namespace); diagnostics name it as [`ObjectName`] does, `Deployment/api`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceName {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ResourceName {
    /// How diagnostics name the object.
    pub fn object(&self) -> ObjectName<'_> {
        ObjectName::new(&self.kind, &self.name)
    }
}

impl fmt::Display for ResourceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// The side table that [`FileId`] and [`ObjectId`] index into.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    files: Vec<String>,
    objects: Vec<ObjectRef>,
    /// Lines of app files whose text a template changed: what they hold came from it.
    templated: std::collections::HashSet<Loc>,
}

impl Catalog {
    /// Registers a file under the path diagnostics show for it (relative to the project root).
    pub fn add_file(&mut self, display_path: impl Into<String>) -> FileId {
        self.files.push(display_path.into());
        FileId(self.files.len() as u32 - 1)
    }

    pub fn add_object(&mut self, object: ObjectRef) -> ObjectId {
        self.objects.push(object);
        ObjectId(self.objects.len() as u32 - 1)
    }

    pub fn file(&self, id: FileId) -> &str {
        self.files
            .get(id.0 as usize)
            .map_or("<unknown>", String::as_str)
    }

    pub fn object(&self, id: ObjectId) -> Option<&ObjectRef> {
        self.objects.get(id.0 as usize)
    }

    pub fn mark_templated(&mut self, loc: Loc) {
        self.templated.insert(loc);
    }

    /// [`Catalog::loc`], noting `, templated` when a template wrote that line.
    pub fn origin(&self, loc: Loc) -> String {
        if self.templated.contains(&loc) {
            format!("{}, templated", self.loc(loc))
        } else {
            self.loc(loc)
        }
    }

    /// `path:line`, or just `path` when the line is unknown.
    pub fn loc(&self, loc: Loc) -> String {
        if loc.line == 0 {
            self.file(loc.file).to_string()
        } else {
            format!("{}:{}", self.file(loc.file), loc.line)
        }
    }
}
