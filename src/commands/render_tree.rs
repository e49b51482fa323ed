//! `nyl render-tree`: whole targets written as plain Kubernetes trees.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::apps::pipeline::Request;
use crate::expansion::render;
use crate::outputs::tree;

use super::options::{engine_request, progress, EngineArgs, NamespaceArg};
use super::print::{print_diagnostics, write_stdout};

#[derive(clap::Args, Debug)]
pub(super) struct RenderTreeArgs {
    /// The DeploymentTarget (or, when none has the name, the Cluster) to render.
    #[arg(
        long,
        env = "NYL_TARGET",
        value_name = "NAME",
        required_unless_present = "all_targets"
    )]
    target: Option<String>,
    /// Every DeploymentTarget, and every Cluster layouts deploy to, each into DIR/<target>/
    /// (NYL_TARGET is then left aside).
    #[arg(long)]
    all_targets: bool,
    /// The tree's directory.
    #[arg(long = "output-dir")]
    output_dir: PathBuf,
    /// Write nothing; exit 1 listing the files that differ from what would be written.
    #[arg(long)]
    check: bool,
    /// Mark chart output that holds `$` with `kustomize.toolkit.fluxcd.io/substitute: disabled`, so
    /// Flux's postBuild substitution leaves it exactly as Helm rendered it.
    #[arg(long)]
    flux_escape: bool,
    /// Write targets and apps that deploy nothing (refused by default: the engine would prune them).
    #[arg(long)]
    allow_empty: bool,
    #[command(flatten)]
    namespace: NamespaceArg,
    #[command(flatten)]
    engine: EngineArgs,
}

/// `target_flag`: `--target` was given on the command line (not through NYL_TARGET).
pub(super) fn render_tree(args: RenderTreeArgs, target_flag: bool) -> ExitCode {
    if args.all_targets && target_flag {
        eprintln!("error: --all-targets renders every target: give it without --target");
        return ExitCode::from(2);
    }
    let target = args.target.filter(|_| !args.all_targets);
    let request = tree::Request {
        targets: target.into_iter().collect(),
        all_targets: args.all_targets,
        output: args.output_dir,
        check: args.check,
        flux_escape: args.flux_escape,
        allow_empty: args.allow_empty,
        engine: render::Request {
            inputs: Request {
                default_namespace: args.namespace.resolve(),
                ..Request::default()
            },
            ..engine_request(&args.engine, progress("render-tree"))
        },
    };
    let outcome = tree::run(&request);
    request.engine.progress.finish();
    let status = print_diagnostics(outcome.diagnostics.iter().map(|(d, c)| (d, &**c)));
    if status != 0 {
        return ExitCode::from(status);
    }
    let mut text = String::new();
    if args.check {
        for path in &outcome.differ {
            text.push_str(&format!("differs: {path}\n"));
        }
        text.push_str(&format!(
            "{} files up to date, {} differ\n",
            outcome.unchanged,
            outcome.differ.len()
        ));
    } else {
        text.push_str(&format!(
            "{} files written, {} unchanged, {} removed\n",
            outcome.written.len(),
            outcome.unchanged,
            outcome.removed.len()
        ));
    }
    let written = write_stdout(&text);
    if args.check && !outcome.differ.is_empty() {
        return ExitCode::from(1);
    }
    written
}
