//! `nyl render-tree`: whole targets written as plain Kubernetes trees that any GitOps engine syncs
//! (Flux's `Kustomization`, Argo CD directory apps, `kubectl kustomize`).
//!
//! Layout under the output directory (per target with `--all-targets`):
//! - one directory per app at the app's path relative to the project root (`apps/db.yaml` becomes
//!   `apps/db/`, `apps/web/` stays `apps/web/`), holding one file per resource named
//!   `<kind>_<namespace>_<name>.yaml` (lowercase; `_` for cluster-scoped) and a
//!   `kustomization.yaml` listing them;
//! - per target, a `kustomization.yaml` listing its app directories (with `--all-targets`, each
//!   target's directory is what a Flux Kustomization points at; there is no top-level one);
//! - `.nyl/index.json`: every file written, with its sha256 and the app and target it came from.
//!
//! A rerun writes byte-identical files, leaves unchanged files untouched, and removes only files
//! the previous index lists; files it does not know are never touched. Nothing is written unless
//! every app rendered.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::apps::pipeline::{self, Session};
use crate::apps::target_apps::target_apps;
use crate::expansion::render;
use crate::project::scan;
use nyl_core::data::diagnostics::{Code, Diagnostic, Severity};
use nyl_core::data::provenance::{Catalog, FileId};
use nyl_core::project::objects;

pub struct Request {
    pub targets: Vec<String>,
    pub all_targets: bool,
    pub output: PathBuf,
    pub check: bool,
    pub flux_escape: bool,
    /// Write empty targets and apps (refused by default: the engine would prune them).
    pub allow_empty: bool,
    pub engine: render::Request,
}

/// One file of the tree: its path relative to the output directory and its content (borrowed
/// from the render where it is a document as nyl prints it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File<'a> {
    pub path: String,
    pub content: Cow<'a, str>,
    pub app: String,
    pub target: String,
}

/// What a run did or, with `--check`, would do.
#[derive(Debug, Default)]
pub struct Outcome {
    pub written: Vec<String>,
    pub unchanged: usize,
    pub removed: Vec<String>,
    /// With `--check`: the files that differ from what would be written.
    pub differ: Vec<String>,
    /// Each with the catalog it points into, shared by the diagnostics of one app's render.
    pub diagnostics: Vec<(Diagnostic, Arc<Catalog>)>,
}

const INDEX: &str = ".nyl/index.json";

pub fn run(req: &Request) -> Outcome {
    let mut outcome = Outcome::default();
    let run = match render::Run::of_request(&req.engine, None) {
        Ok(run) => run,
        Err((catalog, diags)) => {
            outcome
                .diagnostics
                .extend(diags.into_iter().map(|d| (d, Arc::clone(&catalog))));
            return outcome;
        }
    };
    let (session, _) = Session::start(
        &run.loaded,
        &pipeline::Request {
            paths: Vec::new(),
            ..req.engine.inputs.clone()
        },
    );
    // The run's own problems, against the session's catalog; apps bring their own. Loading the
    // project comes first: `nyl.toml`'s problems stop the run, other targets' files warn.
    let mut own: Vec<Diagnostic> = session.run_diagnostics.clone();
    let empty = |d: Diagnostic| allowed_empty(d, req.allow_empty);
    let scan = scan::Tree::scan(&session.project, &session.project.root);
    let layout_apps = session.layout_apps();
    let mut planned: Vec<(String, Vec<String>)> = Vec::new();
    if req.all_targets {
        // Every DeploymentTarget, and every Cluster that layouts deploy to.
        for name in session.project.target_names() {
            let found = target_apps(&session, &scan, &layout_apps, &name);
            let is_dt = session.project.targets.iter().any(|t| t.name == name);
            if !is_dt && found.apps.is_empty() {
                continue;
            }
            found.unmatched.into_iter().for_each(|d| own.push(empty(d)));
            planned.push((name, found.apps.into_iter().collect()));
        }
        if planned.iter().all(|(_, apps)| apps.is_empty()) {
            own.push(empty(Diagnostic::new(
                Code::NothingToDeploy,
                "--all-targets found no target with apps: no DeploymentTarget's spec.apps matches \
                 anything and no layout app names a target; the tree would be empty",
            )));
        }
        for (name, apps) in &planned {
            if apps.is_empty() {
                own.push(nothing_to_deploy(name, req.allow_empty));
            }
        }
    } else {
        for name in &req.targets {
            if let Some(apps) = plan(
                &session,
                &scan,
                &layout_apps,
                name,
                req.allow_empty,
                &mut own,
            ) {
                planned.push((name.clone(), apps));
            }
        }
    }
    req.engine
        .progress
        .add_apps(planned.iter().map(|(_, apps)| apps.len()).sum());
    let stage = Stage::new(&req.output, req.check);
    let mut files = Vec::new();
    for (target, apps) in &planned {
        let prefix = if req.all_targets {
            format!("{target}/")
        } else {
            String::new()
        };
        let mut app_dirs = Vec::new();
        let engine = render::Request {
            allow_empty: req.allow_empty,
            ..req.engine.clone()
        };
        let mut dirs: BTreeMap<String, &String> = BTreeMap::new();
        for app in apps {
            if let Some(other) = dirs.insert(app_dir(app), app) {
                own.push(Diagnostic::new(
                    Code::DuplicateObject,
                    format!(
                        "apps {other} and {app} would both be written to {}; rename one",
                        app_dir(app)
                    ),
                ));
            }
        }
        // Each app's files are compared and staged as soon as it is rendered, so the tree is
        // never held whole; only the objects' keys are kept, for the check across apps.
        let done = render_apps_with(&run, &engine, target, apps, |app, r| {
            let keys = object_keys(&r);
            if r.diagnostics.iter().any(Diagnostic::is_error) {
                let catalog = r.catalog;
                let problems = r
                    .diagnostics
                    .into_iter()
                    .map(|d| (named(d, app), Arc::clone(&catalog)));
                return (keys, Err(problems.collect::<Vec<_>>()));
            }
            let dir = format!("{prefix}{}", app_dir(app));
            let staged = app_files(&dir, app, target, &r, req.flux_escape)
                .map(|files| files.into_iter().map(|f| stage.file(f)).collect::<Vec<_>>())
                .map_err(|problems| {
                    problems
                        .into_iter()
                        .map(|d| (d, Arc::clone(&r.catalog)))
                        .collect()
                });
            (keys, staged)
        });
        let mut keys = Vec::new();
        for (app, done) in apps.iter().zip(done) {
            let Some((app_keys, staged)) = done else {
                own.push(Diagnostic::new(
                    Code::IoError,
                    format!("internal error: the render of {app} failed"),
                ));
                continue;
            };
            keys.push((app.as_str(), app_keys));
            match staged {
                Ok(staged) => {
                    files.extend(staged);
                    app_dirs.push(format!("{prefix}{}", app_dir(app)));
                }
                Err(problems) => outcome.diagnostics.extend(problems),
            }
        }
        own.extend(duplicates_across(keys));
        // No top-level kustomization: with apps shared between targets, kustomize would refuse
        // it (`already registered id`). Each target's directory is what the engine points at.
        files.push(
            stage.file(File {
                path: format!("{prefix}kustomization.yaml"),
                content: kustomization(
                    app_dirs
                        .iter()
                        .map(|d| d.strip_prefix(&prefix).unwrap_or(d).to_string()),
                )
                .into(),
                app: String::new(),
                target: target.clone(),
            }),
        );
    }
    let catalog = Arc::new(session.project.catalog);
    outcome
        .diagnostics
        .extend(own.into_iter().map(|d| (d, Arc::clone(&catalog))));
    once_each(&mut outcome.diagnostics);
    run.finish();
    // Fail closed: a tree with an app missing would make the GitOps engine prune it. What was
    // staged goes, and the output directory is as it was.
    if outcome.diagnostics.iter().any(|(d, _)| d.is_error()) {
        stage.discard();
        return outcome;
    }
    sync(&stage, files, &mut outcome);
    outcome
}

/// What identifies each object of a render to the cluster, each once.
fn object_keys(outcome: &render::Outcome) -> BTreeSet<objects::ObjectKey> {
    outcome
        .manifests
        .iter()
        .filter_map(|m| objects::object_key(&m.head))
        .collect()
}

/// `duplicate_object` for an object that two apps of one target render: in one stream, or one
/// tree, one would be applied over the other (or the engine refuse both). Each app's own repeats
/// it reports itself. `apps`: each app and its objects' keys ([`object_keys`]).
fn duplicates_across<'a>(
    apps: impl IntoIterator<Item = (&'a str, BTreeSet<objects::ObjectKey>)>,
) -> Vec<Diagnostic> {
    let mut seen = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (app, keys) in apps {
        for key in keys {
            if let Some(first) = seen.insert(key.clone(), app) {
                let how = format!("is rendered by apps {first} and {app}");
                out.push(objects::duplicate_object(&key, &how));
            }
        }
    }
    out
}

/// [`duplicates_across`] the rendered apps.
pub(crate) fn duplicates_across_renders<'a>(
    apps: impl IntoIterator<Item = (&'a str, &'a render::Outcome)>,
) -> Vec<Diagnostic> {
    duplicates_across(apps.into_iter().map(|(app, o)| (app, object_keys(o))))
}

/// `--allow-empty` turns every "nothing here" error into a warning.
fn allowed_empty(d: Diagnostic, allow_empty: bool) -> Diagnostic {
    Diagnostic {
        severity: if allow_empty {
            Severity::Warning
        } else {
            d.severity
        },
        ..d
    }
}

/// A problem of a whole app (`empty_render`) says which app it is.
pub(crate) fn named(d: Diagnostic, app: &str) -> Diagnostic {
    match (d.loc, &d.object) {
        (None, None) => d.object(format!("app {app}")),
        _ => d,
    }
}

/// Each problem once: every app's render reports the project's warnings again.
pub(crate) fn once_each(diagnostics: &mut Vec<(Diagnostic, Arc<Catalog>)>) {
    let mut seen = std::collections::HashSet::new();
    diagnostics.retain(|(d, catalog)| seen.insert(d.render(catalog)));
}

/// The apps target `name` deploys, in a stable order (sorted by path), or `None` when the target
/// cannot be used. Its problems go to `own`: those of its own definition (errors, even where
/// loading the project demoted them), `apps_glob_unmatched`, and `nothing_to_deploy` when it
/// deploys no app (warnings with `allow_empty`).
pub(crate) fn plan(
    session: &Session,
    scan: &scan::Tree,
    layout_apps: &[crate::apps::LayoutApp],
    name: &str,
    allow_empty: bool,
    own: &mut Vec<Diagnostic>,
) -> Option<Vec<String>> {
    if let Err(problems) = session.select(name) {
        // Its own file's problems, demoted while no target was selected, are errors now.
        for p in problems {
            let same = |d: &Diagnostic| (d.code, d.loc, &d.message) == (p.code, p.loc, &p.message);
            own.retain(|d| !same(d));
            own.push(p);
        }
        return None;
    }
    let found = target_apps(session, scan, layout_apps, name);
    own.extend(
        found
            .unmatched
            .into_iter()
            .map(|d| allowed_empty(d, allow_empty)),
    );
    if found.apps.is_empty() {
        own.push(nothing_to_deploy(name, allow_empty));
    }
    Some(found.apps.into_iter().collect())
}

fn nothing_to_deploy(name: &str, allow_empty: bool) -> Diagnostic {
    let d = Diagnostic::new(
        Code::NothingToDeploy,
        format!(
            "target {name:?} deploys no app: its spec.apps match nothing and no layout app names \
             it; the GitOps engine would prune everything it deployed"
        ),
    );
    allowed_empty(d, allow_empty)
}

/// The apps, each rendered for `target`, in their order. Apps render in parallel, sharing the
/// cache; a lone app parallelises its own releases. Each app done counts in the progress.
pub(crate) fn render_apps(
    run: &render::Run,
    engine: &render::Request,
    target: &str,
    apps: &[String],
) -> Vec<Option<render::Outcome>> {
    render_apps_with(run, engine, target, apps, |_, outcome| outcome)
}

/// [`render_apps`], each outcome turned by `then` on the thread that rendered it, as soon as it
/// is done: a caller that keeps less than the whole render holds only the apps in flight.
fn render_apps_with<R: Send>(
    run: &render::Run,
    engine: &render::Request,
    target: &str,
    apps: &[String],
    then: impl Fn(&str, render::Outcome) -> R + Sync,
) -> Vec<Option<R>> {
    let at_once = crate::process::at_once(engine.jobs, apps.len());
    let each = render::Request {
        jobs: if apps.len() > 1 { Some(1) } else { engine.jobs },
        apps_at_once: at_once,
        ..engine.clone()
    };
    render::parallel(apps, at_once, |app| {
        let outcome = then(app, render_app(run, &each, target, app));
        engine.progress.app_done();
        outcome
    })
}

/// One app rendered for one target within the run; `engine.allow_empty` decides whether it may
/// be empty.
pub fn render_app(
    run: &render::Run,
    engine: &render::Request,
    target: &str,
    app: &str,
) -> render::Outcome {
    let root = &run.loaded.root;
    let request = render::Request {
        inputs: pipeline::Request {
            paths: vec![root.join(app)],
            root: Some(root.clone()),
            target: Some(target.to_string()),
            ..engine.inputs.clone()
        },
        ..engine.clone()
    };
    render::render_in(run, &request)
}

/// `apps/db.yaml` -> `apps/db`, `apps/web` -> `apps/web`.
fn app_dir(app: &str) -> String {
    app.strip_suffix(".yaml")
        .or_else(|| app.strip_suffix(".yml"))
        .unwrap_or(app)
        .to_string()
}

fn app_files<'a>(
    dir: &str,
    app: &str,
    target: &str,
    rendered: &'a render::Outcome,
    flux_escape: bool,
) -> Result<Vec<File<'a>>, Vec<Diagnostic>> {
    let mut by_name: BTreeMap<String, Cow<'a, str>> = BTreeMap::new();
    for m in &rendered.manifests {
        let head = &m.head;
        let kind = head.kind.as_deref().unwrap_or("unknown");
        let namespace = head.namespace.as_deref().unwrap_or("_");
        let name = head.name.as_deref().unwrap_or("unnamed");
        let base = sanitize(&format!("{kind}_{namespace}_{name}"));
        let mut file = format!("{base}.yaml");
        let mut n = 2;
        while by_name.contains_key(&file) {
            file = format!("{base}-{n}.yaml");
            n += 1;
        }
        // Chart output is marked so Flux leaves it as Helm rendered it; manifests written in app
        // files keep their `${VAR}`s, which is where Flux's substitution is meant to apply.
        // In memory: render-tree's renders keep no output in files (see `Keep`).
        let Some(text) = m.text() else {
            return Err(vec![Diagnostic::new(
                Code::IoError,
                "internal error: a document of the render was not held in memory",
            )
            .at(m.loc())]);
        };
        let text = if flux_escape && m.from_chart() && text.contains('$') {
            Cow::Owned(substitution_disabled(&text, &*m.node(&rendered.limits)?))
        } else {
            text
        };
        by_name.insert(file, text);
    }
    let listed = kustomization(by_name.keys().cloned());
    let mut files: Vec<File> = by_name
        .into_iter()
        .map(|(file, content)| File {
            path: format!("{dir}/{file}"),
            content,
            app: app.to_string(),
            target: target.to_string(),
        })
        .collect();
    files.push(File {
        path: format!("{dir}/kustomization.yaml"),
        content: listed.into(),
        app: app.to_string(),
        target: target.to_string(),
    });
    Ok(files)
}

/// The label and annotation key with which Flux's postBuild substitution skips an object.
pub const FLUX_SUBSTITUTE: &str = "kustomize.toolkit.fluxcd.io/substitute";

/// A manifest annotated `kustomize.toolkit.fluxcd.io/substitute: disabled`. Flux then skips it
/// whole, so every `$` arrives as Helm wrote it, and a consumer that never substitutes (Argo CD,
/// `kubectl kustomize`) sees the same; escaping `$` instead would be right for only one of them.
/// The annotation is added as one text line where the layout allows, so the rest stays byte for
/// byte; the result is parsed back and compared, and written anew from its value otherwise.
fn substitution_disabled(text: &str, node: &nyl_core::data::value::Node) -> String {
    let mut want = node.to_json();
    let Some(meta) = want.get_mut("metadata").and_then(|m| m.as_object_mut()) else {
        return text.to_string();
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| serde_json::json!({}));
    if annotations.is_null() {
        *annotations = serde_json::json!({});
    }
    let Some(annotations) = annotations.as_object_mut() else {
        return text.to_string();
    };
    annotations.insert(FLUX_SUBSTITUTE.into(), "disabled".into());
    let parses_to_want = |text: &str| {
        // Read as the document was (Helm's output, leniently): a warning it had is no reason to
        // write it anew.
        let mode = nyl_core::data::yaml::Mode::Lenient;
        let parsed = nyl_core::data::yaml::parse_stream_from(
            text,
            FileId(0),
            1,
            &nyl_core::data::yaml::Limits::default(),
            mode,
        );
        !parsed
            .diagnostics
            .iter()
            .any(nyl_core::data::diagnostics::Diagnostic::is_error)
            && parsed.docs.len() == 1
            && parsed.docs[0].to_json() == want
    };
    if let Some(text) = annotated_text(text).filter(|t| parses_to_want(t)) {
        return text;
    }
    let node = nyl_core::data::value::Node::from_json(&want, node.prov);
    nyl_core::data::yaml::to_yaml(&node, &|_| None)
}

/// `text` with the disabling annotation inserted as a line under a block-style top-level
/// `metadata:` (into its block `annotations:`, or as a new one); `None` for other layouts.
fn annotated_text(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let indent = |l: &str| l.len() - l.trim_start_matches(' ').len();
    let content = |l: &str| !l.trim().is_empty() && !l.trim_start().starts_with('#');
    let meta = lines.iter().position(|l| l.trim_end() == "metadata:")?;
    let end = lines[meta + 1..]
        .iter()
        .position(|l| content(l) && indent(l) == 0)
        .map_or(lines.len(), |i| meta + 1 + i);
    let block = &lines[meta + 1..end];
    let pad = indent(block.iter().find(|l| content(l))?);
    let key = format!("{}annotations:", " ".repeat(pad));
    let (at, line) = match block.iter().position(|l| l.starts_with(&key)) {
        Some(i) if block[i].trim_end() == key => {
            let inner = indent(block[i + 1..].iter().find(|l| content(l))?);
            (
                meta + 2 + i,
                format!("{}{FLUX_SUBSTITUTE}: disabled\n", " ".repeat(inner)),
            )
        }
        Some(_) => return None,
        None => (
            meta + 1,
            format!(
                "{key}\n{}{FLUX_SUBSTITUTE}: disabled\n",
                " ".repeat(2 * pad)
            ),
        ),
    };
    if pad == 0 {
        return None;
    }
    let mut out: String = lines[..at].concat();
    out.push_str(&line);
    out.push_str(&lines[at..].concat());
    Some(out)
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

fn kustomization(resources: impl Iterator<Item = String>) -> String {
    let mut out = String::from(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n",
    );
    let mut any = false;
    for r in resources {
        any = true;
        out.push_str(&format!("  - {r}\n"));
    }
    if !any {
        out = out.replace("resources:\n", "resources: []\n");
    }
    out
}

/// Every symbolic link inside `out` on the way to the files `rel` (the files included), as a
/// problem: the output directory may be a checkout anyone could commit a link to, and writing,
/// reading or removing through it would reach outside. Where there is one, nothing is touched.
fn links<'a>(out: &Path, rel: impl IntoIterator<Item = &'a str>) -> Vec<Diagnostic> {
    let mut links = BTreeSet::new();
    for rel in rel {
        let mut path = out.to_path_buf();
        for part in rel.split('/') {
            path.push(part);
            match fs::symlink_metadata(&path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    links.insert(path.clone());
                    break;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    links
        .iter()
        .map(|link| {
            Diagnostic::new(
                Code::NotRegularFile,
                format!(
                    "{}: a symbolic link inside the output directory, where nyl would write: nyl \
                     writes, reads and removes nothing through a link; remove it",
                    link.display()
                ),
            )
        })
        .collect()
}

fn sha(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A file of the tree as a run found it: its index entry, whether it differs from the file in
/// the output directory, and where its new content waits to be moved there.
struct Staged {
    path: String,
    sha256: String,
    app: String,
    target: String,
    differs: bool,
    /// The staged content, when it differs (not with `--check`).
    at: Option<PathBuf>,
}

/// Where a run keeps the files that differ until every app has rendered: `.nyl/stage-<pid>/`
/// inside the output directory (so moving them into place is a rename), made when first
/// needed. A failed run removes it, and every directory it made for it, and the output
/// directory is as it was. Problems of staging (links, write errors) are kept apart: a run that
/// fails for another reason would never have written, and does not report them.
struct Stage {
    out: PathBuf,
    check: bool,
    /// The staging directory once it was asked for; `None` inside when it could not be made.
    dir: std::sync::Mutex<Option<Option<StageDir>>>,
    problems: std::sync::Mutex<Vec<Diagnostic>>,
}

/// The staging directory, the directories made for it (outermost first), and how many files
/// it holds.
struct StageDir {
    path: PathBuf,
    made: Vec<PathBuf>,
    files: usize,
}

impl Stage {
    fn new(out: &Path, check: bool) -> Stage {
        Stage {
            out: out.to_path_buf(),
            check,
            dir: std::sync::Mutex::new(None),
            problems: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn problems(&self, found: impl IntoIterator<Item = Diagnostic>) {
        if let Ok(mut problems) = self.problems.lock() {
            problems.extend(found);
        }
    }

    /// Compares the file with the output directory's and, when it differs, stages it. Its
    /// content is not kept.
    fn file(&self, file: File) -> Staged {
        let mut staged = Staged {
            sha256: sha(&file.content),
            path: file.path,
            app: file.app,
            target: file.target,
            differs: true,
            at: None,
        };
        let found = links(&self.out, [staged.path.as_str()]);
        if !found.is_empty() {
            self.problems(found);
            return staged;
        }
        let path = self.out.join(&staged.path);
        staged.differs = fs::read(&path).ok().as_deref() != Some(file.content.as_bytes());
        if staged.differs && !self.check {
            staged.at = self.write(&file.content);
        }
        staged
    }

    /// Writes `content` to a new file of the staging directory.
    fn write(&self, content: &str) -> Option<PathBuf> {
        let mut dir = self.dir.lock().ok()?;
        if dir.is_none() {
            *dir = Some(self.make_dir());
        }
        let stage = dir.as_mut()?.as_mut()?;
        stage.files += 1;
        let path = stage.path.join(stage.files.to_string());
        match fs::write(&path, content) {
            Ok(()) => Some(path),
            Err(e) => {
                self.problems([Diagnostic::new(
                    Code::IoError,
                    format!("cannot write {}: {e}", path.display()),
                )]);
                None
            }
        }
    }

    fn make_dir(&self) -> Option<StageDir> {
        let found = links(&self.out, [INDEX]);
        if !found.is_empty() {
            self.problems(found);
            return None;
        }
        let stage = self
            .out
            .join(INDEX)
            .with_file_name(format!("stage-{}", std::process::id()));
        let mut made: Vec<PathBuf> = stage
            .ancestors()
            .take_while(|d| !d.exists())
            .map(Path::to_path_buf)
            .collect();
        made.reverse();
        match fs::create_dir_all(&stage) {
            Ok(()) => Some(StageDir {
                path: stage,
                made,
                files: 0,
            }),
            Err(e) => {
                self.problems([Diagnostic::new(
                    Code::IoError,
                    format!("cannot write {}: {e}", stage.display()),
                )]);
                None
            }
        }
    }

    /// Removes the staging directory and the directories made for it.
    fn discard(&self) {
        let Some(Some(Some(stage))) = self.dir.lock().ok().map(|mut d| d.take()) else {
            return;
        };
        let _ = fs::remove_dir_all(&stage.path);
        for dir in stage.made.iter().rev() {
            let _ = fs::remove_dir(dir);
        }
    }
}

/// Brings the output directory to `files`: moves what changed into place, removes what the
/// previous index listed and is gone, touches nothing else. With `check`, only compares.
fn sync(stage: &Stage, mut files: Vec<Staged>, outcome: &mut Outcome) {
    let out = &stage.out;
    let staging_problems = |outcome: &mut Outcome| {
        let problems = stage.problems.lock().map(|mut p| std::mem::take(&mut *p));
        let mut problems = problems.unwrap_or_default();
        // Each link once, in path order, however many files lie beyond it.
        problems.sort_by(|a, b| a.message.cmp(&b.message));
        problems.dedup_by(|a, b| a.message == b.message);
        let failed = !problems.is_empty();
        outcome
            .diagnostics
            .extend(problems.into_iter().map(|d| (d, Arc::default())));
        failed
    };
    // The previous index is read only when no link leads to it.
    stage.problems(links(out, [INDEX]));
    if staging_problems(outcome) {
        stage.discard();
        return;
    }
    let previous: BTreeSet<String> = fs::read_to_string(out.join(INDEX))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["files"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|f| f["path"].as_str().map(str::to_string))
        // An index entry never reaches outside the output directory.
        .filter(|p| !p.split('/').any(|s| s == ".." || s.is_empty()))
        .collect();
    let index = serde_json::json!({
        "files": files.iter().map(|f| serde_json::json!({
            "path": f.path, "sha256": f.sha256, "app": f.app, "target": f.target,
        })).collect::<Vec<_>>()
    });
    let current: BTreeSet<String> = files.iter().map(|f| f.path.clone()).collect();
    let stale: Vec<&String> = previous.difference(&current).collect();
    stage.problems(links(out, stale.iter().map(|p| p.as_str())));
    files.push(stage.file(File {
        path: INDEX.to_string(),
        content: (serde_json::to_string_pretty(&index).unwrap_or_default() + "\n").into(),
        app: String::new(),
        target: String::new(),
    }));
    if staging_problems(outcome) {
        stage.discard();
        return;
    }
    for file in &files {
        if !file.differs {
            outcome.unchanged += 1;
            continue;
        }
        let Some(staged) = &file.at else {
            outcome.differ.push(file.path.clone());
            continue;
        };
        let path = out.join(&file.path);
        let moved = path
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| fs::rename(staged, &path));
        match moved {
            Ok(()) => outcome.written.push(file.path.clone()),
            Err(e) => outcome.diagnostics.push((
                Diagnostic::new(
                    Code::IoError,
                    format!("cannot write {}: {e}", path.display()),
                ),
                Arc::default(),
            )),
        }
    }
    stage.discard();
    for stale in stale {
        let path = out.join(stale);
        if !path.exists() {
            continue;
        }
        if stage.check {
            outcome.differ.push(stale.clone());
        } else if fs::remove_file(&path).is_ok() {
            outcome.removed.push(stale.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disabled(text: &str) -> String {
        let mode = nyl_core::data::yaml::Mode::Strict;
        let doc = nyl_core::data::yaml::parse_documents(
            text,
            FileId(0),
            &nyl_core::data::yaml::Limits::default(),
            mode,
        )
        .0
        .remove(0);
        substitution_disabled(text, &doc.node)
    }

    #[test]
    fn the_flux_annotation_is_one_inserted_line_where_the_layout_allows() {
        let with_annotations = "kind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    x: \"$y\"\ndata:\n  a: $$\n";
        assert_eq!(
            disabled(with_annotations),
            "kind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\n    x: \"$y\"\ndata:\n  a: $$\n"
        );
        let without = "kind: ConfigMap\nmetadata:\n    name: a\ndata: {a: $$}\n";
        assert_eq!(
            disabled(without),
            "kind: ConfigMap\nmetadata:\n    annotations:\n        kustomize.toolkit.fluxcd.io/substitute: disabled\n    name: a\ndata: {a: $$}\n"
        );
    }

    #[test]
    fn other_layouts_are_written_anew_with_the_same_value() {
        for text in [
            "kind: ConfigMap\nmetadata: {name: a, annotations: {x: z}}\ndata: {a: $$}\n",
            "kind: ConfigMap\nmetadata:\n  name: a\n  annotations: {x: z}\ndata: {a: $$}\n",
        ] {
            let out = disabled(text);
            let parsed = nyl_core::data::yaml::parse_stream(
                &out,
                FileId(0),
                &nyl_core::data::yaml::Limits::default(),
            );
            let json = parsed.docs[0].to_json();
            assert_eq!(
                json["metadata"]["annotations"][FLUX_SUBSTITUTE], "disabled",
                "{out}"
            );
            assert_eq!(json["metadata"]["annotations"]["x"], "z", "{out}");
            assert_eq!(json["data"]["a"], "$$", "{out}");
        }
    }
}
