//! The apps a target deploys: what a DeploymentTarget's `spec.apps` globs match among the
//! repository's files, and the layout apps whose layout names the target.

use std::collections::BTreeSet;

use crate::apps::pipeline::Session;
use crate::apps::LayoutApp;
use crate::project::scan::Tree;
use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::data::provenance::ObjectName;

/// The apps a target deploys, and its `spec.apps` globs that match nothing.
pub(crate) struct TargetApps {
    pub apps: BTreeSet<String>,
    /// `apps_glob_unmatched` for each glob that matched nothing.
    pub unmatched: Vec<Diagnostic>,
}

/// The apps the target `name` deploys: what the `spec.apps` globs of the DeploymentTarget of that
/// name match, and the layout apps whose layout names it (a DeploymentTarget or a Cluster) as
/// their target.
pub(crate) fn target_apps(
    session: &Session,
    scan: &Tree,
    layout_apps: &[LayoutApp],
    name: &str,
) -> TargetApps {
    let mut apps: BTreeSet<String> = BTreeSet::new();
    let mut unmatched = Vec::new();
    for target in session.project.targets.iter().filter(|t| t.name == name) {
        let (matched, problems) = glob_apps(target, scan);
        apps.extend(matched);
        unmatched.extend(problems);
    }
    for app in layout_apps {
        let layout = &session.project.config.layouts[app.layout].0;
        let own = layout
            .target
            .as_ref()
            .and_then(|t| nyl_core::project::layouts::substitute(t, &app.bindings).ok());
        if own.as_deref() == Some(name) {
            apps.insert(app.dir.clone());
        }
    }
    TargetApps { apps, unmatched }
}

/// Whether the directory `dir` (canonical) is itself one of the apps that the `spec.apps` globs
/// of the DeploymentTarget `name` match, known without scanning the repository.
pub(crate) fn is_glob_app(session: &Session, name: &str, dir: &std::path::Path) -> bool {
    let Some(rel) = Tree::listed(&session.project, dir) else {
        return false;
    };
    let targets = session.project.targets.iter().filter(|t| t.name == name);
    targets
        .flat_map(|t| &t.apps)
        .any(|(glob, _)| glob.matches(&rel))
}

/// Whether the directory `dir` (canonical) may be or hold one of the apps that the `spec.apps`
/// globs of the DeploymentTarget `name` match; `false` only when none of them can reach it, known
/// without scanning the repository (a directory the scan does not list holds nothing it lists).
pub(crate) fn may_hold_glob_apps(session: &Session, name: &str, dir: &std::path::Path) -> bool {
    let Some(rel) = Tree::listed(&session.project, dir) else {
        return dir == session.project.root;
    };
    let targets = session.project.targets.iter().filter(|t| t.name == name);
    targets
        .flat_map(|t| &t.apps)
        .any(|(glob, _)| glob.may_match_within(&rel))
}

/// What a DeploymentTarget's `spec.apps` globs match (files whose directory is matched too left
/// out), and `apps_glob_unmatched` for each glob that matches nothing.
pub(crate) fn glob_apps(
    target: &nyl_core::project::objects::DeploymentTarget,
    scan: &Tree,
) -> (BTreeSet<String>, Vec<Diagnostic>) {
    let mut apps: BTreeSet<String> = BTreeSet::new();
    let mut unmatched = Vec::new();
    for (glob, loc) in &target.apps {
        let hits: Vec<&String> = scan.paths.iter().filter(|p| glob.matches(p)).collect();
        if hits.is_empty() {
            unmatched.push(
                Diagnostic::new(
                    Code::AppsGlobUnmatched,
                    format!(
                        "spec.apps glob {:?} matches no file or directory",
                        glob.pattern
                    ),
                )
                .at(*loc)
                .object(ObjectName::new("DeploymentTarget", &target.name).to_string()),
            );
        }
        apps.extend(hits.into_iter().cloned());
    }
    (without_covered_files(&apps), unmatched)
}

/// Drops matched files whose directory is matched too: a directory app already renders its own
/// YAML files.
fn without_covered_files(apps: &BTreeSet<String>) -> BTreeSet<String> {
    let covered = |app: &String| {
        app.rsplit_once('/')
            .is_some_and(|(dir, _)| apps.contains(dir))
    };
    apps.iter().filter(|a| !covered(a)).cloned().collect()
}
