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
pub(super) fn connected(listener: &TcpListener, wait: Duration) -> bool {
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

/// A tar archive of `entries` (name as written, type, content), compressed as one gzip member;
/// without the end-of-archive blocks unless `end`.
fn tar_gz(entries: &[(&[u8], tar::EntryType, &[u8])], end: bool) -> Vec<u8> {
    let mut tar = Vec::new();
    for (name, kind, data) in entries {
        let mut header = tar::Header::new_ustar();
        // Written into the name field as it is: the builder would refuse `..`.
        header.as_mut_bytes()[..name.len()].copy_from_slice(name);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(*kind);
        header.set_cksum();
        tar.extend_from_slice(header.as_bytes());
        tar.extend_from_slice(data);
        tar.resize(tar.len().next_multiple_of(512), 0);
    }
    if end {
        tar.resize(tar.len() + 1024, 0);
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &tar).unwrap();
    gz.finish().unwrap()
}

/// PAX records, each `LEN key=value\n` with LEN counting the whole record.
fn pax(records: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (key, value) in records {
        let body = format!(" {key}={value}\n");
        let mut len = body.len() + 1;
        while (len.to_string().len() + body.len()) != len {
            len += 1;
        }
        out.extend_from_slice(format!("{len}{body}").as_bytes());
    }
    out
}

/// Packaged subcharts written so that nyl's archive reader once read them otherwise than Go's
/// (Helm's): Helm loaded the schema and read `/etc/passwd`, nyl saw no schema. Each is now read
/// as Helm reads it, or refused.
#[test]
fn a_packaged_subchart_cannot_hide_its_schema_from_the_check() {
    use tar::EntryType::{Regular, XHeader};
    let (repo, chart) = schema_repo("schema-hidden", r#"{"type": "object"}"#);
    let bad = schema_with_ref("file:///etc/passwd");
    let bad = bad.as_bytes();
    let meta: &[u8] = b"apiVersion: v2\nname: c\nversion: 0.1.0\n";
    let sub_meta: &[u8] = b"apiVersion: v2\nname: sub\nversion: 0.1.0\n";
    let sub = tar_gz(
        &[
            (b"sub/Chart.yaml", Regular, sub_meta),
            (b"sub/values.schema.json", Regular, bad),
        ],
        true,
    );
    let sparse_map = {
        let mut map = format!("1\n0\n{}\n", bad.len()).into_bytes();
        map.resize(512, 0);
        map.extend_from_slice(bad);
        map
    };
    let sparse_records = pax(&[
        ("GNU.sparse.major", "1"),
        ("GNU.sparse.minor", "0"),
        ("GNU.sparse.name", "c/values.schema.json"),
        ("GNU.sparse.realsize", &bad.len().to_string()),
    ]);
    let at = format!("{CHART}/charts/c-0.1.0.tgz");
    let refused = "error external_schema_reference: at /properties/a/$ref";
    let cases: Vec<(&str, Vec<u8>, String)> = vec![
        (
            // The schema in a second gzip member, the first one ending without the end blocks.
            "two gzip members",
            [
                tar_gz(&[(b"c/Chart.yaml", Regular, meta)], false),
                tar_gz(&[(b"c/values.schema.json", Regular, bad)], true),
            ]
            .concat(),
            format!("{at}:c/values.schema.json: {refused}"),
        ),
        (
            "a backslash separator",
            tar_gz(
                &[
                    (b"c/Chart.yaml", Regular, meta),
                    (b"c/templates\\values.schema.json", Regular, bad),
                ],
                true,
            ),
            format!("{at}:c/templates\\values.schema.json: {refused}"),
        ),
        (
            "a subchart behind ..",
            tar_gz(
                &[
                    (b"c/Chart.yaml", Regular, meta),
                    (b"c/charts/x/../sub-0.1.0.tgz", Regular, &sub),
                ],
                true,
            ),
            format!("{at}:c/charts/x/../sub-0.1.0.tgz:sub/values.schema.json: {refused}"),
        ),
        (
            "a PAX sparse file named by its records",
            tar_gz(
                &[
                    (b"c/Chart.yaml", Regular, meta),
                    (b"c/PaxHeaders/x", XHeader, &sparse_records),
                    (b"c/GNUSparseFile.0/x", Regular, &sparse_map),
                ],
                true,
            ),
            format!(
                "{at}: error external_schema_reference: cannot be checked for references outside \
                 it (it holds a PAX sparse file"
            ),
        ),
    ];
    fs::create_dir_all(chart.join("charts")).unwrap();
    for (what, archive, expected) in cases {
        fs::write(chart.join("charts/c-0.1.0.tgz"), archive).unwrap();
        let old = Command::new(helm())
            .args(["template", "leak"])
            .arg(&chart)
            .env("HOME", &repo)
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&old.stderr).contains("failing loading \"file:///etc/passwd\""),
            "{what}: the attack no longer reproduces against helm: {old:?}"
        );
        let (status, stdout, stderr) = nyl(&repo, &args("render apps"), &[]);
        assert_eq!((status, stdout.as_str()), (1, ""), "{what}: {stderr}");
        assert!(
            stderr.contains(&expected) && !stderr.contains("helm_failed"),
            "{what}: {stderr}"
        );
    }
    fs::remove_dir_all(&repo).ok();
}

/// 200 documents, each fanning aliases out to about 470,000 nodes (anchor copies counted) from
/// 270 bytes, each inside the old per-document bound of 500,000: the attack, a 53 KB app file that
/// rendered with exit 0 after 87 s at a peak of 16 GiB. Written to `dir/apps/fanout.yaml`.
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
            refs("e", 2)
        )
    };
    let text: Vec<String> = (0..200).map(doc).collect();
    write_files(
        dir,
        &[("nyl.toml", ""), ("apps/fanout.yaml", &text.join("---\n"))],
    );
}

/// `files` app files of plain YAML (the attack: 57.6 MB of it inside every limit took 5.3 GiB),
/// each of 190,000 nodes in 19 documents: only a budget for the whole run stops them.
pub fn plain_files(dir: &Path, files: usize) {
    let row = format!("[{}]", vec!["1"; 1000].join(","));
    let doc = |f: usize, i: usize| {
        let lines: Vec<String> = (0..10).map(|k| format!("  k{k}: {row}")).collect();
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
            out.contains("error repository_too_complex: the YAML of this run expands to more than 500000 nodes"),
            "{command}: {out}"
        );
    }
    fs::remove_dir_all(&repo).ok();
}

#[test]
fn plain_yaml_within_every_file_limit_is_stopped_by_the_run_budget() {
    let repo = tempdir("plain-yaml");
    plain_files(&repo, 4);
    let (status, stdout, stderr) = nyl(&repo, &args("render apps"), &[]);
    assert_eq!((status, stdout.as_str()), (1, ""), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].starts_with("apps/p02.yaml:")
            && lines[0].contains(
                "error repository_too_complex: the YAML of this run expands to more than 500000 nodes"
            ),
        "the third file crosses the budget: {stderr}"
    );
    assert!(
        lines[1].starts_with("apps/p03.yaml:1: error repository_too_complex: not read"),
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

/// A project whose component `x/v1/Deep` imports to a pointer of `depth` tokens, for the app
/// `apps/deep.yaml` and the Cluster `c`.
fn deep_pointer_repo(dir: &Path, depth: usize) {
    let contract = format!(
        "apiVersion: components.nyl/v1alpha1\nvalueImports:\n  - {{name: deep, from: /x, to: \"{}\"}}\n",
        "/a".repeat(depth)
    );
    write_files(
        dir,
        &[
            ("nyl.toml", ""),
            ("components/x/v1/Deep/Chart.yaml", "apiVersion: v2\nname: deep\nversion: 0.1.0\n"),
            (
                "components/x/v1/Deep/templates/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\n",
            ),
            ("components/x/v1/Deep/nyl-component.yaml", &contract),
            ("targets/c.yaml", "apiVersion: k8s.nyl/v1\nkind: Cluster\nmetadata: {name: c}\nspec:\n  values: {x: 1}\n"),
            ("apps/deep.yaml", "apiVersion: components.k8s.nyl/v1\nkind: x/v1/Deep\nmetadata: {name: deep}\n"),
        ],
    );
}

/// A pointer of 20,000 tokens overflowed the stack (exit 134) in render, values and validate.
#[test]
fn a_pointer_deeper_than_yaml_nests_is_refused() {
    let repo = tempdir("deep-pointer");
    deep_pointer_repo(&repo, 20_000);
    for command in [
        "values --target c apps",
        "render --target c apps",
        "validate",
    ] {
        let (status, stdout, stderr) = nyl(&repo, &args(command), &[]);
        assert_eq!(status, 1, "{command}: {stderr}");
        let out = format!("{stdout}{stderr}");
        assert!(
            out.contains("error invalid_pointer: import \"deep\"")
                && out.contains("a pointer of 20000 tokens is deeper than 256"),
            "{command}: {out}"
        );
    }
    // At the limit, it works.
    deep_pointer_repo(&repo, 256);
    let (status, stdout, stderr) = nyl(&repo, &args("values --target c apps"), &[]);
    assert_eq!(status, 0, "{stderr}");
    let leaf = format!("{}a: 1", "  ".repeat(255));
    assert_eq!(stdout.lines().last(), Some(leaf.as_str()), "{stdout}");
    fs::remove_dir_all(&repo).ok();
}

/// `nyl.toml` with 50,000 aliases took 53 s to load (each key's line counted from the start).
#[test]
fn a_config_with_many_keys_loads_in_linear_time() {
    let repo = tempdir("many-aliases");
    let aliases: String = (0..50_000)
        .map(|i| format!("k{i} = \"x/v1/A\"\n"))
        .collect();
    write_files(
        &repo,
        &[
            (
                "nyl.toml",
                &format!("[project.aliases]\n{aliases}k50000 = \"../up\"\n"),
            ),
            (
                "apps/a.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
            ),
        ],
    );
    let (status, _, stderr) = nyl(&repo, &args("render apps"), &[]);
    // The last alias is bad: found, on its own line.
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.starts_with("nyl.toml:50002: error invalid_field: alias \"k50000\""),
        "{stderr}"
    );
    fs::remove_dir_all(&repo).ok();
}

/// `nyl.toml` is held to the operator's file size ceiling before it is read, and not read
/// through a link.
#[test]
fn the_config_file_has_a_size_limit_and_is_not_followed_through_a_link() {
    let repo = tempdir("config-size");
    write_files(
        &repo,
        &[
            ("nyl.toml", &format!("# {}\n", "x".repeat(2000))),
            (
                "apps/a.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
            ),
        ],
    );
    let env = [("NYL_MAX_FILE_BYTES".to_string(), "1000".to_string())];
    let (status, _, stderr) = nyl(&repo, &args("render apps"), &env);
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.starts_with("nyl.toml: error file_too_large: the file has 2003 bytes"),
        "{stderr}"
    );

    let outside = tempdir("config-outside");
    fs::write(outside.join("nyl.toml"), "").unwrap();
    fs::remove_file(repo.join("nyl.toml")).unwrap();
    std::os::unix::fs::symlink(outside.join("nyl.toml"), repo.join("nyl.toml")).unwrap();
    let (status, _, stderr) = nyl(&repo, &args("render apps"), &[]);
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.starts_with("nyl.toml: error not_regular_file: a symbolic link"),
        "{stderr}"
    );
    fs::remove_dir_all(&repo).ok();
    fs::remove_dir_all(&outside).ok();
}

/// A directory outside every repository, holding what an attacker wants nyl to read or write.
fn outside(name: &str) -> PathBuf {
    tempdir(&format!("outside-{name}"))
}

const CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n";

/// A targets search path that is a link leaving the project is not read.
#[test]
fn a_linked_targets_search_path_is_not_followed_out_of_the_project() {
    let repo = tempdir("linked-targets");
    let elsewhere = outside("targets");
    write_files(
        &elsewhere,
        &[(
            "secret.yaml",
            "apiVersion: k8s.nyl/v1\nkind: Cluster\nmetadata: {name: outside}\n",
        )],
    );
    write_files(&repo, &[("nyl.toml", ""), ("apps/a.yaml", CONFIGMAP)]);
    std::os::unix::fs::symlink(&elsewhere, repo.join("targets")).unwrap();
    let (status, _, stderr) = nyl(&repo, &args("values --target outside apps"), &[]);
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.contains("error path_outside_project: $REPO/targets resolves to"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error target_not_found"),
        "the Cluster was read: {stderr}"
    );
    fs::remove_dir_all(&repo).ok();
    fs::remove_dir_all(&elsewhere).ok();
}

/// `values --explain` reads chart defaults, its subcharts' too: a linked subchart is refused.
#[test]
fn values_explain_does_not_follow_a_linked_subchart() {
    let repo = tempdir("linked-subchart");
    let elsewhere = outside("subchart");
    write_files(
        &elsewhere,
        &[
            ("Chart.yaml", "apiVersion: v2\nname: sub\nversion: 0.1.0\n"),
            ("values.yaml", "stolen: outside-value\n"),
        ],
    );
    write_files(
        &repo,
        &[
            ("nyl.toml", ""),
            (
                "components/x/v1/C/Chart.yaml",
                "apiVersion: v2\nname: c\nversion: 0.1.0\n",
            ),
            ("components/x/v1/C/charts/.keep", ""),
            (
                "apps/c.yaml",
                "apiVersion: components.k8s.nyl/v1\nkind: x/v1/C\nmetadata: {name: c}\n",
            ),
        ],
    );
    std::os::unix::fs::symlink(&elsewhere, repo.join("components/x/v1/C/charts/sub")).unwrap();
    let (status, stdout, stderr) = nyl(&repo, &args("values --explain apps"), &[]);
    assert_eq!(status, 1, "{stdout}{stderr}");
    assert!(
        stderr.contains("components/x/v1/C/charts/sub: error not_regular_file: a symbolic link"),
        "{stderr}"
    );
    assert!(!stdout.contains("outside-value"), "{stdout}");
    fs::remove_dir_all(&repo).ok();
    fs::remove_dir_all(&elsewhere).ok();
}

/// A link inside render-tree's output directory (a checked-out branch anyone could commit one
/// to) is never written, read or removed through: the whole tree is refused.
#[test]
fn render_tree_does_not_write_through_a_link_in_its_output() {
    let repo = tempdir("tree-link");
    let out = tempdir("tree-link-out");
    let elsewhere = outside("tree");
    write_files(
        &repo,
        &[
            ("nyl.toml", ""),
            ("apps/a.yaml", CONFIGMAP),
            (
                "targets/t.yaml",
                "apiVersion: k8s.nyl/v1\nkind: Cluster\nmetadata: {name: c}\n---\n\
                 apiVersion: k8s.nyl/v1\nkind: DeploymentTarget\nmetadata: {name: t}\n\
                 spec:\n  clusterRef: {name: c}\n  apps: [apps/a.yaml]\n",
            ),
        ],
    );
    fs::create_dir_all(out.join("apps")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("apps/a")).unwrap();
    let command = format!("render-tree --target t --output-dir {}", out.display());
    let (status, stdout, stderr) = nyl(&repo, &args(&command), &[]);
    assert_eq!(status, 1, "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "error not_regular_file: {}: a symbolic link inside the output directory",
            out.join("apps/a").display()
        )),
        "{stderr}"
    );
    assert_eq!(
        fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "written through the link"
    );
    assert!(!out.join(".nyl").exists(), "half a tree was written");
    // Without the link the same tree is written.
    fs::remove_file(out.join("apps/a")).unwrap();
    let (status, _, stderr) = nyl(&repo, &args(&command), &[]);
    assert_eq!(status, 0, "{stderr}");
    assert!(out.join("apps/a/kustomization.yaml").is_file());
    for dir in [&repo, &out, &elsewhere] {
        fs::remove_dir_all(dir).ok();
    }
}
