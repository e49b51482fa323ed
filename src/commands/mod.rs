//! The command line: parse arguments, run, print diagnostics to stderr and results to stdout, map
//! the outcome to an exit status (0 ok, 1 problems in the input, 2 usage or internal errors).

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use crate::apps::pipeline::{self, Request};
use crate::expansion::render;
use crate::helm;
use crate::helm::cache;
use crate::outputs::diff;
use crate::outputs::tree;
use crate::outputs::validate;
use crate::process;
use crate::project::{self, Project};
use nyl_core::data::diagnostics::{self, Diagnostic};
use nyl_core::data::provenance::Catalog;
use nyl_core::expansion::manifest::Manifest;
use nyl_core::expansion::Entry;
use nyl_core::outputs::report;
use nyl_core::project::reference;
use nyl_core::project::schema;
use nyl_core::repository::argocd;
use nyl_core::values::release::ChartSpec;

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
    /// Show, for one value of an app, every layer that set it, lowest first, and which one won.
    Explain(ExplainArgs),
    /// Render manifests with the real `helm template` and print them as multi-document YAML.
    Render(RenderArgs),
    /// Render whole targets into plain Kubernetes trees (kustomization.yaml per app) for Flux and CI.
    RenderTree(RenderTreeArgs),
    /// What a change does to the rendered manifests, per resource, between two git revisions.
    Diff(DiffArgs),
    /// Check the whole repository: every file, object and contract, and every app of every target.
    Validate(ValidateArgs),
    /// Print the JSON Schema of a file kind, for editors (yaml-language-server).
    Schema {
        /// config, cluster, deployment-target, invocation, helm-chart or component.
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(schema::FILE_KINDS.iter().map(|k| k.name)))]
        kind: String,
    },
    /// The Argo CD config-management plugin's commands.
    #[command(subcommand)]
    Argocd(ArgocdCommand),
    /// Print nyl's version and the helm it runs (path and version).
    Version,
}

#[derive(Subcommand, Debug)]
enum ArgocdCommand {
    /// The plugin's generate command: render the app directory (the working directory).
    Generate(EngineArgs),
    /// The plugin's dynamic parameters: announce the project's targets as JSON.
    Parameters,
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

#[derive(clap::Args, Debug)]
struct ExplainArgs {
    #[command(flatten)]
    context: ContextArgs,
    /// The app: an invocation file, an app directory, a layout app directory or id.
    app: PathBuf,
    /// The value, as a JSON Pointer into the chart's values: `/storage/size`.
    pointer: String,
}

#[derive(clap::Args, Debug)]
struct RenderArgs {
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

#[derive(clap::Args, Debug)]
struct RenderTreeArgs {
    /// The DeploymentTarget (or Cluster) to render.
    #[arg(long, required_unless_present = "all_targets")]
    target: Option<String>,
    /// Every DeploymentTarget, and every Cluster layouts deploy to, each into DIR/<target>/.
    #[arg(long, conflicts_with = "target")]
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
    /// Namespace for releases that set none [default: $ARGOCD_APP_NAMESPACE, else "default"].
    #[arg(long)]
    namespace: Option<String>,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(clap::Args, Debug)]
struct DiffArgs {
    /// The base revision.
    #[arg(long)]
    base: String,
    /// The head revision [default: the working tree].
    #[arg(long)]
    head: Option<String>,
    /// Render every app of this DeploymentTarget (or, with APPs, those apps for it).
    #[arg(long)]
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
    engine: EngineArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum DiffFormat {
    Text,
    /// For a pull-request comment.
    Markdown,
}

#[derive(clap::Args, Debug)]
struct ValidateArgs {
    /// The directory to check (the repository root, or part of it).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Warnings fail the run too.
    #[arg(long)]
    strict: bool,
    /// Output format.
    #[arg(long = "output", short = 'o', value_enum, default_value_t = ValidateFormat::Text)]
    output: ValidateFormat,
    /// Only this DeploymentTarget.
    #[arg(long)]
    target: Option<String>,
    /// Check values only; do not render with Helm.
    #[arg(long)]
    no_render: bool,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ValidateFormat {
    Text,
    Json,
    /// GitHub Actions annotations for pull requests.
    Github,
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

#[derive(clap::Args, Debug)]
struct ValuesArgs {
    #[command(flatten)]
    inputs: InputArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Yaml)]
    output: Format,
    /// Add, for every leaf value, where it came from.
    #[arg(long)]
    explain: bool,
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
        Command::Values(args) => values(args),
        Command::Render(args) => render(args),
        Command::Explain(args) => explain(args),
        Command::Validate(args) => validate(args),
        Command::Diff(args) => diff(args),
        Command::RenderTree(args) => render_tree(args),
        Command::Schema { kind } => print_schema(&kind),
        Command::Argocd(ArgocdCommand::Generate(engine)) => argocd_generate(&engine),
        Command::Argocd(ArgocdCommand::Parameters) => argocd_parameters(),
        Command::Version => print_version(),
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
    let outcome = pipeline::values(&args.inputs.request(), args.explain);
    let status = report_diagnostics(outcome.diagnostics, &outcome.catalog);
    if status != 0 {
        return ExitCode::from(status);
    }
    let text = match args.output {
        Format::Yaml => report::to_yaml(
            &outcome.items,
            args.explain,
            &outcome.effective,
            &outcome.catalog,
        ),
        Format::Json => report::to_json(
            &outcome.items,
            args.explain,
            &outcome.effective,
            &outcome.catalog,
        ),
    };
    write_stdout(&text)
}

fn explain(args: ExplainArgs) -> ExitCode {
    let pointer = match nyl_core::data::pointer::Pointer::parse(&args.pointer) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {:?} is not a JSON Pointer: {e}", args.pointer);
            return ExitCode::from(2);
        }
    };
    let request = args.context.request(vec![args.app]);
    let (mut session, entries) = match pipeline::Session::start(&request) {
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
            ChartSpec::Local(dir) => match session.project.chart_values(dir) {
                Ok(chart) => {
                    coalesced = true;
                    chart
                }
                Err(problems) => {
                    session.diagnostics.extend(problems);
                    continue;
                }
            },
            ChartSpec::Remote(_) => nyl_core::values::coalesce::ChartValues::default(),
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
        session.diagnostics.extend(pipeline::helm_rules_check());
    }
    let status = report_diagnostics(session.diagnostics, &session.project.catalog);
    if status != 0 {
        return ExitCode::from(status);
    }
    write_stdout(&text)
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn render(args: RenderArgs) -> ExitCode {
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
fn print_render(request: &render::Request, format: Format) -> ExitCode {
    print_outcome(render::render(request), format)
}

fn print_outcome(mut outcome: render::Outcome, format: Format) -> ExitCode {
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

/// The parts of a render request that [`EngineArgs`] and the environment decide.
fn engine_request(engine: &EngineArgs) -> render::Request {
    let mode = if engine.no_cache {
        cache::Mode::Off
    } else if engine.refresh {
        cache::Mode::Refresh
    } else {
        cache::Mode::ReadWrite
    };
    render::Request {
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
        gate: render::Gate::AllInputs,
    }
}

fn argocd_generate(engine: &EngineArgs) -> ExitCode {
    let settings = match argocd::settings(&env_var) {
        Ok(s) => s,
        Err(problems) => return ExitCode::from(report_diagnostics(problems, &Catalog::default())),
    };
    if let Some((namespace, name)) = &settings.app {
        tracing::info!(app = %name, app_namespace = ?namespace, target = ?settings.target, "argocd generate");
    }
    let app_dir = PathBuf::from(".");
    // The project is the app directory's, and `path` must stay inside it (checked when read).
    let path = match &settings.path {
        Some(p) => app_dir.join(p),
        None => app_dir.clone(),
    };
    let root = match plugin_root(settings.source_path.as_deref()) {
        Ok(root) => root,
        Err(d) => return ExitCode::from(report_diagnostics(vec![d], &Catalog::default())),
    };
    // Argo CD never sends the default `parameters` announced: apply it here.
    let target = settings.target.or_else(|| {
        let (project, _) = Project::load(root.clone()).ok()?;
        argocd::default_target(&project.target_names()).cloned()
    });
    let request = render::Request {
        inputs: Request {
            paths: vec![path],
            root: Some(root),
            target,
            default_namespace: settings
                .app_namespace
                .unwrap_or_else(|| "default".to_string()),
            values: settings.values,
            target_values: settings.target_values,
        },
        kube_version: settings.kube_version,
        api_versions: settings.api_versions,
        allow_empty: settings.allow_empty,
        ..engine_request(engine)
    };
    let mut outcome = render::render(&request);
    outcome.diagnostics = outcome
        .diagnostics
        .into_iter()
        .map(argocd::plugin_wording)
        .collect();
    print_outcome(outcome, Format::Yaml)
}

fn validate(args: ValidateArgs) -> ExitCode {
    let request = validate::Request {
        dir: args.dir,
        target: args.target,
        render: !args.no_render,
        engine: render::Request {
            inputs: Request {
                default_namespace: default_namespace(None),
                ..Request::default()
            },
            ..engine_request(&args.engine)
        },
    };
    let report = match validate::validate(&request, args.strict) {
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

fn diff(args: DiffArgs) -> ExitCode {
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
                default_namespace: default_namespace(None),
                ..Request::default()
            },
            ..engine_request(&args.engine)
        },
    };
    let diffs = match diff::run(&request, Path::new(".")) {
        Ok(diffs) => diffs,
        Err(problems) => {
            let mut status = 0;
            for (d, catalog) in &problems {
                eprintln!("{}", d.render(catalog));
                status = status.max(diagnostics::exit_status(std::slice::from_ref(d)));
            }
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

fn render_tree(args: RenderTreeArgs) -> ExitCode {
    let request = tree::Request {
        targets: args.target.into_iter().collect(),
        all_targets: args.all_targets,
        output: args.output_dir,
        check: args.check,
        flux_escape: args.flux_escape,
        allow_empty: args.allow_empty,
        engine: render::Request {
            inputs: Request {
                default_namespace: default_namespace(args.namespace),
                ..Request::default()
            },
            ..engine_request(&args.engine)
        },
    };
    let outcome = tree::run(&request);
    let mut status = 0;
    for (d, catalog) in &outcome.diagnostics {
        eprintln!("{}", d.render(catalog));
        status = status.max(diagnostics::exit_status(std::slice::from_ref(d)));
    }
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

fn print_schema(name: &str) -> ExitCode {
    let Some(kind) = schema::FILE_KINDS.iter().find(|k| k.name == name) else {
        return ExitCode::from(2);
    };
    let mut text = serde_json::to_string_pretty(&reference::json_schema(kind)).unwrap_or_default();
    text.push('\n');
    write_stdout(&text)
}

/// Succeeds without a usable helm too: saying which helm nyl would run, or why none, is its job.
fn print_version() -> ExitCode {
    let helm = match helm::Helm::find() {
        None => "not found (set NYL_HELM or put helm on PATH)".to_string(),
        // Only its version is asked for, so no output budget for renders.
        Some(_) => match helm::Helm::locate(None, helm::DEFAULT_TIMEOUT, 0) {
            Ok(helm) => format!("{} ({})", helm.path.display(), helm.version),
            Err(d) => d.message,
        },
    };
    write_stdout(&format!(
        "nyl {}\nhelm: {helm}\n",
        env!("CARGO_PKG_VERSION")
    ))
}

/// The project of the plugin's working directory (the app directory), found no higher than the
/// repository root Argo CD unpacked.
fn plugin_root(source_path: Option<&str>) -> Result<PathBuf, Diagnostic> {
    let cwd = std::env::current_dir()
        .map_err(|e| Diagnostic::new(diagnostics::Code::PathNotFound, format!(".: {e}")))?;
    let boundary = argocd::repository_root(&cwd, source_path)?;
    project::find_root_within(&cwd, Some(&boundary))
}

fn argocd_parameters() -> ExitCode {
    let targets = match plugin_root(env_var("ARGOCD_APP_SOURCE_PATH").as_deref())
        .map_err(|d| (Catalog::default(), vec![d]))
        .and_then(Project::load)
    {
        Ok((project, _)) => project.target_names(),
        // Announcements must not fail the UI: without a usable project, offer no targets.
        Err(_) => Vec::new(),
    };
    let mut text = argocd::announcements(&targets).to_string();
    text.push('\n');
    write_stdout(&text)
}

/// Prints every diagnostic to stderr, in a stable order, and returns the exit status they imply.
fn report_diagnostics(mut diags: Vec<Diagnostic>, catalog: &Catalog) -> u8 {
    diagnostics::sort(&mut diags, catalog);
    let mut stderr = io::stderr().lock();
    for d in &diags {
        let _ = writeln!(stderr, "{}", d.render(catalog));
    }
    diagnostics::exit_status(&diags)
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
