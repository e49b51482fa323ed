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

/// Where a directory stands against the `spec.apps` globs of a DeploymentTarget, as far as is
/// known without scanning the repository.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// It is one of the apps the globs match.
    App,
    /// It may hold some of them.
    Maybe,
    /// No glob can match it or anything below it (a directory the scan does not list holds
    /// nothing the scan lists).
    Outside,
}

/// Where the directory `dir` (canonical) stands against the `spec.apps` globs of the
/// DeploymentTarget `name`.
pub(crate) fn reach(session: &Session, name: &str, dir: &std::path::Path) -> Reach {
    let Some(rel) = Tree::listed(&session.project, dir) else {
        return if dir == session.project.root {
            Reach::Maybe
        } else {
            Reach::Outside
        };
    };
    let globs = || {
        let targets = session.project.targets.iter().filter(|t| t.name == name);
        targets.flat_map(|t| &t.apps).map(|(glob, _)| glob)
    };
    if globs().any(|glob| glob.matches(&rel)) {
        Reach::App
    } else if globs().any(|glob| glob.may_match_within(&rel)) {
        Reach::Maybe
    } else {
        Reach::Outside
    }
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
