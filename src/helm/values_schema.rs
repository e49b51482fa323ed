//! Checking a release's values against its chart's `values.schema.json` before Helm runs, with
//! the draft rules Helm 3.18.5+ uses (the `$schema` draft, 2020-12 when absent), so that each
//! violation names the layer, file and line that set the offending value. Helm checks again.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::project::{Project, Refused};
use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::data::pointer::Pointer;
use nyl_core::data::provenance::ObjectName;
use nyl_core::outputs::report::describe;
use nyl_core::project::objects::ChartSource;
use nyl_core::values::coalesce::coalesce;
use nyl_core::values::release::Release;

/// Compiled schemas per chart directory, so that a run reads and compiles each one once, however
/// many app renders share it.
#[derive(Default)]
pub struct Schemas(Mutex<HashMap<PathBuf, Option<Arc<jsonschema::Validator>>>>);

impl Schemas {
    /// The chart's compiled schema; `None` without one, or with one nyl cannot compile (left to
    /// Helm, whose message is the authority on it).
    fn get(&self, dir: &Path) -> Option<Arc<jsonschema::Validator>> {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        known
            .entry(dir.to_path_buf())
            .or_insert_with(|| {
                let text = fs::read_to_string(dir.join("values.schema.json")).ok()?;
                let schema = serde_json::from_str::<serde_json::Value>(&text).ok()?;
                jsonschema::validator_for(&schema).ok().map(Arc::new)
            })
            .clone()
    }
}

/// Violations of the release's chart schema. Subcharts' schemas are left to Helm, which knows
/// their conditions, tags and aliases. A chart without a schema costs nothing here. `Ok(true)`
/// when the chart has a schema nyl checked the values against. `Err` holds
/// the violations, or the problems of the chart's values files ([`Refused::Reported`] when they
/// were reported for an earlier release of the chart).
pub fn check(project: &mut Project, schemas: &Schemas, release: &Release) -> Result<bool, Refused> {
    let ChartSource::Local(dir) = &release.chart else {
        return Ok(false);
    };
    let Some(validator) = schemas.get(dir) else {
        return Ok(false);
    };
    let chart = project.chart_values(dir)?;
    let values = coalesce(release.values.values.clone(), &chart);
    let json = values.to_json();
    let mut out = Vec::new();
    for error in validator.iter_errors(&json) {
        let path = error.instance_path().as_str().to_string();
        let node = Pointer::parse(&path)
            .ok()
            .and_then(|p| p.get(&values))
            .unwrap_or(&values);
        let source = describe(node.prov, &release.values.imports, &project.catalog);
        let at = if path.is_empty() {
            "/".to_string()
        } else {
            path
        };
        let name = &release.values.chart;
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
            .object(ObjectName::new(&release.values.kind, &release.values.name).to_string()),
        );
    }
    if out.is_empty() {
        Ok(true)
    } else {
        Err(Refused::Problems(out))
    }
}
