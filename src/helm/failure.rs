//! Why `helm template` gave no output for a release, and the code each reason is reported with.

use std::time::Duration;

use nyl_core::data::diagnostics::Code;

/// Why `helm template` gave no output for a release.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Helm failed: its message, trimmed to one line and to a few KB.
    Failed(String),
    /// Helm was still running at its deadline.
    TimedOut(Duration),
    /// Helm printed more than the render's output budget (its size in bytes).
    OutputTooLarge(u64),
}

impl Failure {
    pub fn code(&self) -> Code {
        match self {
            Failure::Failed(_) => Code::HelmFailed,
            Failure::TimedOut(_) => Code::HelmTimeout,
            Failure::OutputTooLarge(_) => Code::HelmOutputTooLarge,
        }
    }
}

impl std::fmt::Display for Failure {
    /// Completes "helm template CHART ...".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Failed(message) => write!(f, "failed: {message}"),
            Failure::TimedOut(limit) => write!(
                f,
                "did not finish within {} s and was stopped; look for a template that loops, \
                 or raise --helm-timeout (NYL_HELM_TIMEOUT)",
                limit.as_secs()
            ),
            Failure::OutputTooLarge(max) => write!(
                f,
                "printed more than {max} bytes, all that one render may take in from Helm \
                 (limits.max_render_bytes), and was stopped"
            ),
        }
    }
}
