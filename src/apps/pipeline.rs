//! One run from paths to releases: load the project, pick the target, read the app files, and
//! turn each document into an entry: a release (an invocation with its imports evaluated, or a
//! HelmChart) or a plain manifest. `nyl values` prints the releases' values; `nyl render` renders
//! the entries in order, feeding chart output back through [`Session::entries`].

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::project::{self, ComponentDir, Project, Refused};
use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::data::provenance::ObjectName;
use nyl_core::data::provenance::{Catalog, Layer, Loc};
use nyl_core::data::value::Node;
use nyl_core::data::yaml::{Document, Mode};
use nyl_core::expansion::manifest::Manifest;
use nyl_core::expansion::Entry;
use nyl_core::project::layouts;
use nyl_core::project::objects::{self, ChartSource, Config, DocKind, LocalChart, Place};
use nyl_core::project::template;
use nyl_core::values::components;
use nyl_core::values::release::{ExplainLayer, InvocationValues, Release};
use nyl_core::values::targets::{self, Target};

/// What to evaluate: the inputs every command shares.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// App files or directories, or layout app ids.
    pub paths: Vec<PathBuf>,
    /// The project root, when the caller fixed it (Argo CD's app directory's project); else found
    /// from the first path.
    pub root: Option<PathBuf>,
    pub target: Option<String>,
    /// The namespace of releases that name none.
    pub default_namespace: String,
    /// Runtime chart values, over everything else of the app's one release: values files, then
    /// YAML strings, each over the ones before (as Helm's `-f` files, then its `--set` flags).
    pub values: Vec<RuntimeValues>,
    /// Runtime target values (YAML), over the effective target values, before imports.
    pub target_values: Option<String>,
}

/// One source of runtime chart values, read by the caller (stdin can be read only once).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeValues {
    /// How provenance and diagnostics name it: a values file's path as given, `<stdin>`, or
    /// `<runtime values>` for a YAML string.
    pub source: String,
    pub text: String,
    /// A values file (`-f FILE`, `-f -`), whose lines explain names; else a YAML string.
    pub file: bool,
}

impl RuntimeValues {
    /// Values given as a YAML string (`--values-yaml`, the plugin's `values` parameter).
    pub fn yaml(text: String) -> Self {
        RuntimeValues {
            source: "<runtime values>".to_string(),
            text,
            file: false,
        }
    }
}

/// The project and target of a run, and everything reported so far.
pub struct Session {
    pub project: Project,
    pub target: Option<Target>,
    /// The problems of the run's inputs around the apps: loading the project, the runtime
    /// values, selecting the target. Validation renders an app past them (it reports them once,
    /// for the whole run); rendering stops at them.
    pub run_diagnostics: Vec<Diagnostic>,
    /// The problems of the apps' own files and their render.
    pub diagnostics: Vec<Diagnostic>,
    /// False when the requested target is missing: files are still read and checked, so every
    /// other problem is reported, but nothing is evaluated against a target that is not there.
    pub(crate) evaluate: bool,
    /// Runtime chart values, for the app's one release: per source, its explain label and values,
    /// lowest first.
    runtime_values: Vec<(String, Node)>,
    /// True while the inputs' own files are read: runtime values apply to their releases, never
    /// to releases that chart output invokes.
    reading_apps: bool,
    /// Runtime target values, merged over every target's values.
    runtime_target_values: Option<Node>,
}

/// The project of a run, loaded once (`nyl.toml` and the targets files) with the problems of
/// loading it. Every session of the run (each app render of `validate`, `render-tree`, `diff`)
/// starts from a copy of it, so no file of it is read twice; the copies share its catalog (each
/// adds only its own files and objects over it, see [`Catalog::over`]).
pub struct Loaded {
    pub root: PathBuf,
    /// Behind a lock only so that parallel renders can share it: its read budget is a `Cell`.
    /// Each session's copy starts from the budget spent loading it.
    project: Mutex<Project>,
    /// The problems of loading it.
    pub diagnostics: Vec<Diagnostic>,
}

impl Loaded {
    /// Loads the project at `root`: every target, or `only` the one a run renders for (see
    /// [`Project::load`]; every session of the run must then select that target). `Err` carries
    /// the catalog and problems when there is no usable project.
    pub fn load(root: PathBuf, only: Option<&str>) -> Result<Loaded, project::NotLoaded> {
        let (mut project, diagnostics) = Project::load(root, only)?;
        let catalog = std::mem::take(&mut project.catalog);
        project.catalog = Catalog::over(Arc::new(catalog));
        Ok(Loaded {
            root: project.root.clone(),
            project: Mutex::new(project),
            diagnostics,
        })
    }

    /// A copy of the project as loaded.
    pub fn project(&self) -> Project {
        self.project
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The project's settings.
    pub fn config(&self) -> Config {
        let project = self.project.lock().unwrap_or_else(PoisonError::into_inner);
        project.config.clone()
    }

    /// The project of the request: at its fixed root (the Argo CD app directory's), else found
    /// from its first path (the working directory's for a layout app id); with every target, or
    /// `only` one ([`Loaded::load`]).
    pub fn of_request(req: &Request, only: Option<&str>) -> Result<Loaded, project::NotLoaded> {
        let root = match &req.root {
            Some(root) => root.clone(),
            None => project::find_root(&first_path(req)).map_err(|d| (Arc::default(), vec![d]))?,
        };
        Loaded::load(root, only)
    }
}

/// Where the project of a request is looked for: its first path, or the working directory.
fn first_path(req: &Request) -> PathBuf {
    let first = req
        .paths
        .first()
        .cloned()
        .unwrap_or_else(|| PathBuf::from("."));
    match first.to_str() {
        // A layout app id is no path: the project is the working directory's.
        Some(text) if !first.exists() && layouts::looks_like_id(text) => PathBuf::from("."),
        _ => first,
    }
}

impl Session {
    /// A session over a copy of the loaded project, with the request's runtime values and target.
    fn open(loaded: &Loaded, req: &Request) -> Session {
        let mut session = Session {
            project: loaded.project(),
            target: None,
            run_diagnostics: loaded.diagnostics.clone(),
            diagnostics: Vec::new(),
            evaluate: true,
            runtime_values: Vec::new(),
            reading_apps: false,
            runtime_target_values: None,
        };
        // Problems of the runtime values are the run's own: never demoted with other files', nor
        // taken for the target's.
        let mut runtime_problems = Vec::new();
        for source in &req.values {
            let (label, layer) = if source.file {
                (format!("values file {}", source.source), Layer::ValuesFile)
            } else {
                (
                    "runtime values".to_string(),
                    Layer::Runtime { target: false },
                )
            };
            if let Some(node) =
                session.runtime(&source.source, &source.text, layer, &mut runtime_problems)
            {
                session.runtime_values.push((label, node));
            }
        }
        if let Some(text) = &req.target_values {
            let layer = Layer::Runtime { target: true };
            session.runtime_target_values = session.runtime(
                "<runtime target-values>",
                text,
                layer,
                &mut runtime_problems,
            );
        }
        let mut target_problems = Vec::new();
        if let Some(name) = &req.target {
            match session.select(name) {
                Ok(t) => session.target = Some(t),
                Err(problems) => {
                    // The target's own errors are among those of loading already.
                    target_problems = problems
                        .into_iter()
                        .filter(|p| !session.run_diagnostics.contains(p))
                        .collect();
                    session.evaluate = false;
                }
            }
        }
        if session.evaluate {
            session.demote_unrelated();
        }
        session.run_diagnostics.extend(runtime_problems);
        session.run_diagnostics.extend(target_problems);
        session
    }

    /// The target `name`, or what stands in the way: the errors of its own broken definition when
    /// loading the project reported some (never a misleading `target_not_found` before them), else
    /// `target_not_found`.
    pub fn select(&self, name: &str) -> Result<Target, Vec<Diagnostic>> {
        let d = match self.select_target(name) {
            Ok(target) => return Ok(target),
            Err(d) => d,
        };
        let load = &self.run_diagnostics;
        // The target's own objects: its DeploymentTarget, and the Cluster of the one of that
        // name or the Cluster of that name.
        let cluster_ref = self.project.targets.iter().find(|t| t.name == name);
        let own_names = [
            ObjectName::new("DeploymentTarget", name).to_string(),
            ObjectName::new("Cluster", name).to_string(),
            ObjectName::new(
                "Cluster",
                cluster_ref.map_or(name, |t| t.cluster_ref.as_str()),
            )
            .to_string(),
        ];
        let own: Vec<Diagnostic> = load
            .iter()
            .filter(|p| p.object.as_ref().is_some_and(|o| own_names.contains(o)))
            .map(|p| Diagnostic {
                severity: p.code.severity(),
                ..p.clone()
            })
            .filter(Diagnostic::is_error)
            .collect();
        let missing = [Code::TargetNotFound, Code::ClusterNotFound];
        if missing.contains(&d.code) && !own.is_empty() {
            // They say why the target is missing, as errors whatever else demoted them.
            return Err(own);
        }
        if d.code == Code::TargetNotFound && load.iter().any(Diagnostic::is_error) {
            let message = format!("{}; some targets files have errors (above), so it may be defined in one that did not load", d.message);
            return Err(vec![Diagnostic { message, ..d }]);
        }
        Err(vec![d])
    }

    /// Problems of loading the project in targets files that define neither the selected target
    /// nor its Cluster become warnings: one team's typo does not stop another's apps (`nyl
    /// validate` still reports them as errors). Problems of `nyl.toml` (and Nyl's secrets
    /// configuration beside it) stay errors.
    fn demote_unrelated(&mut self) {
        let (own, own_objects): (Vec<nyl_core::data::provenance::FileId>, Vec<String>) =
            match &self.target {
                Some(t) => {
                    let dt = self.project.targets.iter().filter(|d| d.name == t.name);
                    let cluster = self.project.clusters.iter().filter(|c| c.name == t.cluster);
                    let files = dt.map(|d| d.loc.file).chain(cluster.map(|c| c.loc.file));
                    let objects = [
                        ObjectName::new("DeploymentTarget", &t.name).to_string(),
                        ObjectName::new("Cluster", &t.cluster).to_string(),
                    ];
                    (files.collect(), objects.to_vec())
                }
                None => (Vec::new(), Vec::new()),
            };
        let catalog = &self.project.catalog;
        for d in &mut self.run_diagnostics {
            let Some(loc) = d.loc else { continue };
            // A second definition of the target, in another file, concerns it all the same.
            let concerns_target = d.object.as_ref().is_some_and(|o| own_objects.contains(o));
            if !own.contains(&loc.file)
                && !concerns_target
                && !project::is_settings_file(catalog.file(loc.file))
            {
                d.severity = nyl_core::data::diagnostics::Severity::Warning;
            }
        }
    }

    /// `values` with the runtime chart values merged over it, source after source, when a
    /// release of the inputs' own files is being read (never one that chart output invokes), each
    /// source recorded as an explain layer.
    pub(crate) fn with_runtime(&self, values: Node, layers: &mut Vec<ExplainLayer>) -> Node {
        if !self.reading_apps {
            return values;
        }
        self.runtime_values
            .iter()
            .fold(values, |values, (label, runtime)| {
                layers.push(ExplainLayer::new(label.clone(), Some(runtime.clone())));
                nyl_core::values::merge::merge(values, runtime.clone())
            })
    }

    /// A target by name, with the runtime target values merged over its values.
    pub fn select_target(&self, name: &str) -> Result<Target, Diagnostic> {
        let mut target = targets::select(name, &self.project.clusters, &self.project.targets)?;
        if let Some(runtime) = &self.runtime_target_values {
            target.values = nyl_core::values::merge::merge(target.values, runtime.clone());
        }
        Ok(target)
    }

    /// Parses one source of runtime values, `source` as provenance names it: one YAML mapping, or
    /// nothing at all (an empty values file, as Helm takes it). Its problems go to `out`.
    fn runtime(
        &mut self,
        source: &str,
        text: &str,
        layer: Layer,
        out: &mut Vec<Diagnostic>,
    ) -> Option<Node> {
        let file = self.project.catalog.add_file(source);
        let (docs, problems) = self.project.parse_documents(text, file, Mode::Lenient);
        let (warnings, problems): (Vec<_>, Vec<_>) =
            problems.into_iter().partition(|d| !d.is_error());
        out.extend(warnings);
        let mut docs = docs.into_iter();
        let node = match (docs.next(), docs.next(), problems.is_empty()) {
            (None, _, true) => return None,
            (Some(doc), None, true) if doc.node.as_map().is_some() => doc.node,
            (_, _, true) => {
                let what = match layer {
                    Layer::ValuesFile => "a values file",
                    Layer::Runtime { target: true } => "runtime target values",
                    _ => "runtime values",
                };
                let d = Diagnostic::new(
                    Code::InvalidDocument,
                    format!("{what} must be one YAML mapping"),
                );
                out.push(d.at(Loc::new(file, 1)));
                return None;
            }
            _ => {
                out.extend(problems);
                return None;
            }
        };
        let mut node = node;
        node.set_layer(layer);
        Some(node)
    }

    /// Loads the request's project and starts its one session (`values`, `explain`).
    pub fn start_alone(req: &Request) -> Result<(Session, Vec<Entry>), project::NotLoaded> {
        let loaded = Loaded::of_request(req, req.target.as_deref())?;
        Ok(Session::start(&loaded, req))
    }

    /// Opens a session of the loaded project for the request and reads every path's entries, in
    /// order.
    pub fn start(loaded: &Loaded, req: &Request) -> (Session, Vec<Entry>) {
        let mut session = Session::open(loaded, req);
        let mut entries = Vec::new();
        session.reading_apps = true;
        for path in &req.paths {
            entries.extend(session.read_path(path, &req.default_namespace));
        }
        session.reading_apps = false;
        let releases = entries
            .iter()
            .filter(|e| matches!(e, Entry::Release(_)))
            .count();
        if !session.runtime_values.is_empty() && releases > 1 {
            session.diagnostics.push(Diagnostic::new(
                Code::AmbiguousRuntimeValues,
                format!(
                    "runtime values were given, but the inputs hold {releases} releases, so it is \
                     not clear which one they are for; give them to an app with one release"
                ),
            ));
            entries.clear();
        }
        (session, entries)
    }

    /// Moves the warnings of files the project read leniently into the diagnostics.
    pub fn take_project_warnings(&mut self) {
        self.diagnostics.append(&mut self.project.warnings);
    }

    /// Whether the apps' own files or their render have errors.
    pub fn app_has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Whether anything of the run has errors: its inputs around the apps, or the apps.
    pub fn has_errors(&self) -> bool {
        self.app_has_errors() || self.run_diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Every diagnostic of the session, the run's first.
    pub fn take_diagnostics(&mut self) -> Vec<Diagnostic> {
        let mut all = std::mem::take(&mut self.run_diagnostics);
        all.append(&mut self.diagnostics);
        all
    }

    /// The entries of an app path: a layout app (its directory or id), a file, or a directory's
    /// YAML files sorted by name.
    pub fn read_path(&mut self, path: &Path, default_namespace: &str) -> Vec<Entry> {
        if let Some(text) = path
            .to_str()
            .filter(|t| !path.exists() && layouts::looks_like_id(t))
        {
            return self.layout_apps_by_id(text, default_namespace);
        }
        let real = match self.project.inside(path) {
            Ok(real) => real,
            Err(d) => {
                self.diagnostics.push(d);
                return Vec::new();
            }
        };
        if real.is_dir() {
            if let Some(entries) = self.layout_app_at(&real, default_namespace) {
                return entries;
            }
        }
        let files = match self.project.app_files(&real) {
            Ok(files) => files,
            Err(d) => {
                self.diagnostics.push(d);
                return Vec::new();
            }
        };
        let mut read = Vec::new();
        for file in files {
            if let Some(app_file) = self.read_app_file(&file) {
                read.push(app_file);
            }
        }
        let mut plans = Vec::new();
        for (file, docs) in read {
            let (namespace, includes) = self.release_of(&file, &docs, default_namespace);
            plans.push((file, docs, namespace, includes));
        }
        // A file a Release includes renders once, as part of it, even when it is also listed.
        let included: HashSet<PathBuf> = plans
            .iter()
            .flat_map(|(_, _, _, includes)| includes.iter().map(|(f, _)| f.clone()))
            .collect();
        let mut entries = Vec::new();
        for (file, docs, namespace, includes) in plans {
            if included.contains(&file) {
                continue;
            }
            for (file, docs) in std::iter::once((file, docs)).chain(includes) {
                entries.extend(self.entries(docs, file.parent(), &namespace));
            }
        }
        entries
    }

    /// The namespace an app file's objects default to and the files it includes: its `Release`
    /// (Nyl's) sets both; without one, `default_namespace` and none. Problems are reported.
    fn release_of(
        &mut self,
        file: &Path,
        docs: &[Document],
        default_namespace: &str,
    ) -> (String, Vec<(PathBuf, Vec<Document>)>) {
        let aliases = &self.project.config.aliases;
        let releases: Vec<&Document> = docs.iter().filter(|d| is_release(d, aliases)).collect();
        let Some(first) = releases.first() else {
            return (default_namespace.to_string(), Vec::new());
        };
        for extra in &releases[1..] {
            self.diagnostics.push(
                Diagnostic::new(
                    Code::DuplicateObject,
                    "a second Release in one app file; a file is one release: move it to a file \
                     of its own",
                )
                .at(extra.node.prov.loc)
                .related(first.node.prov.loc)
                .object(
                    ObjectName::new("Release", objects::name_of(&extra.node).unwrap_or_default())
                        .to_string(),
                ),
            );
        }
        let release = match objects::release(&first.node) {
            Ok(release) => release,
            Err(problems) => {
                self.diagnostics.extend(problems);
                return (default_namespace.to_string(), Vec::new());
            }
        };
        tracing::debug!(release = %release.name, namespace = ?release.namespace, "app file's Release");
        let dir = file.parent().unwrap_or(file);
        let mut includes = Vec::new();
        for (include, loc) in &release.include {
            let path = dir.join(include);
            if fs::symlink_metadata(&path).is_err() {
                self.diagnostics.push(
                    Diagnostic::new(
                        Code::IncludeNotFound,
                        format!(
                            "spec.include names {include:?}, which does not exist; the path is \
                             relative to the Release's file"
                        ),
                    )
                    .at(*loc)
                    .object(ObjectName::new("Release", &release.name).to_string()),
                );
                continue;
            }
            let Some((included, docs)) = self.read_app_file(&path) else {
                continue;
            };
            let aliases = &self.project.config.aliases;
            if let Some(nested) = docs.iter().find(|d| is_release(d, aliases)) {
                self.diagnostics.push(
                    Diagnostic::new(
                        Code::MisplacedDocument,
                        format!(
                            "a Release in a file another Release includes ({include}); an \
                             included file renders as part of its includer: remove it"
                        ),
                    )
                    .at(nested.node.prov.loc)
                    .related(*loc),
                );
                continue;
            }
            includes.push((included, docs));
        }
        let namespace = release
            .namespace
            .unwrap_or_else(|| default_namespace.to_string());
        (namespace, includes)
    }

    /// One app file's documents and directory; `None` (problems reported) when it did not read
    /// cleanly: its documents' errors would only be consequences.
    fn read_app_file(&mut self, file: &Path) -> Option<(PathBuf, Vec<Document>)> {
        // A link is refused before it is resolved: read_documents reports it.
        if fs::symlink_metadata(file).is_ok_and(|m| !m.file_type().is_file()) {
            let (_, _, problems) = self.project.read_documents(file);
            self.diagnostics.extend(problems);
            return None;
        }
        let file = match self.project.inside(file) {
            Ok(file) => file,
            Err(d) => {
                self.diagnostics.push(d);
                return None;
            }
        };
        if !self.evaluate && self.project.is_template(&file) {
            // What it renders depends on the target, which is missing (reported already).
            tracing::debug!(file = %file.display(), "template not rendered: the target is missing");
            return None;
        }
        let context = self.template_context();
        let (_, docs, mut problems) = self.project.read_app_documents(&file, &context);
        if problems.is_empty() && self.project.templating == objects::Templating::Unset {
            problems.extend(
                docs.iter()
                    .flat_map(|d| objects::template_expressions(&d.node)),
            );
        }
        if !problems.is_empty() {
            self.diagnostics.extend(problems);
            return None;
        }
        Some((file, docs))
    }

    /// What app file templates see: the selected target's values, Cluster and DeploymentTarget.
    fn template_context(&self) -> template::Context {
        self.target
            .as_ref()
            .filter(|_| self.evaluate)
            .map(Target::template_context)
            .unwrap_or_default()
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
                Err(refused) => refused.report_to(&mut self.diagnostics),
            }
        }
        entries
    }

    fn entry(
        &mut self,
        doc: Document,
        dir: Option<&Path>,
        default_namespace: &str,
    ) -> Result<Option<Entry>, Refused> {
        let place = if dir.is_some() {
            Place::App
        } else {
            Place::ChartOutput
        };
        match objects::classify(&doc.node, place, &self.project.config.aliases)
            .map_err(|d| vec![d])?
        {
            DocKind::Manifest => Ok(Some(Entry::Manifest(Box::new(Manifest::read(doc))))),
            // Refused by classify in apps and chart output alike.
            DocKind::Cluster | DocKind::DeploymentTarget | DocKind::NylControl => Ok(None),
            // Read with its file (`release_of`), never emitted.
            DocKind::Release => Ok(None),
            DocKind::Invocation => self.invocation(&doc, default_namespace),
            DocKind::HelmChart => self.helm_chart(&doc, dir, default_namespace),
        }
    }

    fn register(&mut self, doc: &Document) -> nyl_core::data::provenance::ObjectId {
        let node = &doc.node;
        self.project.catalog.add_object(objects::object_ref(node))
    }

    fn invocation(
        &mut self,
        doc: &Document,
        default_namespace: &str,
    ) -> Result<Option<Entry>, Refused> {
        let object = self.register(doc);
        let mut inv = objects::invocation(&doc.node, object)?;
        let mut layers = vec![ExplainLayer::new("spec", Some(inv.spec.clone()))];
        inv.spec = self.with_runtime(inv.spec, &mut layers);
        let chart = self
            .project
            .resolve_kind(&inv.kind, inv.kind_loc)
            .map_err(|d| vec![d.object(inv.display())])?;
        if !self.evaluate {
            return Ok(None);
        }
        let target = self.target.as_ref();
        let (chart_text, spec, evaluation) = match chart {
            ChartSource::Remote(remote) => (
                remote.to_string(),
                ChartSource::Remote(remote.clone()),
                components::evaluate(&inv, &ChartSource::Remote(remote), target),
            ),
            ChartSource::Local(ComponentDir { name, dir }) => {
                let contract = self.project.contract(&name, &dir)?;
                let component = components::Component {
                    name: &name,
                    contract,
                };
                let evaluation = components::evaluate(&inv, &ChartSource::Local(component), target);
                (name, ChartSource::Local(dir), evaluation)
            }
        };
        let evaluation = evaluation?;
        layers.insert(0, ExplainLayer::new("imports", Some(evaluation.imported)));
        Ok(Some(Entry::Release(Box::new(Release::new(
            InvocationValues {
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
            spec,
            target,
            true,
            layers,
        )))))
    }

    fn helm_chart(
        &mut self,
        doc: &Document,
        dir: Option<&Path>,
        default_namespace: &str,
    ) -> Result<Option<Entry>, Refused> {
        let object = self.register(doc);
        let mut chart = objects::helm_chart(&doc.node, object)?;
        let mut layers = vec![ExplainLayer::new("spec.values", Some(chart.values.clone()))];
        chart.values = self.with_runtime(chart.values, &mut layers);
        let display = ObjectName::new("HelmChart", &chart.name).to_string();
        let (chart_text, spec) = match &chart.chart {
            ChartSource::Remote(remote) => {
                (remote.to_string(), ChartSource::Remote(remote.clone()))
            }
            ChartSource::Local(LocalChart::Path(path)) => {
                let Some(dir) = dir else {
                    return Err(vec![Diagnostic::new(
                        Code::InvalidField,
                        "a HelmChart in chart output cannot name a local `spec.chart.path`; use a repository",
                    )
                    .at(chart.loc)
                    .object(display)]
                    .into());
                };
                let resolved = self
                    .project
                    .inside(&dir.join(path))
                    .map_err(|d| vec![d.at(chart.loc).object(&display)])?;
                (
                    self.project.display_path(&resolved),
                    ChartSource::Local(resolved),
                )
            }
            ChartSource::Local(LocalChart::Named(name)) => {
                let resolved = self
                    .project
                    .resolve_chart_name(name)
                    .map_err(|d| vec![d.at(chart.loc).object(&display)])?;
                (
                    self.project.display_path(&resolved),
                    ChartSource::Local(resolved),
                )
            }
        };
        Ok(Some(Entry::Release(Box::new(Release::new(
            InvocationValues {
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
            spec,
            self.target.as_ref(),
            chart.include_crds,
            layers,
        )))))
    }
}

/// Whether an app file's document is Nyl's `Release`.
fn is_release(doc: &Document, aliases: &objects::Aliases) -> bool {
    objects::classify(&doc.node, Place::App, aliases).is_ok_and(|k| k == DocKind::Release)
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
                .object(ObjectName::new(&item.kind, &item.name).to_string()),
            );
        }
    }
}
