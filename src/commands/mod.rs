//! The command line: parse arguments, run, print diagnostics to stderr and results to stdout, map
//! the outcome to an exit status (0 ok, 1 problems in the input, 2 usage or internal errors).
//! One module per command; this one holds what they share: the options, the environment defaults,
//! the printer of diagnostics and the writer of stdout.

mod argocd;
mod diff;
mod explain;
mod render;
mod render_tree;
mod schema;
mod validate;
mod values;
mod version;

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use crate::apps::pipeline::Request;
use crate::helm;
use crate::helm::cache;
use crate::process;
use nyl_core::data::diagnostics::{self, Diagnostic};
use nyl_core::data::provenance::Catalog;

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
}

/// The target and runtime values, for `values`, `render` and `explain`.
#[derive(clap::Args, Debug)]
struct ContextArgs {
    /// The DeploymentTarget (or, when none has the name, the Cluster) whose values feed imports.
    #[arg(long, env = "NYL_TARGET")]
    target: Option<String>,
    /// Namespace for releases that set none [default: $ARGOCD_APP_NAMESPACE, else "default"].
    #[arg(long)]
    namespace: Option<String>,
    /// Runtime chart values (a YAML string), over everything else of the app's one release.
    #[arg(long = "values")]
    values: Option<String>,
    /// Runtime target values (a YAML string), merged over the effective target values.
    #[arg(long = "target-values")]
    target_values: Option<String>,
}

impl ContextArgs {
    fn request(self, paths: Vec<PathBuf>) -> Request {
        Request {
            paths,
            root: None,
            target: self.target,
            default_namespace: default_namespace(self.namespace),
            values: self.values,
            target_values: self.target_values,
        }
    }
}

/// What to evaluate, for `values` and `render`.
#[derive(clap::Args, Debug)]
struct InputArgs {
    #[command(flatten)]
    context: ContextArgs,
    /// Invocation files, directories of an app, layout app directories, or layout app ids
    /// (`prod.*.cert-manager`).
    #[arg(default_value = ".")]
    paths: Vec<PathBuf>,
}

impl InputArgs {
    fn request(self) -> Request {
        self.context.request(self.paths)
    }
}

/// How renders run: parallelism and the render cache.
#[derive(clap::Args, Debug)]
struct EngineArgs {
    /// Helm renders to run at once [default: the available cores].
    #[arg(short = 'j', long = "jobs")]
    jobs: Option<usize>,
    /// Neither read nor write the render cache.
    #[arg(long, conflicts_with = "refresh")]
    no_cache: bool,
    /// Render again and overwrite the cache entries, without reading them.
    #[arg(long)]
    refresh: bool,
    /// Seconds one `helm template` may run before it is stopped; `limits.helm_timeout_seconds` in
    /// nyl.toml can only lower it.
    #[arg(
        long,
        env = "NYL_HELM_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = helm::DEFAULT_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    helm_timeout: u64,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Yaml,
    Json,
}

pub fn main() -> ExitCode {
    init_logging();
    process::stop_children_on_signals();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help and version to stdout with success, usage errors with exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match cli.command {
        Command::Values(args) => values::values(args),
        Command::Render(args) => render::render(args),
        Command::Explain(args) => explain::explain(args),
        Command::Validate(args) => validate::validate(args),
        Command::Diff(args) => diff::diff(args),
        Command::RenderTree(args) => render_tree::render_tree(args),
        Command::Schema { kind } => schema::print_schema(&kind),
        Command::Argocd(argocd::ArgocdCommand::Generate(engine)) => {
            argocd::argocd_generate(&engine)
        }
        Command::Argocd(argocd::ArgocdCommand::Parameters) => argocd::argocd_parameters(),
        Command::Version => version::print_version(),
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

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The parts of a render request that [`EngineArgs`] and the environment decide.
fn engine_request(engine: &EngineArgs) -> crate::expansion::render::Request {
    let mode = if engine.no_cache {
        cache::Mode::Off
    } else if engine.refresh {
        cache::Mode::Refresh
    } else {
        cache::Mode::ReadWrite
    };
    crate::expansion::render::Request {
        inputs: Request::default(),
        kube_version: None,
        api_versions: Vec::new(),
        allow_empty: false,
        jobs: engine.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
        }),
        cache_dir: cache::default_dir(),
        cache: mode,
        cache_max_bytes: env_var("NYL_CACHE_MAX_BYTES")
            .and_then(|v| v.parse().ok())
            .unwrap_or(cache::DEFAULT_MAX_BYTES),
        helm_timeout: Duration::from_secs(engine.helm_timeout),
        gate: crate::expansion::render::Gate::AllInputs,
    }
}

/// Prints every diagnostic of one run to stderr, in a stable order, and returns the exit status
/// they imply.
fn report_diagnostics(mut diags: Vec<Diagnostic>, catalog: &Catalog) -> u8 {
    diagnostics::sort(&mut diags, catalog);
    print_diagnostics(diags.iter().map(|d| (d, catalog)))
}

/// The one printer of diagnostics: each to stderr, in the order given (each with the catalog its
/// locations point into); returns the exit status they imply, the one rule of every command.
fn print_diagnostics<'a>(diags: impl IntoIterator<Item = (&'a Diagnostic, &'a Catalog)>) -> u8 {
    let mut stderr = io::stderr().lock();
    let mut status = 0;
    for (d, catalog) in diags {
        let _ = writeln!(stderr, "{}", d.render(catalog));
        status = status.max(diagnostics::exit_status(std::slice::from_ref(d)));
    }
    status
}

/// Writes the whole result at once; a closed pipe (`nyl values | head`) is not an error.
fn write_stdout(text: &str) -> ExitCode {
    write_stdout_parts([text])
}

/// Writes the parts to stdout; a closed pipe is no error (the reader has seen enough).
fn write_stdout_parts<'a>(parts: impl IntoIterator<Item = &'a str>) -> ExitCode {
    let mut stdout = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let written = parts
        .into_iter()
        .try_for_each(|part| stdout.write_all(part.as_bytes()))
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write output: {e}");
            ExitCode::from(2)
        }
    }
}
