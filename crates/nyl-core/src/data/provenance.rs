//! Where a value came from: source files, nyl objects, and the layer a value belongs to.
//!
//! Every [`Node`](crate::data::value::Node) carries a [`Prov`]: a small copyable tag (file, line, layer) that
//! points into a [`Catalog`], the side table of file paths and objects (the shape Figment uses, with
//! per-line positions). The merge keeps these tags on every node, so provenance is a property of the
//! merged tree and not something reconstructed afterwards.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

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

/// The side table that [`FileId`] and [`ObjectId`] index into. A catalog may sit over a shared
/// base (the project as a run loaded it, see [`Catalog::over`]): ids below the base's lengths
/// index the base, the rest this catalog's own entries, so every app session of a run shares
/// one base and cloning a catalog copies only what its session added.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    base: Option<Arc<Catalog>>,
    files: Vec<String>,
    objects: Vec<ObjectRef>,
    /// Lines of app files whose text a template changed: what they hold came from it.
    templated: HashSet<Loc>,
}

impl Catalog {
    /// An empty catalog over `base`, which it extends without copying.
    pub fn over(base: Arc<Catalog>) -> Catalog {
        Catalog {
            base: Some(base),
            ..Catalog::default()
        }
    }

    /// How many files and objects the base holds: the first id of this catalog's own.
    fn base_len(&self) -> (usize, usize) {
        self.base
            .as_ref()
            .map_or((0, 0), |b| (b.files_len(), b.objects_len()))
    }

    fn files_len(&self) -> usize {
        self.base_len().0 + self.files.len()
    }

    fn objects_len(&self) -> usize {
        self.base_len().1 + self.objects.len()
    }

    /// Registers a file under the path diagnostics show for it (relative to the project root).
    pub fn add_file(&mut self, display_path: impl Into<String>) -> FileId {
        self.files.push(display_path.into());
        FileId(self.files_len() as u32 - 1)
    }

    pub fn add_object(&mut self, object: ObjectRef) -> ObjectId {
        self.objects.push(object);
        ObjectId(self.objects_len() as u32 - 1)
    }

    pub fn file(&self, id: FileId) -> &str {
        let index = id.0 as usize;
        match (&self.base, index.checked_sub(self.base_len().0)) {
            (Some(base), None) => base.file(id),
            (_, own) => own
                .and_then(|i| self.files.get(i))
                .map_or("<unknown>", String::as_str),
        }
    }

    pub fn object(&self, id: ObjectId) -> Option<&ObjectRef> {
        let index = id.0 as usize;
        match (&self.base, index.checked_sub(self.base_len().1)) {
            (Some(base), None) => base.object(id),
            (_, own) => own.and_then(|i| self.objects.get(i)),
        }
    }

    pub fn mark_templated(&mut self, loc: Loc) {
        self.templated.insert(loc);
    }

    fn is_templated(&self, loc: Loc) -> bool {
        self.templated.contains(&loc) || self.base.as_ref().is_some_and(|b| b.is_templated(loc))
    }

    /// [`Catalog::loc`], noting `, templated` when a template wrote that line.
    pub fn origin(&self, loc: Loc) -> String {
        if self.is_templated(loc) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalog_over_a_base_numbers_its_own_entries_after_the_base() {
        let mut base = Catalog::default();
        let shared = base.add_file("nyl.toml");
        base.mark_templated(Loc::new(shared, 3));
        let base = Arc::new(base);
        let mut overlay = Catalog::over(Arc::clone(&base));
        let own = overlay.add_file("apps/web.yaml");
        let object = overlay.add_object(ObjectRef {
            kind: "Cluster".into(),
            name: "prod".into(),
            loc: Loc::new(own, 1),
        });
        assert_eq!((shared, own, object), (FileId(0), FileId(1), ObjectId(0)));
        assert_eq!(overlay.file(shared), "nyl.toml");
        assert_eq!(overlay.origin(Loc::new(own, 2)), "apps/web.yaml:2");
        assert_eq!(overlay.origin(Loc::new(shared, 3)), "nyl.toml:3, templated");
        assert_eq!(overlay.file(FileId(2)), "<unknown>");
        // The base is untouched: the overlay's entries are its own.
        assert_eq!(base.file(own), "<unknown>");
        assert_eq!(
            overlay.object(object).map(|o| o.name.as_str()),
            Some("prod")
        );
    }
}
