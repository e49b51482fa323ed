//! `nyl diff` between two commits of a git repository the test creates from the example project.

use std::fs;
use std::path::Path;
use std::process::Command;

use super::{args, copy_dir, nyl, root, tempdir};

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args([
            "-c",
            "user.email=test@example.com",
            "-c",
            "user.name=test",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .status()
        .expect("run git");
    assert!(status.success(), "git {args:?}");
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = fs::read_to_string(path).unwrap();
    assert!(text.contains(from));
    fs::write(path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn diff_between_two_commits_shows_added_removed_and_changed_resources() {
    let repo = tempdir("diff").join("repo");
    fs::create_dir_all(&repo).unwrap();
    copy_dir(&root().join("examples/platform"), &repo);
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "base"]);

    // A changed value, an added app with a Secret, and a removed resource (no backup ConfigMap
    // once the destination is empty).
    edit(&repo.join("apps/db.yaml"), "size: 20Gi", "size: 40Gi");
    fs::write(
        repo.join("apps/credentials.yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata: {name: db-credentials, namespace: app}\nstringData: {password: hunter2}\n",
    )
    .unwrap();
    edit(
        &repo.join("apps/db.yaml"),
        "  backup:\n    retentionPolicy: 7d",
        "  backup:\n    destinationPath: \"\"\n    retentionPolicy: 7d",
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "change"]);

    let (status, stdout, stderr) = nyl(
        &repo,
        &args("diff --base HEAD~1 --head HEAD --target prod-eu-1"),
        &[],
    );
    assert_eq!(status, 0, "{stderr}");
    assert!(
        stdout.contains(
            "apps/credentials.yaml: 1 added, 0 removed, 0 changed\n+ Secret app/db-credentials"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("apps/db.yaml: 0 added, 1 removed, 1 changed"),
        "{stdout}"
    );
    assert!(stdout.contains("- ConfigMap app/app-db-backup"), "{stdout}");
    assert!(
        stdout.contains("-            storage: 20Gi\n    +            storage: 40Gi"),
        "{stdout}"
    );
    assert!(!stdout.contains("hunter2"), "secret values never show");

    // The working tree is the default head; NYL_TARGET is --target; --exit-code and markdown.
    // Without a terminal, stderr shows no progress.
    let (status, stdout, stderr) = nyl(
        &repo,
        &args("diff --base HEAD --exit-code"),
        &[("NYL_TARGET".to_string(), "prod-eu-1".to_string())],
    );
    assert_eq!(
        (status, stdout.as_str(), stderr.as_str()),
        (0, "no changes\n", "")
    );
    edit(&repo.join("apps/credentials.yaml"), "hunter2", "hunter3");
    let (status, stdout, _) = nyl(
        &repo,
        &args("diff --base HEAD --target prod-eu-1 --exit-code -o markdown"),
        &[],
    );
    assert_eq!(status, 1, "{stdout}");
    assert!(
        stdout.contains("| `apps/credentials.yaml` | 0 | 0 | 1 |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("```diff\n@@ -") && stdout.contains("<masked sha256:"),
        "{stdout}"
    );
    assert!(!stdout.contains("hunter"), "{stdout}");
}

/// Bad input is an error, never "no changes": a typo in the target or an app that exists in
/// neither revision exits 2 with `--exit-code` (1 means "differs").
#[test]
fn diff_fails_on_an_unknown_target_or_app() {
    let repo = tempdir("diff-bad").join("repo");
    fs::create_dir_all(&repo).unwrap();
    copy_dir(&root().join("examples/platform"), &repo);
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "base"]);
    let (status, stdout, stderr) = nyl(
        &repo,
        &args("diff --base HEAD --target stagign --exit-code"),
        &[],
    );
    assert_eq!((status, stdout.as_str()), (2, ""), "{stderr}");
    assert!(
        stderr.contains("error target_not_found: no DeploymentTarget or Cluster is named \"stagign\"; known: payments, prod-eu-1"),
        "{stderr}"
    );
    let (status, stdout, stderr) = nyl(
        &repo,
        &args("diff --base HEAD --target prod-eu-1 --exit-code apps/nope.yaml"),
        &[],
    );
    assert_eq!((status, stdout.as_str()), (2, ""), "{stderr}");
    assert!(
        stderr.contains("error path_not_found: apps/nope.yaml: no such app in either revision"),
        "{stderr}"
    );
}

/// A Cluster that layouts deploy to is a target for diff as for every other command, and the
/// pull request that introduces nyl (a base without nyl.toml) shows everything as added.
#[test]
fn diff_takes_a_cluster_and_a_base_without_nyl() {
    let repo = tempdir("diff-cluster").join("repo");
    fs::create_dir_all(&repo).unwrap();
    fs::write(repo.join("README.md"), "before nyl\n").unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "before nyl"]);
    copy_dir(&root().join("tests/fixtures/hydra"), &repo);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "introduce nyl"]);
    let (status, stdout, stderr) = nyl(
        &repo,
        &args("diff --base HEAD~1 --head HEAD --target dev --exit-code"),
        &[],
    );
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stdout.contains("clusters/dev/cluster-infra/in-cluster/cert-manager: 1 added, 0 removed, 0 changed\n+ ConfigMap cert-manager/cert-manager-values"),
        "{stdout}"
    );
    let (status, stdout, stderr) = nyl(
        &repo,
        &args("diff --base HEAD --target dev --exit-code"),
        &[],
    );
    assert_eq!((status, stdout.as_str()), (0, "no changes\n"), "{stderr}");
}
