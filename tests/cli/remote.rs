//! Remote charts (shortcuts, aliases and HelmChart resources) rendered by Helm's own repository
//! support, from a chart repository this test serves on 127.0.0.1.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

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
