//! Command-line options every command shares, and what they do before a command runs: `-C DIR`,
//! `-v`/`--debug` (logging), and reading the values files of `-f`.

use std::io::{self, IsTerminal, Read};
use std::path::{Path, PathBuf};

use crate::apps::pipeline::RuntimeValues;
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
pub(super) fn read_values_files(files: &[PathBuf]) -> Result<Vec<RuntimeValues>, Vec<Diagnostic>> {
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
