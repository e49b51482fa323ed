//! The command line: parse arguments, run, print diagnostics to stderr and results to stdout, map
//! the outcome to an exit status (0 ok, 1 problems in the input, 2 usage or internal errors).
//! One module per command; [`options`] holds the options they share, [`print`] the printer of
//! diagnostics and the writer of stdout; this one parses and dispatches.

mod argocd;
mod diff;
mod explain;
mod options;
mod print;
mod render;
mod render_tree;
mod schema;
mod validate;
mod values;
mod version;
mod whole_target;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::process;
use print::write_stdout;

#[derive(Parser, Debug)]
#[command(
    name = "nyl",
    version,
    about = "Render Kubernetes manifests from Helm-chart components with layered platform values"
)]
struct Cli {
    #[command(flatten)]
    global: options::Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print, per invocation, the values Helm receives (value imports merged under the spec).
    Values(values::ValuesArgs),
    /// Show, for one value of an app, every layer that set it, lowest first, and which one won.
    Explain(explain::ExplainArgs),
    /// Render manifests with the real `helm template` and print them as multi-document YAML.
    Render(render::RenderArgs),
    /// Render whole targets into plain Kubernetes trees (kustomization.yaml per app) for Flux and CI.
    RenderTree(render_tree::RenderTreeArgs),
    /// What a change does to the rendered manifests, per resource, between two git revisions.
    Diff(diff::DiffArgs),
    /// Check the whole repository: every file, object and contract, and every app of every target.
    Validate(validate::ValidateArgs),
    /// Print the JSON Schema of a file kind, for editors (yaml-language-server).
    Schema {
        /// config, cluster, deployment-target, invocation, helm-chart or component.
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(nyl_core::project::schema::FILE_KINDS.iter().map(|k| k.name)))]
        kind: String,
    },
    /// The Argo CD config-management plugin's commands.
    #[command(subcommand)]
    Argocd(argocd::ArgocdCommand),
    /// Print nyl's version and the helm it runs (path and version).
    Version,
    /// Print a shell completion script: `source <(nyl completion bash)`.
    Completion {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// `-n/--namespace`, as in Helm.
pub fn main() -> ExitCode {
    process::stop_children_on_signals();
    process::fail_writes_past_the_file_size_limit();
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let (cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            // clap prints help and version to stdout with success, usage errors with exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    cli.global.init_logging();
    // Before anything reads a path or the working directory, as `git -C` does.
    if let Err(message) = cli.global.enter_dirs() {
        eprintln!("{message}");
        return ExitCode::from(2);
    }
    let status = match cli.command {
        Command::Values(args) => values::values(args),
        Command::Render(args) => render::render(args),
        Command::Explain(args) => explain::explain(args),
        Command::Validate(args) => validate::validate(args),
        Command::Diff(args) => diff::diff(args),
        Command::RenderTree(args) => {
            // `--target` and `--all-targets` exclude each other; NYL_TARGET yields to the flag.
            let named = matches
                .subcommand_matches("render-tree")
                .and_then(|m| m.value_source("target"));
            render_tree::render_tree(args, named == Some(clap::parser::ValueSource::CommandLine))
        }
        Command::Schema { kind } => schema::print_schema(&kind),
        Command::Argocd(argocd::ArgocdCommand::Generate(engine)) => {
            argocd::argocd_generate(&engine)
        }
        Command::Argocd(argocd::ArgocdCommand::Parameters) => argocd::argocd_parameters(),
        Command::Version => version::print_version(),
        Command::Completion { shell } => print_completion(shell),
    };
    log_peak_memory();
    status
}

/// nyl's own peak memory (its threads, not the helm processes it ran), for `bench/run`:
/// `RUST_LOG=peak_memory=debug` (a target outside `nyl`, so that `-vv` leaves it out). The kernel's high-water mark of this process's memory
/// (`VmHWM`), not `getrusage`, whose maximum carries over `exec` from the process that started
/// nyl (a Python parent's, say).
fn log_peak_memory() {
    if !tracing::enabled!(target: "peak_memory", tracing::Level::DEBUG) {
        return;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(kib) = kib {
        tracing::debug!(target: "peak_memory", max_rss_kib = kib, "peak memory");
    }
}

fn print_completion(shell: clap_complete::Shell) -> ExitCode {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "nyl", &mut script);
    write_stdout(&String::from_utf8_lossy(&script))
}
