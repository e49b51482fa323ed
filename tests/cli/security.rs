//! Attacks of an untrusted repository on the sidecar (issue 10): each test reproduces one and
//! shows that nyl refuses it with its code.

use std::fs;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{args, helm, nyl, tempdir};

/// Writes `files` (path relative to `dir`, content) below `dir`.
pub fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
}

const CHART: &str = "components/x/v1/Leak";

/// A project with one app invoking the chart `x/v1/Leak`, whose `values.schema.json` is
/// `schema`. Returns the repository and the chart directory.
fn schema_repo(name: &str, schema: &str) -> (PathBuf, PathBuf) {
    let repo = tempdir(name);
    write_files(
        &repo,
        &[
            ("nyl.toml", ""),
            (
                "apps/leak.yaml",
                "apiVersion: components.k8s.nyl/v1\nkind: x/v1/Leak\nmetadata: {name: leak}\nspec: {a: 1}\n",
            ),
            (&format!("{CHART}/Chart.yaml"), "apiVersion: v2\nname: leak\nversion: 0.1.0\n"),
            (
                &format!("{CHART}/templates/cm.yaml"),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\n",
            ),
            (&format!("{CHART}/values.schema.json"), schema),
        ],
    );
    let chart = repo.join(CHART);
    (repo, chart)
}

fn schema_with_ref(target: &str) -> String {
    format!(r#"{{"type": "object", "properties": {{"a": {{"$ref": "{target}"}}}}}}"#)
}

/// A `$ref` to a file of the machine: Helm would read it (its first byte shows in Helm's error).
#[test]
fn a_schema_ref_to_a_local_file_is_refused_before_helm_runs() {
    let (repo, _) = schema_repo("schema-file-ref", &schema_with_ref("file:///etc/passwd"));
    let (status, stdout, stderr) = nyl(&repo, &args("render apps"), &[]);
    assert_eq!((status, stdout.as_str()), (1, ""), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{CHART}/values.schema.json: error external_schema_reference: at /properties/a/$ref"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("helm_failed"), "Helm ran: {stderr}");
    fs::remove_dir_all(&repo).ok();
}

/// Whether a connection reaches `listener` within `wait`.
fn connected(listener: &TcpListener, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        match listener.accept() {
            Ok(_) => return true,
            Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => return false,
        }
    }
}

/// An `http://` `$ref`, in the chart's own schema and in a packaged subchart's: Helm alone sends
/// the request (shown first, so the test attacks something real); through nyl nothing connects.
#[test]
fn a_schema_ref_to_a_url_sends_no_request() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/x", listener.local_addr().unwrap());
    let (repo, chart) = schema_repo("schema-url-ref", &schema_with_ref(&url));

    let mut helm_alone = Command::new(helm())
        .args(["template", "leak", "--set", "a=1"])
        .arg(&chart)
        .env("HOME", &repo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let reached = connected(&listener, Duration::from_secs(20));
    helm_alone.kill().ok();
    helm_alone.wait().unwrap();
    assert!(reached, "Helm itself sent no request");

    let (status, _, stderr) = nyl(&repo, &args("render apps"), &[]);
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.contains("error external_schema_reference"),
        "{stderr}"
    );
    assert!(
        !connected(&listener, Duration::ZERO),
        "nyl let a request out"
    );

    // The same reference inside a packaged subchart (charts/sub-0.1.0.tgz), built by Helm.
    fs::write(chart.join("values.schema.json"), r#"{"type": "object"}"#).unwrap();
    let sub = repo.join("sub");
    write_files(
        &sub,
        &[
            ("Chart.yaml", "apiVersion: v2\nname: sub\nversion: 0.1.0\n"),
            ("values.schema.json", &format!(r#"{{"$schema": "{url}"}}"#)),
        ],
    );
    let out = Command::new(helm())
        .args(["package", "-d"])
        .arg(chart.join("charts"))
        .arg(&sub)
        .env("HOME", &repo)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    fs::remove_dir_all(&sub).unwrap();
    let (status, _, stderr) = nyl(&repo, &args("render apps"), &[]);
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{CHART}/charts/sub-0.1.0.tgz:sub/values.schema.json: error external_schema_reference: at /$schema"
        )),
        "{stderr}"
    );
    assert!(
        !connected(&listener, Duration::ZERO),
        "nyl let a request out"
    );
    fs::remove_dir_all(&repo).ok();
}

/// 200 documents, each fanning aliases out to about 700,000 nodes from 300 bytes (the attack: a
/// 60 KB app file that took 40 s and 3.5 GiB). Written to `dir/apps/fanout.yaml`.
pub fn alias_fanout(dir: &Path) {
    let refs = |a: &str, n: usize| format!("[{}]", vec![format!("*{a}"); n].join(", "));
    let doc = |i: usize| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm{i}}}\ndata:\n  \
             a: &a [x, x, x, x, x, x, x, x, x, x]\n  b: &b {}\n  c: &c {}\n  d: &d {}\n  \
             e: &e {}\n  f: {}\n",
            refs("a", 10),
            refs("b", 10),
            refs("c", 10),
            refs("d", 10),
            refs("e", 4)
        )
    };
    let text: Vec<String> = (0..200).map(doc).collect();
    write_files(
        dir,
        &[("nyl.toml", ""), ("apps/fanout.yaml", &text.join("---\n"))],
    );
}

/// `files` app files of plain YAML, each just under the 4 MiB file limit and its documents far
/// below any per-document bound: only a budget for the whole run stops them.
pub fn plain_files(dir: &Path, files: usize) {
    let row = format!("[{}]", vec!["1"; 1000].join(","));
    let doc = |f: usize, i: usize| {
        let lines: Vec<String> = (0..100).map(|k| format!("  k{k}: {row}")).collect();
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm{f}-{i}}}\ndata:\n{}\n",
            lines.join("\n")
        )
    };
    write_files(dir, &[("nyl.toml", "")]);
    for f in 0..files {
        let text: Vec<String> = (0..19).map(|i| doc(f, i)).collect();
        write_files(dir, &[(&format!("apps/p{f:02}.yaml"), &text.join("---\n"))]);
    }
}

#[test]
fn an_alias_fanout_across_documents_is_stopped_by_the_run_budget() {
    let repo = tempdir("alias-fanout");
    alias_fanout(&repo);
    for command in ["render apps", "values apps", "validate --no-render"] {
        let (status, stdout, stderr) = nyl(&repo, &args(command), &[]);
        let out = if command.starts_with("validate") {
            &stdout
        } else {
            &stderr
        };
        assert_eq!(status, 1, "{command}: {stderr}");
        assert!(
            out.contains("error repository_too_complex: the YAML of this run expands to more than 1000000 nodes"),
            "{command}: {out}"
        );
    }
    fs::remove_dir_all(&repo).ok();
}

#[test]
fn plain_yaml_within_every_file_limit_is_stopped_by_the_run_budget() {
    let repo = tempdir("plain-yaml");
    // Four files of about 380,000 nodes each.
    plain_files(&repo, 4);
    let (status, stdout, stderr) = nyl(&repo, &args("render apps"), &[]);
    assert_eq!((status, stdout.as_str()), (1, ""), "{stderr}");
    assert!(
        stderr.contains("apps/p02.yaml:") && stderr.contains("error repository_too_complex: the YAML of this run expands to more than 1000000 nodes"),
        "{stderr}"
    );
    assert!(
        stderr.contains("apps/p03.yaml:1: error repository_too_complex: not read"),
        "{stderr}"
    );
    fs::remove_dir_all(&repo).ok();
}

/// A repository's `[limits]` cannot raise a limit above the operator's ceiling.
#[test]
fn a_repository_cannot_raise_its_limits_above_the_ceiling() {
    let repo = tempdir("ceiling");
    plain_files(&repo, 1);
    fs::write(repo.join("nyl.toml"), "[limits]\nmax_nodes = 100000000\n").unwrap();
    let env = [("NYL_MAX_NODES".to_string(), "100000".to_string())];
    let (status, _, stderr) = nyl(&repo, &args("render apps"), &env);
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.contains("warning limit_above_ceiling: limits.max_nodes = 100000000"),
        "{stderr}"
    );
    assert!(stderr.contains("more than 100000 nodes"), "{stderr}");
    // Lowering is the repository's to do.
    fs::write(repo.join("nyl.toml"), "[limits]\nmax_nodes = 5000\n").unwrap();
    let (status, _, stderr) = nyl(&repo, &args("render apps"), &env);
    assert_eq!(status, 1, "{stderr}");
    assert!(!stderr.contains("limit_above_ceiling"), "{stderr}");
    assert!(stderr.contains("more than 5000 nodes"), "{stderr}");
    fs::remove_dir_all(&repo).ok();
}
