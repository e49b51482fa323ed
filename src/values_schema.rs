//! Checking a release's values against its chart's `values.schema.json` before Helm runs, with
//! the draft rules Helm 3.18.5+ uses (the `$schema` draft, 2020-12 when absent), so that each
//! violation names the layer, file and line that set the offending value. Helm checks again.

use std::fs;
use std::path::Path;

use crate::coalesce::coalesce;
use crate::diagnostics::{Code, Diagnostic};
use crate::pipeline::{ChartSpec, Release};
use crate::pointer::Pointer;
use crate::project::Project;
use crate::report::describe;
use crate::value::Node;

/// Violations of the release's chart schema. Subcharts' schemas are left to Helm, which knows
/// their conditions, tags and aliases.
pub fn check(project: &mut Project, release: &Release) -> Vec<Diagnostic> {
    let ChartSpec::Local(dir) = &release.chart else {
        return Vec::new();
    };
    let chart = match project.chart_values(dir) {
        Ok(chart) => chart,
        Err(problems) => return problems,
    };
    let effective = coalesce(release.values.values.clone(), &chart);
    let mut out = Vec::new();
    check_chart(
        project,
        release,
        dir,
        &effective,
        &release.values.chart,
        &mut out,
    );
    out
}

fn check_chart(
    project: &Project,
    release: &Release,
    dir: &Path,
    values: &Node,
    name: &str,
    out: &mut Vec<Diagnostic>,
) {
    let schema = fs::read_to_string(dir.join("values.schema.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok());
    // A schema nyl cannot compile is left to Helm, whose message is the authority on it.
    if let Some(validator) = schema
        .as_ref()
        .and_then(|s| jsonschema::validator_for(s).ok())
    {
        let json = values.to_json();
        for error in validator.iter_errors(&json) {
            let path = error.instance_path().as_str().to_string();
            let node = Pointer::parse(&path)
                .ok()
                .and_then(|p| p.get(values))
                .unwrap_or(values);
            let source = describe(node.prov, &release.values.imports, &project.catalog);
            let at = if path.is_empty() {
                "/".to_string()
            } else {
                path
            };
            out.push(
                Diagnostic::new(
                    Code::ValuesSchemaViolation,
                    // Masked: a pattern or enum violation must not print the value, which may be a secret.
                    format!(
                        "values.schema.json of {name}: at {at}: {} (set by {source})",
                        error.masked()
                    ),
                )
                .at(node.prov.loc)
                .object(format!("{}/{}", release.values.kind, release.values.name)),
            );
        }
    }
}
