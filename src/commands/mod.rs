//! The command line: parse arguments, run, print diagnostics to stderr and results to stdout, map
//! the outcome to an exit status (0 ok, 1 problems in the input, 2 usage or internal errors).
//! One module per command; this one holds what they share: the options, the environment defaults,
//! the printer of diagnostics and the writer of stdout.

mod argocd;
mod diff;
mod explain;
mod options;
mod render;
mod render_tree;
mod schema;
mod validate;
mod values;
mod version;
mod whole_target;

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::apps::pipeline::{Request, RuntimeValues};
use crate::helm;
use crate::helm::cache;
use crate::process;
use crate::progress::Progress;
use nyl_core::data::diagnostics::{self, Diagnostic};
use nyl_core::data::provenance::Catalog;
use nyl_core::expansion::manifest::Part;

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
#[derive(clap::Args, Debug)]
struct NamespaceArg {
    /// Namespace for releases that set none [default: $ARGOCD_APP_NAMESPACE, else "default"].
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    namespace: Option<String>,
}

impl NamespaceArg {
    /// The namespace of invocations without one: the flag, then Argo CD's app namespace, then
    /// `default`, as `helm template` would use.
    fn resolve(self) -> String {
        self.namespace
            .or_else(|| env_var("ARGOCD_APP_NAMESPACE"))
            .unwrap_or_else(|| "default".to_string())
    }
}

/// The target and runtime values, for `values`, `render` and `explain`.
#[derive(clap::Args, Debug)]
struct ContextArgs {
    /// The DeploymentTarget (or, when none has the name, the Cluster) whose values feed imports.
    #[arg(long, env = "NYL_TARGET", value_name = "NAME")]
    target: Option<String>,
    #[command(flatten)]
    namespace: NamespaceArg,
    /// A values file for the app's one release, as Helm's: repeatable, each over the ones before
    /// (maps merge, anything else replaces); `-` reads stdin.
    #[arg(short = 'f', long = "values", value_name = "FILE")]
    values: Vec<PathBuf>,
    /// Values as a YAML string, over the values files.
    #[arg(long = "values-yaml", value_name = "YAML")]
    values_yaml: Option<String>,
    /// Runtime target values (a YAML string), merged over the effective target values.
    #[arg(long = "target-values", value_name = "YAML")]
    target_values: Option<String>,
}

impl ContextArgs {
    /// The request; `Err` with the problems of reading the values files.
    fn request(self, paths: Vec<PathBuf>) -> Result<Request, Vec<Diagnostic>> {
        let mut values = options::read_values_files(&self.values)?;
        values.extend(self.values_yaml.map(RuntimeValues::yaml));
        Ok(Request {
            paths,
            root: None,
            target: self.target,
            default_namespace: self.namespace.resolve(),
            values,
            target_values: self.target_values,
        })
    }
}

/// What to evaluate, for `values` and `render`.
#[derive(clap::Args, Debug)]
struct InputArgs {
    #[command(flatten)]
    context: ContextArgs,
    /// Invocation files, directories of an app, layout app directories, or layout app ids
    /// (`prod.*.cert-manager`); with --target, a directory that is no app itself stands for the
    /// target's apps below it [default: with --target, every app of the target; else "."].
    paths: Vec<PathBuf>,
}

impl InputArgs {
    /// The request, and whether it may be for the apps of its target: a target, and no paths or
    /// only directories (which [`whole_target`] then decides).
    fn request(self) -> Result<(Request, bool), Vec<Diagnostic>> {
        let whole_target = self.context.target.is_some() && self.paths.iter().all(|p| p.is_dir());
        let paths = if self.paths.is_empty() && !whole_target {
            vec![PathBuf::from(".")]
        } else {
            self.paths
        };
        Ok((self.context.request(paths)?, whole_target))
    }
}

/// How renders run: parallelism and the render cache.
#[derive(clap::Args, Debug)]
struct EngineArgs {
    /// Helm renders (and apps, for validate and render-tree) to run at once [default: the
    /// available cores]; NYL_JOBS sets it where no flag can be given (the Argo CD sidecar).
    #[arg(short = 'j', long = "jobs", env = "NYL_JOBS", value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
    /// Neither read nor write the render cache.
    #[arg(long, conflicts_with = "refresh")]
    no_cache: bool,
    /// Render again and overwrite the cache entries, without reading them.
    #[arg(long)]
    refresh: bool,
    /// Seconds one release may spend in Helm (its `helm template`, after a remote chart's `helm pull`)
    /// before it is stopped; `limits.helm_timeout_seconds` in nyl.toml can only lower it.
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

/// Progress of a long command, on a terminal only.
fn progress(command: &'static str) -> Progress {
    Progress::new(command, io::stderr().is_terminal())
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The parts of a render request that [`EngineArgs`] and the environment decide.
fn engine_request(engine: &EngineArgs, progress: Progress) -> crate::expansion::render::Request {
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
        jobs: engine.jobs.and_then(|j| usize::try_from(j).ok()),
        cache_dir: cache::default_dir(),
        cache: mode,
        cache_max_bytes: env_var("NYL_CACHE_MAX_BYTES")
            .and_then(|v| v.parse().ok())
            .unwrap_or(cache::DEFAULT_MAX_BYTES),
        helm_timeout: Duration::from_secs(engine.helm_timeout),
        gate: crate::expansion::render::Gate::AllInputs,
        progress,
        stored_output: false,
        apps_at_once: 1,
    }
}

/// A JSON array, pretty-printed, with a final line break.
fn json_text(items: &[serde_json::Value]) -> String {
    let mut text = serde_json::to_string_pretty(items).unwrap_or_else(|_| "[]".into());
    text.push('\n');
    text
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
    write_stdout_parts([Part::Text(text)])
}

/// Writes the parts to stdout; a closed pipe is no error (the reader has seen enough).
fn write_stdout_parts<'a>(parts: impl IntoIterator<Item = Part<'a>>) -> ExitCode {
    let mut stdout = io::stdout().lock();
    let fd = stdout.as_raw_fd();
    let written = write_all_parts(&mut stdout, Some(fd), parts).and_then(|()| stdout.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write output: {e}");
            ExitCode::from(2)
        }
    }
}

/// Writes the parts as they are, in few system calls and without the whole output in memory:
/// text gathered (`writev`), not copied into a buffer first (the output can be megabytes, most
/// of it slices of Helm's output); stored bytes that follow each other in their file joined into
/// one run, a long run sent from the file by the kernel (`sendfile`), short ones (between the
/// lines nyl inserts) read a block at a time and written with the text around them.
fn write_all_parts<'a>(
    out: &mut impl Write,
    fd: Option<RawFd>,
    parts: impl IntoIterator<Item = Part<'a>>,
) -> io::Result<()> {
    let mut gather = Gather {
        fd,
        segments: Vec::new(),
        buf: Vec::new(),
        window: None,
    };
    let mut run: Option<(&File, std::ops::Range<usize>)> = None;
    for part in parts {
        match part {
            Part::Text("") => {}
            Part::Text(text) => {
                if let Some((file, range)) = run.take() {
                    gather.stored(out, file, range)?;
                }
                gather.segments.push(Segment::Text(text));
            }
            Part::Stored(stored, range) => {
                let file = stored.bytes.downcast_ref::<File>().ok_or_else(|| {
                    io::Error::other("internal error: stored output not in a file")
                })?;
                run = match run.take() {
                    Some((f, r)) if std::ptr::eq(f, file) && r.end == range.start => {
                        Some((f, r.start..range.end))
                    }
                    Some((f, r)) => {
                        gather.stored(out, f, r)?;
                        Some((file, range))
                    }
                    None => Some((file, range)),
                };
            }
        }
    }
    if let Some((file, range)) = run {
        gather.stored(out, file, range)?;
    }
    gather.flush(out)
}

/// A run of stored bytes this long goes by `sendfile`; shorter ones are read into the buffer.
const SEND_FROM: usize = 64 << 10;
/// The buffer for short runs of stored bytes.
const GATHER_BYTES: usize = 256 << 10;

/// What is gathered for the next `writev`.
struct Gather<'a> {
    fd: Option<RawFd>,
    segments: Vec<Segment<'a>>,
    /// A window of a stored file (which, and where it starts), read a block at a time: the
    /// short runs between lines nyl inserts are served from it in order, not read one by one.
    buf: Vec<u8>,
    window: Option<(&'a File, usize)>,
}

enum Segment<'a> {
    Text(&'a str),
    /// A range of the buffer.
    Buf(std::ops::Range<usize>),
}

impl<'a> Gather<'a> {
    /// A run of stored bytes, sent or gathered.
    fn stored(
        &mut self,
        out: &mut impl Write,
        file: &'a File,
        mut range: std::ops::Range<usize>,
    ) -> io::Result<()> {
        if range.len() >= SEND_FROM {
            if let Some(fd) = self.fd {
                self.flush(out)?;
                // What `out` holds goes first.
                out.flush()?;
                range.start = helm::output::send(fd, file, range.clone())?;
            }
        }
        while !range.is_empty() {
            match self.window {
                Some((f, at))
                    if std::ptr::eq(f, file)
                        && at <= range.start
                        && range.start < at + self.buf.len() =>
                {
                    let end = range.end.min(at + self.buf.len());
                    self.segments.push(Segment::Buf(range.start - at..end - at));
                    range.start = end;
                }
                _ => {
                    // The segments point into the window: out before it moves.
                    self.flush(out)?;
                    self.buf.resize(GATHER_BYTES, 0);
                    let n = read_at_most(file, &mut self.buf, range.start)?;
                    if n == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    self.buf.truncate(n);
                    self.window = Some((file, range.start));
                }
            }
        }
        Ok(())
    }

    fn flush(&mut self, out: &mut impl Write) -> io::Result<()> {
        let mut slices: Vec<io::IoSlice> = self
            .segments
            .iter()
            .map(|s| match s {
                Segment::Text(text) => io::IoSlice::new(text.as_bytes()),
                Segment::Buf(range) => io::IoSlice::new(&self.buf[range.clone()]),
            })
            .collect();
        let mut rest = &mut slices[..];
        while !rest.is_empty() {
            match out.write_vectored(rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => io::IoSlice::advance_slices(&mut rest, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.segments.clear();
        self.buf.clear();
        self.window = None;
        Ok(())
    }
}

/// Reads from `at` into `buf` until it is full or the file ends; the bytes read.
fn read_at_most(file: &File, buf: &mut [u8], at: usize) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], (at + n) as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nyl_core::expansion::manifest::Stored;

    /// Takes at most 3 bytes of one slice per call, as a pipe may take less than offered.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(3);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn parts_are_written_whole_and_in_order_however_little_each_write_takes() {
        let texts = ["---\n", "", "kind: A\n", "metadata:\n  namespace: x\n", "b"];
        // Stored bytes between the texts, from a file, as a large release's output is passed on.
        let path = std::env::temp_dir().join(format!("nyl-parts-{}", std::process::id()));
        let stored_text = "x".repeat(300 << 10) + "---\nkind: B\n";
        std::fs::write(&path, format!("junk{stored_text}junk")).unwrap();
        let stored = Stored {
            bytes: std::sync::Arc::new(File::open(&path).unwrap()),
            len: stored_text.len() + 8,
        };
        std::fs::remove_file(&path).unwrap();
        let range = 4..4 + stored_text.len();
        let text_parts = || texts.iter().map(|t| Part::Text(t));
        let parts = || {
            let stored = Part::Stored(&stored, range.clone());
            text_parts()
                .take(3)
                .chain([stored])
                .chain(text_parts().skip(3))
        };
        let expected = [
            &texts[..3].concat(),
            stored_text.as_str(),
            &texts[3..].concat(),
        ]
        .concat();
        let mut out = Trickle(Vec::new());
        write_all_parts(&mut out, None, parts()).unwrap();
        assert_eq!(out.0, expected.as_bytes());
        let mut out = Vec::new();
        write_all_parts(&mut out, None, parts()).unwrap();
        assert_eq!(out, expected.as_bytes());
        // Into a file's descriptor: the stored bytes by `sendfile`, in their place.
        let target = std::env::temp_dir().join(format!("nyl-parts-out-{}", std::process::id()));
        let mut file = File::create(&target).unwrap();
        let fd = file.as_raw_fd();
        write_all_parts(&mut file, Some(fd), parts()).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), expected);
        // Documents one after another in their file, some with a line inserted between: runs
        // joined where nothing is between, each byte in its place.
        let pieces: Vec<std::ops::Range<usize>> = (0..stored_text.len())
            .step_by(1000)
            .map(|s| 4 + s..4 + (s + 1000).min(stored_text.len()))
            .collect();
        let many = || {
            pieces.iter().enumerate().flat_map(|(i, r)| {
                let between = if i % 7 == 0 { "  namespace: x\n" } else { "" };
                [Part::Stored(&stored, r.clone()), Part::Text(between)]
            })
        };
        let expected: String = pieces
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let between = if i % 7 == 0 { "  namespace: x\n" } else { "" };
                format!("{}{between}", &stored_text[r.start - 4..r.end - 4])
            })
            .collect();
        let mut file = File::create(&target).unwrap();
        let fd = file.as_raw_fd();
        write_all_parts(&mut file, Some(fd), many()).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), expected);
        let mut out = Trickle(Vec::new());
        write_all_parts(&mut out, None, many()).unwrap();
        assert_eq!(out.0, expected.as_bytes());
        std::fs::remove_file(&target).unwrap();
    }
}
