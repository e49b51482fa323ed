//! The command line: parse arguments, run, print diagnostics to stderr and results to stdout, map
//! the outcome to an exit status (0 ok, 1 problems in the input, 2 usage or internal errors).

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::diagnostics::{self, Diagnostic};
use crate::pipeline::{self, Request};
use crate::provenance::Catalog;
use crate::report;

#[derive(Parser, Debug)]
#[command(
    name = "nyl",
    version,
    about = "Render Kubernetes manifests from Helm-chart components with layered platform values"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print, per invocation, the values Helm receives (value imports merged under the spec).
    Values(ValuesArgs),
}

#[derive(clap::Args, Debug)]
struct ValuesArgs {
    /// The DeploymentTarget (or, when none has the name, the Cluster) whose values feed imports.
    #[arg(long, env = "NYL_TARGET")]
    target: Option<String>,
    /// Namespace for invocations that set none [default: $ARGOCD_APP_NAMESPACE, else "default"].
    #[arg(long)]
    namespace: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Yaml)]
    output: Format,
    /// Add, for every leaf value, where it came from.
    #[arg(long)]
    explain: bool,
    /// Invocation files, or directories whose *.yaml/*.yml files hold invocations.
    #[arg(default_value = ".")]
    paths: Vec<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Yaml,
    Json,
}

pub fn main() -> ExitCode {
    init_logging();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help and version to stdout with success, usage errors with exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match cli.command {
        Command::Values(args) => values(args),
    }
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_ansi(io::stderr().is_terminal())
        .without_time()
        .init();
}

/// The namespace of invocations without one: the flag, then Argo CD's app namespace, then
/// `default`, as `helm template` would use.
fn default_namespace(flag: Option<String>) -> String {
    flag.or_else(|| {
        std::env::var("ARGOCD_APP_NAMESPACE")
            .ok()
            .filter(|s| !s.is_empty())
    })
    .unwrap_or_else(|| "default".to_string())
}

fn values(args: ValuesArgs) -> ExitCode {
    let request = Request {
        paths: args.paths,
        target: args.target,
        default_namespace: default_namespace(args.namespace),
    };
    let outcome = pipeline::values(&request);
    let status = report_diagnostics(outcome.diagnostics, &outcome.catalog);
    if status != 0 {
        return ExitCode::from(status);
    }
    let text = match args.output {
        Format::Yaml => report::to_yaml(&outcome.items, args.explain, &outcome.catalog),
        Format::Json => report::to_json(&outcome.items, args.explain, &outcome.catalog),
    };
    write_stdout(&text)
}

/// Prints every diagnostic to stderr, in a stable order, and returns the exit status they imply.
fn report_diagnostics(mut diags: Vec<Diagnostic>, catalog: &Catalog) -> u8 {
    diagnostics::sort(&mut diags);
    let mut stderr = io::stderr().lock();
    for d in &diags {
        let _ = writeln!(stderr, "{}", d.render(catalog));
    }
    diagnostics::exit_status(&diags)
}

/// Writes the whole result at once; a closed pipe (`nyl values | head`) is not an error.
fn write_stdout(text: &str) -> ExitCode {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write output: {e}");
            ExitCode::from(2)
        }
    }
}
