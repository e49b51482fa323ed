//! Remote charts (shortcuts, aliases and HelmChart resources) rendered by Helm's own repository
//! support, from a chart repository this test serves on 127.0.0.1.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::security::connected;
use super::{args, helm, nyl, tempdir};

/// Serves the files of `dir` over HTTP on 127.0.0.1 until it has answered `max` requests or a
/// minute has passed, whichever comes first. Returns the base URL.
fn serve(dir: PathBuf, max: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let url = format!("http://{}", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut served = 0;
        while served < max && Instant::now() < deadline {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            served += 1;
            stream.set_nonblocking(false).ok();
            let mut reader = BufReader::new(stream);
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            // Drain the headers.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = request
                .split_whitespace()
                .nth(1)
                .unwrap_or("/")
                .trim_start_matches('/');
            let file = dir.join(path.split('?').next().unwrap_or(""));
            let mut stream = reader.into_inner();
            let _ = match fs::read(&file)
                .ok()
                .filter(|_| !path.contains("..") && file.is_file())
            {
                Some(body) => write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .and_then(|()| stream.write_all(&body)),
                None => write!(
                    stream,
                    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                ),
            };
        }
    });
    url
}

pub(super) fn run_helm(args: &[&str], dir: &Path) {
    let status = Command::new(helm())
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .status()
        .expect("run helm");
    assert!(status.success(), "helm {args:?}");
}

/// A chart repository with one chart, `greeter` 0.1.0, served on 127.0.0.1.
pub(super) fn chart_repository(tmp: &Path) -> String {
    repository_with(tmp, |_| ())
}

/// The repository of [`chart_repository`], with `prepare` adding to the chart's directory before
/// it is packaged.
fn repository_with(tmp: &Path, prepare: impl FnOnce(&Path)) -> String {
    let chart = tmp.join("src/greeter");
    fs::create_dir_all(chart.join("templates")).unwrap();
    fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: greeter\nversion: 0.1.0\n",
    )
    .unwrap();
    fs::write(chart.join("values.yaml"), "message: hello\n").unwrap();
    fs::write(
        chart.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n  namespace: {{ .Release.Namespace }}\ndata:\n  message: {{ .Values.message | quote }}\n",
    )
    .unwrap();
    prepare(&chart);
    let repo = tmp.join("repo");
    fs::create_dir_all(&repo).unwrap();
    let url = serve(repo.clone(), 200);
    run_helm(
        &[
            "package",
            chart.to_str().unwrap(),
            "--destination",
            repo.to_str().unwrap(),
        ],
        tmp,
    );
    run_helm(
        &["repo", "index", repo.to_str().unwrap(), "--url", &url],
        tmp,
    );
    url
}

#[test]
fn remote_shortcuts_aliases_and_helm_charts_render_from_a_chart_repository() {
    let tmp = tempdir("remote");
    let url = chart_repository(&tmp);
    let project = tmp.join("project");
    fs::create_dir_all(project.join("apps")).unwrap();
    fs::write(
        project.join("nyl.toml"),
        format!("[project.aliases]\n\"acme.io/v1/Greeter\" = \"{url}#greeter@0.1.0\"\n"),
    )
    .unwrap();
    fs::write(
        project.join("apps/remote.yaml"),
        format!(
            "apiVersion: components.k8s.nyl/v1\nkind: {url}#greeter@0.1.0\nmetadata: {{name: shortcut, namespace: web}}\n\
             valueImports: {{enabled: false}}\nspec: {{message: from-shortcut}}\n---\n\
             apiVersion: components.k8s.nyl/v1\nkind: acme.io/v1/Greeter\nmetadata: {{name: aliased, namespace: web}}\n---\n\
             apiVersion: k8s.nyl/v1\nkind: HelmChart\nmetadata: {{name: resource, namespace: web}}\n\
             spec:\n  chart: {{repository: \"{url}\", name: greeter, version: 0.1.0}}\n  values: {{message: from-helmchart}}\n"
        ),
    )
    .unwrap();
    let (status, stdout, stderr) = nyl(&project, &args("render apps"), &[]);
    assert_eq!(status, 0, "{stderr}");
    let names: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("  name: "))
        .collect();
    assert_eq!(names, ["shortcut", "aliased", "resource"]);
    let messages: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("  message: "))
        .collect();
    assert_eq!(
        messages,
        ["\"from-shortcut\"", "\"hello\"", "\"from-helmchart\""]
    );

    // A version the repository does not have: Helm's own message, and nothing on stdout.
    fs::write(
        project.join("apps/remote.yaml"),
        format!("apiVersion: components.k8s.nyl/v1\nkind: {url}#greeter@9.9.9\nmetadata: {{name: missing}}\n"),
    )
    .unwrap();
    let (status, stdout, stderr) = nyl(&project, &args("render apps"), &[]);
    assert_eq!((status, stdout.as_str()), (1, ""));
    assert!(
        stderr.contains("error helm_failed:") && stderr.contains("9.9.9"),
        "{stderr}"
    );
    fs::remove_dir_all(&tmp).ok();
}

/// A project whose one app renders `greeter` 0.1.0 from `url` through a HelmChart.
fn remote_app(tmp: &Path, url: &str) -> PathBuf {
    let project = tmp.join("project");
    fs::create_dir_all(project.join("apps")).unwrap();
    fs::write(project.join("nyl.toml"), "").unwrap();
    fs::write(
        project.join("apps/remote.yaml"),
        format!(
            "apiVersion: k8s.nyl/v1\nkind: HelmChart\nmetadata: {{name: greeter, namespace: web}}\n\
             spec:\n  chart: {{repository: \"{url}\", name: greeter, version: 0.1.0}}\n"
        ),
    )
    .unwrap();
    project
}

/// Runs nyl with its own temporary directory, and checks that nothing is left in it.
fn nyl_leaving_no_files(project: &Path, line: &str) -> (i32, String, String) {
    let tmpdir = project.parent().unwrap().join("nyl-tmp");
    fs::create_dir_all(&tmpdir).unwrap();
    let env = [("TMPDIR".to_string(), tmpdir.display().to_string())];
    let run = nyl(project, &args(line), &env);
    let left: Vec<_> = fs::read_dir(&tmpdir).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    run
}

/// The schema of a chart that refers to `target`.
fn schema_with_ref(target: &str) -> String {
    format!(r#"{{"type": "object", "properties": {{"message": {{"$ref": "{target}"}}}}}}"#)
}

/// The old command line: Helm fetches and checks the remote chart alone.
fn helm_alone(url: &str, home: &Path) -> Command {
    let mut cmd = Command::new(helm());
    cmd.args(["template", &format!("--repo={url}"), "--version=0.1.0"])
        .args(["--namespace=web", "--", "greeter", "greeter"])
        .env("HOME", home);
    cmd
}

/// A remote chart whose schema refers to `/etc/passwd`: Helm alone reads the file (its first
/// character shows in Helm's error); nyl pulls the chart, refuses it, and runs no `helm template`.
#[test]
fn a_remote_schema_ref_to_a_local_file_is_refused_before_helm_renders() {
    let tmp = tempdir("remote-file-ref");
    let url = repository_with(&tmp, |chart| {
        let schema = schema_with_ref("file:///etc/passwd");
        fs::write(chart.join("values.schema.json"), schema).unwrap();
    });
    let passwd = fs::read_to_string("/etc/passwd").unwrap();
    let read = format!("invalid character '{}'", passwd.chars().next().unwrap());
    let old = helm_alone(&url, &tmp).output().unwrap();
    assert!(
        String::from_utf8_lossy(&old.stderr).contains(&read),
        "the attack no longer reproduces against helm: {old:?}"
    );

    let project = remote_app(&tmp, &url);
    let (status, stdout, stderr) = nyl_leaving_no_files(&project, "render apps");
    assert_eq!((status, stdout.as_str()), (1, ""), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{url}#greeter@0.1.0:greeter/values.schema.json: error external_schema_reference: \
             at /properties/message/$ref: \"file:///etc/passwd\""
        )),
        "{stderr}"
    );
    assert!(
        !stderr.contains("helm_failed") && !stderr.contains(&read),
        "{stderr}"
    );
    for line in passwd.lines().filter(|l| !l.is_empty()) {
        assert!(!stderr.contains(line), "{line:?} in {stderr}");
    }
    fs::remove_dir_all(&tmp).ok();
}

/// A remote chart whose schema refers to a URL: Helm alone sends the request; through nyl
/// nothing connects, neither while pulling nor after.
#[test]
fn a_remote_schema_ref_to_a_url_sends_no_request() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let target = format!("http://{}/x", listener.local_addr().unwrap());
    let tmp = tempdir("remote-url-ref");
    let url = repository_with(&tmp, |chart| {
        fs::write(chart.join("values.schema.json"), schema_with_ref(&target)).unwrap();
    });
    let mut old = helm_alone(&url, &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let reached = connected(&listener, Duration::from_secs(20));
    old.kill().ok();
    old.wait().unwrap();
    assert!(reached, "Helm itself sent no request");

    let project = remote_app(&tmp, &url);
    let (status, stdout, stderr) = nyl_leaving_no_files(&project, "render apps");
    assert_eq!((status, stdout.as_str()), (1, ""), "{stderr}");
    assert!(
        stderr.contains("greeter/values.schema.json: error external_schema_reference:"),
        "{stderr}"
    );
    assert!(
        !connected(&listener, Duration::ZERO),
        "nyl let a request out"
    );
    fs::remove_dir_all(&tmp).ok();
}

/// The reference in a subchart of the remote chart: `helm package` stores a subchart as a
/// directory of the archive; an archive built otherwise may hold it packaged
/// (`charts/sub-0.1.0.tgz`), an archive inside the archive, which is checked too.
#[test]
fn a_remote_charts_subchart_with_an_external_ref_is_refused() {
    let tmp = tempdir("remote-sub-ref");
    let src = tmp.join("src");
    let url = repository_with(&tmp, |chart| {
        let sub = src.join("sub");
        fs::create_dir_all(&sub).unwrap();
        fs::write(
            sub.join("Chart.yaml"),
            "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
        )
        .unwrap();
        let schema = schema_with_ref("file:///etc/passwd");
        fs::write(sub.join("values.schema.json"), schema).unwrap();
        let charts = chart.join("charts");
        let (sub, charts) = (sub.to_str().unwrap(), charts.to_str().unwrap());
        run_helm(&["package", sub, "-d", charts], &tmp);
    });
    let project = remote_app(&tmp, &url);
    let refused = |inner: &str| {
        let (status, stdout, stderr) = nyl_leaving_no_files(&project, "render apps");
        assert_eq!((status, stdout.as_str()), (1, ""), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "{url}#greeter@0.1.0:greeter/charts/{inner}values.schema.json: error \
                 external_schema_reference: at /properties/message/$ref"
            )),
            "{stderr}"
        );
        assert!(!stderr.contains("helm_failed"), "{stderr}");
    };
    refused("sub/");

    // The chart archive as tar writes it, the subchart packaged inside; Helm alone reads the file.
    let repo = tmp.join("repo");
    let status = Command::new("tar")
        .arg("-czf")
        .arg(repo.join("greeter-0.1.0.tgz"))
        .arg("-C")
        .arg(&src)
        .arg("greeter")
        .status()
        .expect("run tar");
    assert!(status.success());
    run_helm(
        &["repo", "index", repo.to_str().unwrap(), "--url", &url],
        &tmp,
    );
    let old = helm_alone(&url, &tmp).output().unwrap();
    assert!(
        String::from_utf8_lossy(&old.stderr).contains("invalid character"),
        "the attack no longer reproduces against helm: {old:?}"
    );
    refused("sub-0.1.0.tgz:sub/");
    fs::remove_dir_all(&tmp).ok();
}

/// A remote chart with a schema that stays inside itself renders exactly as Helm alone renders
/// it from the repository; the render is cached by the arguments of a pinned version, and by
/// the pulled archive's content without one.
#[test]
fn a_benign_remote_chart_renders_the_bytes_helm_renders() {
    let tmp = tempdir("remote-benign");
    let url = repository_with(&tmp, |chart| {
        let schema = r##"{"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {"text": {"type": "string"}},
            "properties": {"message": {"$ref": "#/$defs/text"}}}"##;
        fs::write(chart.join("values.schema.json"), schema).unwrap();
    });
    let old = helm_alone(&url, &tmp).output().unwrap();
    assert!(old.status.success(), "{old:?}");
    let project = remote_app(&tmp, &url);
    let cache = tmp.join("cache");
    let env = [
        ("NYL_CACHE_DIR".to_string(), cache.display().to_string()),
        ("RUST_LOG".to_string(), "nyl_render=info".to_string()),
    ];
    let render = || nyl(&project, &args("render apps"), &env);
    let (status, stdout, stderr) = render();
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(stdout, String::from_utf8(old.stdout.clone()).unwrap());
    assert!(
        stderr.contains("render cache: 0 hits, 1 misses"),
        "{stderr}"
    );
    let (_, warm, stderr) = render();
    assert_eq!(warm, stdout);
    assert!(
        stderr.contains("render cache: 1 hits, 0 misses"),
        "{stderr}"
    );

    // Without a version: pulled every time, cached by what was pulled.
    let app = project.join("apps/remote.yaml");
    let text = fs::read_to_string(&app).unwrap();
    fs::write(&app, text.replace(", version: 0.1.0", "")).unwrap();
    for expected in ["0 hits, 1 misses", "1 hits, 0 misses"] {
        let (status, unpinned, stderr) = render();
        assert_eq!((status, &unpinned), (0, &stdout), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
    fs::remove_dir_all(&tmp).ok();
}
