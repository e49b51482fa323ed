//! Command-line options the commands share, and what they do before a command runs: `-C DIR`,
//! `-v`/`--debug` (logging), reading the values files of `-f`, the target and namespace, and
//! how renders run (`-j`, the render cache, Helm's timeout) with the environment's defaults.

use std::io::{self, IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ValueEnum;

use crate::apps::pipeline::{Request, RuntimeValues};
use crate::helm;
use crate::helm::cache;
use crate::progress::Progress;
use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::project::objects::Limits;

/// Options of every command.
#[derive(clap::Args, Debug)]
pub(super) struct Global {
    /// Run as if nyl was started in DIR, as `git -C DIR`: before the command's name, repeatable,
    /// each relative to the one before.
    // Not `global`: clap would let a later position replace the earlier ones, not add to them.
    #[arg(short = 'C', value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Log more to stderr: -v what nyl does, -vv (or --debug) each step, -vvv everything;
    /// RUST_LOG, when set, wins. Before or after the command's name.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Log each step to stderr (as -vv).
    #[arg(long, global = true)]
    pub debug: bool,
}

impl Global {
    /// Changes into the `-C` directories, in order; the message says which one failed.
    pub(super) fn enter_dirs(&self) -> Result<(), String> {
        for dir in &self.dirs {
            std::env::set_current_dir(dir)
                .map_err(|e| format!("error: -C {}: {e}", dir.display()))?;
        }
        Ok(())
    }

    /// Logs to stderr with `tracing`: RUST_LOG when set, else the level `-v`/`--debug` ask for.
    pub(super) fn init_logging(&self) {
        use tracing_subscriber::EnvFilter;
        let verbosity = if self.debug {
            self.verbose.max(2)
        } else {
            self.verbose
        };
        let filter = EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| EnvFilter::new(log_filter(verbosity)));
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(io::stderr)
            .with_ansi(io::stderr().is_terminal())
            .without_time()
            .init();
    }
}

/// The `RUST_LOG` directives a verbosity stands for. nyl's crates all start with `nyl` (a
/// directive's target is a prefix), so other crates stay at warnings until `-vvv`.
fn log_filter(verbosity: u8) -> &'static str {
    match verbosity {
        0 => "warn",
        1 => "warn,nyl=info",
        2 => "warn,nyl=debug",
        _ => "trace",
    }
}

/// The name the values read from stdin go by (`-f -`).
const STDIN: &str = "<stdin>";

/// Reads the values files of `-f`, in order (`-` is stdin, read once): every problem, or the
/// sources, each bounded by the operator's `max_file_bytes`.
fn read_values_files(files: &[PathBuf]) -> Result<Vec<RuntimeValues>, Vec<Diagnostic>> {
    let max = Limits::ceilings(&|k| std::env::var(k).ok())
        .unwrap_or_default()
        .max_file_bytes;
    let mut stdin: Option<String> = None;
    let mut sources = Vec::new();
    let mut problems = Vec::new();
    for file in files {
        let read = if file == Path::new("-") {
            match &stdin {
                Some(text) => Ok(text.clone()),
                None => bounded(io::stdin().lock(), max, STDIN).inspect(|text| {
                    stdin = Some(text.clone());
                }),
            }
        } else {
            let name = file.display().to_string();
            std::fs::File::open(file)
                .map_err(|e| open_error(file, &e))
                .and_then(|f| bounded(f, max, &name))
        };
        match read {
            Ok(text) => sources.push(RuntimeValues {
                source: if file == Path::new("-") {
                    STDIN.to_string()
                } else {
                    file.display().to_string()
                },
                text,
                file: true,
            }),
            Err(d) => problems.push(d),
        }
    }
    if problems.is_empty() {
        Ok(sources)
    } else {
        Err(problems)
    }
}

/// Up to `max` bytes of UTF-8 text; `file_too_large` beyond.
fn bounded(reader: impl Read, max: u64, name: &str) -> Result<String, Diagnostic> {
    let mut bytes = Vec::new();
    reader
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Diagnostic::new(Code::IoError, format!("-f {name}: cannot read: {e}")))?;
    if bytes.len() as u64 > max {
        return Err(Diagnostic::new(
            Code::FileTooLarge,
            format!(
                "-f {name}: the values file has more than {}",
                Limits::describe("max_file_bytes", max)
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        Diagnostic::new(
            Code::YamlSyntax,
            format!("-f {name}: the values file is not valid UTF-8"),
        )
    })
}

/// `path_not_found` for a values file that cannot be opened; a YAML string where a file was
/// expected (`--values` took one before it followed Helm) is told where it goes now.
fn open_error(file: &Path, e: &io::Error) -> Diagnostic {
    let text = file.display().to_string();
    let hint = if text.contains([':', '{', '\n']) {
        "; -f/--values takes a values file, as in Helm: give YAML text with --values-yaml"
    } else {
        ""
    };
    Diagnostic::new(Code::PathNotFound, format!("-f {text}: {e}{hint}"))
}

#[derive(clap::Args, Debug)]
pub(super) struct NamespaceArg {
    /// Namespace for releases that set none [default: $ARGOCD_APP_NAMESPACE, else "default"].
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    namespace: Option<String>,
}

impl NamespaceArg {
    /// The namespace of invocations without one: the flag, then Argo CD's app namespace, then
    /// `default`, as `helm template` would use.
    pub(super) fn resolve(self) -> String {
        self.namespace
            .or_else(|| env_var("ARGOCD_APP_NAMESPACE"))
            .unwrap_or_else(|| "default".to_string())
    }
}

/// The target and runtime values, for `values`, `render` and `explain`.
#[derive(clap::Args, Debug)]
pub(super) struct ContextArgs {
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
    pub(super) fn request(self, paths: Vec<PathBuf>) -> Result<Request, Vec<Diagnostic>> {
        let mut values = read_values_files(&self.values)?;
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
pub(super) struct InputArgs {
    #[command(flatten)]
    context: ContextArgs,
    /// Invocation files, directories of an app, layout app directories, or layout app ids
    /// (`prod.*.cert-manager`); with --target, a directory that is no app itself stands for the
    /// target's apps below it [default: with --target, every app of the target; else "."].
    paths: Vec<PathBuf>,
}

impl InputArgs {
    /// The request, and whether it may be for the apps of its target: a target, and no paths or
    /// only directories (which [`super::whole_target`] then decides).
    pub(super) fn request(self) -> Result<(Request, bool), Vec<Diagnostic>> {
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
pub(super) struct EngineArgs {
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
pub(super) enum Format {
    Yaml,
    Json,
}

/// Progress of a long command, on a terminal only.
pub(super) fn progress(command: &'static str) -> Progress {
    Progress::new(command, io::stderr().is_terminal())
}

pub(super) fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The parts of a render request that [`EngineArgs`] and the environment decide.
pub(super) fn engine_request(
    engine: &EngineArgs,
    progress: Progress,
) -> crate::expansion::render::Request {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_raises_only_nyls_own_logs_until_the_last_level() {
        assert_eq!(log_filter(0), "warn");
        assert_eq!(log_filter(1), "warn,nyl=info");
        assert_eq!(log_filter(2), "warn,nyl=debug");
        assert_eq!(log_filter(7), "trace");
    }

    #[test]
    fn a_values_file_larger_than_the_bound_is_refused() {
        let d = bounded(&b"a: 1\n"[..], 4, "x.yaml").unwrap_err();
        assert_eq!(d.code, Code::FileTooLarge);
        assert_eq!(bounded(&b"a: 1\n"[..], 5, "x.yaml").unwrap(), "a: 1\n");
        let d = bounded(&b"a: \xff\n"[..], 9, "x.yaml").unwrap_err();
        assert_eq!(d.code, Code::YamlSyntax);
    }
}
