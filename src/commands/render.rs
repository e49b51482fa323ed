//! `nyl render`: manifests from the real `helm template`, as multi-document YAML or JSON.

use std::process::ExitCode;

use crate::expansion::render;
use nyl_core::data::provenance::Catalog;
use nyl_core::expansion::manifest::Manifest;
use nyl_core::repository::argocd;

use super::{
    engine_request, env_var, report_diagnostics, write_stdout, write_stdout_parts, EngineArgs,
    Format, InputArgs,
};

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
    let request = render::Request {
        inputs: args.inputs.request(),
        kube_version: args.kube_version.or_else(|| env_var("KUBE_VERSION")),
        api_versions,
        allow_empty: args.allow_empty,
        ..engine_request(&args.engine)
    };
    print_render(&request, args.output)
}

/// Renders and prints: the manifests only when the whole render succeeded.
pub(super) fn print_render(request: &render::Request, format: Format) -> ExitCode {
    print_outcome(render::render(request), format)
}

pub(super) fn print_outcome(mut outcome: render::Outcome, format: Format) -> ExitCode {
    let status = report_diagnostics(std::mem::take(&mut outcome.diagnostics), &outcome.catalog);
    if status != 0 {
        return ExitCode::from(status);
    }
    match format {
        // The documents one after another, as they are: the output can be megabytes.
        Format::Yaml => write_stdout_parts(outcome.manifests.iter().map(Manifest::text)),
        Format::Json => match render::to_json(&outcome) {
            Ok(text) => write_stdout(&text),
            Err(problems) => ExitCode::from(report_diagnostics(problems, &outcome.catalog)),
        },
    }
}
