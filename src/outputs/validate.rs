//! `nyl validate`: the whole repository checked before merge, as CI should see it.
//!
//! It checks every YAML file below the directory against the limits, every nyl object strictly
//! wherever it sits, every component contract (used or not), and for every DeploymentTarget each
//! app its `spec.apps` globs match: the values of every invocation and, unless `--no-render`, a
//! real Helm render. Problems from all of it are gathered as [`Issue`]s, each reported once.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use crate::apps::pipeline::{self, Loaded, Session};
use crate::expansion::render;
use crate::project::scan::Tree;
use crate::project::{self, Project};
use nyl_core::data::diagnostics::{Code, Diagnostic, Issue};
use nyl_core::data::provenance::Catalog;
use nyl_core::expansion::Entry;
use nyl_core::project::objects::ChartSource;
use nyl_core::project::objects::{self, DocKind, Place};
use nyl_core::project::template;
use nyl_core::values::targets;

#[derive(Clone, Debug)]
pub struct Request {
    pub dir: PathBuf,
    /// Only the apps of this DeploymentTarget (or Cluster), its layout apps included.
    pub target: Option<String>,
    /// Render every app with Helm (`--no-render` turns it off).
    pub render: bool,
    /// Parallelism and cache of the renders; its paths and target are set per app.
    pub engine: render::Request,
}

/// What `nyl validate` found.
#[derive(Debug, Default, serde::Serialize)]
pub struct Report {
    pub valid: bool,
    pub errors: usize,
    pub warnings: usize,
    /// Objects per kind.
    pub objects: BTreeMap<String, usize>,
    pub targets: usize,
    pub apps: usize,
    pub issues: Vec<Issue>,
}

impl Report {
    /// Counts and orders the issues; `strict` makes warnings count against validity.
    fn finish(mut self, strict: bool) -> Report {
        self.issues.sort_by(|a, b| {
            (&a.file, a.line, a.code, &a.message).cmp(&(&b.file, b.line, b.code, &b.message))
        });
        self.errors = self.issues.iter().filter(|i| i.is_error()).count();
        self.warnings = self.issues.len() - self.errors;
        self.valid = self.errors == 0 && (!strict || self.warnings == 0);
        self
    }
}

/// Gathers issues, dropping repeats (the same problem seen again by a later render).
#[derive(Default)]
struct Issues {
    seen: HashSet<(String, Option<String>, Option<u32>, String)>,
    list: Vec<Issue>,
}

impl Issues {
    fn add(&mut self, d: &Diagnostic, catalog: &Catalog, target: Option<&str>) {
        self.push(d.resolve(catalog, target));
    }

    fn push(&mut self, issue: Issue) {
        let key = (
            issue.code.name().to_string(),
            issue.file.clone(),
            issue.line,
            issue.message.clone(),
        );
        if self.seen.insert(key) {
            self.list.push(issue);
        }
    }

    fn extend(&mut self, diags: &[Diagnostic], catalog: &Catalog, target: Option<&str>) {
        for d in diags {
            self.add(d, catalog, target);
        }
    }
}

/// Validates; `Err` is a usage problem (the directory does not exist).
pub fn validate(req: &Request, strict: bool) -> Result<Report, Diagnostic> {
    if !req.dir.is_dir() {
        return Err(Diagnostic::new(
            Code::PathNotFound,
            format!("{} is not a directory", req.dir.display()),
        ));
    }
    let mut issues = Issues::default();
    let mut report = Report::default();
    let root = match project::find_root(&req.dir) {
        Ok(root) => root,
        Err(d) => {
            issues.add(&d, &Catalog::default(), None);
            return Ok(Report {
                issues: issues.list,
                ..report
            }
            .finish(strict));
        }
    };
    let loaded = match Loaded::load(root.clone(), None) {
        Ok(loaded) => loaded,
        Err((catalog, diags)) => {
            issues.extend(&diags, &catalog, None);
            return Ok(Report {
                issues: issues.list,
                ..report
            }
            .finish(strict));
        }
    };
    // The run's own checks read every file into a copy of its own; app renders share the
    // project as loaded.
    let mut project = loaded.project();
    issues.extend(&loaded.diagnostics, &project.catalog, None);
    let run = render::Run::new(loaded);
    let tree = Tree::scan(&project, &req.dir);
    report.objects = count_target_objects(&project);
    // A templated app file is checked as each target renders it: Nyl's ApplicationGroups, which
    // nyl does not read, may deploy it to any of them.
    let mut contexts: Vec<template::Context> = project
        .targets
        .iter()
        .filter(|t| req.target.as_ref().is_none_or(|n| *n == t.name))
        .filter_map(|t| targets::select(&t.name, &project.clusters, &project.targets).ok())
        .map(|t| t.template_context())
        .collect();
    if contexts.is_empty() {
        contexts.push(template::Context::default());
    }
    let app_files = check_objects(&mut project, &tree, &contexts, &mut report, &mut issues);
    check_contracts(&mut project, &tree, &mut issues);

    let inputs = pipeline::Request {
        root: Some(root.clone()),
        ..Default::default()
    };
    let session = Session::start(&run.loaded, &inputs).0;
    let layout_apps = session.layout_apps();
    // The run's own problems and the apps to check, in order: gathered first, so that the apps
    // are checked in parallel and every problem still arrives in the order of `-j 1`.
    let mut steps = Vec::new();
    if let Some(name) = &req.target {
        // The target's apps, as render-tree renders them: its spec.apps and its layout apps.
        let selected = targets::select(name, &project.clusters, &project.targets);
        report.targets = usize::from(selected.is_ok());
        match selected {
            Err(d) => steps.push(Step::Own(vec![d.resolve(&project.catalog, Some(name))])),
            Ok(_) => {
                let found =
                    crate::apps::target_apps::target_apps(&session, &tree, &layout_apps, name);
                let catalog = &session.project.catalog;
                let own = found
                    .unmatched
                    .iter()
                    .map(|d| d.resolve(catalog, Some(name)));
                steps.push(Step::Own(own.collect()));
                steps.extend(
                    found
                        .apps
                        .into_iter()
                        .map(|a| Step::App(Some(name.clone()), a)),
                );
            }
        }
    } else {
        let mut covered: BTreeSet<String> = BTreeSet::new();
        report.targets = project.targets.len();
        for target in project.targets.iter() {
            let name = Some(target.name.as_str());
            if let Err(d) = targets::select(&target.name, &project.clusters, &project.targets) {
                steps.push(Step::Own(vec![d.resolve(&project.catalog, name)]));
                continue;
            }
            let (matched, unmatched) = crate::apps::target_apps::glob_apps(target, &tree);
            let own = unmatched.iter().map(|d| d.resolve(&project.catalog, name));
            steps.push(Step::Own(own.collect()));
            let app = |a: &String| Step::App(Some(target.name.clone()), a.clone());
            steps.extend(matched.iter().map(app));
            covered.extend(matched);
        }
        // Layout apps name their own target (or none); they are checked once each.
        steps.extend(layout_apps.iter().map(|a| Step::App(None, a.dir.clone())));
        let mut unassigned = Vec::new();
        for (file, loc) in &app_files {
            let parent = file.rsplit_once('/').map_or("", |(dir, _)| dir);
            if !covered.contains(file) && !covered.contains(parent) {
                let d = Diagnostic::new(
                    Code::AppUnassigned,
                    "no DeploymentTarget's spec.apps names this file or its directory, so no target deploys it",
                )
                .at(*loc);
                unassigned.push(d.resolve(&project.catalog, None));
            }
        }
        steps.push(Step::Own(unassigned));
    }
    let work: Vec<(Option<&str>, &str)> = steps
        .iter()
        .filter_map(|s| match s {
            Step::App(target, app) => Some((target.as_deref(), app.as_str())),
            Step::Own(_) => None,
        })
        .collect();
    req.engine.progress.add_apps(work.len());
    // Apps are checked in parallel, sharing the cache; a lone app parallelises its own releases.
    let at_once = crate::process::at_once(req.engine.jobs, work.len());
    let engine = render::Request {
        jobs: if work.len() > 1 {
            Some(1)
        } else {
            req.engine.jobs
        },
        apps_at_once: at_once,
        ..req.engine.clone()
    };
    let mut checked = render::parallel(&work, at_once, |(target, app)| {
        check_app(req, &engine, &run, *target, app)
    })
    .into_iter();
    run.finish();
    let mut imports = ImportUse::default();
    for step in &steps {
        match step {
            Step::Own(own) => own.iter().for_each(|i| issues.push(i.clone())),
            Step::App(target, app) => match checked.next().flatten() {
                Some(app) => {
                    issues.extend(&app.diagnostics, &app.catalog, target.as_deref());
                    imports.merge(app.imports);
                }
                None => issues.add(
                    &Diagnostic::new(
                        Code::IoError,
                        format!("internal error: the check of {app} failed"),
                    ),
                    &project.catalog,
                    target.as_deref(),
                ),
            },
        }
    }
    imports.report(&mut issues);
    report.apps = work.len();
    report.issues = issues.list;
    Ok(report.finish(strict))
}

/// A step of a validation, in the order of its report: problems of the run itself, or an app to
/// check for a target (none for a layout app that names none).
enum Step {
    Own(Vec<Issue>),
    App(Option<String>, String),
}

/// What checking one app found.
struct Checked {
    diagnostics: Vec<Diagnostic>,
    catalog: Arc<Catalog>,
    imports: ImportUse,
}

/// The values (and, unless `--no-render`, the render with `engine`) of one app for one target,
/// within the run.
fn check_app(
    req: &Request,
    engine: &render::Request,
    run: &render::Run,
    target: Option<&str>,
    app: &str,
) -> Checked {
    let root = &run.loaded.root;
    let inputs = pipeline::Request {
        paths: vec![root.join(app)],
        root: Some(root.clone()),
        target: target.map(str::to_string),
        ..req.engine.inputs.clone()
    };
    let mut imports = ImportUse::default();
    let (mut session, entries) = Session::start(&run.loaded, &inputs);
    imports.record(&session, &entries);
    let (diagnostics, catalog) = if req.render {
        let request = render::Request {
            inputs,
            gate: render::Gate::AppInputs,
            ..engine.clone()
        };
        let outcome = render::render_in(run, &request);
        (outcome.diagnostics, outcome.catalog)
    } else {
        let releases = entries.iter().filter_map(|e| match e {
            Entry::Release(r) => Some(&r.values),
            Entry::Manifest(_) => None,
        });
        let mut problems = Vec::new();
        pipeline::check_releases(releases, &mut problems);
        session.diagnostics.extend(problems);
        (
            session.take_diagnostics(),
            Arc::new(session.project.catalog),
        )
    };
    req.engine.progress.app_done();
    Checked {
        diagnostics,
        catalog,
        imports,
    }
}

/// How each optional import of each component fared across every target that deploys it.
#[derive(Default)]
struct ImportUse {
    /// (component, import) -> how it fared.
    seen: BTreeMap<(String, String), ImportSeen>,
}

/// One optional import: applied somewhere, absent somewhere, its `from`, and where the contract
/// declares it (file, line).
type ImportSeen = (bool, bool, String, Option<(String, u32)>);

impl ImportUse {
    fn record(&mut self, session: &Session, entries: &[Entry]) {
        for entry in entries {
            let Entry::Release(release) = entry else {
                continue;
            };
            let v = &release.values;
            if v.target.is_none() {
                continue; // Without a target every import is absent; nothing to learn.
            }
            for import in v.imports.iter().filter(|i| !i.required) {
                let key = (v.chart.clone(), import.name.clone());
                let where_ = (|| {
                    let ChartSource::Local(dir) = &release.chart else {
                        return None;
                    };
                    let contract = session.project.contract_loaded(dir)?;
                    let loc = contract.imports.iter().find(|i| i.name == import.name)?.loc;
                    let file = session.project.catalog.file(loc.file).to_string();
                    Some((file, loc.line))
                })();
                let seen = self
                    .seen
                    .entry(key)
                    .or_insert_with(|| (false, false, import.from.clone(), where_));
                match import.status {
                    nyl_core::values::components::ImportStatus::Applied => seen.0 = true,
                    nyl_core::values::components::ImportStatus::Absent => seen.1 = true,
                    _ => {}
                }
            }
        }
    }

    /// Adds what another app's check found, after what this one holds (the first `from` and
    /// place seen stay).
    fn merge(&mut self, other: ImportUse) {
        for (key, (applied, absent, from, at)) in other.seen {
            let seen = self.seen.entry(key).or_insert((false, false, from, at));
            seen.0 |= applied;
            seen.1 |= absent;
        }
    }

    /// `import_never_applies` for every optional import absent wherever its component is deployed.
    fn report(&self, issues: &mut Issues) {
        for ((component, name), (applied, absent, from, at)) in &self.seen {
            if *applied || !*absent {
                continue;
            }
            let mut catalog = Catalog::default();
            let mut d = Diagnostic::new(
                Code::ImportNeverApplies,
                format!(
                    "optional import {name:?} of component {component}: {from} is absent in every \
                     target that deploys it, so it never applies; check the pointer and the target \
                     values"
                ),
            )
            .object(format!("component {component}"));
            if let Some((file, line)) = at {
                let file = catalog.add_file(file.clone());
                d = d.at(nyl_core::data::provenance::Loc::new(file, *line));
            }
            issues.add(&d, &catalog, None);
        }
    }
}

fn count_target_objects(project: &Project) -> BTreeMap<String, usize> {
    let mut objects = BTreeMap::new();
    for (kind, n) in [
        ("Cluster", project.clusters.len()),
        ("DeploymentTarget", project.targets.len()),
    ] {
        if n > 0 {
            objects.insert(kind.to_string(), n);
        }
    }
    objects
}

/// Checks every nyl object of the tree's YAML files; returns the files holding invocations or
/// HelmCharts (the app files) with where they start.
fn check_objects(
    project: &mut Project,
    tree: &Tree,
    contexts: &[template::Context],
    report: &mut Report,
    issues: &mut Issues,
) -> Vec<(String, nyl_core::data::provenance::Loc)> {
    let mut app_files = Vec::new();
    for path in &tree.yaml_files {
        let renders: Vec<Option<&template::Context>> = if project.is_template(path) {
            contexts.iter().map(Some).collect()
        } else {
            vec![None]
        };
        for (i, context) in renders.into_iter().enumerate() {
            // A templated file's objects are counted once, as its first render holds them.
            let first = i == 0;
            // Nothing of a file is kept past its check, so each has the run's whole budget.
            project.look_at(path, context, |project, file, docs, problems| {
                let mut problems = problems;
                let mut is_app = false;
                for doc in docs {
                    let node = &doc.node;
                    let kind = match objects::classify(node, Place::App, &project.config.aliases) {
                        Ok(kind) => kind,
                        // Any YAML of the repository is scanned here; a document that is no object
                        // matters where an app holds it, and the app's own check reports it there.
                        Err(d) if d.code == Code::NotAnObject => continue,
                        Err(d) => {
                            problems.push(d);
                            continue;
                        }
                    };
                    if project.templating == objects::Templating::Unset && kind != DocKind::Cluster
                    {
                        problems.extend(objects::template_expressions(node));
                    }
                    let object = project.catalog.add_object(objects::object_ref(node));
                    let (label, result) = match kind {
                        // Control resources are classified so only in the targets search paths.
                        DocKind::Manifest | DocKind::NylControl => continue,
                        DocKind::Cluster => ("Cluster", objects::cluster(node, object).map(drop)),
                        DocKind::DeploymentTarget => (
                            "DeploymentTarget",
                            objects::deployment_target(node, object).map(drop),
                        ),
                        DocKind::Release => {
                            is_app = true;
                            ("Release", objects::release(node).map(drop))
                        }
                        DocKind::HelmChart => {
                            is_app = true;
                            ("HelmChart", objects::helm_chart(node, object).map(drop))
                        }
                        DocKind::Invocation => {
                            is_app = true;
                            let checked = objects::invocation(node, object).and_then(|inv| {
                                project
                                    .resolve_kind(&inv.kind, inv.kind_loc)
                                    .map(drop)
                                    .map_err(|d| vec![d.object(inv.display())])
                            });
                            ("Invocation", checked)
                        }
                    };
                    if first {
                        *report.objects.entry(label.to_string()).or_default() += 1;
                    }
                    if let Err(e) = result {
                        problems.extend(e);
                    }
                }
                issues.extend(&problems, &project.catalog, None);
                if is_app && first {
                    app_files.push((
                        project.display_path(path),
                        nyl_core::data::provenance::Loc::new(file, 0),
                    ));
                }
            });
        }
    }
    app_files
}

/// Every contract of every chart directory, used or not.
fn check_contracts(project: &mut Project, tree: &Tree, issues: &mut Issues) {
    let search: Vec<PathBuf> = project
        .config
        .components_search_paths
        .iter()
        .map(|p| project.config_dir.join(p))
        .collect();
    // A chart without a contract is asked too: a misnamed one is an error.
    for chart in &tree.charts {
        let name = search
            .iter()
            .find_map(|s| chart.strip_prefix(s).ok())
            .map_or_else(
                || project.display_path(chart),
                |p| p.to_string_lossy().replace('\\', "/"),
            );
        if let Err(crate::project::Refused::Problems(problems)) = project.contract(&name, chart) {
            issues.extend(&problems, &project.catalog, None);
        }
    }
}

/// The report as text: one line per issue, then the summary line.
pub fn to_text(report: &Report) -> String {
    let issues: String = report
        .issues
        .iter()
        .map(|i| format!("{}\n", i.text()))
        .collect();
    issues + &summary(report)
}

/// `OK: ...` or `FAILED: ...` with the counts.
fn summary(report: &Report) -> String {
    let objects: Vec<String> = report
        .objects
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    format!(
        "{}: {}; {} targets, {} apps; {} errors, {} warnings\n",
        if report.valid { "OK" } else { "FAILED" },
        if objects.is_empty() {
            "no objects".to_string()
        } else {
            objects.join(", ")
        },
        report.targets,
        report.apps,
        report.errors,
        report.warnings
    )
}

/// GitHub Actions workflow commands, one annotation per issue, then the summary.
pub fn to_github(report: &Report) -> String {
    let escape = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    let property = |s: &str| escape(s).replace(':', "%3A").replace(',', "%2C");
    let mut out = String::new();
    for issue in &report.issues {
        let level = if issue.is_error() { "error" } else { "warning" };
        let mut props = vec![format!("title={}", property(issue.code.name()))];
        if let Some(file) = &issue.file {
            props.push(format!("file={}", property(file)));
            if let Some(line) = issue.line {
                props.push(format!("line={line}"));
            }
        }
        out.push_str(&format!(
            "::{level} {}::{}\n",
            props.join(","),
            escape(&issue.text())
        ));
    }
    out + &summary(report)
}

pub fn to_json(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}
