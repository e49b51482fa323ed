//! The plugin's settings from Argo CD's environment. Any `ARGOCD_APP_PARAMETERS` text (with any
//! app name, API versions and allow-empty setting) gives settings or `invalid_parameters`,
//! never a panic; and the parameters of a list Argo CD would send (one line `name<TAB>string`
//! each) come out exactly: the last of a name wins, an empty one is unset.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nyl_render::argocd::{settings, Settings, PARAMETERS};
use nyl_render::diagnostics::{Code, Diagnostic};
use nyl_render_fuzz::text;

fn run(env: &[(&str, &str)]) -> Result<Settings, Vec<Diagnostic>> {
    let lookup = |key: &str| {
        env.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.to_string())
    };
    let result = settings(&lookup);
    if let Err(diags) = &result {
        assert!(!diags.is_empty());
        assert!(
            diags.iter().all(|d| d.code == Code::InvalidParameters),
            "{diags:?}"
        );
    }
    result
}

/// What the settings must be for `params` (the known names only).
fn expected(params: &[(&str, &str)]) -> Result<Settings, ()> {
    let last = |name: &str| {
        let value = params.iter().rev().find(|(n, _)| *n == name)?.1;
        (!value.is_empty()).then(|| value.to_string())
    };
    Ok(Settings {
        target: last("target"),
        path: last("path"),
        allow_empty: match last("allow-empty").as_deref() {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => return Err(()),
        },
        values: last("values"),
        target_values: last("target-values"),
        ..Settings::default()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = text(data) else { return };
    let mut fields = text.splitn(4, '\0');
    let mut field = || fields.next().unwrap_or_default();
    let env = [
        ("ARGOCD_APP_PARAMETERS", field()),
        ("ARGOCD_APP_NAME", field()),
        ("KUBE_API_VERSIONS", field()),
        ("NYL_ALLOW_EMPTY", field()),
    ];
    if let Ok(s) = run(&env) {
        let set = [
            &s.target,
            &s.path,
            &s.values,
            &s.target_values,
            &s.kube_version,
        ];
        assert!(
            set.iter().all(|v| v.as_ref().is_none_or(|v| !v.is_empty())),
            "{s:?}"
        );
        assert!(
            s.api_versions
                .iter()
                .all(|v| !v.is_empty() && v.trim() == v),
            "{s:?}"
        );
    }

    let params: Vec<(&str, &str)> = text
        .lines()
        .map(|l| l.split_once('\t').unwrap_or((l, "")))
        .collect();
    let list: Vec<_> = params
        .iter()
        .map(|(name, value)| serde_json::json!({"name": name, "string": value}))
        .collect();
    let json = serde_json::Value::Array(list).to_string();
    let got = run(&[("ARGOCD_APP_PARAMETERS", &json)]);
    let all_known = params
        .iter()
        .all(|(name, _)| PARAMETERS.iter().any(|(known, _, _)| known == name));
    match (
        got,
        all_known.then(|| expected(&params)).and_then(Result::ok),
    ) {
        (Ok(got), Some(want)) => assert_eq!(got, want, "{json}"),
        (Err(_), None) => {}
        (got, want) => panic!("{json}: got {got:?}, want {want:?}"),
    }
});
