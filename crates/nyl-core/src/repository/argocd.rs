//! The Argo CD config-management plugin's inputs: `ARGOCD_APP_PARAMETERS`, `ARGOCD_ENV_*` and the
//! build environment, turned into the same render request `nyl render` makes.
//!
//! Precedence for each setting: a plugin parameter, then `ARGOCD_ENV_NYL_<NAME>` (the
//! Application's `plugin.env`), then the plain `NYL_<NAME>` of the sidecar.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::data::diagnostics::{Code, Diagnostic};
use crate::project::objects::check_api_version;

/// The parameters nyl understands, with the env suffix each falls back to.
pub const PARAMETERS: &[(&str, &str, &str)] = &[
    (
        "target",
        "TARGET",
        "The DeploymentTarget (or Cluster) whose values feed value imports.",
    ),
    (
        "path",
        "PATH",
        "A file or directory relative to the app directory to render instead of it.",
    ),
    (
        "allow-empty",
        "ALLOW_EMPTY",
        "\"true\" accepts a render with no objects (Argo CD would prune the app).",
    ),
    (
        "values",
        "VALUES",
        "Runtime chart values (YAML), over everything else of the app's one release.",
    ),
    (
        "target-values",
        "TARGET_VALUES",
        "Runtime target values (YAML), merged over the target's values before imports.",
    ),
];

/// One element of `ARGOCD_APP_PARAMETERS`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Parameter {
    name: String,
    string: Option<String>,
    array: Option<Vec<String>>,
    map: Option<BTreeMap<String, String>>,
}

/// The plugin's settings after precedence is applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub target: Option<String>,
    pub path: Option<String>,
    pub allow_empty: bool,
    pub values: Option<String>,
    pub target_values: Option<String>,
    /// `ARGOCD_APP_NAMESPACE`: the namespace of releases that set none.
    pub app_namespace: Option<String>,
    /// `ARGOCD_APP_NAME`, split into (namespace, name) when Argo CD wrote `<namespace>_<name>`.
    pub app: Option<(Option<String>, String)>,
    pub kube_version: Option<String>,
    pub api_versions: Vec<String>,
    /// `ARGOCD_APP_SOURCE_PATH`: the app's path inside the repository, which bounds the search
    /// for `nyl.toml` (see [`repository_root`]).
    pub source_path: Option<String>,
}

/// Reads the settings from an environment lookup (the process env in production, a map in tests).
pub fn settings(env: &dyn Fn(&str) -> Option<String>) -> Result<Settings, Vec<Diagnostic>> {
    let params = parameters(env("ARGOCD_APP_PARAMETERS").as_deref())?;
    let setting = |name: &str, suffix: &str| {
        params
            .get(name)
            .cloned()
            .or_else(|| env(&format!("ARGOCD_ENV_NYL_{suffix}")))
            .or_else(|| env(&format!("NYL_{suffix}")))
            .filter(|v| !v.is_empty())
    };
    let allow_empty = match setting("allow-empty", "ALLOW_EMPTY").as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(vec![Diagnostic::new(
                Code::InvalidParameters,
                format!("allow-empty must be \"true\" or \"false\", not {other:?}"),
            )])
        }
    };
    // What an Application written for Nyl's plugin sets, read after nyl's own names.
    let nyl_env = |name: &str| {
        env(&format!("ARGOCD_ENV_{name}"))
            .or_else(|| env(name))
            .filter(|v| !v.is_empty())
    };
    let source_path = env("ARGOCD_APP_SOURCE_PATH");
    let path = match setting("path", "PATH") {
        Some(path) => Some(path),
        None => nyl_env("NYL_CMP_TEMPLATE_INPUT")
            .map(|input| template_input(&input, source_path.as_deref()))
            .transpose()
            .map_err(|d| vec![d])?,
    };
    let api_versions = api_versions(env("KUBE_API_VERSIONS").as_deref())?;
    Ok(Settings {
        target: setting("target", "TARGET").or_else(|| nyl_env("NYL_CMP_TARGET")),
        path,
        allow_empty,
        values: setting("values", "VALUES"),
        target_values: setting("target-values", "TARGET_VALUES"),
        app_namespace: env("ARGOCD_APP_NAMESPACE")
            .filter(|v| !v.is_empty())
            .or_else(|| nyl_env("NYL_RELEASE_NAMESPACE")),
        app: env("ARGOCD_APP_NAME")
            .filter(|v| !v.is_empty())
            .or_else(|| nyl_env("NYL_RELEASE_NAME"))
            .map(|n| match n.split_once('_') {
                Some((ns, name)) => (Some(ns.to_string()), name.to_string()),
                None => (None, n),
            }),
        kube_version: env("KUBE_VERSION").filter(|v| !v.is_empty()),
        api_versions,
        source_path,
    })
}

/// Nyl's `NYL_CMP_TEMPLATE_INPUT` as nyl's `path`: one file, relative to the app directory, or
/// with a leading `/` relative to the repository root (then it must lie in the app directory,
/// which is all the plugin reads).
fn template_input(input: &str, source_path: Option<&str>) -> Result<String, Diagnostic> {
    let refuse = |why: &str| {
        Diagnostic::new(
            Code::InvalidParameters,
            format!("NYL_CMP_TEMPLATE_INPUT {input:?} {why}"),
        )
    };
    if input.contains(',') {
        return Err(refuse(
            "names several files; nyl renders one path per Application: name one file, or the \
             directory holding them",
        ));
    }
    let Some(from_root) = input.strip_prefix('/') else {
        return Ok(input.to_string());
    };
    let source = source_path.unwrap_or_default().trim_matches('/');
    let source = if source == "." { "" } else { source };
    if source.is_empty() {
        return Ok(from_root.to_string());
    }
    from_root
        .strip_prefix(source)
        .and_then(|rest| rest.strip_prefix('/'))
        .map(str::to_string)
        .ok_or_else(|| {
            refuse(&format!(
                "lies outside the Application's source path {source:?}; the plugin reads only \
                 the app directory: point spec.source.path at a directory holding the file"
            ))
        })
}

/// The root of the repository Argo CD unpacked: it runs the plugin in
/// `<root>/<ARGOCD_APP_SOURCE_PATH>`, so the root is the working directory `cwd` less that path
/// (without it, or for an app at the repository root, `cwd` itself). The plugin looks for
/// `nyl.toml` no higher: above lie other requests' repositories and the sidecar's own files.
pub fn repository_root(cwd: &Path, source_path: Option<&str>) -> Result<PathBuf, Diagnostic> {
    let source = source_path.unwrap_or_default();
    let parts: Vec<&str> = source
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let mismatch = || {
        Diagnostic::new(
            Code::InvalidParameters,
            format!(
                "ARGOCD_APP_SOURCE_PATH {source:?} is not where the plugin runs ({}): the \
                 repository root cannot be told, so nothing is read",
                cwd.display()
            ),
        )
    };
    if parts.contains(&"..") {
        return Err(mismatch());
    }
    let mut root = cwd;
    for part in parts.iter().rev() {
        if root.file_name() != Some(std::ffi::OsStr::new(part)) {
            return Err(mismatch());
        }
        root = root.parent().ok_or_else(mismatch)?;
    }
    Ok(root.to_path_buf())
}

/// `KUBE_API_VERSIONS`: a comma list of `group/version` and `group/version/Kind` entries.
pub fn api_versions(value: Option<&str>) -> Result<Vec<String>, Vec<Diagnostic>> {
    let entries = value
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    checked_api_versions(entries, "KUBE_API_VERSIONS")
}

/// API versions given outside the repository (`source`: the flag or variable), each checked.
pub fn checked_api_versions(
    entries: Vec<String>,
    source: &str,
) -> Result<Vec<String>, Vec<Diagnostic>> {
    let problems: Vec<Diagnostic> = entries
        .iter()
        .filter_map(|entry| check_api_version(entry).err())
        .map(|why| Diagnostic::new(Code::InvalidApiVersionEntry, format!("{source}: {why}")))
        .collect();
    if problems.is_empty() {
        Ok(entries)
    } else {
        Err(problems)
    }
}

/// Parses `ARGOCD_APP_PARAMETERS`: absent, the literal `null`, or a JSON list. Every problem is
/// reported; each known parameter takes a string.
fn parameters(value: Option<&str>) -> Result<BTreeMap<String, String>, Vec<Diagnostic>> {
    let invalid = |m: String| Diagnostic::new(Code::InvalidParameters, m);
    let list: Option<Vec<Parameter>> = match value.map(str::trim) {
        None | Some("") => None,
        Some(text) => serde_json::from_str(text).map_err(|e| {
            vec![invalid(format!(
                "ARGOCD_APP_PARAMETERS is not the JSON list Argo CD sends: {e}"
            ))]
        })?,
    };
    let mut out = BTreeMap::new();
    let mut problems = Vec::new();
    for p in list.unwrap_or_default() {
        if !PARAMETERS.iter().any(|(name, _, _)| *name == p.name) {
            let known: Vec<_> = PARAMETERS.iter().map(|(n, _, _)| *n).collect();
            problems.push(invalid(format!(
                "unknown plugin parameter {:?}; nyl knows {}",
                p.name,
                known.join(", ")
            )));
            continue;
        }
        match (p.string, p.array.is_some() || p.map.is_some()) {
            (Some(s), false) => {
                out.insert(p.name, s);
            }
            _ => problems.push(invalid(format!(
                "plugin parameter {:?} must be a string",
                p.name
            ))),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// The target `generate` uses when the `target` parameter is absent: a project's only target.
/// `announcements` shows the same default, and Argo CD never sends an announced default back, so
/// both must come from this one rule.
pub fn default_target(targets: &[String]) -> Option<&String> {
    match targets {
        [only] => Some(only),
        _ => None,
    }
}

/// CLI wording in diagnostics and what the user sets inside Argo CD instead.
const PLUGIN_WORDING: &[(&str, &str)] = &[
    (
        "render with --target NAME",
        "set the plugin parameter `target`",
    ),
    (
        "Pass --allow-empty (plugin parameter allow-empty: true)",
        "Set the plugin parameter `allow-empty` to \"true\"",
    ),
];

/// A diagnostic as the plugin shows it: hints name the plugin parameters, not the CLI flags.
pub fn plugin_wording(mut d: Diagnostic) -> Diagnostic {
    for (cli, plugin) in PLUGIN_WORDING {
        d.message = d.message.replace(cli, plugin);
    }
    d
}

/// The dynamic parameter announcements: `target` with the project's targets (Argo CD has no
/// list of choices, so they are named in the tooltip, and the only one is the default).
pub fn announcements(targets: &[String]) -> serde_json::Value {
    let mut target = serde_json::json!({
        "name": "target",
        "title": "Target",
        "tooltip": format!("{} Known: {}.", PARAMETERS[0].2, if targets.is_empty() { "(none)".to_string() } else { targets.join(", ") }),
        "itemType": "string",
        "collectionType": "string",
    });
    if let Some(only) = default_target(targets) {
        target["string"] = only.clone().into();
    }
    serde_json::Value::Array(vec![target])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn codes(r: Result<Settings, Vec<Diagnostic>>) -> Vec<Code> {
        r.unwrap_err().into_iter().map(|d| d.code).collect()
    }

    #[test]
    fn absent_null_and_empty_list_mean_no_parameters() {
        for value in [None, Some("null"), Some("[]")] {
            let vars: Vec<(&str, &str)> = value
                .map(|v| vec![("ARGOCD_APP_PARAMETERS", v)])
                .unwrap_or_default();
            assert_eq!(
                settings(&env(&vars)).unwrap(),
                Settings::default(),
                "{value:?}"
            );
        }
    }

    #[test]
    fn parameter_wins_over_argocd_env_which_wins_over_plain_env() {
        let all = [
            (
                "ARGOCD_APP_PARAMETERS",
                r#"[{"name":"target","string":"p"}]"#,
            ),
            ("ARGOCD_ENV_NYL_TARGET", "e"),
            ("NYL_TARGET", "n"),
        ];
        assert_eq!(settings(&env(&all)).unwrap().target.as_deref(), Some("p"));
        assert_eq!(
            settings(&env(&all[1..])).unwrap().target.as_deref(),
            Some("e")
        );
        assert_eq!(
            settings(&env(&all[2..])).unwrap().target.as_deref(),
            Some("n")
        );
    }

    #[test]
    fn nyl_plugin_settings_are_read_after_nyls_own() {
        let nyl = [
            ("ARGOCD_ENV_NYL_CMP_TARGET", "prod"),
            ("ARGOCD_ENV_NYL_CMP_TEMPLATE_INPUT", "/apps/web/app.yaml"),
            ("ARGOCD_APP_SOURCE_PATH", "apps/web"),
            ("ARGOCD_ENV_NYL_RELEASE_NAMESPACE", "web"),
            ("ARGOCD_ENV_NYL_RELEASE_NAME", "web"),
        ];
        let s = settings(&env(&nyl)).unwrap();
        assert_eq!(s.target.as_deref(), Some("prod"));
        assert_eq!(s.path.as_deref(), Some("app.yaml"));
        assert_eq!(s.app_namespace.as_deref(), Some("web"));
        assert_eq!(s.app, Some((None, "web".to_string())));
        let own = [("ARGOCD_ENV_NYL_TARGET", "dev"), ("NYL_PATH", "x.yaml")];
        let s = settings(&env(&[&own[..], &nyl[..]].concat())).unwrap();
        assert_eq!(
            (s.target.as_deref(), s.path.as_deref()),
            (Some("dev"), Some("x.yaml"))
        );
        let relative = settings(&env(&[("NYL_CMP_TEMPLATE_INPUT", "app.yaml")])).unwrap();
        assert_eq!(relative.path.as_deref(), Some("app.yaml"));
        for bad in ["/other/app.yaml", "a.yaml,b.yaml"] {
            let vars = [
                ("ARGOCD_ENV_NYL_CMP_TEMPLATE_INPUT", bad),
                ("ARGOCD_APP_SOURCE_PATH", "apps/web"),
            ];
            assert_eq!(
                codes(settings(&env(&vars))),
                [Code::InvalidParameters],
                "{bad}"
            );
        }
    }

    #[test]
    fn malformed_parameters_name_the_variable() {
        let errs = settings(&env(&[("ARGOCD_APP_PARAMETERS", "[{")])).unwrap_err();
        assert!(
            errs[0].message.contains("ARGOCD_APP_PARAMETERS"),
            "{}",
            errs[0].message
        );
        let bad = r#"[{"name":"target","array":["a"]},{"name":"valuez","string":"x"},{"name":"allow-empty","map":{"a":"b"}}]"#;
        assert_eq!(
            codes(settings(&env(&[("ARGOCD_APP_PARAMETERS", bad)]))),
            [Code::InvalidParameters; 3]
        );
        assert_eq!(
            codes(settings(&env(&[("NYL_ALLOW_EMPTY", "yes")]))),
            [Code::InvalidParameters]
        );
    }

    #[test]
    fn argo_environment_is_read() {
        let s = settings(&env(&[
            (
                "ARGOCD_APP_PARAMETERS",
                r#"[{"name":"allow-empty","string":"true"},{"name":"path","string":"sub"}]"#,
            ),
            ("ARGOCD_APP_NAMESPACE", "app"),
            ("ARGOCD_APP_NAME", "team-a_web"),
            ("KUBE_VERSION", "1.31.2"),
            (
                "KUBE_API_VERSIONS",
                "v1,apps/v1, monitoring.coreos.com/v1/ServiceMonitor,",
            ),
        ]))
        .unwrap();
        assert!(s.allow_empty);
        assert_eq!(s.path.as_deref(), Some("sub"));
        assert_eq!(s.app_namespace.as_deref(), Some("app"));
        assert_eq!(s.app, Some((Some("team-a".into()), "web".into())));
        assert_eq!(s.kube_version.as_deref(), Some("1.31.2"));
        assert_eq!(
            s.api_versions,
            ["v1", "apps/v1", "monitoring.coreos.com/v1/ServiceMonitor"]
        );
    }

    #[test]
    fn the_repository_root_is_the_working_directory_less_the_source_path() {
        let cwd = Path::new("/tmp/_cmp_server/u1/apps/payments");
        let root = |source: Option<&str>| repository_root(cwd, source).map_err(|d| d.code);
        let unpacked = PathBuf::from("/tmp/_cmp_server/u1");
        assert_eq!(root(Some("apps/payments")), Ok(unpacked.clone()));
        assert_eq!(root(Some("./apps/payments/")), Ok(unpacked));
        assert_eq!(root(Some("")), Ok(cwd.to_path_buf()));
        assert_eq!(root(Some(".")), Ok(cwd.to_path_buf()));
        assert_eq!(root(None), Ok(cwd.to_path_buf()));
        for wrong in [
            "apps/web",
            "other/apps/payments/x/y/z/w",
            "apps/../apps/payments",
        ] {
            assert_eq!(root(Some(wrong)), Err(Code::InvalidParameters), "{wrong}");
        }
    }

    #[test]
    fn api_versions_that_helm_would_read_otherwise_are_refused() {
        // Helm reads `--api-versions` as one CSV line: a newline ends the value, commas and
        // quotes split or unquote it.
        for value in [
            "x/v1\ny/v1",
            "a b/v1",
            "v1\tapps/v1",
            "\"apps/v1\"",
            "apps//v1",
            "-x/v1",
        ] {
            assert_eq!(
                codes(settings(&env(&[("KUBE_API_VERSIONS", value)]))),
                [Code::InvalidApiVersionEntry],
                "{value:?}"
            );
        }
        let two = checked_api_versions(vec!["a,b/v1".into(), "c/v1 ".into()], "--api-versions");
        assert_eq!(two.unwrap_err().len(), 2, "every bad entry is reported");
    }

    #[test]
    fn announcements_offer_the_targets() {
        let a = announcements(&["prod".into()]);
        assert_eq!(a[0]["name"], "target");
        assert_eq!(a[0]["string"], "prod");
        let a = announcements(&["a".into(), "b".into()]);
        assert!(a[0]["tooltip"].as_str().unwrap().contains("a, b"));
        assert!(a[0].get("string").is_none());
    }
}
