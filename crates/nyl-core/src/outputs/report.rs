//! What `nyl values` prints: per invocation, the values Helm receives, how each import fared, and
//! with `--explain` where every leaf came from.

use serde_json::json;

use crate::data::provenance::{Catalog, Layer, Prov};
use crate::data::value::Node;
use crate::data::yaml;
use crate::values::components::{ImportReport, ImportStatus};
use crate::values::release::InvocationValues;

/// Where a leaf came from, in words: `spec apps/db.yaml:9`,
/// `import backup from Cluster/prod-eu-1 targets/prod-eu-1.yaml:20`.
pub fn describe(prov: Prov, imports: &[ImportReport], catalog: &Catalog) -> String {
    let at = catalog.origin(prov.loc);
    let object = |id| {
        catalog
            .object(id)
            .map_or_else(|| "?".to_string(), std::string::ToString::to_string)
    };
    let import = |index: u32| imports.get(index as usize).map_or("?", |i| i.name.as_str());
    match prov.layer {
        Layer::Spec { .. } => format!("spec {at}"),
        Layer::Import { index, object: id } => {
            format!("import {} from {} {at}", import(index), object(id))
        }
        Layer::ImportPath { index } => format!("import {} {at}", import(index)),
        Layer::TargetValues { object: id } => format!("values of {} {at}", object(id)),
        Layer::LayerFile { index } => format!("layer {} {at}", index + 1),
        Layer::Runtime { target: false } => "runtime values".to_string(),
        Layer::Runtime { target: true } => "runtime target values".to_string(),
        Layer::ValuesFile => format!("values file {at}"),
        Layer::ChartDefault => format!("chart default {at}"),
        Layer::Written => at,
    }
}

fn status_text(report: &ImportReport) -> String {
    let status = match report.status {
        ImportStatus::Applied => "applied",
        ImportStatus::Absent => "absent",
        ImportStatus::Excluded => "excluded",
        ImportStatus::Disabled => "disabled",
    };
    if report.overridden {
        format!("{} {status}, overridden", report.name)
    } else {
        format!("{} {status}", report.name)
    }
}

/// Readable multi-document YAML with a comment header per invocation.
///
/// With `explain`, each release is shown with its chart defaults coalesced in (`effective`), so
/// every leaf names its layer, chart defaults included.
pub fn to_yaml(
    items: &[InvocationValues],
    explain: bool,
    effective: &[Option<Node>],
    catalog: &Catalog,
) -> String {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        let shown = effective
            .get(i)
            .and_then(Option::as_ref)
            .filter(|_| explain)
            .unwrap_or(&item.values);
        out.push_str("---\n");
        out.push_str(&format!(
            "# {} ({}) in namespace {}",
            item.name, item.kind, item.namespace
        ));
        match &item.target {
            Some(t) => out.push_str(&format!(", target {t}\n")),
            None => out.push_str(", no target\n"),
        }
        out.push_str(&format!("# source: {}\n", catalog.loc(item.loc)));
        if item.chart != item.kind {
            out.push_str(&format!("# chart: {}\n", item.chart));
        }
        if !item.imports.is_empty() {
            let imports: Vec<_> = item.imports.iter().map(status_text).collect();
            out.push_str(&format!("# imports: {}\n", imports.join("; ")));
        }
        if !std::ptr::eq(shown, &raw const item.values) {
            out.push_str("# with the chart's defaults, as its templates see them\n");
        }
        let comment = |node: &Node| explain.then(|| describe(node.prov, &item.imports, catalog));
        out.push_str(&yaml::to_yaml(shown, &comment));
    }
    out
}

/// The elements of one JSON array; with `explain`, each has `sources`: pointer -> where the leaf
/// came from.
pub fn to_json(
    items: &[InvocationValues],
    explain: bool,
    effective: &[Option<Node>],
    catalog: &Catalog,
) -> Vec<serde_json::Value> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let mut obj = json!({
                "file": catalog.file(item.loc.file),
                "line": item.loc.line,
                "kind": item.kind,
                "chart": item.chart,
                "name": item.name,
                "namespace": item.namespace,
                "target": item.target,
                "values": item.values.to_json(),
                "imports": item.imports,
            });
            if explain {
                let shown = effective
                    .get(i)
                    .and_then(Option::as_ref)
                    .unwrap_or(&item.values);
                if !std::ptr::eq(shown, &raw const item.values) {
                    obj["effective"] = shown.to_json();
                }
                let mut sources = serde_json::Map::new();
                crate::data::pointer::for_each_leaf(shown, &mut |pointer, node| {
                    sources.insert(
                        pointer.to_string(),
                        source_json(node.prov, &item.imports, catalog),
                    );
                });
                obj["sources"] = sources.into();
            }
            obj
        })
        .collect()
}

fn source_json(prov: Prov, imports: &[ImportReport], catalog: &Catalog) -> serde_json::Value {
    let object = |id| catalog.object(id).map(std::string::ToString::to_string);
    let import = |index: u32| imports.get(index as usize).map(|i| i.name.clone());
    let (layer, import, object) = match prov.layer {
        Layer::Spec { object: id } => ("spec", None, object(id)),
        Layer::Import { index, object: id } => ("import", import(index), object(id)),
        Layer::ImportPath { index } => ("import", import(index), None),
        Layer::TargetValues { object: id } => ("target_values", None, object(id)),
        Layer::LayerFile { .. } => ("layer_file", None, None),
        Layer::Runtime { target: false } => ("runtime", None, None),
        Layer::Runtime { target: true } => ("runtime_target_values", None, None),
        Layer::ValuesFile => ("values_file", None, None),
        Layer::ChartDefault => ("chart_default", None, None),
        Layer::Written => ("written", None, None),
    };
    let mut v =
        json!({ "layer": layer, "file": catalog.file(prov.loc.file), "line": prov.loc.line });
    if let Some(import) = import {
        v["import"] = import.into();
    }
    if let Some(object) = object {
        v["object"] = object.into();
    }
    v
}

/// `nyl explain`: one release's history of one value.
pub fn explain_text(
    item: &InvocationValues,
    pointer: &crate::data::pointer::Pointer,
    steps: &[crate::values::explain::Step<'_>],
    effective: Option<&Node>,
    catalog: &Catalog,
) -> String {
    let mut out = format!(
        "# {} ({}) in namespace {}: {pointer}\n",
        item.name, item.kind, item.namespace
    );
    let value = |n: &Node| n.to_json().to_string();
    for step in steps {
        match step.node {
            // A null's value would only repeat the rule: "deleted by null".
            Some(node) if step.rule == crate::values::explain::Rule::DeletedByNull => {
                out.push_str(&format!(
                    "  {}: {} ({})\n",
                    step.label,
                    step.rule.text(),
                    catalog.origin(node.prov.loc)
                ));
            }
            Some(node) => out.push_str(&format!(
                "  {}: {} {} ({})\n",
                step.label,
                step.rule.text(),
                value(node),
                catalog.origin(node.prov.loc)
            )),
            None => out.push_str(&format!("  {}: {}\n", step.label, step.rule.text())),
        }
    }
    match effective {
        Some(node) => out.push_str(&format!(
            "  => {} ({})\n",
            value(node),
            describe(node.prov, &item.imports, catalog)
        )),
        None => out.push_str("  => absent: the chart's templates see no value here\n"),
    }
    out
}
