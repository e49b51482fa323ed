//! Rendering: every release of the inputs through the real `helm template`, chart output that
//! holds invocations expanded again for the same target, plain manifests passed on as written,
//! nyl's own kinds dropped. Nothing is returned unless the whole render succeeded.

use std::path::PathBuf;

use crate::diagnostics::{Code, Diagnostic};
use crate::helm::{Helm, Template};
use crate::pipeline::{self, Entry, Release, Session};
use crate::provenance::Catalog;
use crate::report::InvocationValues;
use crate::yaml::Document;

/// How deep chart output may nest invocations.
pub const MAX_DEPTH: usize = 10;

#[derive(Clone, Debug)]
pub struct Request {
    pub paths: Vec<PathBuf>,
    /// The project root, when the caller fixed it (Argo CD's app directory); else found from the
    /// first path.
    pub root: Option<PathBuf>,
    pub target: Option<String>,
    pub default_namespace: String,
    /// `--kube-version` (or `KUBE_VERSION`); the Cluster's `kubeVersion` when `None`.
    pub kube_version: Option<String>,
    /// `--api-versions` (or `KUBE_API_VERSIONS`); the Cluster's `apiVersions` when empty.
    pub api_versions: Vec<String>,
    pub allow_empty: bool,
}

/// The rendered manifests in input order, or the problems that stopped the render.
#[derive(Default)]
pub struct Outcome {
    pub catalog: Catalog,
    pub manifests: Vec<Document>,
    pub diagnostics: Vec<Diagnostic>,
}

pub fn render(req: &Request) -> Outcome {
    let first = req
        .paths
        .first()
        .cloned()
        .unwrap_or_else(|| PathBuf::from("."));
    let mut session = match Session::open(&first, req.root.as_deref(), req.target.as_deref()) {
        Ok(session) => session,
        Err((catalog, diagnostics)) => {
            return Outcome {
                catalog,
                diagnostics,
                ..Outcome::default()
            }
        }
    };
    let mut entries = Vec::new();
    for path in &req.paths {
        entries.extend(session.read_path(path, &req.default_namespace));
    }
    let mut renderer = Renderer {
        helm: None,
        kube_version: req
            .kube_version
            .clone()
            .or_else(|| session.target.as_ref()?.kube_version.clone()),
        api_versions: if req.api_versions.is_empty() {
            session
                .target
                .as_ref()
                .map(|t| t.api_versions.clone())
                .unwrap_or_default()
        } else {
            req.api_versions.clone()
        },
        releases: Vec::new(),
        manifests: Vec::new(),
        session,
    };
    // Fail closed: with any problem in the inputs, Helm is not even run.
    if !renderer.session.has_errors() {
        renderer.entries(entries, &mut Vec::new());
        pipeline::check_releases(renderer.releases.iter(), &mut renderer.session.diagnostics);
    }
    let Renderer {
        session, manifests, ..
    } = renderer;
    let mut diagnostics = session.diagnostics;
    let failed = diagnostics.iter().any(Diagnostic::is_error);
    if !failed && manifests.is_empty() && !req.allow_empty {
        diagnostics.push(Diagnostic::new(
            Code::EmptyRender,
            "the render produced no Kubernetes objects; with auto-sync and prune Argo CD would \
             delete the whole app. Pass --allow-empty (plugin parameter allow-empty: true) if \
             that is intended",
        ));
    }
    Outcome {
        catalog: session.project.catalog,
        manifests: if failed { Vec::new() } else { manifests },
        diagnostics,
    }
}

struct Renderer {
    session: Session,
    /// Located on the first release, so a render of plain manifests needs no Helm.
    helm: Option<Result<Helm, ()>>,
    kube_version: Option<String>,
    api_versions: Vec<String>,
    releases: Vec<InvocationValues>,
    manifests: Vec<Document>,
}

impl Renderer {
    /// Renders `entries` in order; `chain` holds the releases whose output they came from.
    fn entries(&mut self, entries: Vec<Entry>, chain: &mut Vec<String>) {
        for entry in entries {
            match entry {
                Entry::Manifest(doc) => self.manifests.push(doc),
                Entry::Release(release) => self.release(*release, chain),
            }
        }
    }

    fn release(&mut self, release: Release, chain: &mut Vec<String>) {
        let v = &release.values;
        let key = format!("{} {}/{}", v.chart, v.namespace, v.name);
        let object = format!("{}/{}", v.kind, v.name);
        if chain.contains(&key) {
            let path = chain
                .iter()
                .chain([&key])
                .cloned()
                .collect::<Vec<_>>()
                .join(" -> ");
            return self.report(
                Diagnostic::new(
                    Code::RenderCycle,
                    format!("chart output invokes itself again: {path}"),
                )
                .at(v.loc)
                .object(object),
            );
        }
        if chain.len() >= MAX_DEPTH {
            return self.report(
                Diagnostic::new(
                    Code::RenderDepthExceeded,
                    format!(
                        "invocations nest deeper than {MAX_DEPTH} levels: {}",
                        chain.join(" -> ")
                    ),
                )
                .at(v.loc)
                .object(object),
            );
        }
        let Some(helm) = self.helm() else { return };
        let values_json = v.values.to_json().to_string();
        let template = Template {
            release: &v.name,
            namespace: &v.namespace,
            chart: &release.chart,
            values_json: &values_json,
            kube_version: self.kube_version.as_deref(),
            api_versions: &self.api_versions,
            include_crds: release.include_crds,
        };
        let output = match helm.template(&template) {
            Ok(output) => output,
            Err(message) => {
                return self.report(
                    Diagnostic::new(
                        Code::HelmFailed,
                        format!("helm template {} failed: {message}", v.chart),
                    )
                    .at(v.loc)
                    .object(object),
                )
            }
        };
        let file = self.session.project.catalog.add_file(format!(
            "{} (helm output of {}/{})",
            v.chart, v.namespace, v.name
        ));
        let (docs, problems) = self.session.project.parse_documents(&output, file);
        if !problems.is_empty() {
            self.session.diagnostics.extend(problems);
            return;
        }
        // Nested invocations default to the parent release's namespace.
        let namespace = v.namespace.clone();
        self.releases.push(release.values);
        let children = self.session.entries(docs, None, &namespace);
        chain.push(key);
        self.entries(children, chain);
        chain.pop();
    }

    fn helm(&mut self) -> Option<Helm> {
        let located = self
            .helm
            .get_or_insert_with(|| Helm::locate().map_err(|d| self.session.diagnostics.push(d)));
        located.as_ref().ok().cloned()
    }

    fn report(&mut self, d: Diagnostic) {
        self.session.diagnostics.push(d);
    }
}

/// Multi-document YAML: each manifest as written, after a `---` line.
pub fn to_yaml(manifests: &[Document]) -> String {
    manifests
        .iter()
        .map(|d| format!("---\n{}", d.text))
        .collect()
}

/// One JSON array of the manifests.
pub fn to_json(manifests: &[Document]) -> String {
    let array: Vec<_> = manifests.iter().map(|d| d.node.to_json()).collect();
    let mut text = serde_json::to_string_pretty(&array).unwrap_or_else(|_| "[]".into());
    text.push('\n');
    text
}
