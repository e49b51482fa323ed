//! `nyl diff`: what a change does to the rendered manifests, per resource, for review.
//!
//! Both sides are rendered by the same pipeline: the base revision (and the head, unless it is
//! the working tree) checked out with the real `git` into temporary worktrees. Resources are
//! matched by kind, namespace and name; a changed one is shown as a unified diff of its YAML.
//! Secret values are masked (a short digest shows that they changed, never what they are). The
//! render cache makes the unchanged side nearly free.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::apps::pipeline::{self, Session};
use crate::expansion::render;
use crate::outputs::tree;
use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::data::provenance::{Catalog, ResourceName};
use nyl_core::data::value::{Node, Value};

pub struct Request {
    pub base: String,
    /// `None`: the working tree.
    pub head: Option<String>,
    pub target: Option<String>,
    /// Apps (paths relative to the project root); all apps of the target when empty.
    pub apps: Vec<String>,
    pub engine: render::Request,
}

#[derive(Debug)]
pub enum Change {
    Added(ResourceName),
    Removed(ResourceName),
    Changed(ResourceName, String),
}

#[derive(Debug)]
pub struct AppDiff {
    pub app: String,
    pub changes: Vec<Change>,
}

type Problems = Vec<(Diagnostic, Arc<Catalog>)>;

pub fn run(req: &Request, start: &Path) -> Result<Vec<AppDiff>, Problems> {
    let fail = |m: String| vec![(Diagnostic::new(Code::IoError, m), Arc::default())];
    let root = crate::project::find_root(start).map_err(|d| vec![(d, Arc::default())])?;
    let top = git(&root, &["rev-parse", "--show-toplevel"]).map_err(fail)?;
    let top = PathBuf::from(top.trim());
    let rel = std::fs::canonicalize(&root).unwrap_or(root.clone());
    let rel = rel
        .strip_prefix(std::fs::canonicalize(&top).unwrap_or(top.clone()))
        .unwrap_or(Path::new(""))
        .to_path_buf();
    let base = Worktree::add(&top, &req.base).map_err(fail)?;
    let head = match &req.head {
        Some(rev) => Some(Worktree::add(&top, rev).map_err(fail)?),
        None => None,
    };
    let base_root = base.dir.join(&rel);
    // The pull request that introduces nyl compares against nothing: everything is added.
    let base_side = if crate::project::holds_config(&base_root) {
        side(req, &base_root)?
    } else {
        Side::default()
    };
    let head_side = side(
        req,
        &head.as_ref().map_or(root.clone(), |w| w.dir.join(&rel)),
    )?;
    // A target or app may be new or gone on one side, but not unknown to both.
    if let Some(problems) = head_side
        .target_problem
        .filter(|_| base_side.target_problem.is_some())
    {
        return Err(problems);
    }
    let missing: Vec<(Diagnostic, Arc<Catalog>)> = req
        .apps
        .iter()
        .filter(|app| !base_side.present.contains(*app) && !head_side.present.contains(*app))
        .map(|app| {
            let d = Diagnostic::new(
                Code::PathNotFound,
                format!("{app}: no such app in either revision"),
            );
            (d, Arc::default())
        })
        .collect();
    if !missing.is_empty() {
        return Err(missing);
    }
    let mut apps: Vec<&String> = base_side.apps.keys().chain(head_side.apps.keys()).collect();
    apps.sort();
    apps.dedup();
    let empty = BTreeMap::new();
    Ok(apps
        .into_iter()
        .map(|app| AppDiff {
            app: app.clone(),
            changes: compare(
                base_side.apps.get(app).unwrap_or(&empty),
                head_side.apps.get(app).unwrap_or(&empty),
            ),
        })
        .collect())
}

/// One revision, rendered.
#[derive(Default)]
struct Side {
    /// App -> resource -> its masked YAML.
    apps: BTreeMap<String, BTreeMap<ResourceName, String>>,
    /// The apps named on the command line that exist here.
    present: Vec<String>,
    /// Why the target is not usable here (it does not exist on this side).
    target_problem: Option<Problems>,
}

/// Every app of one side, rendered.
fn side(req: &Request, root: &Path) -> Result<Side, Problems> {
    let inputs = pipeline::Request {
        root: Some(root.to_path_buf()),
        paths: Vec::new(),
        ..req.engine.inputs.clone()
    };
    let run = render::Run::of_request(
        &render::Request {
            inputs: inputs.clone(),
            ..req.engine.clone()
        },
        None,
    )
    .map_err(|(c, d)| {
        d.into_iter()
            .map(|d| (d, Arc::clone(&c)))
            .collect::<Vec<_>>()
    })?;
    let (session, _) = Session::start(&run.loaded, &inputs);
    let rendered = render_side(req, &run, &session, &inputs);
    run.finish();
    rendered
}

/// The apps of one side, each rendered within the side's run.
fn render_side(
    req: &Request,
    run: &render::Run,
    session: &Session,
    inputs: &pipeline::Request,
) -> Result<Side, Problems> {
    let root = &session.project.root;
    let mut out = Side::default();
    if let Some(target) = &req.target {
        if let Err(problems) = session.select(target) {
            let catalog = Arc::new(session.project.catalog.clone());
            let problems = problems.into_iter().map(|d| (d, Arc::clone(&catalog)));
            out.target_problem = Some(problems.collect());
            // The target does not exist on this side: it deploys nothing here.
            return Ok(out);
        }
    }
    let apps: Vec<String> = match (&req.target, req.apps.is_empty()) {
        (Some(target), true) => {
            let scan = crate::project::scan::Tree::scan(&session.project, &session.project.root);
            crate::apps::target_apps::target_apps(session, &scan, &session.layout_apps(), target)
                .apps
                .into_iter()
                .collect()
        }
        _ => req.apps.clone(),
    };
    req.engine.progress.add_apps(apps.len());
    for app in apps {
        if !root.join(&app).exists() {
            req.engine.progress.app_done();
            continue;
        }
        out.present.push(app.clone());
        let rendered = match &req.target {
            Some(target) => tree::render_app(
                run,
                &render::Request {
                    allow_empty: true,
                    ..req.engine.clone()
                },
                target,
                &app,
            ),
            None => render::render_in(
                run,
                &render::Request {
                    inputs: pipeline::Request {
                        paths: vec![root.join(&app)],
                        ..inputs.clone()
                    },
                    allow_empty: true,
                    ..req.engine.clone()
                },
            ),
        };
        req.engine.progress.app_done();
        if rendered.diagnostics.iter().any(Diagnostic::is_error) {
            let catalog = rendered.catalog;
            return Err(rendered
                .diagnostics
                .into_iter()
                .map(|d| (d, Arc::clone(&catalog)))
                .collect());
        }
        let trees = render::trees(&rendered).map_err(|problems| {
            problems
                .into_iter()
                .map(|d| (d, Arc::clone(&rendered.catalog)))
                .collect::<Vec<_>>()
        })?;
        let resources = trees
            .iter()
            .map(|node| {
                (
                    resource_id(node),
                    nyl_core::data::yaml::to_yaml(&masked(node), &|_| None),
                )
            })
            .collect();
        out.apps.insert(app, resources);
    }
    Ok(out)
}

fn resource_id(node: &Node) -> ResourceName {
    let text = |n: Option<&Node>| n.and_then(Node::as_str).unwrap_or("").to_string();
    let meta = node.get("metadata");
    ResourceName {
        kind: text(node.get("kind")),
        namespace: text(meta.and_then(|m| m.get("namespace"))),
        name: text(meta.and_then(|m| m.get("name"))),
    }
}

/// A Secret with its `data` and `stringData` values replaced by a short digest.
fn masked(node: &Node) -> Node {
    if node.get("kind").and_then(Node::as_str) != Some("Secret") {
        return node.clone();
    }
    let mut node = node.clone();
    if let Value::Map(map) = &mut node.value {
        for key in ["data", "stringData"] {
            if let Some(Value::Map(values)) = map.get_mut(key).map(|n| &mut n.value) {
                for v in values.values_mut() {
                    let digest: String = Sha256::digest(v.to_json().to_string())
                        .iter()
                        .take(4)
                        .map(|b| format!("{b:02x}"))
                        .collect();
                    v.value = Value::String(format!("<masked sha256:{digest}>"));
                }
            }
        }
    }
    node
}

fn compare(
    base: &BTreeMap<ResourceName, String>,
    head: &BTreeMap<ResourceName, String>,
) -> Vec<Change> {
    let mut changes = Vec::new();
    for (id, text) in head {
        match base.get(id) {
            None => changes.push(Change::Added(id.clone())),
            Some(old) if old != text => {
                changes.push(Change::Changed(id.clone(), unified(old, text)));
            }
            Some(_) => {}
        }
    }
    for id in base.keys().filter(|id| !head.contains_key(*id)) {
        changes.push(Change::Removed(id.clone()));
    }
    changes
}

/// A unified diff of two texts' lines: hunks with `@@ -a,b +c,d @@` headers and three lines of
/// context. `similar`'s Myers diff needs memory linear in the texts, so a one-line change in a
/// huge resource stays a one-line hunk.
pub fn unified(old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .to_string()
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A temporary checkout of one revision, removed when dropped.
struct Worktree {
    top: PathBuf,
    dir: PathBuf,
}

impl Worktree {
    fn add(top: &Path, rev: &str) -> Result<Worktree, String> {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("nyl-diff-{}-{n}", std::process::id()));
        let path = dir.to_string_lossy().into_owned();
        git(top, &["worktree", "add", "--detach", "--quiet", &path, rev])?;
        Ok(Worktree {
            top: top.to_path_buf(),
            dir,
        })
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let path = self.dir.to_string_lossy().into_owned();
        let _ = git(&self.top, &["worktree", "remove", "--force", &path]);
    }
}

fn summary(d: &AppDiff) -> (usize, usize, usize) {
    let count = |f: fn(&Change) -> bool| d.changes.iter().filter(|c| f(c)).count();
    (
        count(|c| matches!(c, Change::Added(_))),
        count(|c| matches!(c, Change::Removed(_))),
        count(|c| matches!(c, Change::Changed(..))),
    )
}

/// Plain text: a summary line per app, then its changes.
pub fn to_text(diffs: &[AppDiff]) -> String {
    let mut out = String::new();
    for d in diffs.iter().filter(|d| !d.changes.is_empty()) {
        let (added, removed, changed) = summary(d);
        out.push_str(&format!(
            "{}: {added} added, {removed} removed, {changed} changed\n",
            d.app
        ));
        for c in &d.changes {
            match c {
                Change::Added(id) => out.push_str(&format!("+ {id}\n")),
                Change::Removed(id) => out.push_str(&format!("- {id}\n")),
                Change::Changed(id, diff) => {
                    out.push_str(&format!("~ {id}\n"));
                    diff.lines()
                        .for_each(|l| out.push_str(&format!("    {l}\n")));
                }
            }
        }
    }
    if out.is_empty() {
        out.push_str("no changes\n");
    }
    out
}

/// Markdown for a pull-request comment.
pub fn to_markdown(diffs: &[AppDiff]) -> String {
    let changed: Vec<&AppDiff> = diffs.iter().filter(|d| !d.changes.is_empty()).collect();
    if changed.is_empty() {
        return "No changes to the rendered manifests.\n".to_string();
    }
    let mut out = String::from(
        "## Rendered manifests\n\n| app | added | removed | changed |\n|---|---|---|---|\n",
    );
    for d in &changed {
        let (a, r, c) = summary(d);
        out.push_str(&format!("| `{}` | {a} | {r} | {c} |\n", d.app));
    }
    for d in changed {
        out.push_str(&format!("\n### `{}`\n\n", d.app));
        for c in &d.changes {
            match c {
                Change::Added(id) => out.push_str(&format!("- added **{id}**\n")),
                Change::Removed(id) => out.push_str(&format!("- removed **{id}**\n")),
                Change::Changed(id, diff) => {
                    out.push_str(&format!("- changed **{id}**\n\n```diff\n{diff}```\n\n"));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_diffs_show_changes_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\nk\n";
        assert_eq!(
            unified(old, new),
            "@@ -2,9 +2,10 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n i\n j\n+k\n"
        );
        assert_eq!(unified("same\n", "same\n"), "");
    }

    #[test]
    fn one_changed_line_in_a_huge_resource_is_one_small_hunk() {
        let old: String = (1..=5000).map(|i| format!("line{i}: value\n")).collect();
        let new = old.replace("line2500: value\n", "line2500: changed\n");
        let diff = unified(&old, &new);
        assert_eq!(
            diff,
            "@@ -2497,7 +2497,7 @@\n line2497: value\n line2498: value\n line2499: value\n\
             -line2500: value\n+line2500: changed\n line2501: value\n line2502: value\n\
             \x20line2503: value\n"
        );
        assert_eq!(diff.lines().count(), 9);
    }

    #[test]
    fn separate_changes_get_separate_hunks_with_their_ranges() {
        let old: String = (1..=40).map(|i| format!("{i}\n")).collect();
        let new = old.replace("\n5\n", "\nfive\n").replace("\n30\n", "\n");
        let diff = unified(&old, &new);
        let headers: Vec<&str> = diff.lines().filter(|l| l.starts_with("@@")).collect();
        assert_eq!(headers, ["@@ -2,7 +2,7 @@", "@@ -27,7 +27,6 @@"]);
    }

    #[test]
    fn secrets_are_masked_but_changes_still_show() {
        let secret = |v: &str| {
            let text =
                format!("kind: Secret\nmetadata: {{name: s}}\nstringData: {{password: {v}}}\n");
            masked(
                &nyl_core::data::yaml::parse_stream(
                    &text,
                    nyl_core::data::provenance::FileId(0),
                    &nyl_core::data::yaml::Limits::default(),
                )
                .docs
                .remove(0),
            )
        };
        let (a, b) = (secret("hunter2"), secret("hunter3"));
        let text = nyl_core::data::yaml::to_yaml(&a, &|_| None);
        assert!(
            !text.contains("hunter2") && text.contains("<masked sha256:"),
            "{text}"
        );
        assert_ne!(a.to_json(), b.to_json(), "a changed secret still differs");
    }
}
