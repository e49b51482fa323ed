//! CLI tests: whole runs of the `nyl` binary over the fixture repositories in `tests/fixtures/`.
//!
//! Each `tests/cases/NAME.case` names a fixture repository, the arguments (and optional
//! environment), and below a `==> status` line the expected exit status, stdout and stderr.
//! Regenerate the expectations of the cases you mean after an intended change with
//! `NYL_BLESS=case_a,case_b cargo test --test cli` (or a pattern, see [`golden`]), then read the
//! diff.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

mod cache;
mod coalesce;
mod conventions;
mod diff;
mod docs;
mod flux;
mod fuzz_regressions;
mod golden;
mod helm_process;
mod helm_values;
mod nyl_nested;
mod passthrough;
mod remote;
mod schemas;
mod security;
mod tree;

const SEPARATOR: &str = "==> status\n";

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Case {
    header: String,
    repo: PathBuf,
    /// The working directory inside the repository (Argo CD runs the plugin in the app's).
    cwd: Option<String>,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// One line for nyl's standard input (`-f -`).
    stdin: Option<String>,
}

fn parse_case(text: &str) -> Case {
    let header = text.split(SEPARATOR).next().unwrap_or_default().to_string();
    let mut repo = None;
    let mut cwd = None;
    let mut args = Vec::new();
    let mut env = Vec::new();
    let mut stdin = None;
    for line in header
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (key, value) = line
            .split_once(':')
            .expect("case header lines are `key: value`");
        let value = value.trim();
        match key {
            "repo" => repo = Some(root().join("tests/fixtures").join(value)),
            "cwd" => cwd = Some(value.to_string()),
            "args" => args = split_args(value),
            "env" => {
                let (k, v) = value.split_once('=').expect("env: KEY=VALUE");
                env.push((k.to_string(), v.to_string()));
            }
            "stdin" => stdin = Some(format!("{value}\n")),
            other => panic!("unknown case header key {other:?}"),
        }
    }
    Case {
        header,
        repo: repo.expect("case needs `repo:`"),
        cwd,
        args,
        env,
        stdin,
    }
}

/// Runs `nyl` in `dir` with a clean environment (no inherited RUST_LOG, Argo CD or nyl variables).
pub fn nyl(dir: &Path, args: &[String], env: &[(String, String)]) -> (i32, String, String) {
    nyl_with_stdin(dir, args, env, None)
}

/// The command [`nyl`] runs: `nyl` in `dir` with a clean environment.
pub fn nyl_command(dir: &Path, args: &[String], env: &[(String, String)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nyl"));
    cmd.current_dir(dir).args(args).env_clear();
    if let Ok(path) = std::env::var("PATH") {
        cmd.env("PATH", path);
    }
    // Helm is the real one the test command installed (NYL_HELM), else the pinned one in
    // tools/, else whatever is on PATH; tests that need it fail without it, never skip.
    cmd.env("NYL_HELM", helm());
    // Helm writes its caches under HOME; every run gets a fresh one.
    cmd.env("HOME", tempdir("home"));
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd
}

/// [`nyl`], with `stdin` as its standard input (else an empty one).
pub fn nyl_with_stdin(
    dir: &Path,
    args: &[String],
    env: &[(String, String)],
    stdin: Option<&str>,
) -> (i32, String, String) {
    use std::io::Write;
    let mut cmd = nyl_command(dir, args, env);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("run nyl");
    let mut input = child.stdin.take().expect("stdin");
    // A command that reads no stdin may exit before taking it: a closed pipe is no failure.
    let _ = input.write_all(stdin.unwrap_or_default().as_bytes());
    drop(input);
    let out = child.wait_with_output().expect("run nyl");
    let text = |b: Vec<u8>| {
        String::from_utf8(b)
            .expect("utf-8 output")
            .replace(&dir.display().to_string(), "$REPO")
            .replace(&root().display().to_string(), "$ROOT")
    };
    (
        out.status.code().unwrap_or(-1),
        text(out.stdout),
        text(out.stderr),
    )
}

fn render(status: i32, stdout: &str, stderr: &str) -> String {
    format!("{SEPARATOR}{status}\n==> stdout\n{stdout}==> stderr\n{stderr}")
}

fn run_case(name: &str) {
    let path = root().join("tests/cases").join(format!("{name}.case"));
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let case = parse_case(&text);
    let dir = case
        .cwd
        .as_ref()
        .map_or(case.repo.clone(), |c| case.repo.join(c));
    let (status, stdout, stderr) =
        nyl_with_stdin(&dir, &case.args, &case.env, case.stdin.as_deref());
    let actual = format!("{}{}", case.header, render(status, &stdout, &stderr));
    if golden::blessed(name) {
        fs::write(&path, &actual).expect("bless");
        return;
    }
    golden::assert_same(name, &text, &actual);
}

macro_rules! cases {
    ($($name:ident),+ $(,)?) => {
        $( #[test] fn $name() { run_case(stringify!($name)); } )+
        const CASES: &[&str] = &[$(stringify!($name)),+];
    };
}

cases! {
    argocd_generate_above_repository,
    argocd_generate_allow_empty,
    argocd_generate_build_env,
    argocd_generate_default_target,
    argocd_generate_empty,
    argocd_generate_malformed_parameters,
    argocd_generate_null_parameters,
    argocd_generate_parameter,
    argocd_generate_path,
    argocd_generate_path_escape,
    argocd_generate_plain_env,
    argocd_generate_plugin_wording,
    argocd_generate_source_path_mismatch,
    argocd_generate_unknown_parameter,
    argocd_parameters,
    argocd_parameters_above_repository,
    argocd_parameters_default_target,
    bad_aliases,
    bad_config,
    bad_search_paths,
    bad_toml,
    broken_targets,
    broken_targets_selected,
    classify_duplicate_objects,
    classify_content_on_separator,
    classify_misnamed_contract,
    classify_nyl_lookalikes,
    classify_values_and_kustomization,
    conv_chdir,
    conv_explain_values_files,
    conv_chdir_missing,
    conv_namespace_short,
    conv_render_target_apps,
    conv_render_target_apps_json,
    conv_render_target_dir_narrows,
    conv_render_target_duplicate_across_apps,
    conv_render_target_layout_apps,
    conv_render_target_path_narrows,
    conv_render_tree_all_targets_env,
    conv_render_tree_cluster,
    conv_render_tree_target_env,
    conv_target_env,
    conv_target_nothing_to_deploy,
    conv_target_values_files_ambiguous,
    conv_validate_target_cluster,
    conv_validate_target_env,
    conv_values_file_missing,
    conv_values_file_not_mapping,
    conv_values_files,
    conv_values_stdin,
    conv_values_target_apps,
    conv_values_target_apps_json,
    conv_verbose,
    conv_verbose_rust_log_wins,
    errors_alias_bomb,
    errors_cluster_not_found,
    errors_conflict,
    errors_contracts,
    errors_duplicate_key_and_inf,
    errors_duplicate_release,
    errors_excludes,
    errors_kinds,
    errors_not_utf8,
    errors_path_not_found,
    errors_path_outside_project,
    errors_required_missing,
    errors_schema,
    errors_target_not_found,
    errors_unknown_output,
    errors_unused_broken_contract,
    errors_yaml_syntax,
    example_render,
    example_render_payments,
    explain_ancestor,
    explain_import,
    explain_invocation,
    explain_layout_absent_layer_and_null,
    explain_layout_merged,
    explain_layout_replaced,
    helm_flags_refused,
    helm_timeout,
    hydra_app_not_found,
    hydra_argocd_generate,
    hydra_render_directory,
    hydra_runtime_values,
    hydra_values_by_id,
    hydra_values_explain_glob,
    imports_alias,
    imports_cluster_alone,
    imports_copied_component,
    imports_directory_order,
    imports_disabled,
    imports_empty_dir,
    imports_empty_map,
    imports_escaped_pointers,
    imports_falsy,
    imports_namespace_argocd,
    imports_namespace_flag,
    imports_no_contract,
    imports_null,
    imports_payments_target,
    imports_present_falsy_target_values,
    imports_remote,
    imports_several_paths,
    imports_staging_optional_absent,
    imports_yaml11,
    layouts_bad_config,
    layouts_invalid_layers,
    layouts_overlap,
    lenient_invocation_stays_strict,
    lenient_render,
    lenient_user_values,
    lenient_values_explain,
    limits_ceiling,
    limits_ceiling_invalid,
    limits_helm_output,
    limits_render_bytes,
    limits_too_many_files,
    limits_total_bytes,
    no_project,
    nyl_chart_not_found,
    nyl_nested_config_argocd,
    nyl_nested_config_outside_worktree,
    nyl_release_problems,
    nyl_secrets_provider,
    nyl_secrets_provider_null,
    nyl_shape_argocd_generate,
    nyl_shape_argocd_template_inputs,
    nyl_shape_render_production,
    nyl_shape_render_staging,
    nyl_shape_target_not_found,
    nyl_shape_explain_templated,
    nyl_shape_validate,
    nyl_shape_values_explain_templated,
    nyl_template_expressions,
    nyl_templating_errors,
    nyl_templating_no_target,
    nyl_templating_off,
    nyl_unsupported_features,
    render_allow_empty,
    render_api_versions_refused,
    render_broken_chart_values,
    render_chart_symlink,
    render_cycle,
    render_depth,
    render_empty,
    render_env_api_versions_refused,
    render_env_kube_version,
    render_flags_override_cluster,
    render_helm_missing,
    render_helm_template_error,
    render_helm_too_old,
    render_helmchart,
    render_namespaces,
    render_namespaces_json,
    render_nested,
    render_path_escape,
    render_runtime_values_top_level_only,
    render_schema_external_ref,
    render_schema_violation,
    render_schema_unversioned_draft,
    render_schema_unversioned_draft_violation,
    render_seed,
    render_values_errors_stop_helm,
    render_values_reach_helm,
    runtime_values_ambiguous,
    runtime_values_ambiguous_across_paths,
    schema_violation_layer,
    schema_violation_runtime,
    seed_db,
    seed_debug_log,
    seed_explain,
    seed_explain_json,
    seed_json,
    seed_scratch_db,
    seed_without_target,
    targets_other_file_broken,
    targets_own_cluster_broken,
    targets_own_file_broken,
    targets_split_argocd_generate,
    targets_split_duplicate,
    targets_split_duplicate_in_own_file,
    targets_split_not_found,
    targets_split_own_file_broken,
    targets_split_render,
    targets_split_validate,
    targets_split_whole_target,
    tree_all_targets_clusters,
    tree_allow_empty,
    tree_duplicate_across_apps,
    tree_empty_app,
    tree_own_file_broken,
    tree_search_path_missing,
    tree_stray_documents,
    tree_target_without_apps,
    tree_unknown_target,
    tree_glob_braces,
    tree_glob_invalid,
    tree_unmatched_glob,
    validate_example_clean,
    validate_fail_closed,
    validate_github,
    validate_json,
    validate_layouts,
    validate_missing_dir,
    validate_no_render,
    validate_one_target,
    validate_past_max_files,
    validate_search_path_missing,
    validate_strict,
    validate_text,
    validate_unknown_output,
    validate_unknown_target,
    validate_warnings_pass,
    values_explain_helm_rules_differ,
    version_helm_not_found,
    version_helm_unusable,
}

/// `nyl version` names the helm it runs, by path and version: here the one the tests run.
#[test]
fn version_names_the_helm() {
    let (status, stdout, stderr) = nyl(&tempdir("version"), &["version".to_string()], &[]);
    let helm = helm()
        .display()
        .to_string()
        .replace(&root().display().to_string(), "$ROOT");
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(
        stdout,
        format!("nyl {}\nhelm: {helm} (v4.3.1)\n", env!("CARGO_PKG_VERSION"))
    );
}

/// nyl reports its own peak memory when asked (bench/run reads it), and only then.
#[test]
fn peak_memory_is_reported_at_debug_level() {
    let dir = tempdir("peak-memory");
    let env = [("RUST_LOG".to_string(), "peak_memory=debug".to_string())];
    let (status, _, stderr) = nyl(&dir, &["version".to_string()], &env);
    assert_eq!(status, 0, "{stderr}");
    let kib: u64 = stderr
        .split("max_rss_kib=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no peak memory in {stderr:?}"));
    assert!(kib > 0);
    assert_eq!(nyl(&dir, &["version".to_string()], &[]).2, "");
}

/// nyl reports each helm process's time when asked (bench/run reads it), and only then.
#[test]
fn helm_time_is_reported_at_debug_level() {
    let repo = root().join("examples/platform");
    let render = args("render --no-cache --target payments apps/payments");
    let env = [("RUST_LOG".to_string(), "helm_time=debug".to_string())];
    let (status, stdout, stderr) = nyl(&repo, &render, &env);
    assert_eq!(status, 0, "{stderr}");
    assert!(stdout.contains("kind: "), "{stdout}");
    let times: Vec<f64> = stderr
        .lines()
        .filter_map(|l| l.split(r#"helm ended release="ledger-db" ms="#).nth(1))
        .map(|ms| ms.trim().parse().expect("a number of ms"))
        .collect();
    assert!(matches!(times[..], [t] if t > 0.0), "{stderr}");
    assert_eq!(nyl(&repo, &render, &[]).2, "");
}

#[test]
fn every_case_file_is_listed() {
    let mut files: Vec<String> = fs::read_dir(root().join("tests/cases"))
        .unwrap()
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_suffix(".case")
                .map(str::to_string)
        })
        .collect();
    files.sort();
    let mut listed: Vec<String> = CASES.iter().map(std::string::ToString::to_string).collect();
    listed.sort();
    assert_eq!(
        files, listed,
        "tests/cases/*.case and the cases! list differ"
    );
}

/// Splits a case's `args:` line on whitespace, keeping '…'-quoted parts together.
fn split_args(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '\'' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

pub fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

/// The "Helm receives" block of the value-imports specification, verbatim.
const SEED_HELM_RECEIVES: &str = "\
scheduling:
  nodeSelector:
    scheduling.example.com/pool: compute
  tolerations:
    - key: scheduling.example.com/pool
      operator: Equal
      value: compute
      effect: NoSchedule
storage:
  storageClass: local-path-retain
  size: 20Gi
backup:
  destinationPath: s3://example-backups/postgresql
  retentionPolicy: 7d
";

#[test]
fn seed_example_prints_exactly_the_helm_receives_block() {
    let repo = root().join("tests/fixtures/seed");
    let (status, stdout, stderr) = nyl(&repo, &args("values --target prod-eu-1 apps/db.yaml"), &[]);
    assert_eq!((status, stderr.as_str()), (0, ""));
    let body: String = stdout
        .lines()
        .filter(|l| !l.starts_with('#') && *l != "---")
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(body, SEED_HELM_RECEIVES);
}

/// Changing retentionPolicy in the Cluster values changes every invocation rendered for its
/// targets, except the one that sets its own.
#[test]
fn a_cluster_value_change_reaches_every_invocation_that_does_not_set_it() {
    let tmp = tempdir("cluster-change");
    copy_dir(&root().join("tests/fixtures/seed"), &tmp);
    let run = || {
        let (status, stdout, stderr) =
            nyl(&tmp, &args("values --target prod-eu-1 -o json apps"), &[]);
        assert_eq!(status, 0, "{stderr}");
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|i| i["values"].clone())
            .collect::<Vec<_>>()
    };
    let before = run();
    let path = tmp.join("targets/prod-eu-1.yaml");
    let text = fs::read_to_string(&path)
        .unwrap()
        .replace("retentionPolicy: 30d", "retentionPolicy: 60d");
    fs::write(&path, text).unwrap();
    // Give scratch-db the backup import back, so the change has somewhere to go.
    let scratch = tmp.join("apps/scratch-db.yaml");
    let text = fs::read_to_string(&scratch)
        .unwrap()
        .replace("exclude: [backup]", "exclude: []");
    fs::write(&scratch, text).unwrap();
    let after = run();
    assert_eq!(before[0], after[0], "app-db sets its own retentionPolicy");
    assert_eq!(after[0]["backup"]["retentionPolicy"], "7d");
    assert_eq!(after[1]["backup"]["retentionPolicy"], "60d");
    fs::remove_dir_all(&tmp).ok();
}

/// Every code of the registry is shown by at least one CLI case, except those only a broken
/// machine can provoke.
#[test]
fn every_diagnostic_code_is_exercised_by_a_case() {
    let all: String = CASES
        .iter()
        .map(|c| fs::read_to_string(root().join("tests/cases").join(format!("{c}.case"))).unwrap())
        .collect();
    let unreachable_here = ["io_error"];
    for code in nyl_core::data::diagnostics::Code::ALL {
        let name = code.name();
        if unreachable_here.contains(&name) {
            continue;
        }
        let shown =
            all.contains(&format!("error {name}:")) || all.contains(&format!("warning {name}:"));
        assert!(shown, "no case shows {name}");
    }
}

pub fn helm() -> PathBuf {
    if let Some(path) = std::env::var_os("NYL_HELM") {
        return PathBuf::from(path);
    }
    let pinned = root().join("tools/helm-4.3.1/helm");
    if pinned.is_file() {
        pinned
    } else {
        PathBuf::from("helm")
    }
}

/// What the real helm prints for `args` run in `dir`, with a fresh `HOME`; fails the test when
/// helm fails.
pub fn helm_stdout(args: &[&str], dir: &Path) -> String {
    let out = Command::new(helm())
        .args(args)
        .current_dir(dir)
        .env("HOME", tempdir("helm-home"))
        .output()
        .expect("run helm");
    assert!(
        out.status.success(),
        "helm {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A fresh directory under the system temp dir, unique per call. A test run's directories are
/// all in one, named by the run's process id; the run's first call removes those of runs whose
/// process has ended, so a machine keeps at most the last run's (a failed test's files stay
/// there to be looked at until the next run).
pub fn tempdir(name: &str) -> PathBuf {
    static RUN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUN.get_or_init(|| {
        let tmp = std::env::temp_dir();
        remove_ended_runs(&tmp);
        let run = tmp.join(format!("{RUN_PREFIX}{}", std::process::id()));
        let _ = fs::remove_dir_all(&run);
        fs::create_dir_all(&run).unwrap();
        run
    });
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = run.join(format!("{name}-{n}"));
    fs::create_dir_all(&dir).unwrap();
    dir
}

const RUN_PREFIX: &str = "nyl-test-run-";

/// Removes the directories of test runs whose process is gone (another user's stay: they
/// cannot be removed, and nothing is said).
fn remove_ended_runs(tmp: &Path) {
    for entry in fs::read_dir(tmp).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix(RUN_PREFIX))
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = pid {
            if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Test runs leave at most their own directories behind: those of ended runs go.
#[test]
fn the_directories_of_ended_test_runs_are_removed() {
    let tmp = tempdir("runs");
    let mut child = Command::new("true").spawn().unwrap();
    let ended = child.id();
    child.wait().unwrap();
    let names = [
        format!("{RUN_PREFIX}{ended}"),
        format!("{RUN_PREFIX}1"),
        format!("{RUN_PREFIX}{}", std::process::id()),
        format!("{RUN_PREFIX}x"),
        "other".to_string(),
    ];
    for name in &names {
        fs::create_dir_all(tmp.join(name).join("inside")).unwrap();
    }
    remove_ended_runs(&tmp);
    let left: Vec<bool> = names.iter().map(|n| tmp.join(n).exists()).collect();
    assert_eq!(left, [false, true, true, true, true], "{names:?}");
}

/// The example project the README's demo uses stays valid, for both of its targets.
#[test]
fn example_project_evaluates_for_each_target() {
    let repo = root().join("examples/platform");
    let (status, stdout, stderr) = nyl(&repo, &args("values --target prod-eu-1 -o json apps"), &[]);
    assert_eq!(status, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v[0]["values"]["backup"]["retentionPolicy"], "7d");
    let (status, stdout, stderr) = nyl(
        &repo,
        &args("values --target payments -o json apps/payments"),
        &[],
    );
    assert_eq!(status, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v[0]["chart"], "example/v1/PostgresDb");
    assert_eq!(
        v[0]["values"]["backup"]["retentionPolicy"], "90d",
        "the DeploymentTarget wins"
    );
    assert_eq!(v[0]["values"]["storage"]["size"], "100Gi");
}

/// For the same inputs, `nyl argocd generate` prints exactly what `nyl render` prints.
#[test]
fn argocd_generate_output_is_byte_identical_to_render() {
    let repo = root().join("tests/fixtures/render");
    let (status, rendered, stderr) = nyl(
        &repo,
        &args("render --target prod-eu-1 --namespace argo-ns --kube-version 1.30.0 --api-versions v1 apps/dump-default-ns.yaml apps/nested.yaml"),
        &[],
    );
    assert_eq!(status, 0, "{stderr}");
    assert!(rendered.contains("kind: ConfigMap"));
    let env = |k: &str, v: &str| (k.to_string(), v.to_string());
    for app in ["dump-default-ns.yaml", "nested.yaml"] {
        let (status, generated, stderr) = nyl(
            &repo.join("apps"),
            &args("argocd generate"),
            &[
                env(
                    "ARGOCD_APP_PARAMETERS",
                    &format!(
                        r#"[{{"name":"target","string":"prod-eu-1"}},{{"name":"path","string":"{app}"}}]"#
                    ),
                ),
                env("ARGOCD_APP_NAMESPACE", "argo-ns"),
                env("ARGOCD_APP_SOURCE_PATH", "apps"),
                env("KUBE_VERSION", "1.30.0"),
                env("KUBE_API_VERSIONS", "v1"),
            ],
        );
        assert_eq!(status, 0, "{stderr}");
        let (_, single, _) = nyl(
            &repo,
            &args(&format!("render --target prod-eu-1 --namespace argo-ns --kube-version 1.30.0 --api-versions v1 apps/{app}")),
            &[],
        );
        assert_eq!(generated, single, "{app}");
        assert!(rendered.contains(&generated), "{app}");
    }
}

/// Same inputs, same bytes: a render is deterministic.
#[test]
fn render_is_deterministic() {
    let repo = root().join("tests/fixtures/render");
    let run = || {
        nyl(
            &repo,
            &args("render --target prod-eu-1 apps/dump.yaml apps/nested.yaml apps/helmchart.yaml"),
            &[],
        )
    };
    let first = run();
    assert_eq!(first.0, 0, "{}", first.2);
    assert_eq!(first, run());
}

/// validate checks apps in parallel (NYL_JOBS sets how many where no flag can be given), and
/// reports exactly what one job reports.
#[test]
fn validate_in_parallel_reports_what_one_job_reports() {
    let repo = root().join("tests/fixtures/validate");
    let one = nyl(&repo, &args("validate -j 1"), &[]);
    assert_eq!(one.0, 1, "{}", one.2);
    assert!(one.1.contains("3 apps"), "{}", one.1);
    assert_eq!(nyl(&repo, &args("validate -j 4"), &[]), one);
    let jobs = |n: &str| vec![("NYL_JOBS".to_string(), n.to_string())];
    assert_eq!(nyl(&repo, &args("validate"), &jobs("3")), one);
    let zero = nyl(&repo, &args("validate"), &jobs("0"));
    assert_eq!(zero.0, 2, "no jobs is a usage error: {}", zero.2);
}

/// plugin.yaml is a ConfigManagementPlugin with what Argo CD requires of one.
#[test]
fn plugin_yaml_has_the_fields_argo_cd_requires() {
    use nyl_core::data::provenance::FileId;
    use nyl_core::data::yaml::{parse_stream, Limits};
    let text = fs::read_to_string(root().join("plugin.yaml")).expect("plugin.yaml");
    let parsed = parse_stream(&text, FileId(0), &Limits::default());
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    let doc = parsed.docs[0].to_json();
    assert_eq!(doc["apiVersion"], "argoproj.io/v1alpha1");
    assert_eq!(doc["kind"], "ConfigManagementPlugin");
    assert_eq!(doc["metadata"]["name"], "nyl");
    assert_eq!(
        doc["spec"]["generate"]["command"],
        serde_json::json!(["nyl", "argocd", "generate"])
    );
    assert_eq!(
        doc["spec"]["parameters"]["dynamic"]["command"],
        serde_json::json!(["nyl", "argocd", "parameters"])
    );
    assert!(
        doc["spec"].get("discover").is_none(),
        "no discover rule: Applications name the plugin"
    );
    for p in doc["spec"]["parameters"]["static"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let name = p["name"].as_str().unwrap();
        assert!(
            nyl_core::repository::argocd::PARAMETERS
                .iter()
                .any(|(n, _, _)| *n == name),
            "unknown parameter {name}"
        );
    }
}
