//! The conventions operators bring from helm, git and kubectl: shell completion, and progress on
//! a terminal (a real one: `script` from util-linux runs nyl under a pseudo-terminal).

use std::path::Path;
use std::process::Command;

use crate::{args, helm, nyl, root, tempdir};

/// `nyl completion SHELL` prints a script that completes nyl's subcommands.
#[test]
fn completion_scripts_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let (status, stdout, stderr) = nyl(
            &tempdir("completion"),
            &args(&format!("completion {shell}")),
            &[],
        );
        assert_eq!((status, stderr.as_str()), (0, ""), "{shell}");
        // Fish names a long option without its dashes.
        for word in ["nyl", "render-tree", "validate", "completion", "target"] {
            assert!(stdout.contains(word), "{shell}: no {word:?} in\n{stdout}");
        }
    }
    let (status, _, stderr) = nyl(&tempdir("completion"), &args("completion tcsh"), &[]);
    assert_eq!(status, 2, "{stderr}");
}

/// What `nyl ARGS` writes to a terminal (stdout and stderr both), run in `dir` with `home` as HOME.
fn on_a_terminal(dir: &Path, home: &Path, nyl_args: &str) -> String {
    let command = format!("{} {nyl_args}", env!("CARGO_BIN_EXE_nyl"));
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("NYL_HELM", helm())
        .env("HOME", home)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script (util-linux) runs nyl under a pseudo-terminal");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// On a terminal, render-tree shows its progress in place and ends with a summary that counts
/// apps, releases and cache hits; the second run finds every release in the cache.
#[test]
fn render_tree_shows_progress_and_a_summary_on_a_terminal() {
    let home = tempdir("progress-home");
    let out = tempdir("progress-tree");
    let run = || {
        on_a_terminal(
            &root().join("examples/platform"),
            &home,
            &format!(
                "render-tree --target prod-eu-1 --output-dir {}",
                out.display()
            ),
        )
    };
    let first = run();
    assert!(
        first.contains("\rrender-tree: 0/2 apps, 0 releases (0 from the cache)\x1b[K"),
        "{first:?}"
    );
    assert!(
        first.contains(
            "\r\x1b[Krender-tree: 2 apps, 2 releases (0 from the cache, 2 rendered by helm) in "
        ),
        "{first:?}"
    );
    assert!(
        first.ends_with("7 files written, 0 unchanged, 0 removed\r\n"),
        "{first:?}"
    );
    let second = run();
    assert!(
        second
            .contains("render-tree: 2 apps, 2 releases (2 from the cache, 0 rendered by helm) in "),
        "{second:?}"
    );
}

/// Without a terminal the same run prints its one line to stdout and nothing to stderr.
#[test]
fn render_tree_prints_no_progress_without_a_terminal() {
    let out = tempdir("progress-quiet");
    let (status, stdout, stderr) = nyl(
        &root().join("examples/platform"),
        &args(&format!(
            "render-tree --target prod-eu-1 --output-dir {}",
            out.display()
        )),
        &[],
    );
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(stdout, "7 files written, 0 unchanged, 0 removed\n");
}

/// A target's render and validate show the same on a terminal; piped, their stderr stays empty
/// (the cases `conv_render_target_apps` and `conv_validate_target_env` show that).
#[test]
fn a_targets_render_and_validate_show_a_summary_on_a_terminal() {
    let home = tempdir("progress-home");
    let dir = root().join("examples/platform");
    let render = on_a_terminal(&dir, &home, "render --target prod-eu-1");
    assert!(
        render.contains(
            "\r\x1b[Krender: 2 apps, 2 releases (0 from the cache, 2 rendered by helm) in "
        ),
        "{render:?}"
    );
    assert!(render.contains("# app: apps/scratch-db.yaml, target prod-eu-1"));
    let validate = on_a_terminal(&dir, &home, "validate --target payments");
    assert!(
        validate.contains(
            "\r\x1b[Kvalidate: 1 app, 1 release (0 from the cache, 1 rendered by helm) in "
        ),
        "{validate:?}"
    );
}

/// A target's render is one valid YAML stream: the documents of each app rendered alone, in the
/// apps' order, the `# app:` lines only comments between them.
#[test]
fn a_targets_render_is_its_apps_renders_in_one_stream() {
    use nyl_core::data::provenance::FileId;
    use nyl_core::data::yaml::{parse_stream, Limits};
    let dir = root().join("examples/platform");
    let (status, whole, stderr) = nyl(&dir, &args("render --target prod-eu-1"), &[]);
    assert_eq!((status, stderr.as_str()), (0, ""));
    let mut alone = String::new();
    for app in ["apps/db.yaml", "apps/scratch-db.yaml"] {
        let (status, text, stderr) = nyl(
            &dir,
            &args(&format!("render --target prod-eu-1 {app}")),
            &[],
        );
        assert_eq!((status, stderr.as_str()), (0, ""));
        alone.push_str(&format!("# app: {app}, target prod-eu-1\n{text}"));
    }
    assert_eq!(whole, alone);
    let parsed = parse_stream(&whole, FileId(0), &Limits::default());
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    let kinds: Vec<_> = parsed
        .docs
        .iter()
        .map(|d| d.to_json()["kind"].clone())
        .collect();
    assert_eq!(kinds, ["ConfigMap", "StatefulSet", "StatefulSet"]);
}
