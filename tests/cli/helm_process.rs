//! Helm as a process: nothing from a repository reaches its command line as a flag, and every
//! helm nyl starts is bounded in time and output and ends with nyl. Fake helms (shell scripts)
//! stand in only where the real one cannot cheaply be made to hang or flood.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::remote::chart_repository;
use super::{args, copy_dir, helm, nyl, root, tempdir};

/// A helm that answers the version probe as Helm 4.3.1 and runs `render` for `helm template`.
fn fake_helm(dir: &Path, render: &str) -> PathBuf {
    let path = dir.join("fake-helm");
    fs::write(
        &path,
        format!("#!/bin/sh\ncase \"$1\" in\nversion) echo v4.3.1 ;;\n*) {render} ;;\nesac\n"),
    )
    .unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn fixture() -> PathBuf {
    root().join("tests/fixtures/helm-process")
}

fn env(k: &str, v: impl AsRef<std::ffi::OsStr>) -> (String, String) {
    (k.to_string(), v.as_ref().to_string_lossy().into_owned())
}

/// Whether a process has ended: gone, or a zombie waiting for its reaper. Waits for it a while,
/// since a killed process needs a moment to be torn down.
fn ended(pid: &str) -> bool {
    (0..200).any(|_| {
        let ended = fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        });
        if !ended {
            std::thread::sleep(Duration::from_millis(50));
        }
        ended
    })
}

/// The finding: `spec.chart.name: "--set-file=message=/proc/self/environ"` made Helm read the
/// sidecar's environment into the rendered chart. The attack works against Helm on the command
/// line nyl used to build; nyl now refuses the name, and Helm never sees it.
#[test]
fn a_chart_name_cannot_become_a_helm_flag() {
    let tmp = tempdir("flag-name");
    let url = chart_repository(&tmp);
    let secret = "nyl-test-secret-7f3a9c";
    let attack = "--set-file=message=/proc/self/environ";

    // The old command line: the release doubles as the chart, the name as a flag.
    let old = Command::new(helm())
        .args(["template", "greeter", "--repo", &url, attack])
        .args(["--version", "0.1.0", "--namespace", "default"])
        .env("HOME", &tmp)
        .env("NYL_TEST_SECRET", secret)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&old.stdout).contains(secret),
        "the attack no longer reproduces against helm: {}",
        String::from_utf8_lossy(&old.stderr)
    );
    // nyl's command line: `--` before the release and chart, so the name stays a name.
    let new = Command::new(helm())
        .args(["template", "--namespace=default", &format!("--repo={url}")])
        .args(["--version=0.1.0", "--", "greeter", attack])
        .env("HOME", &tmp)
        .env("NYL_TEST_SECRET", secret)
        .output()
        .unwrap();
    assert!(!new.status.success());
    assert!(!String::from_utf8_lossy(&new.stdout).contains(secret));
    assert!(!String::from_utf8_lossy(&new.stderr).contains(secret));

    let project = tmp.join("project");
    fs::create_dir_all(project.join("apps")).unwrap();
    fs::write(project.join("nyl.toml"), "").unwrap();
    fs::write(
        project.join("apps/attack.yaml"),
        format!(
            "apiVersion: k8s.nyl/v1\nkind: HelmChart\nmetadata: {{name: greeter}}\nspec:\n  chart:\n    \
             repository: {url}\n    name: \"{attack}\"\n    version: 0.1.0\n---\n\
             apiVersion: components.k8s.nyl/v1\nkind: \"{url}#{attack}@0.1.0\"\nmetadata: {{name: greeter}}\n"
        ),
    )
    .unwrap();
    let (status, stdout, stderr) = nyl(
        &project,
        &args("render apps/attack.yaml"),
        &[env("NYL_TEST_SECRET", secret)],
    );
    assert_eq!((status, stdout.as_str()), (1, ""), "{stderr}");
    assert!(
        stderr.contains("apps/attack.yaml:7: error invalid_chart_reference:")
            && stderr.contains("apps/attack.yaml:11: error invalid_chart_reference:"),
        "{stderr}"
    );
    assert!(!stderr.contains(secret), "{stderr}");
    fs::remove_dir_all(&tmp).ok();
}

/// A misbehaving helm printing without end: nyl reads up to the render's budget
/// (limits.max_render_bytes, 64 MiB by default), stops it and fails. Reading it all would never
/// end, so finishing at all shows the cap.
#[test]
fn a_helm_that_floods_stdout_is_stopped_at_the_output_budget() {
    let tmp = tempdir("flood-stdout");
    let fake = fake_helm(&tmp, "exec yes nyl-flood");
    let (status, stdout, stderr) = nyl(
        &fixture(),
        &args("render apps/plain.yaml"),
        &[env("NYL_HELM", &fake)],
    );
    assert_eq!((status, stdout.as_str()), (1, ""));
    assert!(
        stderr.contains("error helm_output_too_large:")
            && stderr.contains("printed more than 67108864 bytes"),
        "{stderr}"
    );
    fs::remove_dir_all(&tmp).ok();
}

/// A 50 MB `fail` message is kept to its first 8 KiB, with the count of what was cut.
#[test]
fn a_helm_that_floods_stderr_is_cut_to_a_few_kilobytes() {
    let tmp = tempdir("flood-stderr");
    let fake = fake_helm(&tmp, "head -c 50000000 /dev/zero | tr '\\0' x >&2; exit 1");
    let (status, stdout, stderr) = nyl(
        &fixture(),
        &args("render apps/plain.yaml"),
        &[env("NYL_HELM", &fake)],
    );
    assert_eq!((status, stdout.as_str()), (1, ""));
    assert!(stderr.contains("error helm_failed:"), "{}", &stderr[..200]);
    assert!(
        stderr.contains("xxxx [49991808 more bytes of stderr cut]"),
        "{}",
        &stderr[stderr.len().saturating_sub(300)..]
    );
    assert!(stderr.len() < 9 << 10, "{} bytes of stderr", stderr.len());
    fs::remove_dir_all(&tmp).ok();
}

/// A helm past its deadline is killed with what it started; nyl.toml can lower the operator's
/// deadline but never raise it.
#[test]
fn a_helm_past_its_deadline_is_stopped_with_its_children() {
    let tmp = tempdir("deadline");
    let pids = tmp.join("pids");
    let fake = fake_helm(
        &tmp,
        &format!("sleep 600 & echo $! >> {}; wait", pids.display()),
    );
    let project = tmp.join("project");
    fs::create_dir_all(&project).unwrap();
    copy_dir(&fixture(), &project);
    let run = |limit: &str, flag: &str| {
        fs::write(
            project.join("nyl.toml"),
            format!("[limits]\nhelm_timeout_seconds = {limit}\n"),
        )
        .unwrap();
        nyl(
            &project,
            &args(&format!("render {flag} apps/plain.yaml")),
            &[env("NYL_HELM", &fake)],
        )
    };
    for (limit, flag) in [("1", ""), ("3", "--helm-timeout 1")] {
        let (status, stdout, stderr) = run(limit, flag);
        assert_eq!((status, stdout.as_str()), (1, ""), "{stderr}");
        assert!(
            stderr.contains("error helm_timeout:") && stderr.contains("within 1 s"),
            "limit {limit}, flag {flag:?}: {stderr}"
        );
    }
    let pids = fs::read_to_string(&pids).unwrap();
    assert_eq!(pids.lines().count(), 2);
    for pid in pids.lines() {
        assert!(ended(pid), "helm's child {pid} outlived the deadline");
    }
    fs::remove_dir_all(&tmp).ok();
}

/// Argo CD stops a request by signalling nyl: the helm it is waiting for, and that helm's own
/// children, end with it.
#[test]
fn sigterm_and_sigint_to_nyl_end_its_helm_children() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let tmp = tempdir("signal");
        let pids = tmp.join("pids");
        let fake = fake_helm(
            &tmp,
            &format!(
                "echo $$ > {0}.tmp; sleep 600 & echo $! >> {0}.tmp; mv {0}.tmp {0}; wait",
                pids.display()
            ),
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_nyl"))
            .args(args("render apps/plain.yaml"))
            .current_dir(fixture())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &tmp)
            .env("NYL_HELM", &fake)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = (0..600).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            pids.exists()
        });
        assert!(started, "the fake helm never started");
        // SAFETY: kill(2) on the pid of a child this test started and has not yet reaped.
        assert_eq!(unsafe { libc::kill(child.id().cast_signed(), signal) }, 0);
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        let pids = fs::read_to_string(&pids).unwrap();
        assert_eq!(pids.lines().count(), 2);
        for pid in pids.lines() {
            assert!(
                ended(pid),
                "signal {signal}: helm process {pid} outlived nyl"
            );
        }
        fs::remove_dir_all(&tmp).ok();
    }
}

/// An empty or `.` entry in PATH would run a `helm` committed to the repository (Argo CD runs
/// the plugin in the repository): only absolute entries are searched.
#[test]
fn helm_is_never_taken_from_a_relative_path_entry() {
    let tmp = tempdir("path-helm");
    let project = tmp.join("project");
    fs::create_dir_all(&project).unwrap();
    copy_dir(&fixture(), &project);
    let marker = tmp.join("committed-helm-ran");
    let committed = project.join("helm");
    fs::write(
        &committed,
        format!("#!/bin/sh\ntouch {}\necho v4.3.1\n", marker.display()),
    )
    .unwrap();
    fs::set_permissions(&committed, fs::Permissions::from_mode(0o755)).unwrap();
    let real = helm();
    let real_dir = real.parent().unwrap();
    let path = std::env::join_paths(
        [
            "",
            ".",
            "apps/..",
            real_dir.to_str().unwrap(),
            "/usr/bin",
            "/bin",
        ]
        .iter(),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nyl"))
        .args(args("render apps/plain.yaml"))
        .current_dir(&project)
        .env_clear()
        .env("PATH", &path)
        .env("HOME", &tmp)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("name: plain"));
    assert!(!marker.exists(), "the committed helm ran");
    fs::remove_dir_all(&tmp).ok();
}

/// A layout's release and namespace come from directory names: one named like a flag is refused
/// as an invocation's name would be.
#[test]
fn a_layout_directory_named_like_a_flag_is_not_a_release_name() {
    let tmp = tempdir("layout-flag");
    let chart = root().join("tests/fixtures/helm-process/components/example/v1/Plain");
    fs::create_dir_all(tmp.join("chart/templates")).unwrap();
    copy_dir(&chart, &tmp.join("chart"));
    fs::create_dir_all(tmp.join("apps/--output-dir=out")).unwrap();
    fs::write(
        tmp.join("nyl.toml"),
        "[[layouts]]\nname = \"apps\"\nid = \"{app}\"\napp = \"apps/{app}\"\nchart = \"chart\"\n",
    )
    .unwrap();
    let (status, stdout, stderr) = nyl(&tmp, &args("render apps/--output-dir=out"), &[]);
    assert_eq!((status, stdout.as_str()), (1, ""), "{stderr}");
    assert!(
        stderr.contains("error invalid_name: layout \"apps\": the release \"--output-dir=out\""),
        "{stderr}"
    );
    assert!(!tmp.join("out").exists());
    fs::remove_dir_all(&tmp).ok();
}

/// The version probe has the same deadline: a `helm` that never answers is a machine problem
/// (exit 2), not a hang.
#[test]
fn a_helm_that_never_answers_the_version_probe_is_stopped() {
    let tmp = tempdir("probe-deadline");
    let fake = tmp.join("fake-helm");
    fs::write(&fake, "#!/bin/sh\nsleep 600\n").unwrap();
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    let (status, stdout, stderr) = nyl(
        &fixture(),
        &args("render --helm-timeout 1 apps/plain.yaml"),
        &[env("NYL_HELM", &fake)],
    );
    assert_eq!((status, stdout.as_str()), (2, ""));
    assert!(
        stderr.contains("error helm_version_unsupported:")
            && stderr.contains("did not answer `helm version` within 1 s"),
        "{stderr}"
    );
    fs::remove_dir_all(&tmp).ok();
}

/// A remote chart's `helm pull` and `helm template` share the release's deadline: a helm taking
/// 2 s for each stays within a deadline of 10 s, and is stopped at 3 s, though each step alone
/// would fit; at 1 s the pull itself is stopped. The private directory of the pull is gone every
/// time.
#[test]
fn a_remote_charts_pull_and_render_share_one_deadline() {
    let tmp = tempdir("remote-deadline");
    let chart = tmp.join("greeter");
    fs::create_dir_all(chart.join("templates")).unwrap();
    fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: greeter\nversion: 0.1.0\n",
    )
    .unwrap();
    fs::write(
        chart.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeter\n",
    )
    .unwrap();
    let out = Command::new(helm())
        .arg("package")
        .arg(&chart)
        .arg("-d")
        .arg(&tmp)
        .env("HOME", &tmp)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // `helm pull` copies the packaged chart to its --destination; both steps take 2 s.
    let fake = fake_helm(
        &tmp,
        &format!(
            "sleep 2; if [ \"$1\" = pull ]; then for a; do case \"$a\" in --destination=*) \
             cp {} \"${{a#--destination=}}\"/ ;; esac; done; else exec {} \"$@\"; fi",
            tmp.join("greeter-0.1.0.tgz").display(),
            helm().display()
        ),
    );
    let project = tmp.join("project");
    fs::create_dir_all(project.join("apps")).unwrap();
    fs::write(project.join("nyl.toml"), "").unwrap();
    fs::write(
        project.join("apps/remote.yaml"),
        "apiVersion: components.k8s.nyl/v1\nkind: http://127.0.0.1:9#greeter@0.1.0\n\
         metadata: {name: greeter}\n",
    )
    .unwrap();
    let tmpdir = tmp.join("nyl-tmp");
    fs::create_dir_all(&tmpdir).unwrap();
    for (timeout, status, step) in [("10", 0, ""), ("3", 1, "template"), ("1", 1, "pull")] {
        let (code, stdout, stderr) = nyl(
            &project,
            &args(&format!("render --no-cache --helm-timeout {timeout} apps")),
            &[env("NYL_HELM", &fake), env("TMPDIR", &tmpdir)],
        );
        assert_eq!(code, status, "{stderr}");
        if status == 0 {
            assert!(stdout.contains("name: greeter"), "{stdout}");
        } else {
            assert!(
                stdout.is_empty()
                    && stderr.contains(&format!("error helm_timeout: helm {step}"))
                    && stderr.contains(&format!("within {timeout} s")),
                "{stderr}"
            );
        }
        assert_eq!(fs::read_dir(&tmpdir).unwrap().count(), 0, "left behind");
    }
    fs::remove_dir_all(&tmp).ok();
}

/// The first run of a helm binary asks `helm version` alongside its first `helm template`, not
/// before it. This helm answers the version only once a template has started (else, after 5 s,
/// as a Helm too old), so a probe run before the render would fail it. Its checks still hold: a
/// helm too old renders nothing, though its template ran.
#[test]
fn the_first_version_probe_runs_alongside_the_first_render() {
    let tmp = tempdir("probe-overlap");
    let marker = tmp.join("templating");
    let fake = tmp.join("fake-helm");
    let script = |version: &str| {
        format!(
            "#!/bin/sh\ncase \"$1\" in\nversion) i=0; while [ ! -e '{m}' ] && [ $i -lt 50 ]; do \
             sleep 0.1; i=$((i+1)); done; if [ -e '{m}' ]; then echo {version}; else echo v3.0.0; \
             fi ;;\n*) touch '{m}'; printf -- '---\\napiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  \
             name: c\\n' ;;\nesac\n",
            m = marker.display()
        )
    };
    fs::write(&fake, script("v4.3.1")).unwrap();
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    let (status, stdout, stderr) = nyl(
        &fixture(),
        &args("render apps/plain.yaml"),
        &[env("NYL_HELM", &fake)],
    );
    assert_eq!(status, 0, "{stderr}");
    assert!(
        stdout.contains("kind: ConfigMap\n") && stdout.ends_with("  name: c\n"),
        "{stdout}"
    );

    fs::remove_file(&marker).unwrap();
    fs::write(&fake, script("v3.7.0")).unwrap();
    let (status, stdout, stderr) = nyl(
        &fixture(),
        &args("render apps/plain.yaml"),
        &[env("NYL_HELM", &fake)],
    );
    assert_eq!((status, stdout.as_str()), (2, ""), "{stderr}");
    assert!(
        stderr.contains("error helm_version_unsupported:") && stderr.contains("Helm v3.7.0"),
        "{stderr}"
    );
    fs::remove_dir_all(&tmp).ok();
}

/// Helms that run side by side share the cores: each is told its share in `GOMAXPROCS`, a helm
/// that runs alone is told nothing, and the operator's own `GOMAXPROCS` is left as it is. The
/// real helm renders; a wrapper in front of it writes down the `GOMAXPROCS` it was started with.
#[test]
fn helms_side_by_side_are_told_their_share_of_the_cores() {
    let tmp = tempdir("go-threads");
    let repo = tmp.join("repo");
    copy_dir(&fixture(), &repo);
    fs::write(
        repo.join("apps/two.yaml"),
        "apiVersion: components.k8s.nyl/v1\nkind: example/v1/Plain\nmetadata: {name: one}\n---\n\
         apiVersion: components.k8s.nyl/v1\nkind: example/v1/Plain\nmetadata: {name: two}\n",
    )
    .unwrap();
    let log = tmp.join("gomaxprocs.log");
    let wrapper = tmp.join("helm");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n[ \"$1\" = template ] && echo \"${{GOMAXPROCS:-unset}}\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            helm().display()
        ),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let shared = (cores / 2).max(1).to_string();
    for (cmd, gomaxprocs, told) in [
        (
            "render --no-cache -j 2 apps/two.yaml",
            None,
            [shared.as_str(); 2].to_vec(),
        ),
        (
            "render --no-cache -j 1 apps/two.yaml",
            None,
            vec!["unset"; 2],
        ),
        (
            "render --no-cache -j 2 apps/plain.yaml",
            None,
            vec!["unset"],
        ),
        (
            "render --no-cache -j 2 apps/two.yaml",
            Some("3"),
            vec!["3"; 2],
        ),
    ] {
        let _ = fs::remove_file(&log);
        let mut vars = vec![env("NYL_HELM", &wrapper)];
        vars.extend(gomaxprocs.map(|g| env("GOMAXPROCS", g)));
        let (status, stdout, stderr) = nyl(&repo, &args(cmd), &vars);
        assert_eq!(status, 0, "{cmd}: {stderr}");
        assert_eq!(
            stdout.matches("kind: ConfigMap").count(),
            told.len(),
            "{cmd}"
        );
        let seen = fs::read_to_string(&log).unwrap();
        assert_eq!(
            seen.lines().collect::<Vec<_>>(),
            told,
            "{cmd} {gomaxprocs:?}"
        );
    }
    fs::remove_dir_all(&tmp).ok();
}
