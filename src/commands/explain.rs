//! `nyl explain`: for one value of an app, every layer that set it, lowest first, and which won.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::apps::pipeline;
use nyl_core::expansion::Entry;
use nyl_core::outputs::report;
use nyl_core::project::objects::ChartSource;

use nyl_core::data::provenance::Catalog;

use super::options::ContextArgs;
use super::print::{report_diagnostics, write_stdout};

#[derive(clap::Args, Debug)]
pub(super) struct ExplainArgs {
    #[command(flatten)]
    context: ContextArgs,
    /// The app: an invocation file, an app directory, a layout app directory or id.
    app: PathBuf,
    /// The value, as a JSON Pointer into the chart's values: `/storage/size`.
    pointer: String,
}

pub(super) fn explain(args: ExplainArgs) -> ExitCode {
    let pointer = match nyl_core::data::pointer::Pointer::parse(&args.pointer) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {:?} is not a JSON Pointer: {e}", args.pointer);
            return ExitCode::from(2);
        }
    };
    let request = match args.context.request(vec![args.app]) {
        Ok(request) => request,
        Err(problems) => return ExitCode::from(report_diagnostics(problems, &Catalog::default())),
    };
    let (mut session, entries) = match pipeline::Session::start_alone(&request) {
        Ok(started) => started,
        Err((catalog, diags)) => return ExitCode::from(report_diagnostics(diags, &catalog)),
    };
    let mut text = String::new();
    let mut coalesced = false;
    for entry in entries {
        let Entry::Release(release) = entry else {
            continue;
        };
        let chart = match &release.chart {
            ChartSource::Local(dir) => match session.project.chart_values(dir) {
                Ok(chart) => {
                    coalesced = true;
                    chart
                }
                Err(refused) => {
                    refused.report_to(&mut session.diagnostics);
                    continue;
                }
            },
            ChartSource::Remote(_) => nyl_core::values::coalesce::ChartValues::default(),
        };
        let effective = nyl_core::values::coalesce::coalesce(release.values.values.clone(), &chart);
        let steps =
            nyl_core::values::explain::steps(&pointer, chart.defaults.as_ref(), &release.layers);
        text.push_str(&report::explain_text(
            &release.values,
            &pointer,
            &steps,
            pointer.get(&effective),
            &session.project.catalog,
        ));
    }
    session.take_project_warnings();
    if coalesced {
        session.diagnostics.extend(crate::helm::rules_check());
    }
    let status = report_diagnostics(session.take_diagnostics(), &session.project.catalog);
    if status != 0 {
        return ExitCode::from(status);
    }
    write_stdout(&text)
}
