//! A Nyl repository that keeps nyl.toml in `nyl/` beside its configuration, at the root of a Git
//! worktree (or of the repository Argo CD unpacked): found as Nyl finds it, and rendered exactly
//! as the same repository with nyl.toml at its root.

use std::fs;
use std::path::{Path, PathBuf};

use super::{args, copy_dir, nyl, root, tempdir};

/// The fixture `nyl-shape` rearranged: nyl.toml, config/, components/ and charts/ under `nyl/`,
/// the applications at the repository root, with `.git` when `git` is true.
fn nested_repo(name: &str, git: bool) -> PathBuf {
    let repo = tempdir(name).join("repo");
    let fixture = root().join("tests/fixtures/nyl-shape");
    for (from, to) in [
        ("config", "nyl/config"),
        ("components", "nyl/components"),
        ("charts", "nyl/charts"),
        ("applications", "applications"),
    ] {
        fs::create_dir_all(repo.join(to)).unwrap();
        copy_dir(&fixture.join(from), &repo.join(to));
    }
    fs::copy(fixture.join("nyl.toml"), repo.join("nyl/nyl.toml")).unwrap();
    if git {
        fs::create_dir_all(repo.join(".git")).unwrap();
    }
    repo
}

/// The stdout a case file expects.
fn expected_stdout(case: &str) -> String {
    let text = fs::read_to_string(root().join("tests/cases").join(format!("{case}.case"))).unwrap();
    let stdout = text.split("==> stdout\n").nth(1).unwrap();
    stdout.split("==> stderr\n").next().unwrap().to_string()
}

fn run(dir: &Path, line: &str, env: &[(&str, &str)]) -> (i32, String, String) {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    nyl(dir, &args(line), &env)
}

#[test]
fn nested_nyl_toml_at_a_worktree_root_renders_as_at_the_root() {
    let repo = nested_repo("nested", true);
    for (dir, path) in [
        (repo.clone(), "applications/platform"),
        (repo.join("applications/platform"), "."),
    ] {
        let (status, stdout, stderr) =
            run(&dir, &format!("render --target production {path}"), &[]);
        assert_eq!((status, stderr.as_str()), (0, ""), "from {}", dir.display());
        assert_eq!(stdout, expected_stdout("nyl_shape_render_production"));
    }
}

#[test]
fn nested_nyl_toml_outside_a_worktree_root_is_not_the_project() {
    let repo = nested_repo("nested-no-git", false);
    let (status, stdout, stderr) = run(
        &repo,
        "render --target production applications/platform",
        &[],
    );
    assert_eq!((status, stdout.as_str()), (1, ""));
    assert!(stderr.contains("project_not_found"), "{stderr}");
}

#[test]
fn nested_nyl_toml_at_the_argo_cd_repository_root() {
    // Argo CD's unpacked repository need not hold `.git`: its root is the worktree's.
    let repo = nested_repo("nested-argocd", false);
    let (status, stdout, stderr) = run(
        &repo.join("applications/platform"),
        "argocd generate",
        &[
            ("ARGOCD_APP_SOURCE_PATH", "applications/platform"),
            ("ARGOCD_ENV_NYL_CMP_TARGET", "staging"),
            (
                "ARGOCD_ENV_NYL_CMP_TEMPLATE_INPUT",
                "/applications/platform/site.yaml",
            ),
            ("ARGOCD_APP_NAME", "site"),
            ("ARGOCD_APP_NAMESPACE", "web"),
        ],
    );
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(stdout, expected_stdout("nyl_shape_argocd_generate"));
}
