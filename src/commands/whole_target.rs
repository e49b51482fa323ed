//! `nyl render --target T` and `nyl values --target T` without paths: every app the target
//! deploys (its `spec.apps`, and the layout apps that name it), as `nyl render-tree` finds them,
//! in their order (sorted by path), each on its own as `render-tree` renders it. Directories given
//! with the target narrow it to its apps below them, when each is no app itself and holds some.
//! The render of those apps is here; their values are `nyl values`' own ([`super::values`]).

use std::path::PathBuf;

use crate::apps::pipeline::{self, Session};
use crate::apps::target_apps::{self, Reach};
use crate::expansion::render;
use crate::outputs::tree;
use crate::project;
use crate::project::scan;
use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::data::provenance::Catalog;
use std::sync::Arc;

/// Per app, in order, what the command made of it; and every problem of the run, each with the
/// catalog it points into, each once. Callers print the apps only without errors.
pub(super) struct Outcome<T> {
    pub(super) target: String,
    pub(super) apps: Vec<(String, T)>,
    pub(super) diagnostics: Vec<(Diagnostic, Arc<Catalog>)>,
}

impl<T> Outcome<T> {
    pub(super) fn failed(&self) -> bool {
        self.diagnostics.iter().any(|(d, _)| d.is_error())
    }
}

/// What the paths of a run with a target stand for.
enum Plan {
    /// The target's apps (those below the paths, when there are paths), with the run of their
    /// project; `None` when the project or the target cannot be used (the problems say why).
    Apps(Option<(Box<render::Run>, Vec<String>)>),
    /// The paths are read as apps themselves, as without a target: in the run loaded to find
    /// that out, when it could be loaded (so the project is not loaded twice).
    Paths(Option<Box<render::Run>>),
}

/// The target's apps, and the problems of finding them. With paths, each must be a directory
/// that is neither one of the target's apps nor a layout app and holds some of the target's
/// apps; otherwise the paths are read as apps ([`Plan::Paths`]).
fn plan(
    inputs: &pipeline::Request,
    target: &str,
    allow_empty: bool,
) -> (Plan, Vec<(Diagnostic, Arc<Catalog>)>) {
    let narrowing = !inputs.paths.is_empty();
    if narrowing && !inputs.paths.iter().all(|p| p.is_dir()) {
        return (Plan::Paths(None), Vec::new());
    }
    // The project of the first directory, as for any path; no app is read yet.
    let root = match (&inputs.root, inputs.paths.first()) {
        (None, Some(first)) => match project::find_root(first) {
            Ok(root) => Some(root),
            Err(_) => return (Plan::Paths(None), Vec::new()),
        },
        (root, _) => root.clone(),
    };
    let request = pipeline::Request {
        root,
        paths: Vec::new(),
        target: None,
        values: Vec::new(),
        target_values: None,
        ..inputs.clone()
    };
    let run = match pipeline::Loaded::of_request(&request, Some(target)) {
        Ok(loaded) => Box::new(render::Run::new(loaded)),
        Err(_) if narrowing => return (Plan::Paths(None), Vec::new()),
        Err((catalog, diags)) => {
            let diags = diags
                .into_iter()
                .map(|d| (d, Arc::clone(&catalog)))
                .collect();
            return (Plan::Apps(None), diags);
        }
    };
    let (session, _) = Session::start(&run.loaded, &request);
    // A directory that is itself one of the target's apps is read as an app (as `below` would
    // find): the repository need not be scanned for the target's other apps. Nor when no glob
    // of the target can reach one of the directories and no layout can claim apps (those are
    // found by a walk of their own): it holds none of the target's apps, as the scan, a walk of
    // the whole repository, would find.
    let reach: Vec<Reach> = inputs
        .paths
        .iter()
        .map(|dir| match session.project.inside(dir) {
            Ok(real) => target_apps::reach(&session, target, &real),
            Err(_) => Reach::Outside,
        })
        .collect();
    let no_layouts = session.project.config.layouts.is_empty();
    if narrowing && (reach.contains(&Reach::App) || (no_layouts && reach.contains(&Reach::Outside)))
    {
        return (Plan::Paths(Some(run)), Vec::new());
    }
    let mut own = session.run_diagnostics.clone();
    let scan = scan::Tree::scan(&session.project, &session.project.root);
    let layout_apps = session.layout_apps();
    let mut apps = tree::plan(&session, &scan, &layout_apps, target, allow_empty, &mut own);
    if narrowing {
        let Some(below) = apps.as_ref().and_then(|apps| {
            let is_layout_app = |dir: &str| layout_apps.iter().any(|a| a.dir == dir);
            below(&session, apps, &inputs.paths, &is_layout_app)
        }) else {
            return (Plan::Paths(Some(run)), Vec::new());
        };
        apps = Some(below);
    }
    if let Some(apps) = apps.as_ref().filter(|apps| apps.len() > 1) {
        if !inputs.values.is_empty() {
            own.push(Diagnostic::new(
                Code::AmbiguousRuntimeValues,
                format!(
                    "runtime values were given, but target {target:?} deploys {} apps here, so \
                     it is not clear which one they are for; name the app (its path)",
                    apps.len()
                ),
            ));
        }
    }
    let catalog = Arc::new(session.project.catalog);
    let own = own.into_iter().map(|d| (d, Arc::clone(&catalog))).collect();
    (Plan::Apps(apps.map(|apps| (run, apps))), own)
}

/// The apps below the directories `dirs`, when every directory is no app itself (neither one of
/// `apps` nor a layout app) and holds some of them; `None` otherwise.
fn below(
    session: &Session,
    apps: &[String],
    dirs: &[PathBuf],
    is_layout_app: &dyn Fn(&str) -> bool,
) -> Option<Vec<String>> {
    let mut prefixes = Vec::new();
    for dir in dirs {
        let real = session.project.inside(dir).ok()?;
        let rel = session.project.display_path(&real).replace('\\', "/");
        let rel = if real == session.project.root {
            String::new()
        } else {
            rel
        };
        if apps.contains(&rel) || is_layout_app(&rel) {
            return None;
        }
        prefixes.push(rel);
    }
    let under = |app: &String, p: &String| {
        p.is_empty()
            || app
                .strip_prefix(p.as_str())
                .is_some_and(|r| r.starts_with('/'))
    };
    if !prefixes.iter().all(|p| apps.iter().any(|a| under(a, p))) {
        return None;
    }
    Some(
        apps.iter()
            .filter(|a| prefixes.iter().any(|p| under(a, p)))
            .cloned()
            .collect(),
    )
}

/// Every app of the target rendered (`req.inputs.target` names it). Fail closed: with any error,
/// nothing is to be printed.
/// `Err` when the paths are to be read as apps themselves, with the run loaded to find that out
/// when there is one.
pub(super) fn render(
    req: &render::Request,
    target: &str,
) -> Result<Outcome<render::Outcome>, Option<Box<render::Run>>> {
    let (planned, mut diagnostics) = planned(&req.inputs, target, req.allow_empty)?;
    let mut apps = Vec::new();
    if let Some((run, names)) = planned {
        req.progress.add_apps(names.len());
        let rendered = tree::render_apps(&run, req, target, &names);
        run.finish();
        for (app, outcome) in names.into_iter().zip(rendered) {
            let Some(mut outcome) = outcome else {
                let d = Diagnostic::new(
                    Code::IoError,
                    format!("internal error: the render of {app} failed"),
                );
                diagnostics.push((d, Arc::default()));
                continue;
            };
            add(
                &mut diagnostics,
                &app,
                &mut outcome.diagnostics,
                &outcome.catalog,
            );
            apps.push((app, outcome));
        }
        let across = tree::duplicates_across_renders(apps.iter().map(|(app, o)| (app.as_str(), o)));
        diagnostics.extend(across.into_iter().map(|d| (d, Arc::default())));
    }
    Ok(finish(target, apps, diagnostics))
}

/// The target's apps with the run of their project, and the problems of finding them; no apps
/// when those include an error (fail closed: the run's own problems stop it before any app is
/// read or rendered, as they stop a render). `Err` when the paths are to be read as apps
/// themselves, with the run loaded to find that out when there is one.
pub(super) fn planned(
    inputs: &pipeline::Request,
    target: &str,
    allow_empty: bool,
) -> Result<Planned, Option<Box<render::Run>>> {
    match plan(inputs, target, allow_empty) {
        (Plan::Apps(planned), diagnostics) => {
            let failed = diagnostics.iter().any(|(d, _)| d.is_error());
            Ok((planned.filter(|_| !failed), diagnostics))
        }
        (Plan::Paths(run), _) => Err(run),
    }
}

/// See [`planned`].
pub(super) type Planned = (
    Option<(Box<render::Run>, Vec<String>)>,
    Vec<(Diagnostic, Arc<Catalog>)>,
);

/// Moves an app's problems into the run's, in a stable order, naming the app where the problem
/// has no place of its own.
pub(super) fn add(
    into: &mut Vec<(Diagnostic, Arc<Catalog>)>,
    app: &str,
    diagnostics: &mut Vec<Diagnostic>,
    catalog: &Arc<Catalog>,
) {
    nyl_core::data::diagnostics::sort(diagnostics, catalog);
    into.extend(
        std::mem::take(diagnostics)
            .into_iter()
            .map(|d| (tree::named(d, app), Arc::clone(catalog))),
    );
}

pub(super) fn finish<T>(
    target: &str,
    apps: Vec<(String, T)>,
    mut diagnostics: Vec<(Diagnostic, Arc<Catalog>)>,
) -> Outcome<T> {
    tree::once_each(&mut diagnostics);
    Outcome {
        target: target.to_string(),
        apps,
        diagnostics,
    }
}

/// The comment line that opens an app's part of the output: `# app: apps/db.yaml, target prod`.
pub(super) fn header(app: &str, target: &str) -> String {
    format!("# app: {app}, target {target}\n")
}
