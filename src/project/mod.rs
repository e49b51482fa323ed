//! The project on disk: finding its root, reading `nyl.toml` ([`config`]), the targets, app files
//! and component directories. This is the shell's file I/O; everything it reads goes to the core
//! as data.

mod config;
mod files;
pub mod scan;
pub mod schema_files;

pub use config::parse_config;
pub use files::{
    holds_config, is_hidden, is_settings_file, is_yaml, not_regular, CONFIG_FILE, CONTRACT_FILE,
    NESTED_CONFIG_FILE, SECRETS_FILES,
};

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tracing::debug;

use config::{load_config, toml_to_node};
use files::read_error;

use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::data::provenance::{Catalog, FileId, Layer, Loc, ObjectRef};
use nyl_core::data::value::{Node, Value};
use nyl_core::data::yaml::{self, Document, Limits, Mode};
use nyl_core::project::objects::{
    self, ChartSource, Cluster, Config, DeploymentTarget, DocKind, Place, RemoteChart, Templating,
};
use nyl_core::project::template;
use nyl_core::values::coalesce::{self, ChartValues, Dependency, Import};
use nyl_core::values::components::{self, Contract};
use nyl_core::values::targets;

/// A component an invocation's kind resolved to: a directory holding `Chart.yaml`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComponentDir {
    /// Its path under the components search path.
    pub name: String,
    pub dir: PathBuf,
}

/// Why a part of the project (a chart's values, a chart directory, a component contract) cannot
/// be used. A run reads each part once and reports its problems the first time it is asked for:
/// later askers are told that it failed and that its problems were reported already.
#[derive(Debug)]
pub enum Refused {
    /// Problems to report now.
    Problems(Vec<Diagnostic>),
    /// The problems were reported when the part was first asked for.
    Reported,
}

impl Refused {
    /// Adds the problems not reported yet to `diagnostics`.
    pub fn report_to(self, diagnostics: &mut Vec<Diagnostic>) {
        if let Refused::Problems(problems) = self {
            diagnostics.extend(problems);
        }
    }
}

impl From<Vec<Diagnostic>> for Refused {
    fn from(problems: Vec<Diagnostic>) -> Refused {
        Refused::Problems(problems)
    }
}

impl From<Diagnostic> for Refused {
    fn from(problem: Diagnostic) -> Refused {
        Refused::Problems(vec![problem])
    }
}

/// Why there is no usable project: the problems, and the catalog of the files they point into.
pub type NotLoaded = (Arc<Catalog>, Vec<Diagnostic>);

/// A loaded project: its settings, targets, and the catalog of files and objects read so far.
/// A run loads it once; each app render works on its own copy (see `apps::pipeline::Loaded`),
/// which shares the loaded catalog, clusters and targets and holds only what the render adds:
/// its files and objects, its caches of contracts and chart values, its read budget.
#[derive(Clone)]
pub struct Project {
    pub root: PathBuf,
    /// The directory of nyl.toml, which the paths it names are relative to: the root, or its
    /// `nyl/` ([`NESTED_CONFIG_FILE`]).
    pub config_dir: PathBuf,
    pub config: Config,
    pub catalog: Catalog,
    /// Shared by every copy of the project: only loading it adds to them.
    pub clusters: Arc<Vec<Cluster>>,
    pub targets: Arc<Vec<DeploymentTarget>>,
    /// Whether app files are templates: nyl.toml's `templating`, or the project's shape.
    pub templating: Templating,
    /// A targets file holds a document in Nyl's group `k8s.gitops.nyl/v1`.
    nyl_shaped: bool,
    contracts: HashMap<PathBuf, ContractState>,
    charts: HashMap<PathBuf, Result<ChartValues, ()>>,
    checked_charts: HashMap<PathBuf, bool>,
    files_read: u64,
    bytes_read: u64,
    /// Warnings of files read leniently outside a session's own reads (chart values, which are
    /// read once and cached); the session reports them.
    pub warnings: Vec<Diagnostic>,
    /// What every parse of the run may keep, together (`max_nodes`, `max_value_bytes`).
    budget: Limits,
}

/// A file's text, or why there is none (no problems: a limit reported at an earlier file).
enum Read {
    Text(FileId, String),
    Failed(FileId, Vec<Diagnostic>),
}

/// The nearest directory at or above `start` that holds `nyl.toml`.
pub fn find_root(start: &Path) -> Result<PathBuf, Diagnostic> {
    find_root_within(start, None)
}

/// The nearest directory at or above `start` that holds `nyl.toml`, looking no higher than
/// `boundary` when there is one (the Argo CD plugin's repository root: above it lie other
/// requests' repositories and the sidecar's own files).
pub fn find_root_within(start: &Path, boundary: Option<&Path>) -> Result<PathBuf, Diagnostic> {
    let absolute = fs::canonicalize(start)
        .map_err(|e| Diagnostic::new(Code::PathNotFound, format!("{}: {e}", start.display())))?;
    let mut dir = if absolute.is_dir() {
        absolute.as_path()
    } else {
        absolute.parent().unwrap_or(&absolute)
    };
    loop {
        // Nyl also finds `nyl/nyl.toml` at the root of a Git worktree (or of the repository Argo
        // CD unpacked, which may come without `.git`) that has no nyl.toml of its own.
        let worktree_root = dir.join(".git").exists() || Some(dir) == boundary;
        if dir.join(CONFIG_FILE).is_file()
            || (worktree_root && dir.join(NESTED_CONFIG_FILE).is_file())
        {
            return Ok(dir.to_path_buf());
        }
        match dir.parent().filter(|_| Some(dir) != boundary) {
            Some(parent) => dir = parent,
            None => {
                let limit = boundary.map_or_else(
                    || "any directory above it".to_string(),
                    |b| format!("above it up to the repository root {}", b.display()),
                );
                return Err(Diagnostic::new(
                    Code::ProjectNotFound,
                    format!(
                        "no {CONFIG_FILE} in {} or {limit}; create one at the project root (it \
                         may be empty)",
                        start.display()
                    ),
                ));
            }
        }
    }
}

impl Project {
    /// Loads `nyl.toml` and the targets files. Problems are returned beside the project, which is
    /// usable (with defaults and the objects that did load) so that a run can report everything.
    ///
    /// `only` names the one target a run needs (it renders for that target alone): then only the
    /// targets files that define it or its Cluster (and the few others that concern them) are
    /// read in full, and the others are looked at only for what they define
    /// ([`Project::load_targets_of`]); their problems are `nyl validate`'s to report. When that
    /// is not exact (the target or its Cluster is missing or defined twice, or a layout chooses
    /// its apps' targets), every file is read in full, as with `None`.
    pub fn load(
        root: PathBuf,
        only: Option<&str>,
    ) -> Result<(Project, Vec<Diagnostic>), NotLoaded> {
        let (project, diags, exact) = Project::load_with(root.clone(), only)?;
        if exact {
            return Ok((project, diags));
        }
        debug!(target = ?only, "the target is not defined once: every targets file read");
        let (project, diags, _) = Project::load_with(root, None)?;
        Ok((project, diags))
    }

    /// [`Project::load`], and whether it is exact: always without `only`, and with it when the
    /// target and its Cluster are each defined once.
    fn load_with(
        root: PathBuf,
        only: Option<&str>,
    ) -> Result<(Project, Vec<Diagnostic>, bool), NotLoaded> {
        let mut catalog = Catalog::default();
        // Everything else depends on nyl.toml (search paths, aliases): a broken one stops the run
        // rather than producing errors that are only its consequences.
        let config_dir = if root.join(CONFIG_FILE).is_file() {
            root.clone()
        } else {
            root.join("nyl")
        };
        let (config, warnings) = match load_config(&root, &config_dir, &mut catalog) {
            Ok(loaded) => loaded,
            Err(problems) => return Err((Arc::new(catalog), problems)),
        };
        let budget = Limits::new(
            usize::try_from(config.limits.max_nodes).unwrap_or(usize::MAX),
            usize::try_from(config.limits.max_value_bytes).unwrap_or(usize::MAX),
        );
        let mut project = Project {
            root,
            config_dir,
            config,
            catalog,
            clusters: Arc::default(),
            targets: Arc::default(),
            templating: Templating::Unset,
            nyl_shaped: false,
            contracts: HashMap::new(),
            charts: HashMap::new(),
            checked_charts: HashMap::new(),
            warnings: Vec::new(),
            files_read: 0,
            bytes_read: 0,
            budget,
        };
        let mut diags = warnings;
        // Only a target known in advance: a layout may deploy its apps to any target. And a named
        // one: the scan cannot tell an empty name from an absent one.
        let layouts = &project.config.layouts;
        let only =
            only.filter(|n| !n.is_empty() && layouts.iter().all(|(l, _)| l.target.is_none()));
        let exact = project.load_targets(only, &mut diags);
        diags.extend(targets::check_unique(&project.clusters, &project.targets));
        project.check_secrets_config(&mut diags);
        let config = &project.config;
        project.templating =
            Templating::resolve(config.templating, config.nyl_keys || project.nyl_shaped);
        debug!(templating = ?project.templating, "app files as templates");
        Ok((project, diags, exact))
    }

    /// A chart directory's defaults and its vendored subcharts' (directories under `charts/`;
    /// packaged `.tgz` subcharts are left to Helm), tagged as chart defaults; read once per run.
    pub fn chart_values(&mut self, dir: &Path) -> Result<ChartValues, Refused> {
        if let Some(known) = self.charts.get(dir) {
            return known.clone().map_err(|()| Refused::Reported);
        }
        let loaded = self.load_chart_values(dir);
        self.charts
            .insert(dir.to_path_buf(), loaded.clone().map_err(drop));
        Ok(loaded?)
    }

    /// Refuses a chart directory that Helm would take out of the repository: one that holds
    /// symbolic links (Helm follows them through `.Files.Get` and subcharts), or a schema, its
    /// own or a subchart's (vendored or packaged), that refers outside itself (Helm loads what a
    /// `$ref` names, a file or a URL). Checked once per directory and run.
    pub fn check_chart(&mut self, dir: &Path) -> Result<(), Refused> {
        if let Some(known) = self.checked_charts.get(dir) {
            return if *known {
                Ok(())
            } else {
                Err(Refused::Reported)
            };
        }
        let mut problems = Vec::new();
        for entry in walkdir::WalkDir::new(dir)
            .sort_by_file_name()
            .into_iter()
            .filter_map(Result::ok)
        {
            let path = entry.path();
            if entry.path_is_symlink() {
                let file = self.catalog.add_file(self.display_path(path));
                problems.push(
                    Diagnostic::new(
                        Code::NotRegularFile,
                        "a symbolic link in a chart: Helm would follow it, possibly out of the repository; vendor the file instead",
                    )
                    .at(Loc::new(file, 0)),
                );
            } else if entry.file_type().is_file()
                && (schema_files::is_schema(path) || schema_files::is_package(path))
            {
                let max = self.config.limits.max_total_bytes;
                let found = schema_files::schema_file_problems(path, &self.display_path(path), max);
                problems.extend(self.schema_reference_problems(found));
            }
        }
        self.checked_charts
            .insert(dir.to_path_buf(), problems.is_empty());
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Refused::Problems(problems))
        }
    }

    /// `external_schema_reference` for each problem [`schema_files::schema_file_problems`]
    /// found, at the file it names.
    pub fn schema_reference_problems(&mut self, found: Vec<(String, String)>) -> Vec<Diagnostic> {
        found
            .into_iter()
            .map(|(file, message)| {
                let file = self.catalog.add_file(file);
                Diagnostic::new(Code::ExternalSchemaReference, message).at(Loc::new(file, 0))
            })
            .collect()
    }

    fn load_chart_values(&mut self, dir: &Path) -> Result<ChartValues, Vec<Diagnostic>> {
        let meta = self
            .read_helm_yaml(&dir.join("Chart.yaml"))?
            .into_iter()
            .next();
        let meta = meta.as_ref();
        let name = meta.and_then(|m| m.get("name")).and_then(Node::as_str);
        let mut chart = ChartValues {
            name: name.map_or_else(
                || {
                    dir.file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned()
                },
                str::to_string,
            ),
            dependencies: meta
                .and_then(|m| m.get("dependencies"))
                .and_then(Node::as_seq)
                .map(|deps| deps.iter().map(dependency).collect()),
            ..ChartValues::default()
        };
        let values = dir.join("values.yaml");
        if values.is_file() {
            let docs = self.read_helm_yaml(&values)?;
            chart.defaults = coalesce::merge_documents(docs).map(|mut d| {
                d.set_layer(Layer::ChartDefault);
                d
            });
        }
        // `charts/` and the subcharts in it; a link among them would be read wherever it leads.
        let charts = dir.join("charts");
        let mut entries = vec![charts.clone()];
        if fs::symlink_metadata(&charts).is_ok_and(|m| m.is_dir()) {
            let listed = fs::read_dir(&charts)
                .into_iter()
                .flatten()
                .filter_map(Result::ok);
            entries.extend(listed.map(|e| e.path()));
        }
        let links: Vec<Diagnostic> = entries
            .iter()
            .filter_map(|p| Some((p, fs::symlink_metadata(p).ok()?)))
            .filter(|(_, m)| m.file_type().is_symlink())
            .map(|(p, m)| {
                let file = self.catalog.add_file(self.display_path(p));
                not_regular(&m).at(Loc::new(file, 0))
            })
            .collect();
        if !links.is_empty() {
            return Err(links);
        }
        let mut subcharts: Vec<PathBuf> = entries
            .into_iter()
            .skip(1)
            .filter(|p| p.join("Chart.yaml").is_file())
            .collect();
        subcharts.sort();
        for sub in subcharts {
            chart.subcharts.push(self.load_chart_values(&sub)?);
        }
        Ok(chart)
    }

    /// Reads a file Helm reads, leniently: its errors, or its documents (its warnings kept for
    /// the session).
    fn read_helm_yaml(&mut self, path: &Path) -> Result<Vec<Node>, Vec<Diagnostic>> {
        let (_, docs, problems) = self.read_documents_as(path, Mode::Lenient);
        let (warnings, errors): (Vec<_>, Vec<_>) =
            problems.into_iter().partition(|d| !d.is_error());
        self.warnings.extend(warnings);
        if errors.is_empty() {
            Ok(docs.into_iter().map(|d| d.node).collect())
        } else {
            Err(errors)
        }
    }

    /// The names `--target` accepts: every DeploymentTarget, and every Cluster no
    /// DeploymentTarget shadows; sorted.
    pub fn target_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.targets.iter().map(|t| t.name.clone()).collect();
        names.extend(self.clusters.iter().map(|c| c.name.clone()));
        names.sort();
        names.dedup();
        names
    }

    /// The path diagnostics show for `path`: relative to the project root.
    pub fn display_path(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    /// Reads and parses one of nyl's own YAML files, registering it in the catalog.
    pub fn read_yaml(&mut self, path: &Path) -> (FileId, Vec<Node>, Vec<Diagnostic>) {
        let (file, docs, problems) = self.read_documents(path);
        (file, docs.into_iter().map(|d| d.node).collect(), problems)
    }

    /// Reads one of nyl's own YAML files, strictly, as documents that keep their text (app files,
    /// whose plain manifests are passed on as written).
    pub fn read_documents(&mut self, path: &Path) -> (FileId, Vec<Document>, Vec<Diagnostic>) {
        self.read_documents_as(path, Mode::Strict)
    }

    /// Reads one file's text within the limits.
    fn read_text(&mut self, path: &Path) -> Read {
        let file = self.catalog.add_file(self.display_path(path));
        let at = Loc::new(file, 0);
        let fail = |d: Diagnostic| Read::Failed(file, vec![d.at(at)]);
        let meta = match fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(e) => return fail(read_error(&e, file)),
        };
        if !meta.file_type().is_file() {
            return fail(not_regular(&meta));
        }
        let limits = self.config.limits;
        if meta.len() > limits.max_file_bytes {
            return fail(Diagnostic::new(
                Code::FileTooLarge,
                format!(
                    "the file has {} bytes, more than {}",
                    meta.len(),
                    objects::Limits::describe("max_file_bytes", limits.max_file_bytes)
                ),
            ));
        }
        self.files_read += 1;
        self.bytes_read += meta.len();
        // Each limit is reported once, at the file that crossed it; later files are not read.
        if self.files_read > limits.max_files + 1
            || self.bytes_read - meta.len() > limits.max_total_bytes
        {
            return Read::Failed(file, Vec::new());
        }
        if self.files_read > limits.max_files {
            return fail(Diagnostic::new(
                Code::TooManyFiles,
                format!(
                    "more YAML files to read than {}",
                    objects::Limits::describe("max_files", limits.max_files)
                ),
            ));
        }
        if self.bytes_read > limits.max_total_bytes {
            return fail(Diagnostic::new(
                Code::RepositoryTooLarge,
                format!(
                    "the YAML read adds up to more than {}",
                    objects::Limits::describe("max_total_bytes", limits.max_total_bytes)
                ),
            ));
        }
        match fs::read_to_string(path) {
            Ok(text) => Read::Text(file, text),
            Err(e) => fail(read_error(&e, file)),
        }
    }

    /// Whether a limit on the files or bytes read has stopped this run's reading: every file
    /// after the one that crossed it comes back unread, with no documents and no problems.
    pub fn stopped_reading(&self) -> bool {
        let limits = self.config.limits;
        self.files_read > limits.max_files || self.bytes_read > limits.max_total_bytes
    }

    /// Reads one YAML file in `mode`.
    pub fn read_documents_as(
        &mut self,
        path: &Path,
        mode: Mode,
    ) -> (FileId, Vec<Document>, Vec<Diagnostic>) {
        match self.read_text(path) {
            Read::Text(file, text) => {
                let (docs, diags) = self.parse_documents(&text, file, mode);
                (file, docs, diags)
            }
            Read::Failed(file, problems) => (file, Vec::new(), problems),
        }
    }

    /// nyl.toml as messages name it: `nyl.toml`, or `nyl/nyl.toml`.
    fn config_display(&self) -> String {
        self.display_path(&self.config_dir.join(CONFIG_FILE))
    }

    /// Whether `path` is rendered as a template when read as an app file: templating is on and
    /// it holds template syntax.
    pub fn is_template(&self, path: &Path) -> bool {
        self.templating == Templating::On
            && fs::read_to_string(path).is_ok_and(|text| template::has_syntax(&text))
    }

    /// Reads an app file: when templating is on and the file holds template syntax, it is
    /// rendered with `context` first, and its documents' lines (and problems') point into the
    /// file as written; the lines whose text the template changed are marked in the catalog.
    pub fn read_app_documents(
        &mut self,
        path: &Path,
        context: &template::Context,
    ) -> (FileId, Vec<Document>, Vec<Diagnostic>) {
        let (file, text) = match self.read_text(path) {
            Read::Text(file, text) => (file, text),
            Read::Failed(file, problems) => return (file, Vec::new(), problems),
        };
        if self.templating != Templating::On || !template::has_syntax(&text) {
            let (docs, diags) = self.parse_documents(&text, file, Mode::Strict);
            return (file, docs, diags);
        }
        let rendered = match template::render(&text, context, file) {
            Ok(rendered) => rendered,
            Err(problems) => return (file, Vec::new(), problems),
        };
        debug!(file = %self.catalog.file(file), "rendered as a template");
        let (mut docs, mut diags) = self.parse_documents(&rendered.text, file, Mode::Strict);
        for doc in &mut docs {
            rendered.remap_node(&mut doc.node);
        }
        for d in &mut diags {
            rendered.remap_diagnostic(d, file);
        }
        for line in &rendered.templated {
            self.catalog.mark_templated(Loc::new(file, *line));
        }
        (file, docs, diags)
    }

    /// Reads one file for a look that keeps nothing of it (validate's scan of every file): what
    /// its documents cost is given back to the run's budget once `look` has consumed them.
    /// `context`, when given, renders an app file that is a template
    /// ([`Project::read_app_documents`]).
    pub fn look_at<R>(
        &mut self,
        path: &Path,
        context: Option<&template::Context>,
        look: impl FnOnce(&mut Project, FileId, Vec<Document>, Vec<Diagnostic>) -> R,
    ) -> R {
        let before = self.budget.spent();
        let (file, docs, problems) = match context {
            Some(context) => self.read_app_documents(path, context),
            None => self.read_documents(path),
        };
        let out = look(self, file, docs, problems);
        self.budget.rewind(before);
        out
    }

    /// Parses YAML text (a file, Helm's output, a runtime parameter) within the run's budget, in
    /// `mode`.
    pub fn parse_documents(
        &self,
        text: &str,
        file: FileId,
        mode: Mode,
    ) -> (Vec<Document>, Vec<Diagnostic>) {
        yaml::parse_documents(text, file, &self.budget, mode)
    }

    /// The run's budget for reading YAML, which every parse spends from.
    pub fn budget(&self) -> &Limits {
        &self.budget
    }

    /// `path` canonicalized, when it lies inside the project root; symbolic links are followed
    /// first, so a link that leaves the project is refused.
    pub fn inside(&self, path: &Path) -> Result<PathBuf, Diagnostic> {
        let real = fs::canonicalize(path)
            .map_err(|e| Diagnostic::new(Code::PathNotFound, format!("{}: {e}", path.display())))?;
        if real.starts_with(&self.root) {
            Ok(real)
        } else {
            Err(Diagnostic::new(
                Code::PathOutsideProject,
                format!(
                    "{} resolves to {}, outside the project at {}; nyl reads nothing outside the project",
                    path.display(),
                    real.display(),
                    self.root.display()
                ),
            ))
        }
    }

    /// Loads the targets files: every one in full, or with `only` the files that may matter to
    /// the target `only` (see [`Project::load_targets_of`]). False when that is not exact: the
    /// target or its Cluster is not defined exactly once among the files read.
    fn load_targets(&mut self, only: Option<&str>, diags: &mut Vec<Diagnostic>) -> bool {
        match only {
            Some(name) => self.load_targets_of(name, diags),
            None => {
                for path in self.targets_files(diags) {
                    if let Some((file, text)) = self.read_targets_text(&path, diags) {
                        self.load_targets_text(file, &text, diags);
                    }
                }
                true
            }
        }
    }

    /// Loads, of the targets files, those a run for the target `name` needs in full: the files
    /// that define something named as the target, or a Cluster named as its Cluster (its own
    /// files, whose problems are its own); those that define another Cluster or DeploymentTarget
    /// of its own files (a duplicate reported there would be the target's problem too);
    /// and one in Nyl's group when templating follows the project's shape. Every other file is
    /// read (so the limits on reading count what a full load counts) and looked at only as far as
    /// needed to be sure that it defines none of these ([`Unparsed::may_define`]). The objects
    /// are kept in the order of a full load. False when the target or its Cluster is not defined
    /// exactly once.
    fn load_targets_of(&mut self, name: &str, diags: &mut Vec<Diagnostic>) -> bool {
        let mut unparsed = Vec::new();
        for path in self.targets_files(diags) {
            if let Some((file, text)) = self.read_targets_text(&path, diags) {
                let file = Unparsed::new(file, text);
                // A file that holds the target's name most likely defines it: no scan first.
                if file.may_hold(&[name]) {
                    self.load_targets_text(file.id, &file.text, diags);
                } else {
                    unparsed.push(file);
                }
            }
        }
        let cluster = self
            .targets
            .iter()
            .find(|t| t.name == name)
            .map_or(name, |t| t.cluster_ref.as_str())
            .to_string();
        let by_shape = self.config.templating.is_none() && !self.config.nyl_keys;
        unparsed.retain_mut(|file| {
            let shapes = by_shape
                && !self.nyl_shaped
                && file.may_define(&[objects::GITOPS_API], |h| {
                    h.api_version.as_deref() == Some(objects::GITOPS_API)
                });
            let read = shapes || file.may_define_object("Cluster", &cluster);
            if read {
                self.load_targets_text(file.id, &file.text, diags);
            }
            !read
        });
        // The other objects of its own files: everything named as the target, and every Cluster
        // named as its Cluster, is loaded already.
        let targets = self
            .targets
            .iter()
            .map(|t| ("DeploymentTarget", &t.name, t.loc));
        let clusters = self.clusters.iter().map(|c| ("Cluster", &c.name, c.loc));
        let objects: Vec<(&str, &String, Loc)> = targets.chain(clusters).collect();
        let is_own = |kind: &str, n: &str| {
            (kind, n) == ("DeploymentTarget", name) || (kind, n) == ("Cluster", &cluster)
        };
        let loaded = |kind: &str, n: &str| n == name || (kind, n) == ("Cluster", &cluster);
        let own: Vec<FileId> = objects
            .iter()
            .filter(|(kind, n, _)| is_own(kind, n))
            .map(|(_, _, loc)| loc.file)
            .collect();
        let others: Vec<(&str, String)> = objects
            .iter()
            .filter(|(kind, n, loc)| own.contains(&loc.file) && !loaded(kind, n))
            .map(|(kind, n, _)| (*kind, (*n).clone()))
            .collect();
        for mut file in unparsed {
            if others
                .iter()
                .any(|(kind, n)| file.may_define_object(kind, n))
            {
                self.load_targets_text(file.id, &file.text, diags);
            }
        }
        // Files come in order and each file's documents in order: sorted by where they are.
        Arc::make_mut(&mut self.targets).sort_by_key(|t| (t.loc.file, t.loc.line));
        Arc::make_mut(&mut self.clusters).sort_by_key(|c| (c.loc.file, c.loc.line));
        self.targets.iter().filter(|t| t.name == name).count() <= 1
            && self.clusters.iter().filter(|c| c.name == cluster).count() == 1
    }

    /// The YAML files below the targets search paths, in order; a search path written in
    /// nyl.toml that is missing or leaves the project is a problem.
    fn targets_files(&mut self, diags: &mut Vec<Diagnostic>) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for name in self.config.targets_search_paths.clone() {
            let dir = self.config_dir.join(&name);
            if !dir.is_dir() {
                // The default `targets` may be absent (a project of layouts); a path written in
                // nyl.toml must exist, or every target in it would silently be missing.
                if self.config.targets_search_paths_set {
                    diags.push(
                        Diagnostic::new(
                            Code::SearchPathNotFound,
                            format!(
                                "targets search path {name:?} is not a directory; fix [project] \
                                 targets_search_paths"
                            ),
                        )
                        .at(Loc::new(self.catalog.add_file(self.config_display()), 0))
                        .object(CONFIG_FILE),
                    );
                }
                debug!(dir = %dir.display(), "targets search path does not exist");
                continue;
            }
            // A search path that is (or passes through) a link is read where it leads, and only
            // inside the project.
            let dir = match self.inside(&dir) {
                Ok(dir) => dir,
                Err(d) => {
                    diags.push(d.object(CONFIG_FILE));
                    continue;
                }
            };
            let files = walkdir::WalkDir::new(&dir)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(|e| e.depth() == 0 || !is_hidden(e.path()))
                .filter_map(Result::ok)
                .filter(|e| !e.file_type().is_dir() && is_yaml(e.path()))
                .map(walkdir::DirEntry::into_path);
            out.extend(files);
        }
        out
    }

    /// A targets file's text; the problems of reading it go to `diags`.
    fn read_targets_text(
        &mut self,
        path: &Path,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<(FileId, String)> {
        match self.read_text(path) {
            Read::Text(file, text) => Some((file, text)),
            Read::Failed(_, problems) => {
                diags.extend(problems);
                None
            }
        }
    }

    /// Parses a targets file's text and loads its Clusters and DeploymentTargets.
    fn load_targets_text(&mut self, file: FileId, text: &str, diags: &mut Vec<Diagnostic>) {
        let (docs, problems) = self.parse_documents(text, file, Mode::Strict);
        diags.extend(problems);
        for doc in docs {
            self.load_target_doc(&doc.node, diags);
        }
    }

    /// Nyl's secrets provider configuration (`nyl-secrets.yaml` and its kin at the project
    /// root): one that provides nothing (`null`) is read and ignored; any other provider is
    /// `unsupported_nyl_feature`, since what templates would read from it is not there.
    fn check_secrets_config(&mut self, diags: &mut Vec<Diagnostic>) {
        for name in SECRETS_FILES {
            let path = self.config_dir.join(name);
            if fs::symlink_metadata(&path).is_err() {
                continue;
            }
            let doc = if name.ends_with(".toml") {
                let file = self.catalog.add_file(self.display_path(&path));
                match fs::read_to_string(&path) {
                    Ok(text) => toml_to_node(&text, file).map(Some),
                    Err(e) => Err(read_error(&e, file)),
                }
            } else {
                let (_, docs, problems) = self.read_yaml(&path);
                if !problems.is_empty() {
                    diags.extend(problems);
                    continue;
                }
                Ok(docs.into_iter().next())
            };
            let doc = match doc {
                Ok(doc) => doc,
                Err(d) => {
                    diags.push(d);
                    continue;
                }
            };
            let provider = doc
                .as_ref()
                .and_then(|d| d.field("type").or_else(|| d.field("provider")))
                .filter(|p| !p.is_null() && !matches!(p.as_str(), Some("null" | "none")));
            let Some(provider) = provider else {
                debug!(file = name, "Nyl's null secrets provider: nothing to read");
                continue;
            };
            let what = provider
                .as_str()
                .map_or_else(String::new, |p| format!(" `{p}`"));
            diags.push(
                Diagnostic::new(
                    Code::UnsupportedNylFeature,
                    format!(
                        "{name} configures Nyl's secrets provider{what}, whose secrets Nyl's \
                         templates read as `secrets`; nyl reads no secrets, so that rendered \
                         manifests never hold them: keep secret values in the cluster (a Secret \
                         managed by External Secrets or Sealed Secrets, named by the manifests), \
                         then remove {name}"
                    ),
                )
                .at(provider.prov.loc),
            );
        }
    }

    fn load_target_doc(&mut self, doc: &Node, diags: &mut Vec<Diagnostic>) {
        if doc.field("apiVersion").and_then(Node::as_str) == Some(objects::GITOPS_API) {
            self.nyl_shaped = true;
        }
        let kind = match objects::classify(doc, Place::Targets, &self.config.aliases) {
            Ok(kind) => kind,
            Err(d) => return diags.push(d),
        };
        let kind_name = match kind {
            DocKind::Cluster => "Cluster",
            DocKind::DeploymentTarget => "DeploymentTarget",
            _ => {
                debug!(
                    object = objects::name_of(doc).unwrap_or("?"),
                    "passing over one of Nyl's GitOps control resources"
                );
                return;
            }
        };
        let object = self.catalog.add_object(ObjectRef {
            kind: kind_name.to_string(),
            name: objects::name_of(doc).unwrap_or_default().to_string(),
            loc: doc.prov.loc,
        });
        let result = match kind {
            DocKind::Cluster => {
                objects::cluster(doc, object).map(|c| Arc::make_mut(&mut self.clusters).push(c))
            }
            _ => objects::deployment_target(doc, object)
                .map(|t| Arc::make_mut(&mut self.targets).push(t)),
        };
        if let Err(problems) = result {
            diags.extend(problems);
        }
    }

    /// The YAML files of an app path: the file itself, or a directory's `*.yaml`/`*.yml` files
    /// sorted by name (not recursive), hidden ones (`.argocd-source.yaml`) left out.
    pub fn app_files(&self, path: &Path) -> Result<Vec<PathBuf>, Diagnostic> {
        let not_found = |e: std::io::Error| {
            Diagnostic::new(Code::PathNotFound, format!("{}: {e}", path.display()))
        };
        if !path.is_dir() {
            fs::metadata(path).map_err(not_found)?;
            return Ok(vec![path.to_path_buf()]);
        }
        let mut files: Vec<PathBuf> = fs::read_dir(path)
            .map_err(not_found)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                is_yaml(p) && !is_hidden(p) && fs::symlink_metadata(p).is_ok_and(|m| !m.is_dir())
            })
            .collect();
        files.sort();
        Ok(files)
    }

    /// Resolves an invocation kind: alias, remote shortcut, or component path.
    /// The directory of a chart named as Nyl names a local one (`spec.chart.name` alone): a name
    /// with a `/` is a path from the project root, any other the first `<path>/<name>` holding
    /// `Chart.yaml` among `helm_chart_search_paths`.
    pub fn resolve_chart_name(&self, name: &str) -> Result<PathBuf, Diagnostic> {
        let candidates: Vec<PathBuf> = if name.contains('/') {
            vec![self.root.join(name)]
        } else {
            let search = &self.config.helm_chart_search_paths;
            search
                .iter()
                .map(|p| self.config_dir.join(p).join(name))
                .collect()
        };
        match candidates.iter().find(|d| d.join("Chart.yaml").is_file()) {
            Some(dir) => self.inside(dir),
            None => Err(Diagnostic::new(
                Code::ChartNotFound,
                format!(
                    "no chart {name:?}: no {} holds Chart.yaml; check the name, or [project] \
                     helm_chart_search_paths in nyl.toml (searched: {})",
                    if name.contains('/') {
                        "such directory"
                    } else {
                        "search path"
                    },
                    self.config.helm_chart_search_paths.join(", ")
                ),
            )),
        }
    }

    /// The chart an invocation's kind names (through an alias, if one applies).
    pub fn resolve_kind(
        &self,
        kind: &str,
        loc: Loc,
    ) -> Result<ChartSource<ComponentDir>, Diagnostic> {
        let resolved = self
            .config
            .aliases
            .get(kind)
            .map_or(kind, |(to, _)| to.as_str());
        if RemoteChart::is_shortcut(resolved) {
            return RemoteChart::parse_checked(resolved, Code::InvalidName)
                .map(ChartSource::Remote)
                .map_err(|d| d.at(loc));
        }
        objects::check_component_path(resolved)
            .map_err(|why| Diagnostic::new(Code::InvalidName, why).at(loc))?;
        let search = &self.config.components_search_paths;
        for base in search {
            let dir = self.config_dir.join(base).join(resolved);
            if dir.join("Chart.yaml").is_file() {
                return Ok(ChartSource::Local(ComponentDir {
                    name: resolved.to_string(),
                    dir: self.inside(&dir).map_err(|d| d.at(loc))?,
                }));
            }
        }
        let via = if resolved == kind {
            String::new()
        } else {
            format!(" (alias of {kind})")
        };
        Err(Diagnostic::new(
            Code::ComponentNotFound,
            format!(
                "no component {resolved}{via}: no {resolved}/Chart.yaml under {}; check the kind, \
                 [project] components_search_paths, or [project.aliases] in {CONFIG_FILE}",
                search.join(", ")
            ),
        )
        .at(loc))
    }

    /// The contract of a component directory (`None` without `nyl-component.yaml`), read and
    /// checked once per run. A broken contract's problems are returned the first time it is asked
    /// for, [`Refused::Reported`] after that.
    pub fn contract(&mut self, component: &str, dir: &Path) -> Result<Option<&Contract>, Refused> {
        if !self.contracts.contains_key(dir) {
            let (state, problems) = self.read_contract(component, dir);
            self.contracts.insert(dir.to_path_buf(), state);
            if !problems.is_empty() {
                return Err(Refused::Problems(problems));
            }
        }
        match self.contracts.get(dir) {
            Some(ContractState::Valid(c)) => Ok(Some(c)),
            Some(ContractState::Broken) => Err(Refused::Reported),
            Some(ContractState::Absent) | None => Ok(None),
        }
    }

    /// The contract of `dir` when an earlier [`Project::contract`] read it cleanly.
    pub fn contract_loaded(&self, dir: &Path) -> Option<&Contract> {
        match self.contracts.get(dir) {
            Some(ContractState::Valid(c)) => Some(c),
            _ => None,
        }
    }

    fn read_contract(&mut self, component: &str, dir: &Path) -> (ContractState, Vec<Diagnostic>) {
        let path = dir.join(CONTRACT_FILE);
        if !path.is_file() {
            return match self.misnamed_contract(dir) {
                Some(d) => (ContractState::Broken, vec![d]),
                None => (ContractState::Absent, Vec::new()),
            };
        }
        let (file, docs, problems) = self.read_yaml(&path);
        if !problems.is_empty() {
            return (ContractState::Broken, problems);
        }
        if self.stopped_reading() {
            // Not read: the limit was reported at the file that crossed it, and an unread
            // contract is no empty one.
            return (ContractState::Broken, Vec::new());
        }
        match components::parse_contract(&docs, component, Loc::new(file, 0)) {
            Ok(c) => (ContractState::Valid(c), Vec::new()),
            Err(problems) => (ContractState::Broken, problems),
        }
    }
}

impl Project {
    /// A file beside `Chart.yaml` whose name is close to `nyl-component.yaml`: a contract nyl
    /// would otherwise ignore, and with it every required import.
    fn misnamed_contract(&mut self, dir: &Path) -> Option<Diagnostic> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let wanted = CONTRACT_FILE.trim_end_matches(".yaml");
        let name = names.into_iter().find(|name| {
            let lower = name.to_lowercase();
            let stem = lower
                .strip_suffix(".yaml")
                .or_else(|| lower.strip_suffix(".yml"))
                .unwrap_or(&lower);
            name != CONTRACT_FILE && objects::edit_distance(stem, wanted) <= 2
        })?;
        let file = self.catalog.add_file(self.display_path(&dir.join(&name)));
        Some(
            Diagnostic::new(
                Code::MisnamedContract,
                format!(
                    "{name} is not read: a component's contract must be named exactly \
                     {CONTRACT_FILE}; rename it"
                ),
            )
            .at(Loc::new(file, 0)),
        )
    }
}

#[derive(Clone)]
enum ContractState {
    Absent,
    Valid(Contract),
    Broken,
}

/// One entry of `dependencies` in a `Chart.yaml`; what is not a string there counts as absent
/// (Helm refuses such a chart itself).
fn dependency(node: &Node) -> Dependency {
    let text = |key: &str| node.get(key).and_then(Node::as_str).map(str::to_string);
    let strings = |key: &str| -> Vec<Node> {
        node.get(key)
            .and_then(Node::as_seq)
            .map(<[Node]>::to_vec)
            .unwrap_or_default()
    };
    let import = |item: &Node| match &item.value {
        Value::String(name) => Some(Import::Exports(name.clone())),
        Value::Map(_) => Some(Import::Path {
            child: go_string(item.get("child")),
            parent: go_string(item.get("parent")),
        }),
        _ => None,
    };
    Dependency {
        name: text("name").unwrap_or_default(),
        alias: text("alias").filter(|a| !a.is_empty()),
        condition: text("condition"),
        tags: strings("tags")
            .iter()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect(),
        import_values: strings("import-values").iter().filter_map(import).collect(),
    }
}

/// A value as Go's `%v` prints it, which is how Helm reads `child` and `parent`.
fn go_string(node: Option<&Node>) -> String {
    match node.map(|n| &n.value) {
        None | Some(Value::Null) => "<nil>".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => node.map(|n| n.to_json().to_string()).unwrap_or_default(),
    }
}

/// A targets file read and not parsed: what a run for one target needs to know of it is whether
/// it defines something, which is looked at as cheaply as can be sure.
struct Unparsed {
    id: FileId,
    text: String,
    /// No `\` anywhere: every string of the file is then written as it reads, but for line
    /// folding (which makes spaces and line breaks) and a single-quoted `''` (which makes `'`).
    plain: bool,
    /// Its documents' heads, once scanned; `None` inside when the scan is unsure of one.
    heads: Option<Option<Vec<yaml::Head>>>,
}

impl Unparsed {
    fn new(id: FileId, text: String) -> Unparsed {
        Unparsed {
            id,
            plain: !text.contains('\\'),
            text,
            heads: None,
        }
    }

    /// Whether one of its documents may be one that `wanted` picks out by its head, which holds
    /// every string of `texts`: false only when the file is sure to hold none. When it may
    /// hold them ([`Unparsed::may_hold`]) its documents are scanned, and one the scan is unsure
    /// of may be anything.
    fn may_define(&mut self, texts: &[&str], wanted: impl Fn(&yaml::Head) -> bool) -> bool {
        if !self.may_hold(texts) {
            return false;
        }
        let text = &self.text;
        let heads = self.heads.get_or_insert_with(|| heads(text));
        heads.as_ref().is_none_or(|heads| heads.iter().any(wanted))
    }

    /// Whether it may hold a document with every string of `texts` as its `apiVersion`, `kind`
    /// or name: false when it does not hold one of them as written (each read as written: no
    /// whitespace, `'` or `\` in it, and no `\` in the file).
    fn may_hold(&self, texts: &[&str]) -> bool {
        let as_written = |t: &&str| {
            t.bytes()
                .all(|b| b.is_ascii_graphic() && b != b'\'' && b != b'\\')
        };
        !self.plain || !texts.iter().all(as_written) || texts.iter().all(|t| self.text.contains(t))
    }

    /// Whether it may define an object of `kind` named `name`.
    fn may_define_object(&mut self, kind: &str, name: &str) -> bool {
        self.may_define(&[kind, name], |h| {
            h.kind.as_deref() == Some(kind) && h.name.as_deref() == Some(name)
        })
    }
}

/// The documents' heads of a YAML text, from the cheap scan; `None` when it is unsure of one.
fn heads(text: &str) -> Option<Vec<yaml::Head>> {
    yaml::split(text)
        .iter()
        .map(|piece| yaml::scan(piece.text(text)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unparsed(text: &str) -> Unparsed {
        Unparsed::new(FileId(0), text.to_string())
    }

    const WEB: &str = "apiVersion: k8s.nyl/v1\nkind: DeploymentTarget\nmetadata: {name: web}\n\
                       spec:\n  clusterRef: {name: prod}\n";

    #[test]
    fn a_file_without_the_strings_is_not_scanned() {
        let mut file = unparsed(WEB);
        assert!(!file.may_define_object("Cluster", "prod"));
        assert!(!file.may_define(&["batch"], |h| h.name.as_deref() == Some("batch")));
        assert!(file.heads.is_none());
    }

    #[test]
    fn a_name_written_elsewhere_is_told_apart_by_the_scan() {
        let mut file = unparsed(WEB);
        assert!(!file.may_define(&["prod"], |h| h.name.as_deref() == Some("prod")));
        assert!(file.heads.is_some());
        assert!(file.may_define_object("DeploymentTarget", "web"));
        assert!(!file.may_define_object("Cluster", "web"));
    }

    #[test]
    fn what_is_not_written_as_it_reads_is_scanned() {
        // `\x65` reads as `e`: the name is `web`, though `web` is not written.
        let escaped =
            "apiVersion: k8s.nyl/v1\nkind: DeploymentTarget\nmetadata: {name: \"w\\x65b\"}\n";
        assert!(unparsed(escaped).may_define_object("DeploymentTarget", "web"));
        // A name that is not written as it reads (`''` reads as `'`) is looked for by the scan.
        let mut file = unparsed(WEB);
        assert!(!file.may_define(&["it's"], |h| h.name.as_deref() == Some("it's")));
        assert!(file.heads.is_some());
    }

    #[test]
    fn a_document_the_scan_is_unsure_of_may_define_anything() {
        let alias =
            "apiVersion: k8s.nyl/v1\nkind: DeploymentTarget\nx: &n web\nmetadata: {name: *n}\n";
        let mut file = unparsed(alias);
        assert!(file.may_define_object("DeploymentTarget", "web"));
        assert_eq!(file.heads, Some(None));
    }
}
