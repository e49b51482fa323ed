//! `nyl validate`: the whole repository checked, as CI should see it.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;

use crate::apps::pipeline::Request;
use crate::expansion::render;
use crate::outputs::validate;
use nyl_core::data::diagnostics;
use nyl_core::data::provenance::Catalog;

use super::options::{engine_request, progress, EngineArgs, NamespaceArg};
use super::print::{report_diagnostics, write_stdout};

#[derive(clap::Args, Debug)]
pub(super) struct ValidateArgs {
    /// The directory to check (the repository root, or part of it).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Warnings fail the run too.
    #[arg(long)]
    strict: bool,
    /// Output format.
    #[arg(long = "output", short = 'o', value_enum, default_value_t = ValidateFormat::Text)]
    output: ValidateFormat,
    /// Only the apps of this DeploymentTarget (or, when none has the name, the Cluster), its
    /// layout apps included.
    #[arg(long, env = "NYL_TARGET", value_name = "NAME")]
    target: Option<String>,
    /// Check values only; do not render with Helm.
    #[arg(long)]
    no_render: bool,
    #[command(flatten)]
    namespace: NamespaceArg,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(super) enum ValidateFormat {
    Text,
    Json,
    /// GitHub Actions annotations for pull requests.
    Github,
}

pub(super) fn validate(args: ValidateArgs) -> ExitCode {
    let request = validate::Request {
        dir: args.dir,
        target: args.target,
        render: !args.no_render,
        engine: render::Request {
            inputs: Request {
                default_namespace: args.namespace.resolve(),
                ..Request::default()
            },
            ..engine_request(&args.engine, progress("validate"))
        },
    };
    let report = validate::validate(&request, args.strict);
    request.engine.progress.finish();
    let report = match report {
        Ok(report) => report,
        Err(d) => return ExitCode::from(report_diagnostics(vec![d], &Catalog::default())),
    };
    let text = match args.output {
        ValidateFormat::Text => validate::to_text(&report),
        ValidateFormat::Json => validate::to_json(&report),
        ValidateFormat::Github => validate::to_github(&report),
    };
    let written = write_stdout(&text);
    if written != ExitCode::SUCCESS {
        return written;
    }
    let usage = report
        .issues
        .iter()
        .any(|i| i.is_error() && i.code.class() == diagnostics::Class::Usage);
    ExitCode::from(if usage { 2 } else { u8::from(!report.valid) })
}
