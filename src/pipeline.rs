//! One run from paths to releases: load the project, pick the target, read the app files, and
//! turn each document into an entry: a release (an invocation with its imports evaluated, or a
//! HelmChart) or a plain manifest. `nyl values` prints the releases' values; `nyl render` renders
//! the entries in order, feeding chart output back through [`Session::entries`].

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::components::{self, Chart};
use crate::diagnostics::{Code, Diagnostic};
use crate::objects::{self, ChartSource, DocKind, RemoteChart};
use crate::project::{self, ChartRef, Project};
use crate::provenance::{Catalog, Loc, ObjectRef};
use crate::report::InvocationValues;
use crate::targets::{self, Target};
use crate::yaml::Document;

/// What to evaluate.
#[derive(Clone, Debug)]
pub struct Request {
    pub paths: Vec<PathBuf>,
    pub target: Option<String>,
    /// The namespace of releases that name none.
    pub default_namespace: String,
}

/// The chart of a release, as Helm is to be given it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChartSpec {
    Local(PathBuf),
    Remote(RemoteChart),
}

/// A Helm release to render: its values (with provenance and import report) and its chart.
#[derive(Clone, Debug)]
pub struct Release {
    pub values: InvocationValues,
    pub chart: ChartSpec,
    pub include_crds: bool,
}

/// One entry of an app, in input order.
#[derive(Clone, Debug)]
pub enum Entry {
    Release(Box<Release>),
    /// A plain Kubernetes manifest, passed on as written.
    Manifest(Document),
}

/// The project and target of a run, and everything reported so far.
pub struct Session {
    pub project: Project,
    pub target: Option<Target>,
    pub diagnostics: Vec<Diagnostic>,
    /// False when the requested target is missing: files are still read and checked, so every
    /// other problem is reported, but nothing is evaluated against a target that is not there.
    evaluate: bool,
    /// How many diagnostics loading the project produced (they come first).
    pub loaded: usize,
}

impl Session {
    /// Finds the project of the first path, loads it and selects the target. `Err` carries the
    /// catalog and problems when there is no usable project.
    /// `root` fixes the project root (the Argo CD app directory's); otherwise it is found from
    /// `first`.
    fn open(
        first: &Path,
        root: Option<&Path>,
        target: Option<&str>,
    ) -> Result<Session, (Catalog, Vec<Diagnostic>)> {
        let root = match root {
            Some(root) => root.to_path_buf(),
            None => project::find_root(first).map_err(|d| (Catalog::default(), vec![d]))?,
        };
        let (project, mut diagnostics) = Project::load(root)?;
        let (target, evaluate) =
            match target.map(|t| targets::select(t, &project.clusters, &project.targets)) {
                None => (None, true),
                Some(Ok(t)) => (Some(t), true),
                Some(Err(d)) => {
                    diagnostics.push(d);
                    (None, false)
                }
            };
        Ok(Session {
            project,
            target,
            diagnostics,
            evaluate,
            loaded: 0,
        })
    }

    /// Opens the session of `paths` (the project of the first one) and reads every path's
    /// entries, in order.
    pub fn start(
        paths: &[PathBuf],
        root: Option<&Path>,
        target: Option<&str>,
        default_namespace: &str,
    ) -> Result<(Session, Vec<Entry>), (Catalog, Vec<Diagnostic>)> {
        let first = paths.first().cloned().unwrap_or_else(|| PathBuf::from("."));
        let mut session = Session::open(&first, root, target)?;
        session.loaded = session.diagnostics.len();
        let mut entries = Vec::new();
        for path in paths {
            entries.extend(session.read_path(path, default_namespace));
        }
        Ok((session, entries))
    }

    /// Errors among the diagnostics after the first `skip` (those of loading the project).
    pub fn has_errors_after(&self, skip: usize) -> bool {
        self.diagnostics.iter().skip(skip).any(Diagnostic::is_error)
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The entries of an app path: a file, or a directory's YAML files sorted by name.
    pub fn read_path(&mut self, path: &Path, default_namespace: &str) -> Vec<Entry> {
        let files = match self
            .project
            .inside(path)
            .and_then(|p| self.project.app_files(&p))
        {
            Ok(files) => files,
            Err(d) => {
                self.diagnostics.push(d);
                return Vec::new();
            }
        };
        let mut entries = Vec::new();
        for file in files {
            // A link is refused before it is resolved: read_documents reports it.
            let file = match fs::symlink_metadata(&file) {
                Ok(meta) if !meta.file_type().is_file() => {
                    let (_, _, problems) = self.project.read_documents(&file);
                    self.diagnostics.extend(problems);
                    continue;
                }
                _ => file,
            };
            let file = match self.project.inside(&file) {
                Ok(file) => file,
                Err(d) => {
                    self.diagnostics.push(d);
                    continue;
                }
            };
            let (_, docs, problems) = self.project.read_documents(&file);
            if !problems.is_empty() {
                // The documents of a file that did not read cleanly are not evaluated: their
                // errors would only be consequences.
                self.diagnostics.extend(problems);
                continue;
            }
            entries.extend(self.entries(docs, file.parent(), default_namespace));
        }
        entries
    }

    /// Turns documents into entries; `dir` is the directory relative paths (a HelmChart's
    /// `spec.chart.path`) resolve against, `None` for chart output.
    pub fn entries(
        &mut self,
        docs: Vec<Document>,
        dir: Option<&Path>,
        default_namespace: &str,
    ) -> Vec<Entry> {
        let mut entries = Vec::new();
        for doc in docs {
            match self.entry(doc, dir, default_namespace) {
                Ok(Some(entry)) => entries.push(entry),
                Ok(None) => {}
                Err(problems) => self.diagnostics.extend(problems),
            }
        }
        entries
    }

    fn entry(
        &mut self,
        doc: Document,
        dir: Option<&Path>,
        default_namespace: &str,
    ) -> Result<Option<Entry>, Vec<Diagnostic>> {
        match objects::classify(&doc.node).map_err(|d| vec![d])? {
            DocKind::Manifest => Ok(Some(Entry::Manifest(doc))),
            // nyl's own kinds are never output.
            DocKind::Cluster | DocKind::DeploymentTarget => Ok(None),
            DocKind::Invocation => self.invocation(&doc, default_namespace),
            DocKind::HelmChart => self.helm_chart(&doc, dir, default_namespace),
        }
    }

    fn register(&mut self, doc: &Document) -> crate::provenance::ObjectId {
        let node = &doc.node;
        self.project.catalog.add_object(ObjectRef {
            kind: node
                .field("kind")
                .and_then(|k| k.as_str())
                .unwrap_or("?")
                .to_string(),
            name: objects::name_of(node).unwrap_or("?").to_string(),
            loc: node.prov.loc,
        })
    }

    fn invocation(
        &mut self,
        doc: &Document,
        default_namespace: &str,
    ) -> Result<Option<Entry>, Vec<Diagnostic>> {
        let object = self.register(doc);
        let inv = objects::invocation(&doc.node, object)?;
        let chart = self
            .project
            .resolve_kind(&inv.kind, inv.kind_loc)
            .map_err(|d| vec![d.object(inv.display())])?;
        if !self.evaluate {
            return Ok(None);
        }
        let target = self.target.as_ref();
        let (chart_text, spec, evaluation) = match chart {
            ChartRef::Remote(remote) => (
                remote.to_string(),
                ChartSpec::Remote(remote),
                components::evaluate(&inv, Chart::Remote, target),
            ),
            ChartRef::Local { component, dir } => {
                let contract = self.project.contract(&component, &dir)?;
                let evaluation = components::evaluate(
                    &inv,
                    Chart::Local {
                        component: &component,
                        contract,
                    },
                    target,
                );
                (component, ChartSpec::Local(dir), evaluation)
            }
        };
        let evaluation = evaluation?;
        Ok(Some(Entry::Release(Box::new(Release {
            values: InvocationValues {
                loc: inv.loc,
                kind: inv.kind.clone(),
                chart: chart_text,
                namespace: inv
                    .namespace
                    .clone()
                    .unwrap_or_else(|| default_namespace.to_string()),
                name: inv.name,
                target: target.map(|t| t.name.clone()),
                values: evaluation.values,
                imports: evaluation.imports,
            },
            chart: spec,
            include_crds: true,
        }))))
    }

    fn helm_chart(
        &mut self,
        doc: &Document,
        dir: Option<&Path>,
        default_namespace: &str,
    ) -> Result<Option<Entry>, Vec<Diagnostic>> {
        let object = self.register(doc);
        let chart = objects::helm_chart(&doc.node, object)?;
        let display = format!("HelmChart/{}", chart.name);
        let (chart_text, spec) = match &chart.chart {
            ChartSource::Remote(remote) => (remote.to_string(), ChartSpec::Remote(remote.clone())),
            ChartSource::Path(path) => {
                let Some(dir) = dir else {
                    return Err(vec![Diagnostic::new(
                        Code::InvalidField,
                        "a HelmChart in chart output cannot name a local `spec.chart.path`; use a repository",
                    )
                    .at(chart.loc)
                    .object(display)]);
                };
                let resolved = self
                    .project
                    .inside(&dir.join(path))
                    .map_err(|d| vec![d.at(chart.loc).object(&display)])?;
                (
                    self.project.display_path(&resolved),
                    ChartSpec::Local(resolved),
                )
            }
        };
        Ok(Some(Entry::Release(Box::new(Release {
            values: InvocationValues {
                loc: chart.loc,
                kind: "HelmChart".to_string(),
                chart: chart_text,
                namespace: chart
                    .namespace
                    .unwrap_or_else(|| default_namespace.to_string()),
                name: chart.name,
                target: self.target.as_ref().map(|t| t.name.clone()),
                values: chart.values,
                imports: Vec::new(),
            },
            chart: spec,
            include_crds: chart.include_crds,
        }))))
    }
}

/// Two releases with the same name and namespace are an error: Helm and Argo CD would see one
/// release twice.
pub fn check_releases<'a>(
    releases: impl Iterator<Item = &'a InvocationValues>,
    diags: &mut Vec<Diagnostic>,
) {
    let mut seen: HashMap<(&str, &str), Loc> = HashMap::new();
    for item in releases {
        if let Some(first) = seen.insert((&item.namespace, &item.name), item.loc) {
            diags.push(
                Diagnostic::new(
                    Code::DuplicateObject,
                    format!(
                        "release {:?} in namespace {:?} is invoked twice; Helm releases must be unique per namespace",
                        item.name, item.namespace
                    ),
                )
                .at(item.loc)
                .related(first)
                .object(format!("{}/{}", item.kind, item.name)),
            );
        }
    }
}

/// The result of `nyl values`: the values of every release, the diagnostics, and the catalog the
/// diagnostics point into. Fail closed: callers print `items` only without errors.
#[derive(Default)]
pub struct Outcome {
    pub catalog: Catalog,
    pub items: Vec<InvocationValues>,
    pub diagnostics: Vec<Diagnostic>,
}

pub fn values(req: &Request) -> Outcome {
    let (mut session, entries) = match Session::start(
        &req.paths,
        None,
        req.target.as_deref(),
        &req.default_namespace,
    ) {
        Ok(started) => started,
        Err((catalog, diagnostics)) => {
            return Outcome {
                catalog,
                diagnostics,
                ..Outcome::default()
            }
        }
    };
    let items: Vec<InvocationValues> = entries
        .into_iter()
        .filter_map(|entry| match entry {
            Entry::Release(release) => Some(release.values),
            Entry::Manifest(_) => None,
        })
        .collect();
    check_releases(items.iter(), &mut session.diagnostics);
    if items.is_empty() && !session.has_errors() {
        session.diagnostics.push(Diagnostic::new(
            Code::NoInvocations,
            "the given paths hold no component invocations",
        ));
    }
    Outcome {
        catalog: session.project.catalog,
        items,
        diagnostics: session.diagnostics,
    }
}
