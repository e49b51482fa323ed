//! `nyl version`: nyl's version and the helm it runs.

use std::process::ExitCode;

use crate::helm;

use super::print::write_stdout;

/// Succeeds without a usable helm too: saying which helm nyl would run, or why none, is its job.
pub(super) fn print_version() -> ExitCode {
    let helm = match helm::Helm::find() {
        None => "not found (set NYL_HELM or put helm on PATH)".to_string(),
        // Only its version is asked for, so no output budget for renders.
        Some(_) => match helm::Helm::locate(None, helm::DEFAULT_TIMEOUT, 0) {
            Ok(helm) => format!(
                "{} ({})",
                helm.path.display(),
                helm.version().unwrap_or_default()
            ),
            Err(d) => d.message,
        },
    };
    write_stdout(&format!(
        "nyl {}\nhelm: {helm}\n",
        env!("CARGO_PKG_VERSION")
    ))
}
