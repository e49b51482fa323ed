//! Layout apps on disk: finding the app directories of the layouts declared in `nyl.toml`, and
//! turning one into a release with its layered values. The matching rules are [`nyl_core::project::layouts`].

pub mod pipeline;
pub mod target_apps;

use std::path::Path;

use crate::apps::pipeline::Session;
use crate::project::Refused;
use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::data::provenance::{Layer, Loc, ObjectRef, Prov};
use nyl_core::data::value::{Map, Node, Value};
use nyl_core::data::yaml::Mode;
use nyl_core::expansion::Entry;
use nyl_core::project::layouts::{self, Bindings, Layout};
use nyl_core::project::objects::{self, ChartSource, Invocation, NameRule};
use nyl_core::values::components;
use nyl_core::values::merge::merge;
use nyl_core::values::release::InvocationValues;
use nyl_core::values::release::{ExplainLayer, Release};

/// A layout app found on disk.
#[derive(Clone, Debug)]
pub struct LayoutApp {
    pub layout: usize,
    /// The app directory, relative to the project root.
    pub dir: String,
    pub bindings: Bindings,
    pub id: String,
}

impl Session {
    /// Every app directory of every layout, in a stable order.
    pub fn layout_apps(&self) -> Vec<LayoutApp> {
        let root = &self.project.root;
        let mut apps = Vec::new();
        for (index, (layout, _)) in self.project.config.layouts.iter().enumerate() {
            let depth = layout.app.trim_matches('/').split('/').count();
            let dirs = walkdir::WalkDir::new(root)
                .min_depth(depth)
                .max_depth(depth)
                .sort_by_file_name()
                .into_iter()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_dir());
            for entry in dirs {
                let dir = self.project.display_path(entry.path()).replace('\\', "/");
                if let Some(bindings) = layouts::match_path(&layout.app, &dir) {
                    let id = layouts::substitute(&layout.id, &bindings).unwrap_or_default();
                    apps.push(LayoutApp {
                        layout: index,
                        dir,
                        bindings,
                        id,
                    });
                }
            }
        }
        apps
    }

    /// The layout apps whose id matches `pattern` (`prod.*.cert-manager`).
    pub(crate) fn layout_apps_by_id(
        &mut self,
        pattern: &str,
        default_namespace: &str,
    ) -> Vec<Entry> {
        let apps: Vec<LayoutApp> = self
            .layout_apps()
            .into_iter()
            .filter(|a| layouts::id_matches(pattern, &a.id))
            .collect();
        if apps.is_empty() {
            self.diagnostics.push(Diagnostic::new(
                Code::AppNotFound,
                format!("no layout app has an id matching {pattern:?}; ids come from [[layouts]] in nyl.toml"),
            ));
        }
        apps.iter()
            .filter_map(|app| self.layout_entry(app, default_namespace))
            .collect()
    }

    /// The layout app at `dir`, when a layout claims it.
    pub(crate) fn layout_app_at(
        &mut self,
        dir: &Path,
        default_namespace: &str,
    ) -> Option<Vec<Entry>> {
        let rel = self.project.display_path(dir).replace('\\', "/");
        let claims: Vec<(usize, Bindings)> = self
            .project
            .config
            .layouts
            .iter()
            .enumerate()
            .filter_map(|(i, (l, _))| Some((i, layouts::match_path(&l.app, &rel)?)))
            .collect();
        match &claims[..] {
            [] => None,
            [(layout, bindings)] => {
                let l = &self.project.config.layouts[*layout].0;
                let id = layouts::substitute(&l.id, bindings).unwrap_or_default();
                let app = LayoutApp {
                    layout: *layout,
                    dir: rel,
                    bindings: bindings.clone(),
                    id,
                };
                Some(
                    self.layout_entry(&app, default_namespace)
                        .into_iter()
                        .collect(),
                )
            }
            _ => {
                let names: Vec<&str> = claims
                    .iter()
                    .map(|(i, _)| self.project.config.layouts[*i].0.name.as_str())
                    .collect();
                self.diagnostics.push(Diagnostic::new(
                    Code::LayoutOverlap,
                    format!("layouts {} all claim the app directory {rel}; make their app patterns disjoint", names.join(", ")),
                ));
                Some(Vec::new())
            }
        }
    }

    fn layout_entry(&mut self, app: &LayoutApp, default_namespace: &str) -> Option<Entry> {
        match self.layout_release(app, default_namespace) {
            Ok(release) => Some(Entry::Release(Box::new(release))),
            Err(refused) => {
                refused.report_to(&mut self.diagnostics);
                None
            }
        }
    }

    fn layout_release(
        &mut self,
        app: &LayoutApp,
        default_namespace: &str,
    ) -> Result<Release, Refused> {
        let (layout, layout_loc) = self.project.config.layouts[app.layout].clone();
        let fill = |template: &str| {
            layouts::substitute(template, &app.bindings).map_err(|name| {
                vec![Diagnostic::new(
                    Code::UnresolvedPlaceholder,
                    format!(
                        "layout {:?}: placeholder {{{name}}} is not bound by its app pattern",
                        layout.name
                    ),
                )
                .at(layout_loc)]
            })
        };
        let file = self.project.catalog.add_file(app.dir.clone());
        let loc = Loc::new(file, 0);
        let display = format!("layout/{}", layout.name);
        let object = self.project.catalog.add_object(ObjectRef {
            kind: display.clone(),
            name: app.id.clone(),
            loc,
        });
        let chart_rel = fill(&layout.chart)?;
        let chart_path = self.project.root.join(&chart_rel);
        if !chart_path.join("Chart.yaml").is_file() {
            return Err(vec![Diagnostic::new(
                Code::InvalidLayer,
                format!(
                    "layout {:?}: the chart {chart_rel} of app {} has no Chart.yaml",
                    layout.name, app.id
                ),
            )
            .at(layout_loc)]
            .into());
        }
        let chart_dir = self
            .project
            .inside(&chart_path)
            .map_err(|d| vec![d.at(layout_loc)])?;
        let (values, mut layers) = self.layers(&layout, app, &fill, loc)?;
        let values = self.with_runtime(values, &mut layers);
        let target = match &layout.target {
            Some(t) => Some(
                self.select_target(&fill(t)?)
                    .map_err(|d| vec![d.at(layout_loc)])?,
            ),
            None => self.target.clone(),
        };
        let release = match &layout.release {
            Some(r) => fill(r)?,
            None => app.dir.rsplit('/').next().unwrap_or(&app.dir).to_string(),
        };
        let namespace = match &layout.namespace {
            Some(n) => fill(n)?,
            None => default_namespace.to_string(),
        };
        // Directory names fill these: checked as for an invocation, so none reaches Helm unfit.
        for (what, name, rule) in [
            ("release", &release, NameRule::Release),
            ("namespace", &namespace, NameRule::Namespace),
        ] {
            objects::check_name(name, rule).map_err(|why| {
                vec![Diagnostic::new(
                    Code::InvalidName,
                    format!(
                        "layout {:?}: the {what} {name:?} of app {} {why}",
                        layout.name, app.id
                    ),
                )
                .at(layout_loc)]
            })?;
        }
        let inv = Invocation {
            kind: chart_rel.clone(),
            kind_loc: loc,
            name: release,
            namespace: Some(namespace),
            object,
            loc,
            spec: values,
            imports_enabled: true,
            exclude: Vec::new(),
        };
        let contract = self.project.contract(&chart_rel, &chart_dir)?;
        let component = components::Component {
            name: &chart_rel,
            contract,
        };
        let evaluation =
            components::evaluate(&inv, &ChartSource::Local(component), target.as_ref())?;
        layers.insert(0, ExplainLayer::new("imports", Some(evaluation.imported)));
        Ok(Release::new(
            InvocationValues {
                loc,
                kind: display,
                chart: chart_rel,
                namespace: inv.namespace.unwrap_or_default(),
                name: inv.name,
                target: target.as_ref().map(|t| t.name.clone()),
                values: evaluation.values,
                imports: evaluation.imports,
            },
            ChartSource::Local(chart_dir),
            target.as_ref(),
            true,
            layers,
        ))
    }

    /// The layout's values files merged in order; a missing file contributes nothing.
    fn layers(
        &mut self,
        layout: &Layout,
        app: &LayoutApp,
        fill: &dyn Fn(&str) -> Result<String, Vec<Diagnostic>>,
        loc: Loc,
    ) -> Result<(Node, Vec<ExplainLayer>), Vec<Diagnostic>> {
        let mut merged = Node::new(Value::Map(Map::new()), Prov::written(loc));
        let mut layers = Vec::new();
        for (index, template) in layout.values.iter().enumerate() {
            let rel = fill(template)?;
            let label = format!("layer {} {rel}", index + 1);
            let path = self.project.root.join(&rel);
            if !path.exists() {
                layers.push(ExplainLayer::new(label, None));
                tracing::debug!(app = %app.id, layer = %path.display(), "layer file absent: contributes nothing");
                continue;
            }
            let real = self.project.inside(&path).map_err(|d| vec![d])?;
            let (file, docs, problems) = self.project.read_documents_as(&real, Mode::Lenient);
            if problems.iter().any(Diagnostic::is_error) {
                return Err(problems);
            }
            self.diagnostics.extend(problems);
            let mut docs = docs.into_iter();
            match (docs.next(), docs.next()) {
                (None, _) => layers.push(ExplainLayer::new(label, None)),
                (Some(doc), None) if doc.node.as_map().is_some() => {
                    let mut node = doc.node;
                    node.set_layer(Layer::LayerFile {
                        index: index as u32,
                    });
                    layers.push(ExplainLayer::new(label, Some(node.clone())));
                    merged = merge(merged, node);
                }
                _ => {
                    return Err(vec![Diagnostic::new(
                        Code::InvalidLayer,
                        "a layout values file must be one YAML mapping",
                    )
                    .at(Loc::new(file, 1))
                    .object(format!("layout/{}", layout.name))])
                }
            }
        }
        Ok((merged, layers))
    }
}
