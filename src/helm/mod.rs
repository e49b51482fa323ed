//! The real Helm: finding the binary, checking its version once, and running `helm template` (and
//! `helm pull` for a remote chart, which [`crate::helm::remote`] checks before it is rendered).
//!
//! Values go to Helm as JSON on stdin (`-f -`), so Helm never re-reads nyl's values as YAML.
//! Every Helm process runs through [`crate::process`]: within a deadline, its stdout read against
//! the render's byte budget, its stderr cut to a few KB, stopped when nyl is.
//!
//! Nothing from a repository reaches Helm's command line as a flag: names are checked where they
//! are read ([`nyl_core::project::objects::RemoteChart::check`], release and namespace names), flags carry
//! their values as `--flag=value`, and `--` comes before the positional release and chart.

mod build_info;
pub mod cache;
mod digest;
mod failure;
pub mod output;
pub mod remote;
pub mod values_schema;

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};

use tracing::{debug, warn};

use crate::process::{self, Stopped};
pub use failure::Failure;
use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::project::objects::ChartSource;
use nyl_core::project::objects::RemoteChart;
use nyl_core::values::coalesce::parse_version;
use output::Reading;

/// The oldest Helm nyl supports: `--api-versions` entries, OCI support and `-f -` behave as nyl
/// expects from 3.8 on.
const MIN_VERSION: (u64, u64) = (3, 8);

/// The default of `--helm-timeout`: below Argo CD's 60 s for a whole manifest request, so a
/// stalled chart fails with its own error rather than Argo CD's timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// More than `helm version` ever prints.
const PROBE_MAX_BYTES: u64 = 64 << 10;

/// A located and version-checked helm binary, with the bounds of the render that runs it.
#[derive(Clone, Debug)]
pub struct Helm {
    pub path: PathBuf,
    /// Its version as Helm prints it (`v4.3.1`), checked: remembered, or being asked.
    version: Arc<Probe>,
    /// Size and modification time: with the version, what the render cache keys the binary by.
    file: String,
    /// How long one release may take in Helm: one `helm template`, or a remote chart's
    /// `helm pull` and `helm template` together.
    timeout: Duration,
    /// When the release this helm serves must be done ([`Helm::for_release`]); `None`: each
    /// process gets the whole `timeout`.
    deadline: Option<Instant>,
    /// The bytes of Helm output this render may still take in, all releases together.
    output_left: Arc<AtomicU64>,
    /// The budget it started with, for messages.
    max_output: u64,
}

/// Everything `helm template` is given for one release.
#[derive(Clone, Debug)]
pub struct Template<'a> {
    pub release: &'a str,
    pub namespace: &'a str,
    pub chart: &'a ChartSource<PathBuf>,
    pub values_json: &'a str,
    pub kube_version: Option<&'a str>,
    pub api_versions: &'a [String],
    pub include_crds: bool,
    /// The CPUs Helm is told it may use (`GOMAXPROCS`), when the run shares the machine among
    /// several helms ([`crate::process::go_threads`]); `None`: Go's default, every core.
    pub go_threads: Option<usize>,
}

impl Helm {
    /// The helm binary nyl runs, unchecked: `NYL_HELM`, else `helm` in an absolute directory of
    /// `PATH`.
    pub fn find() -> Option<PathBuf> {
        match std::env::var_os("NYL_HELM").filter(|p| !p.is_empty()) {
            Some(path) => Some(PathBuf::from(path)),
            None => std::env::var_os("PATH").and_then(|dirs| find_on_path("helm", &dirs)),
        }
    }

    /// `NYL_HELM`, else `helm` on `PATH` ([`Helm::find`]), checked to be Helm 3.8 or newer
    /// ([`Helm::start`], waiting for the answer).
    pub fn locate(
        probes: Option<&Path>,
        timeout: Duration,
        max_output: u64,
    ) -> Result<Helm, Diagnostic> {
        let helm = Helm::start(probes, timeout, max_output)?;
        helm.version()?;
        Ok(helm)
    }

    /// `NYL_HELM`, else `helm` on `PATH` ([`Helm::find`]), to be checked to be Helm 3.8 or
    /// newer. Running `helm version` costs as much as a render, so its answer is remembered per
    /// binary (path, size and modification time) in `probes`, when given: a warm render then
    /// starts no process at all. Without a remembered answer, the version a release build of
    /// Helm recorded in the binary is taken ([`build_info`]); without that either, `helm
    /// version` runs on a thread of its own, alongside the first renders; [`Helm::version`]
    /// waits for it. Every Helm process
    /// gets `timeout`, the probe included; the `helm template` runs share `max_output` bytes of
    /// output.
    pub fn start(
        probes: Option<&Path>,
        timeout: Duration,
        max_output: u64,
    ) -> Result<Helm, Diagnostic> {
        let path = Helm::find().ok_or_else(|| {
            Diagnostic::new(
                Code::HelmNotFound,
                "helm was not found in an absolute directory of PATH; install Helm 3.8 or newer, \
                 or set NYL_HELM to its path",
            )
        })?;
        let meta = fs::metadata(&path).map_err(|e| {
            Diagnostic::new(
                Code::HelmNotFound,
                format!("cannot run helm at {}: {e}", path.display()),
            )
        })?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let identity = format!("{} {mtime}", meta.len());
        let probe = probes.map(|dir| {
            let name: String = Sha256::digest(format!("{} {identity}", path.display()))
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            dir.join(name)
        });
        let known = probe
            .as_ref()
            .and_then(|p| fs::read_to_string(p).ok())
            .or_else(|| build_info::helm_version(&path))
            .filter(|v| parse_version(v).is_some_and(|v| v >= MIN_VERSION));
        let version = match known {
            Some(version) => {
                debug!(helm = %path.display(), %version, "helm found");
                Probe::answered(Ok(version))
            }
            None => {
                debug!(helm = %path.display(), "helm found; asking its version");
                let binary = path.clone();
                Probe::asking(std::thread::spawn(move || {
                    let version = probe_version(&binary, timeout)?;
                    debug!(helm = %binary.display(), %version, "helm version answered");
                    if let Some(p) = &probe {
                        remember(p, &version);
                    }
                    Ok(version)
                }))
            }
        };
        Ok(Helm {
            path,
            file: identity,
            version: Arc::new(version),
            timeout,
            deadline: None,
            output_left: Arc::new(AtomicU64::new(max_output)),
            max_output,
        })
    }

    /// Its version as Helm prints it (`v4.3.1`), once `helm version` answered; the problem with
    /// the answer otherwise.
    pub fn version(&self) -> Result<String, Diagnostic> {
        self.version.answer()
    }

    /// Whether `helm version` is still being asked.
    pub fn probing(&self) -> bool {
        self.version.answer.get().is_none()
    }

    /// Version, size and modification time: what the render cache keys the binary by.
    pub fn identity(&self) -> Result<String, Diagnostic> {
        Ok(format!("{} {}", self.version()?, self.file))
    }

    /// The same helm, its processes from now on sharing one deadline (`timeout` from now): the
    /// `helm pull` and `helm template` of a remote chart are one release's time together.
    pub fn for_release(&self) -> Helm {
        Helm {
            deadline: Some(Instant::now() + self.timeout),
            ..self.clone()
        }
    }

    /// The same helm for another render of the run: located once, with this render's own output
    /// budget as it started.
    pub fn for_render(&self) -> Helm {
        Helm {
            output_left: Arc::new(AtomicU64::new(self.max_output)),
            ..self.clone()
        }
    }

    /// The time the next process may take.
    fn time_left(&self) -> Duration {
        self.deadline.map_or(self.timeout, |d| {
            d.saturating_duration_since(Instant::now())
        })
    }

    /// A helm that was never located, for tests that only need its identity.
    #[cfg(test)]
    pub(crate) fn unprobed(version: &str, file: &str) -> Helm {
        Helm {
            path: PathBuf::from("/nonexistent/helm"),
            version: Arc::new(Probe::answered(Ok(version.into()))),
            file: file.into(),
            timeout: DEFAULT_TIMEOUT,
            deadline: None,
            output_left: Arc::new(AtomicU64::new(0)),
            max_output: 0,
        }
    }

    /// The arguments of `helm template` for `t`, values read from stdin. Every flag carries its
    /// value after `=`, and `--` ends the flags, so no value can be read as a flag of its own.
    pub fn template_args(t: &Template<'_>) -> Vec<OsString> {
        Self::template_args_with(t, |dir| dir.into())
    }

    /// The same, with `local_chart` writing a local chart directory's argument: the render cache
    /// keys a chart by its content, not by where it is.
    pub fn template_args_with(
        t: &Template<'_>,
        local_chart: impl FnOnce(&Path) -> OsString,
    ) -> Vec<OsString> {
        let flag = |name: &str, value: &str| OsString::from(format!("--{name}={value}"));
        let mut args: Vec<OsString> = vec!["template".into(), flag("namespace", t.namespace)];
        if let Some(v) = t.kube_version {
            args.push(flag("kube-version", v));
        }
        for api in t.api_versions {
            args.push(flag("api-versions", api));
        }
        if t.include_crds {
            args.push("--include-crds".into());
        }
        args.push(flag("values", "-"));
        let chart = match t.chart {
            ChartSource::Local(dir) => local_chart(dir),
            ChartSource::Remote(remote) => {
                let (repo, chart) = remote_chart(remote);
                if let Some(repo) = repo {
                    args.push(flag("repo", &repo));
                }
                if let Some(version) = &remote.version {
                    args.push(flag("version", version));
                }
                chart.into()
            }
        };
        args.extend(["--".into(), t.release.into(), chart]);
        args
    }

    /// Runs `helm template` within the deadline and the output budget, its output read into
    /// `reading` as Helm prints it.
    pub fn template(&self, t: &Template<'_>, reading: &mut Reading) -> Result<(), Failure> {
        let args = Self::template_args(t);
        debug!(release = t.release, ?args, "helm template");
        let mut cmd = Command::new(&self.path);
        cmd.args(&args);
        // The operator's own GOMAXPROCS wins: it is Helm's environment, as nyl's is.
        if let Some(n) = t
            .go_threads
            .filter(|_| std::env::var_os("GOMAXPROCS").is_none())
        {
            cmd.env("GOMAXPROCS", n.to_string());
        }
        self.run(
            &mut cmd,
            t.values_json.as_bytes().to_vec(),
            (&self.output_left, self.max_output),
            t.release,
            reading,
        )
    }

    /// The arguments of `helm pull` for a remote chart, written into `destination`. As for
    /// `helm template`: every flag with its value after `=`, the chart after `--`.
    pub fn pull_args(remote: &RemoteChart, destination: &Path) -> Vec<OsString> {
        let (repo, chart) = remote_chart(remote);
        let mut args: Vec<OsString> = vec!["pull".into()];
        if let Some(repo) = repo {
            args.push(format!("--repo={repo}").into());
        }
        if let Some(version) = &remote.version {
            args.push(format!("--version={version}").into());
        }
        let mut dest = OsString::from("--destination=");
        dest.push(destination);
        args.extend([dest, "--".into(), chart.into()]);
        args
    }

    /// Runs `helm pull` for a remote chart into `destination`, with Helm's cache (the
    /// repository index it downloads) in `cache_home`; `release` names the release in logs.
    pub fn pull(
        &self,
        remote: &RemoteChart,
        destination: &Path,
        cache_home: &Path,
        release: &str,
    ) -> Result<(), Failure> {
        let args = Self::pull_args(remote, destination);
        debug!(release, ?args, "helm pull");
        let mut cmd = Command::new(&self.path);
        cmd.args(&args).env("HELM_CACHE_HOME", cache_home);
        // What `helm pull` prints is no render output: a budget of its own.
        let budget = AtomicU64::new(PROBE_MAX_BYTES);
        let mut ignore = |_: &[u8]| Ok(());
        self.run(
            &mut cmd,
            Vec::new(),
            (&budget, PROBE_MAX_BYTES),
            release,
            &mut ignore,
        )
    }

    /// Runs one Helm process within the time left and the stdout budget (what is left of it, and
    /// its size for messages), its stdout into `sink`.
    fn run(
        &self,
        cmd: &mut Command,
        stdin: Vec<u8>,
        (budget, max): (&AtomicU64, u64),
        release: &str,
        sink: &mut dyn process::Sink,
    ) -> Result<(), Failure> {
        let started = Instant::now();
        let ran = process::run(cmd, stdin, self.time_left(), budget, sink);
        // From the spawn to the reaping: with the whole run's time, what nyl adds to Helm's
        // (`RUST_LOG=helm_time=debug`, a target outside `nyl` as `peak_memory` is; bench/run).
        debug!(
            target: "helm_time",
            release,
            ms = started.elapsed().as_secs_f64() * 1e3,
            "helm ended"
        );
        let done = ran.map_err(|stopped| match stopped {
            Stopped::Io(e) => Failure::Failed(format!("cannot run {}: {e}", self.path.display())),
            Stopped::TimedOut => Failure::TimedOut(self.timeout),
            Stopped::OutputTooLarge => Failure::OutputTooLarge(max),
            Stopped::Refused(why) => Failure::Failed(why),
        })?;
        if !done.status.success() {
            return Err(Failure::Failed(done.stderr.text(trim_stderr)));
        }
        let warnings = done.stderr.text(str::to_string);
        for line in warnings.lines().filter(|l| !l.trim().is_empty()) {
            warn!(release, "helm: {line}");
        }
        Ok(())
    }

    /// Takes output that did not come from a Helm process this run (a cache hit) from the
    /// render's output budget, as if Helm had printed it.
    pub fn take_output(&self, bytes: usize) -> Result<(), Failure> {
        self.output_left
            .fetch_update(
                std::sync::atomic::Ordering::Relaxed,
                std::sync::atomic::Ordering::Relaxed,
                |left| left.checked_sub(bytes as u64),
            )
            .map(drop)
            .map_err(|_| Failure::OutputTooLarge(self.max_output))
    }
}

/// The answer of `helm version`, checked: given, or awaited from the thread that asks it.
#[derive(Debug)]
struct Probe {
    answer: OnceLock<Result<String, Diagnostic>>,
    asking: Mutex<Option<JoinHandle<Result<String, Diagnostic>>>>,
}

impl Probe {
    fn answered(answer: Result<String, Diagnostic>) -> Probe {
        Probe {
            answer: OnceLock::from(answer),
            asking: Mutex::new(None),
        }
    }

    fn asking(thread: JoinHandle<Result<String, Diagnostic>>) -> Probe {
        Probe {
            answer: OnceLock::new(),
            asking: Mutex::new(Some(thread)),
        }
    }

    /// The answer, waiting for it once.
    fn answer(&self) -> Result<String, Diagnostic> {
        if let Some(answer) = self.answer.get() {
            return answer.clone();
        }
        let mut asking = self.asking.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(thread) = asking.take() {
            let answer = thread.join().unwrap_or_else(|_| {
                Err(Diagnostic::new(
                    Code::HelmNotFound,
                    "internal error: asking `helm version` failed",
                ))
            });
            let _ = self.answer.set(answer);
        }
        self.answer.get().cloned().unwrap_or_else(|| {
            Err(Diagnostic::new(
                Code::HelmNotFound,
                "internal error: `helm version` was never asked",
            ))
        })
    }
}

/// Runs `helm version` and checks the answer.
fn probe_version(path: &Path, timeout: Duration) -> Result<String, Diagnostic> {
    let mut cmd = Command::new(path);
    cmd.args(["version", "--template", "{{.Version}}"]);
    let mut printed = Vec::new();
    let done = process::run(
        &mut cmd,
        Vec::new(),
        timeout,
        &AtomicU64::new(PROBE_MAX_BYTES),
        &mut process::keep_all(&mut printed),
    )
    .map_err(|stopped| match stopped {
        Stopped::Io(e) => Diagnostic::new(
            Code::HelmNotFound,
            format!("cannot run helm at {}: {e}", path.display()),
        ),
        Stopped::TimedOut => Diagnostic::new(
            Code::HelmVersionUnsupported,
            format!(
                "{} did not answer `helm version` within {} s; is it Helm?",
                path.display(),
                timeout.as_secs()
            ),
        ),
        Stopped::OutputTooLarge | Stopped::Refused(_) => Diagnostic::new(
            Code::HelmVersionUnsupported,
            format!(
                "{} printed more than {PROBE_MAX_BYTES} bytes for `helm version`; is it Helm?",
                path.display()
            ),
        ),
    })?;
    let version = String::from_utf8_lossy(&printed).trim().to_string();
    match parse_version(&version) {
        Some(v) if done.status.success() && v >= MIN_VERSION => Ok(version),
        Some(_) => Err(Diagnostic::new(
            Code::HelmVersionUnsupported,
            format!(
                "{} is Helm {version}; nyl needs Helm 3.8 or newer",
                path.display()
            ),
        )),
        None => Err(Diagnostic::new(
            Code::HelmVersionUnsupported,
            format!(
                "cannot read the version of {} (it printed {:?}); is it Helm?",
                path.display(),
                done.stderr
                    .text(|stderr| trim_stderr(&format!("{version}{stderr}")))
            ),
        )),
    }
}

/// `helm_rules_differ` when the helm that renders (`NYL_HELM`, else on `PATH`) is another minor
/// version than the one nyl coalesces values by; nothing without a helm, which explaining values
/// does not need.
pub fn rules_check() -> Option<Diagnostic> {
    // Only its version is asked for, so no output budget for renders.
    match Helm::locate(None, DEFAULT_TIMEOUT, 0) {
        Ok(helm) => nyl_core::values::coalesce::rules_warning(&helm.version().ok()?),
        Err(d) => {
            tracing::debug!(problem = %d.message, "no helm to compare coalescing rules with");
            None
        }
    }
}

/// Creates a directory (and missing parents) that only the user can enter.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Stores a probe's answer; a probe that cannot be stored is simply run again next time.
fn remember(probe: &Path, version: &str) {
    let Some(dir) = probe.parent() else { return };
    let tmp = dir.join(format!(".tmp-{}", std::process::id()));
    let stored = create_private_dir(dir)
        .and_then(|()| fs::write(&tmp, version))
        .and_then(|()| fs::rename(&tmp, probe));
    if stored.is_err() {
        let _ = fs::remove_file(&tmp);
    }
}

/// A remote chart as Helm takes it: `--repo` (for a chart repository) and the chart argument.
fn remote_chart(remote: &RemoteChart) -> (Option<String>, String) {
    if remote.repository.starts_with("oci://") {
        let chart = match &remote.chart {
            Some(chart) => format!("{}/{chart}", remote.repository.trim_end_matches('/')),
            None => remote.repository.clone(),
        };
        (None, chart)
    } else {
        (
            Some(remote.repository.clone()),
            remote.chart.clone().unwrap_or_default(),
        )
    }
}

/// The first `name` in an absolute directory of `dirs` (a `PATH`). Empty and relative entries
/// are skipped: they name the working directory, and in Argo CD that is the repository, where
/// anyone who can push could commit a `helm`.
fn find_on_path(name: &str, dirs: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(dirs)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Helm's error text without its noise: the `Error: ` prefix, the `--debug` hint, blank lines;
/// the remaining lines joined so the message fits on one diagnostic line.
pub fn trim_stderr(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Use --debug flag"))
        .map(|l| l.strip_prefix("Error: ").unwrap_or(l))
        .collect();
    lines.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("v4.3.1"), Some((4, 3)));
        assert_eq!(parse_version("v3.19.0+g3d8990f"), Some((3, 19)));
        assert_eq!(parse_version("garbage"), None);
        assert!(parse_version("v3.7.2").unwrap() < MIN_VERSION);
    }

    #[test]
    fn stderr_is_trimmed_to_one_line() {
        let stderr = "Error: values don't meet the specifications of the schema(s) in the following chart(s):\npostgres-db:\n- at '/backup': got string\n\nUse --debug flag to render out invalid YAML\n";
        assert_eq!(
            trim_stderr(stderr),
            "values don't meet the specifications of the schema(s) in the following chart(s):; postgres-db:; - at '/backup': got string"
        );
    }

    #[test]
    fn template_arguments_carry_every_input() {
        let chart = ChartSource::Remote(RemoteChart {
            repository: "https://charts.example.com".into(),
            chart: Some("nginx".into()),
            version: Some("1.2.3".into()),
        });
        let apis = vec![
            "batch/v1".to_string(),
            "monitoring.coreos.com/v1/ServiceMonitor".to_string(),
        ];
        let t = Template {
            release: "web",
            namespace: "apps",
            chart: &chart,
            values_json: "{}",
            kube_version: Some("1.31.0"),
            api_versions: &apis,
            include_crds: true,
            go_threads: None,
        };
        let args: Vec<String> = Helm::template_args(&t)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert_eq!(
            args.join(" "),
            "template --namespace=apps --kube-version=1.31.0 --api-versions=batch/v1 \
             --api-versions=monitoring.coreos.com/v1/ServiceMonitor --include-crds --values=- \
             --repo=https://charts.example.com --version=1.2.3 -- web nginx"
        );
        let oci = RemoteChart {
            repository: "oci://r.example/charts".into(),
            chart: Some("app".into()),
            version: None,
        };
        assert_eq!(
            remote_chart(&oci),
            (None, "oci://r.example/charts/app".to_string())
        );
        let ChartSource::Remote(remote) = &chart else {
            unreachable!()
        };
        let pull = |remote: &RemoteChart| -> String {
            Helm::pull_args(remote, Path::new("/tmp/d"))
                .into_iter()
                .map(|a| a.into_string().unwrap())
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            pull(remote),
            "pull --repo=https://charts.example.com --version=1.2.3 --destination=/tmp/d -- nginx"
        );
        assert_eq!(
            pull(&oci),
            "pull --destination=/tmp/d -- oci://r.example/charts/app"
        );
    }
}
