//! `nyl render`: manifests from the real `helm template`, as multi-document YAML or JSON.

use std::process::ExitCode;
use std::sync::Arc;

use crate::expansion::render;
use nyl_core::data::provenance::Catalog;
use nyl_core::expansion::manifest::{Manifest, Part};
use nyl_core::repository::argocd;

use super::options::{engine_request, env_var, progress, EngineArgs, Format, InputArgs};
use super::print::{print_diagnostics, report_diagnostics, write_stdout, write_stdout_parts};
use super::whole_target;
use crate::progress::Progress;

#[derive(clap::Args, Debug)]
pub(super) struct RenderArgs {
    #[command(flatten)]
    inputs: InputArgs,
    /// Kubernetes version for Helm's capabilities [default: $KUBE_VERSION, else the Cluster's].
    #[arg(long)]
    kube_version: Option<String>,
    /// An API version the cluster serves; repeatable [default: $KUBE_API_VERSIONS, else the Cluster's].
    #[arg(long = "api-versions")]
    api_versions: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Yaml)]
    output: Format,
    /// Accept a render that produces no objects (refused by default: Argo CD would prune the app).
    #[arg(long)]
    allow_empty: bool,
    #[command(flatten)]
    engine: EngineArgs,
}

pub(super) fn render(args: RenderArgs) -> ExitCode {
    let api_versions = if args.api_versions.is_empty() {
        argocd::api_versions(env_var("KUBE_API_VERSIONS").as_deref())
    } else {
        argocd::checked_api_versions(args.api_versions, "--api-versions")
    };
    let api_versions = match api_versions {
        Ok(entries) => entries,
        Err(problems) => return ExitCode::from(report_diagnostics(problems, &Catalog::default())),
    };
    let (inputs, whole_target) = match args.inputs.request() {
        Ok(request) => request,
        Err(problems) => return ExitCode::from(report_diagnostics(problems, &Catalog::default())),
    };
    // One render is quiet; a target's many apps show progress.
    let progress = if whole_target {
        progress("render")
    } else {
        Progress::default()
    };
    let request = render::Request {
        inputs,
        kube_version: args.kube_version.or_else(|| env_var("KUBE_VERSION")),
        api_versions,
        allow_empty: args.allow_empty,
        stored_output: matches!(args.output, Format::Yaml),
        ..engine_request(&args.engine, progress)
    };
    if whole_target {
        let target = request.inputs.target.clone().unwrap_or_default();
        match whole_target::render(&request, &target) {
            Ok(outcome) => {
                request.progress.finish();
                return print_target_render(&outcome, args.output);
            }
            Err(Some(run)) => {
                let outcome = render::render_in(&run, &request);
                return run.finish_beside(|| print_outcome(outcome, args.output));
            }
            Err(None) => {}
        }
    }
    render::render(&request, |outcome| print_outcome(outcome, args.output))
}

pub(super) fn print_outcome(mut outcome: render::Outcome, format: Format) -> ExitCode {
    let status = report_diagnostics(std::mem::take(&mut outcome.diagnostics), &outcome.catalog);
    if status != 0 {
        return ExitCode::from(status);
    }
    match format {
        // The documents one after another, as they are: the output can be megabytes.
        Format::Yaml => write_stdout_parts(outcome.manifests.iter().flat_map(Manifest::parts)),
        Format::Json => match render::to_json([&outcome]) {
            Ok(text) => write_stdout(&text),
            Err(problems) => ExitCode::from(report_diagnostics(problems, &outcome.catalog)),
        },
    }
}

/// `nyl render --target T` without paths: every app of the target, each under its header, or
/// nothing when any failed.
fn print_target_render(
    outcome: &whole_target::Outcome<render::Outcome>,
    format: Format,
) -> ExitCode {
    let target = &outcome.target;
    let status = print_diagnostics(outcome.diagnostics.iter().map(|(d, c)| (d, &**c)));
    if outcome.failed() {
        return ExitCode::from(status);
    }
    match format {
        Format::Yaml => {
            let headers: Vec<String> = outcome
                .apps
                .iter()
                .map(|(app, _)| whole_target::header(app, target))
                .collect();
            let parts = outcome.apps.iter().zip(&headers).flat_map(|((_, o), h)| {
                std::iter::once(Part::Text(h)).chain(o.manifests.iter().flat_map(Manifest::parts))
            });
            write_stdout_parts(parts)
        }
        Format::Json => match render::to_json(outcome.apps.iter().map(|(_, o)| o)) {
            Ok(text) => write_stdout(&text),
            // Each app's problems against its own catalog.
            Err(_) => {
                let problems: Vec<_> = outcome
                    .apps
                    .iter()
                    .flat_map(|(_, o)| {
                        let problems = render::trees(o).err().unwrap_or_default();
                        problems.into_iter().map(|d| (d, Arc::clone(&o.catalog)))
                    })
                    .collect();
                ExitCode::from(print_diagnostics(problems.iter().map(|(d, c)| (d, &**c))))
            }
        },
    }
}
