//! `nyl render-tree`: the tree for the example project's two targets, kustomize's layout, reruns,
//! stale and unknown files, `--check`, and `--flux-escape`.

use std::fs;
use std::path::{Path, PathBuf};

use nyl_core::data::provenance::FileId;
use nyl_core::data::yaml::{parse_stream, Limits};

use super::{args, copy_dir, golden, nyl, root, tempdir};

/// Every file below `dir`, relative path -> content.
fn tree(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e
                .path()
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (rel, fs::read_to_string(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

fn example_copy(name: &str) -> (PathBuf, PathBuf) {
    let tmp = tempdir(name);
    let repo = tmp.join("repo");
    fs::create_dir_all(&repo).unwrap();
    copy_dir(&root().join("examples/platform"), &repo);
    (repo, tmp.join("out"))
}

fn render_tree(repo: &Path, extra: &str) -> (i32, String, String) {
    nyl(repo, &args(&format!("render-tree {extra}")), &[])
}

#[test]
fn golden_tree_of_the_example_project() {
    let (repo, out) = example_copy("tree-golden");
    let (status, stdout, stderr) = render_tree(
        &repo,
        &format!("--all-targets --output-dir {}", out.display()),
    );
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(stdout, "11 files written, 0 unchanged, 0 removed\n");
    let name = "golden_tree_of_the_example_project";
    let expected = root().join("tests/golden/example-tree");
    if golden::blessed(name) {
        let _ = fs::remove_dir_all(&expected);
        copy_dir_create(&out, &expected);
    }
    golden::assert_same(name, &as_text(&tree(&expected)), &as_text(&tree(&out)));
}

/// A tree as one text, each file under a `==> path` line, so a mismatch diffs by line.
fn as_text(files: &[(String, String)]) -> String {
    files
        .iter()
        .map(|(path, text)| format!("==> {path}\n{text}"))
        .collect()
}

fn copy_dir_create(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    copy_dir(from, to);
}

#[test]
fn kustomizations_list_exactly_the_files_beside_them() {
    let (repo, out) = example_copy("tree-kustomize");
    assert_eq!(
        render_tree(
            &repo,
            &format!("--all-targets --output-dir {}", out.display())
        )
        .0,
        0
    );
    let mut checked = 0;
    for entry in walkdir::WalkDir::new(&out)
        .into_iter()
        .filter_map(Result::ok)
    {
        if entry.file_name() != "kustomization.yaml" {
            continue;
        }
        let dir = entry.path().parent().unwrap();
        let doc = parse_stream(
            &fs::read_to_string(entry.path()).unwrap(),
            FileId(0),
            &Limits::default(),
        )
        .docs
        .remove(0)
        .to_json();
        assert_eq!(doc["apiVersion"], "kustomize.config.k8s.io/v1beta1");
        assert_eq!(doc["kind"], "Kustomization");
        let listed: Vec<String> = doc["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect();
        for r in &listed {
            assert!(
                dir.join(r).exists(),
                "{} lists missing {r}",
                entry.path().display()
            );
        }
        // Every resource file and app directory beside it is listed: nothing is left out.
        let beside: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "kustomization.yaml" && !n.starts_with('.'))
            .collect();
        for b in &beside {
            let is_listed = listed
                .iter()
                .any(|r| r == b || r.starts_with(&format!("{b}/")));
            assert!(is_listed, "{} does not list {b}", entry.path().display());
        }
        checked += 1;
    }
    assert_eq!(checked, 5, "two targets, three apps; no top-level one");
}

#[test]
fn reruns_are_idempotent_stale_files_go_and_unknown_files_stay() {
    let (repo, out) = example_copy("tree-rerun");
    let line = format!("--all-targets --output-dir {}", out.display());
    assert_eq!(render_tree(&repo, &line).0, 0);
    let first = tree(&out);
    let mtime = |p: &str| fs::metadata(out.join(p)).unwrap().modified().unwrap();
    let before = mtime("prod-eu-1/apps/db/statefulset_app_app-db.yaml");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (status, stdout, _) = render_tree(&repo, &line);
    assert_eq!(
        (status, stdout.as_str()),
        (0, "0 files written, 11 unchanged, 0 removed\n")
    );
    assert_eq!(tree(&out), first, "byte-identical");
    assert_eq!(
        mtime("prod-eu-1/apps/db/statefulset_app_app-db.yaml"),
        before,
        "unchanged files untouched"
    );

    // A file nyl did not write is never touched; an app that is gone takes its files with it.
    fs::write(out.join("prod-eu-1/apps/db/notes.txt"), "mine").unwrap();
    fs::remove_file(repo.join("apps/scratch-db.yaml")).unwrap();
    let (status, stdout, stderr) = render_tree(&repo, &line);
    assert_eq!(status, 0, "{stderr}");
    assert!(stdout.ends_with("2 removed\n"), "{stdout}");
    assert!(!out
        .join("prod-eu-1/apps/scratch-db/statefulset_app_scratch-db.yaml")
        .exists());
    assert_eq!(
        fs::read_to_string(out.join("prod-eu-1/apps/db/notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn a_failed_run_leaves_the_output_directory_as_it_was() {
    // Apps are staged as they finish; a run that fails removes what it staged, and every
    // directory it made for that, so not even the output directory appears.
    let (repo, out) = example_copy("tree-fail-closed");
    let line = format!("--target prod-eu-1 --output-dir {}", out.display());
    let db = fs::read_to_string(repo.join("apps/db.yaml")).unwrap();
    fs::write(repo.join("apps/db-copy.yaml"), &db).unwrap();
    let (status, _, stderr) = render_tree(&repo, &line);
    assert_eq!(status, 1, "{stderr}");
    assert!(stderr.contains("duplicate_object"), "{stderr}");
    assert!(!out.exists(), "nothing written: {:?}", tree(&out));

    fs::remove_file(repo.join("apps/db-copy.yaml")).unwrap();
    assert_eq!(render_tree(&repo, &line).0, 0);
    let before = tree(&out);
    // db changes (so its files differ and are staged) while another app fails.
    fs::write(repo.join("apps/db.yaml"), db.replace("20Gi", "30Gi")).unwrap();
    fs::write(repo.join("apps/broken.yaml"), "kind: [\n").unwrap();
    let (status, _, stderr) = render_tree(&repo, &line);
    assert_eq!(status, 1, "{stderr}");
    assert_eq!(tree(&out), before, "the previous tree stays as it was");
    let nyl_dir: Vec<_> = fs::read_dir(out.join(".nyl")).unwrap().collect();
    assert_eq!(nyl_dir.len(), 1, "only the index: {nyl_dir:?}");

    fs::remove_file(repo.join("apps/broken.yaml")).unwrap();
    let (status, stdout, stderr) = render_tree(&repo, &line);
    assert_eq!(status, 0, "{stderr}");
    assert!(stdout.starts_with("2 files written"), "{stdout}");
    assert_ne!(tree(&out), before);
}

#[test]
fn check_passes_on_a_clean_tree_and_fails_on_an_edited_one() {
    let (repo, out) = example_copy("tree-check");
    let line = format!("--target prod-eu-1 --output-dir {}", out.display());
    let (status, stdout, _) = render_tree(&repo, &format!("{line} --check"));
    assert_eq!(status, 1, "nothing written yet: {stdout}");
    assert!(!out.exists(), "--check writes nothing");
    assert_eq!(render_tree(&repo, &line).0, 0);
    let (status, stdout, _) = render_tree(&repo, &format!("{line} --check"));
    assert_eq!(
        (status, stdout.as_str()),
        (0, "7 files up to date, 0 differ\n")
    );
    let edited = out.join("apps/db/statefulset_app_app-db.yaml");
    fs::write(
        &edited,
        fs::read_to_string(&edited)
            .unwrap()
            .replace("replicas: 1", "replicas: 3"),
    )
    .unwrap();
    let (status, stdout, _) = render_tree(&repo, &format!("{line} --check"));
    assert_eq!(status, 1);
    assert!(
        stdout.contains("differs: apps/db/statefulset_app_app-db.yaml"),
        "{stdout}"
    );
}

/// With `--flux-escape`, chart output reaches the cluster exactly as Helm rendered it whether Flux
/// substitutes (with variables, so substitution runs) or a consumer never substitutes, while the
/// `${CLUSTER_NAME}` written in an app file is Flux's to substitute.
#[test]
fn flux_escape_keeps_chart_content_exact_for_flux_and_for_plain_consumers() {
    let tmp = tempdir("tree-flux");
    let out = tmp.join("out");
    let repo = root().join("tests/fixtures/flux");
    let (status, _, stderr) = render_tree(
        &repo,
        &format!("--target prod --flux-escape --output-dir {}", out.display()),
    );
    assert_eq!(status, 0, "{stderr}");
    let (status, helm, stderr) = nyl(&repo, &args("render --target prod apps/script.yaml"), &[]);
    assert_eq!(status, 0, "{stderr}");
    let helm_data =
        parse_stream(&helm, FileId(0), &Limits::default()).docs[0].to_json()["data"].clone();
    assert!(
        helm_data["run.sh"].as_str().unwrap().contains("pid $$"),
        "the fixture holds every form of `$`: {helm_data}"
    );
    let vars = [
        ("CLUSTER_NAME", "prod"),
        ("X", "substituted"),
        ("HOME", "/root"),
    ];
    let script = fs::read_to_string(out.join("apps/script/configmap_tools_script.yaml")).unwrap();
    let by_flux = super::flux::apply(&script, &vars).unwrap();
    let data = |text: &str| {
        parse_stream(text, FileId(0), &Limits::default()).docs[0].to_json()["data"].clone()
    };
    assert_eq!(data(&by_flux), helm_data, "Flux leaves chart content alone");
    assert_eq!(
        data(&script),
        helm_data,
        "a consumer that never substitutes sees Helm's"
    );
    let info =
        fs::read_to_string(out.join("apps/script/configmap_tools_cluster-info.yaml")).unwrap();
    assert_eq!(
        data(&super::flux::apply(&info, &vars).unwrap())["cluster"],
        "prod",
        "{info}"
    );
    // Without the mark, Flux would have changed the chart's script: the test can fail.
    let (_, _, _) = render_tree(
        &repo,
        &format!("--target prod --output-dir {}", tmp.join("plain").display()),
    );
    let plain =
        fs::read_to_string(tmp.join("plain/apps/script/configmap_tools_script.yaml")).unwrap();
    assert_ne!(data(&super::flux::apply(&plain, &vars).unwrap()), helm_data);
}

#[test]
fn overlapping_globs_write_each_resource_once() {
    let (repo, out) = example_copy("tree-overlap");
    let targets = repo.join("targets/prod-eu-1.yaml");
    fs::write(
        &targets,
        fs::read_to_string(&targets)
            .unwrap()
            .replace("    - apps/*.yaml\n", "    - apps/**\n"),
    )
    .unwrap();
    let (status, _, stderr) = render_tree(
        &repo,
        &format!("--target prod-eu-1 --output-dir {}", out.display()),
    );
    assert_eq!(status, 0, "{stderr}");
    let names: Vec<String> = tree(&out)
        .into_iter()
        .filter(|(p, _)| !p.ends_with("kustomization.yaml") && !p.starts_with(".nyl"))
        .map(|(p, _)| p.rsplit('/').next().unwrap().to_string())
        .collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(names.len(), unique.len(), "{names:?}");
}
