//! One run from paths to evaluated values: load the project, pick the target, read the app files,
//! resolve each invocation's chart and contract, and evaluate its imports. `nyl values` prints the
//! result; rendering builds on the same run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::components::{self, Chart};
use crate::diagnostics::{Code, Diagnostic};
use crate::objects::{self, DocKind};
use crate::project::{self, ChartRef, Project};
use crate::provenance::{Catalog, Loc, ObjectRef};
use crate::report::InvocationValues;
use crate::targets::{self, Target};
use crate::value::Node;

/// What to evaluate.
#[derive(Clone, Debug)]
pub struct Request {
    pub paths: Vec<PathBuf>,
    pub target: Option<String>,
    /// The namespace of invocations that name none.
    pub default_namespace: String,
}

/// The result of a run: the values of every invocation, the diagnostics, and the catalog that the
/// diagnostics' file ids point into. Fail closed: callers print `items` only without errors.
#[derive(Default)]
pub struct Outcome {
    pub catalog: Catalog,
    pub items: Vec<InvocationValues>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Outcome {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

pub fn values(req: &Request) -> Outcome {
    let first = req
        .paths
        .first()
        .cloned()
        .unwrap_or_else(|| PathBuf::from("."));
    let root = match project::find_root(&first) {
        Ok(root) => root,
        Err(d) => {
            return Outcome {
                diagnostics: vec![d],
                ..Outcome::default()
            }
        }
    };
    let (project, mut diags) = match Project::load(root) {
        Ok(loaded) => loaded,
        Err((catalog, diagnostics)) => {
            return Outcome {
                catalog,
                diagnostics,
                ..Outcome::default()
            }
        }
    };
    let target = match req.target.as_deref() {
        None => Ok(None),
        Some(name) => targets::select(name, &project.clusters, &project.targets).map(Some),
    };
    // Without the requested target, imports cannot be evaluated: the files are still read and
    // checked, so every other problem is reported too.
    let (target, evaluate) = match target {
        Ok(t) => (t, true),
        Err(d) => {
            diags.push(d);
            (None, false)
        }
    };
    let mut run = Run {
        project,
        target: target.as_ref(),
        evaluate,
        req,
        items: Vec::new(),
        diags,
    };
    for path in &req.paths {
        run.path(path);
    }
    check_releases(&run.items, &mut run.diags);
    if run.items.is_empty() && !run.diags.iter().any(Diagnostic::is_error) {
        run.diags.push(Diagnostic::new(
            Code::NoInvocations,
            "the given paths hold no component invocations",
        ));
    }
    Outcome {
        catalog: run.project.catalog,
        items: run.items,
        diagnostics: run.diags,
    }
}

struct Run<'a> {
    project: Project,
    target: Option<&'a Target>,
    evaluate: bool,
    req: &'a Request,
    items: Vec<InvocationValues>,
    diags: Vec<Diagnostic>,
}

impl Run<'_> {
    fn path(&mut self, path: &Path) {
        let inside = std::fs::canonicalize(path).map(|p| p.starts_with(&self.project.root));
        if !matches!(inside, Ok(true)) {
            let why = match inside {
                Err(e) => e.to_string(),
                Ok(_) => format!("outside the project at {}", self.project.root.display()),
            };
            return self.diags.push(Diagnostic::new(
                Code::PathNotFound,
                format!("{}: {why}", path.display()),
            ));
        }
        let files = match self.project.app_files(path) {
            Ok(files) => files,
            Err(d) => return self.diags.push(d),
        };
        for file in files {
            let file = std::fs::canonicalize(&file).unwrap_or(file);
            let (_, docs, problems) = self.project.read_yaml(&file);
            if !problems.is_empty() {
                // The documents of a file that did not read cleanly are not evaluated: their
                // errors would only be consequences.
                self.diags.extend(problems);
                continue;
            }
            for doc in docs {
                if let Err(problems) = self.document(&doc) {
                    self.diags.extend(problems);
                }
            }
        }
    }

    fn document(&mut self, doc: &Node) -> Result<(), Vec<Diagnostic>> {
        if objects::classify(doc).map_err(|d| vec![d])? != DocKind::Invocation {
            return Ok(());
        }
        let object = self.project.catalog.add_object(ObjectRef {
            kind: doc
                .field("kind")
                .and_then(Node::as_str)
                .unwrap_or("?")
                .to_string(),
            name: objects::name_of(doc).unwrap_or("?").to_string(),
            loc: doc.prov.loc,
        });
        let inv = objects::invocation(doc, object)?;
        let chart = self
            .project
            .resolve_kind(&inv.kind, inv.kind_loc)
            .map_err(|d| vec![d.object(inv.display())])?;
        if !self.evaluate {
            return Ok(());
        }
        let (chart_text, evaluation) = match &chart {
            ChartRef::Remote(remote) => (
                remote.to_string(),
                components::evaluate(&inv, Chart::Remote, self.target),
            ),
            ChartRef::Local { component, dir } => {
                let contract = self.project.contract(component, dir)?;
                let chart = Chart::Local {
                    component,
                    contract,
                };
                (
                    component.clone(),
                    components::evaluate(&inv, chart, self.target),
                )
            }
        };
        let evaluation = evaluation?;
        self.items.push(InvocationValues {
            loc: inv.loc,
            kind: inv.kind.clone(),
            chart: chart_text,
            namespace: inv
                .namespace
                .clone()
                .unwrap_or_else(|| self.req.default_namespace.clone()),
            name: inv.name,
            target: self.target.map(|t| t.name.clone()),
            values: evaluation.values,
            imports: evaluation.imports,
        });
        Ok(())
    }
}

/// Two invocations that would be one Helm release (same name and namespace) are an error.
fn check_releases(items: &[InvocationValues], diags: &mut Vec<Diagnostic>) {
    let mut seen: HashMap<(&str, &str), Loc> = HashMap::new();
    for item in items {
        if let Some(first) = seen.insert((&item.namespace, &item.name), item.loc) {
            diags.push(
                Diagnostic::new(
                    Code::DuplicateObject,
                    format!(
                        "release {:?} in namespace {:?} is invoked twice; Helm releases must \
                         be unique per namespace",
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
