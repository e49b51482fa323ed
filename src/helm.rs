//! The real Helm: finding the binary, checking its version once, and running `helm template`.
//!
//! Values go to Helm as JSON on stdin (`-f -`), so Helm never re-reads nyl's values as YAML.
//! Helm's stdout and stderr are read concurrently, so a chatty chart cannot deadlock the run.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use tracing::{debug, warn};

use crate::diagnostics::{Code, Diagnostic};
use crate::objects::RemoteChart;
use crate::pipeline::ChartSpec;

/// The oldest Helm nyl supports: `--api-versions` entries, OCI support and `-f -` behave as nyl
/// expects from 3.8 on.
const MIN_VERSION: (u64, u64) = (3, 8);

/// A located and version-checked helm binary.
#[derive(Clone, Debug)]
pub struct Helm {
    pub path: PathBuf,
    /// As Helm prints it: `v4.3.1`.
    pub version: String,
    /// Version, size and modification time: what the render cache keys the binary by.
    pub identity: String,
}

/// Everything `helm template` is given for one release.
#[derive(Clone, Debug)]
pub struct Template<'a> {
    pub release: &'a str,
    pub namespace: &'a str,
    pub chart: &'a ChartSpec,
    pub values_json: &'a str,
    pub kube_version: Option<&'a str>,
    pub api_versions: &'a [String],
    pub include_crds: bool,
}

impl Helm {
    /// `NYL_HELM`, else `helm` on `PATH`, checked to be Helm 3.8 or newer. Running `helm version`
    /// costs as much as a render, so its answer is remembered per binary (path, size and
    /// modification time) in `probes`, when given: a warm render then starts no process at all.
    pub fn locate(probes: Option<&Path>) -> Result<Helm, Diagnostic> {
        let path = match std::env::var_os("NYL_HELM").filter(|p| !p.is_empty()) {
            Some(path) => PathBuf::from(path),
            None => find_on_path("helm").ok_or_else(|| {
                Diagnostic::new(
                    Code::HelmNotFound,
                    "helm was not found on PATH; install Helm 3.8 or newer, or set NYL_HELM to its path",
                )
            })?,
        };
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
        let remembered = probe
            .as_ref()
            .and_then(|p| fs::read_to_string(p).ok())
            .filter(|v| parse_version(v).is_some_and(|v| v >= MIN_VERSION));
        let version = match remembered {
            Some(version) => version,
            None => {
                let version = probe_version(&path)?;
                if let Some(p) = &probe {
                    remember(p, &version);
                }
                version
            }
        };
        debug!(helm = %path.display(), %version, "helm found");
        Ok(Helm {
            path,
            identity: format!("{version} {identity}"),
            version,
        })
    }

    /// The arguments of `helm template` for `t`, values read from stdin.
    pub fn template_args(t: &Template<'_>) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["template".into(), t.release.into()];
        match t.chart {
            ChartSpec::Local(dir) => args.push(dir.into()),
            ChartSpec::Remote(remote) => {
                args.extend(remote_args(remote).into_iter().map(OsString::from))
            }
        }
        args.extend(["--namespace".into(), t.namespace.into()]);
        if let Some(v) = t.kube_version {
            args.extend(["--kube-version".into(), v.into()]);
        }
        for api in t.api_versions {
            args.extend(["--api-versions".into(), api.into()]);
        }
        if t.include_crds {
            args.push("--include-crds".into());
        }
        args.extend(["--values".into(), "-".into()]);
        args
    }

    /// Runs `helm template`; `Err` carries Helm's message, trimmed of noise.
    pub fn template(&self, t: &Template<'_>) -> Result<String, String> {
        let args = Self::template_args(t);
        debug!(release = t.release, ?args, "helm template");
        let mut child = Command::new(&self.path)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.path.display()))?;
        // Write stdin on its own thread: a chart that fails early stops reading it, and writing
        // on this thread while Helm blocks on a full stdout pipe would deadlock.
        let stdin = child.stdin.take();
        let values = t.values_json.as_bytes().to_vec();
        let writer = std::thread::spawn(move || {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(&values);
            }
        });
        let output = child
            .wait_with_output()
            .map_err(|e| format!("helm did not finish: {e}"))?;
        let _ = writer.join();
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(trim_stderr(&stderr));
        }
        for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
            warn!(release = t.release, "helm: {line}");
        }
        String::from_utf8(output.stdout)
            .map_err(|_| "helm printed output that is not UTF-8".to_string())
    }
}

/// Runs `helm version` and checks the answer.
fn probe_version(path: &Path) -> Result<String, Diagnostic> {
    let output = Command::new(path)
        .args(["version", "--template", "{{.Version}}"])
        .output()
        .map_err(|e| {
            Diagnostic::new(
                Code::HelmNotFound,
                format!("cannot run helm at {}: {e}", path.display()),
            )
        })?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_string();
    match parse_version(&version) {
        Some(v) if output.status.success() && v >= MIN_VERSION => Ok(version),
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
                trim_stderr(&format!(
                    "{version}{}",
                    String::from_utf8_lossy(&output.stderr)
                ))
            ),
        )),
    }
}

/// Stores a probe's answer; a probe that cannot be stored is simply run again next time.
fn remember(probe: &Path, version: &str) {
    let Some(dir) = probe.parent() else { return };
    let tmp = dir.join(format!(".tmp-{}", std::process::id()));
    let stored = fs::create_dir_all(dir)
        .and_then(|()| fs::write(&tmp, version))
        .and_then(|()| fs::rename(&tmp, probe));
    if stored.is_err() {
        let _ = fs::remove_file(&tmp);
    }
}

/// Chart arguments for a remote chart: an OCI reference, or `--repo URL NAME`.
fn remote_args(remote: &RemoteChart) -> Vec<String> {
    let mut args = if remote.repository.starts_with("oci://") {
        vec![match &remote.chart {
            Some(chart) => format!("{}/{chart}", remote.repository.trim_end_matches('/')),
            None => remote.repository.clone(),
        }]
    } else {
        vec![
            "--repo".to_string(),
            remote.repository.clone(),
            remote.chart.clone().unwrap_or_default(),
        ]
    };
    if let Some(version) = &remote.version {
        args.extend(["--version".to_string(), version.clone()]);
    }
    args
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// `v3.19.0`, `v4.3.1+gabc` -> (major, minor).
fn parse_version(text: &str) -> Option<(u64, u64)> {
    let mut parts = text.trim().trim_start_matches('v').split(['.', '+', '-']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
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
        let chart = ChartSpec::Remote(RemoteChart {
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
        };
        let args: Vec<String> = Helm::template_args(&t)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert_eq!(
            args.join(" "),
            "template web --repo https://charts.example.com nginx --version 1.2.3 --namespace apps \
             --kube-version 1.31.0 --api-versions batch/v1 --api-versions \
             monitoring.coreos.com/v1/ServiceMonitor --include-crds --values -"
        );
        let oci = RemoteChart {
            repository: "oci://r.example/charts".into(),
            chart: Some("app".into()),
            version: None,
        };
        assert_eq!(remote_args(&oci), ["oci://r.example/charts/app"]);
    }
}
