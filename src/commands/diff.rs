//! `nyl diff`: what a change does to the rendered manifests, per resource, between revisions.

use std::path::Path;
use std::process::ExitCode;

use clap::ValueEnum;

use crate::apps::pipeline::Request;
use crate::expansion::render;
use crate::outputs::diff;

use super::options::{engine_request, progress, EngineArgs, NamespaceArg};
use super::print::{print_diagnostics, write_stdout};

#[derive(clap::Args, Debug)]
pub(super) struct DiffArgs {
    /// The base revision.
    #[arg(long)]
    base: String,
    /// The head revision [default: the working tree].
    #[arg(long)]
    head: Option<String>,
    /// Render every app of this DeploymentTarget or Cluster (or, with APPs, those apps for it).
    #[arg(long, env = "NYL_TARGET", value_name = "NAME")]
    target: Option<String>,
    /// Exit 1 when anything differs, 2 when the comparison could not be made (as diff(1)).
    #[arg(long)]
    exit_code: bool,
    /// Output format.
    #[arg(long = "output", short = 'o', value_enum, default_value_t = DiffFormat::Text)]
    output: DiffFormat,
    /// Apps, relative to the project root.
    apps: Vec<String>,
    #[command(flatten)]
    namespace: NamespaceArg,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(super) enum DiffFormat {
    Text,
    /// For a pull-request comment.
    Markdown,
}

pub(super) fn diff(args: DiffArgs) -> ExitCode {
    if args.target.is_none() && args.apps.is_empty() {
        eprintln!("error: name a --target, or the apps to compare");
        return ExitCode::from(2);
    }
    let request = diff::Request {
        base: args.base,
        head: args.head,
        target: args.target,
        apps: args.apps,
        engine: render::Request {
            inputs: Request {
                default_namespace: args.namespace.resolve(),
                ..Request::default()
            },
            ..engine_request(&args.engine, progress("diff"))
        },
    };
    let diffs = diff::run(&request, Path::new("."));
    request.engine.progress.finish();
    let diffs = match diffs {
        Ok(diffs) => diffs,
        Err(problems) => {
            let status = print_diagnostics(problems.iter().map(|(d, c)| (d, &**c)));
            // With --exit-code, 1 means "differs": a comparison that could not be made is 2.
            return ExitCode::from(if args.exit_code { 2 } else { status.max(1) });
        }
    };
    let text = match args.output {
        DiffFormat::Text => diff::to_text(&diffs),
        DiffFormat::Markdown => diff::to_markdown(&diffs),
    };
    let written = write_stdout(&text);
    if args.exit_code && diffs.iter().any(|d| !d.changes.is_empty()) {
        return ExitCode::from(1);
    }
    written
}
