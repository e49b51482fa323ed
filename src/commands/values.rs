//! `nyl values`: per invocation, the values Helm receives (value imports merged under the spec).

use std::process::ExitCode;

use crate::apps::pipeline::{check_releases, Loaded, Request, Session};
use crate::expansion::render::Run;
use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::data::provenance::Catalog;
use nyl_core::data::value::Node;
use nyl_core::expansion::Entry;
use nyl_core::outputs::report;
use nyl_core::project::objects::ChartSource;
use nyl_core::values::release::InvocationValues;
use std::sync::Arc;

use super::options::{Format, InputArgs};
use super::print::{json_text, print_diagnostics, report_diagnostics, write_stdout};
use super::whole_target;

#[derive(clap::Args, Debug)]
pub(super) struct ValuesArgs {
    #[command(flatten)]
    inputs: InputArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Yaml)]
    output: Format,
    /// Add, for every leaf value, where it came from.
    #[arg(long)]
    explain: bool,
}

pub(super) fn values(args: ValuesArgs) -> ExitCode {
    let (request, whole_target) = match args.inputs.request() {
        Ok(request) => request,
        Err(problems) => return ExitCode::from(report_diagnostics(problems, &Catalog::default())),
    };
    if whole_target {
        let target = request.target.clone().unwrap_or_default();
        match target_values(&request, &target, args.explain) {
            Ok(outcome) => return print_target_values(&outcome, args.output, args.explain),
            Err(Some(run)) => {
                let outcome = evaluate_in(&run.loaded, &request, args.explain);
                return print_values(outcome, args.output, args.explain);
            }
            Err(None) => {}
        }
    }
    print_values(evaluate(&request, args.explain), args.output, args.explain)
}

/// The values of every app of the target, as `nyl values` gives them for one app; `Err` when
/// the paths are to be read as apps themselves, as for [`whole_target::render`].
fn target_values(
    inputs: &Request,
    target: &str,
    explain: bool,
) -> Result<whole_target::Outcome<Outcome>, Option<Box<Run>>> {
    let (planned, mut diagnostics) = whole_target::planned(inputs, target, false)?;
    let mut apps = Vec::new();
    if let Some((run, names)) = planned {
        let root = &run.loaded.root;
        for app in names {
            let request = Request {
                paths: vec![root.join(&app)],
                root: Some(root.clone()),
                target: Some(target.to_string()),
                ..inputs.clone()
            };
            let mut outcome = evaluate_in(&run.loaded, &request, explain);
            // An app of plain manifests has no invocations, and that is no problem here.
            outcome
                .diagnostics
                .retain(|d| d.code != Code::NoInvocations);
            whole_target::add(
                &mut diagnostics,
                &app,
                &mut outcome.diagnostics,
                &outcome.catalog,
            );
            apps.push((app, outcome));
        }
        if apps.iter().all(|(_, o)| o.items.is_empty()) {
            let d = Diagnostic::new(
                Code::NoInvocations,
                format!("the apps of target {target:?} hold no component invocations"),
            );
            diagnostics.push((d, Arc::default()));
        }
    }
    Ok(whole_target::finish(target, apps, diagnostics))
}

/// One `nyl values` outcome: its problems, or its values.
fn print_values(outcome: Outcome, format: Format, explain: bool) -> ExitCode {
    let status = report_diagnostics(outcome.diagnostics, &outcome.catalog);
    if status != 0 {
        return ExitCode::from(status);
    }
    let text = match format {
        Format::Yaml => report::to_yaml(
            &outcome.items,
            explain,
            &outcome.effective,
            &outcome.catalog,
        ),
        Format::Json => json_text(&report::to_json(
            &outcome.items,
            explain,
            &outcome.effective,
            &outcome.catalog,
        )),
    };
    write_stdout(&text)
}

/// `nyl values --target T` without paths: every app of the target, each under its header (in
/// JSON, each item names its `app`).
fn print_target_values(
    outcome: &whole_target::Outcome<Outcome>,
    format: Format,
    explain: bool,
) -> ExitCode {
    let target = &outcome.target;
    let status = print_diagnostics(outcome.diagnostics.iter().map(|(d, c)| (d, &**c)));
    if outcome.failed() {
        return ExitCode::from(status);
    }
    let text = match format {
        Format::Yaml => outcome
            .apps
            .iter()
            .map(|(app, o)| {
                let values = report::to_yaml(&o.items, explain, &o.effective, &o.catalog);
                whole_target::header(app, target) + &values
            })
            .collect(),
        Format::Json => json_text(
            &outcome
                .apps
                .iter()
                .flat_map(|(app, o)| {
                    let items = report::to_json(&o.items, explain, &o.effective, &o.catalog);
                    items.into_iter().map(move |mut item| {
                        item["app"] = app.clone().into();
                        item
                    })
                })
                .collect::<Vec<_>>(),
        ),
    };
    write_stdout(&text)
}

/// The result of `nyl values`: the values of every release, the diagnostics, and the catalog the
/// diagnostics point into. Fail closed: callers print `items` only without errors.
#[derive(Default)]
pub(super) struct Outcome {
    pub(super) catalog: Arc<Catalog>,
    pub(super) items: Vec<InvocationValues>,
    /// Per item, its values over the chart defaults (when asked for and the chart is local).
    pub(super) effective: Vec<Option<Node>>,
    pub(super) diagnostics: Vec<Diagnostic>,
}

/// `nyl values`; with `with_defaults`, also each release's values coalesced over its chart's
/// defaults (what the templates see), for `--explain`.
pub(super) fn evaluate(req: &Request, with_defaults: bool) -> Outcome {
    match Loaded::of_request(req, req.target.as_deref()) {
        Ok(loaded) => evaluate_in(&loaded, req, with_defaults),
        Err((catalog, diagnostics)) => Outcome {
            catalog,
            diagnostics,
            ..Outcome::default()
        },
    }
}

/// [`evaluate`] on the project the run loaded.
pub(super) fn evaluate_in(loaded: &Loaded, req: &Request, with_defaults: bool) -> Outcome {
    let (mut session, entries) = Session::start(loaded, req);
    let mut items = Vec::new();
    let mut effective = Vec::new();
    for entry in entries {
        let Entry::Release(release) = entry else {
            continue;
        };
        let with = match (&release.chart, with_defaults) {
            (ChartSource::Local(dir), true) => match session.project.chart_values(dir) {
                Ok(chart) => Some(nyl_core::values::coalesce::coalesce(
                    release.values.values.clone(),
                    &chart,
                )),
                Err(refused) => {
                    refused.report_to(&mut session.diagnostics);
                    None
                }
            },
            _ => None,
        };
        effective.push(with);
        items.push(release.values);
    }
    check_releases(items.iter(), &mut session.diagnostics);
    session.take_project_warnings();
    if effective.iter().any(Option::is_some) {
        session.diagnostics.extend(crate::helm::rules_check());
    }
    if items.is_empty() && !session.has_errors() {
        session.diagnostics.push(Diagnostic::new(
            Code::NoInvocations,
            "the given paths hold no component invocations",
        ));
    }
    Outcome {
        diagnostics: session.take_diagnostics(),
        catalog: Arc::new(session.project.catalog),
        items,
        effective,
    }
}
