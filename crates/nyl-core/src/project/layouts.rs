//! Layouts: apps found by where they sit in the repository tree, declared in `nyl.toml`
//! (`[[layouts]]`), each one chart with values files layered over it.
//!
//! A layout's `app` pattern names app directories with placeholders, one path segment each:
//! `clusters/{cluster}/{group}/in-cluster/{app}`. Matching a directory binds the placeholders,
//! which then fill the layout's `id`, `chart`, `values`, `target`, `namespace` and `release`. An app
//! is addressed by its directory or by its id (`prod.cluster-infra.cert-manager`), where `*`
//! matches one id segment and `**` one or more.

use std::collections::BTreeMap;

/// Placeholder name -> the value it bound.
pub type Bindings = BTreeMap<String, String>;

/// A declared layout, as `nyl.toml` writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub name: String,
    pub id: String,
    pub app: String,
    pub chart: String,
    pub values: Vec<String>,
    pub target: Option<String>,
    pub namespace: Option<String>,
    pub release: Option<String>,
}

/// Matches a `/`-separated relative path against a pattern whose `{name}` segments bind one
/// segment each; other segments match literally.
pub fn match_path(pattern: &str, path: &str) -> Option<Bindings> {
    let pattern: Vec<&str> = pattern.trim_matches('/').split('/').collect();
    let path: Vec<&str> = path.trim_matches('/').split('/').collect();
    if pattern.len() != path.len() {
        return None;
    }
    let mut bindings = Bindings::new();
    for (p, s) in pattern.iter().zip(&path) {
        match placeholder(p) {
            Some(name) if !s.is_empty() => {
                if bindings
                    .insert(name.to_string(), s.to_string())
                    .is_some_and(|old| old != *s)
                {
                    return None;
                }
            }
            Some(_) => return None,
            None if p == s => {}
            None => return None,
        }
    }
    Some(bindings)
}

fn placeholder(segment: &str) -> Option<&str> {
    segment
        .strip_prefix('{')?
        .strip_suffix('}')
        .filter(|n| !n.is_empty() && !n.contains(['{', '}']))
}

/// Fills the `{name}` placeholders of `template`; `Err` names the first one `bindings` lacks.
pub fn substitute(template: &str, bindings: &Bindings) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = &after[..end];
        out.push_str(bindings.get(name).ok_or_else(|| name.to_string())?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The placeholders a template uses.
pub fn placeholders(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        out.push(after[..end].to_string());
        rest = &after[end + 1..];
    }
    out
}

/// Whether an app id matches an id pattern: segments split on `.`, `*` one segment, `**` one or
/// more.
pub fn id_matches(pattern: &str, id: &str) -> bool {
    let pattern: Vec<&str> = pattern.split('.').collect();
    let id: Vec<&str> = id.split('.').collect();
    fn go(p: &[&str], id: &[&str]) -> bool {
        match p.split_first() {
            None => id.is_empty(),
            Some((&"**", rest)) => (1..=id.len()).any(|n| go(rest, &id[n..])),
            Some((&"*", rest)) => !id.is_empty() && go(rest, &id[1..]),
            Some((seg, rest)) => id.first() == Some(seg) && go(rest, &id[1..]),
        }
    }
    go(&pattern, &id)
}

/// Whether `text` could be an app id rather than a path: no `/`, and not an existing file name
/// (the caller checks that).
pub fn looks_like_id(text: &str) -> bool {
    !text.contains('/') && text.contains('.') && !text.ends_with(".yaml") && !text.ends_with(".yml")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_patterns_bind_one_segment_per_placeholder() {
        let b = match_path(
            "clusters/{cluster}/{group}/in-cluster/{app}",
            "clusters/prod/infra/in-cluster/cert-manager",
        )
        .unwrap();
        assert_eq!(b["cluster"], "prod");
        assert_eq!(b["group"], "infra");
        assert_eq!(b["app"], "cert-manager");
        assert!(match_path("clusters/{cluster}/{app}", "clusters/prod").is_none());
        assert!(match_path(
            "clusters/{cluster}/in-cluster/{app}",
            "clusters/prod/other/x"
        )
        .is_none());
        assert!(
            match_path("a/{x}/{x}", "a/1/2").is_none(),
            "a placeholder binds one value"
        );
        assert!(match_path("a/{x}/{x}", "a/1/1").is_some());
    }

    #[test]
    fn templates_fill_or_name_the_missing_placeholder() {
        let b: Bindings = [
            ("cluster".to_string(), "prod".to_string()),
            ("app".to_string(), "web".to_string()),
        ]
        .into();
        assert_eq!(substitute("{cluster}.{app}", &b).unwrap(), "prod.web");
        assert_eq!(
            substitute("charts/{group}/{app}", &b),
            Err("group".to_string())
        );
        assert_eq!(placeholders("a/{x}/b/{y}"), ["x", "y"]);
    }

    #[test]
    fn ids_match_with_single_and_double_stars() {
        assert!(id_matches(
            "prod.infra.cert-manager",
            "prod.infra.cert-manager"
        ));
        assert!(id_matches("prod.*.cert-manager", "prod.infra.cert-manager"));
        assert!(!id_matches("prod.*", "prod.infra.cert-manager"));
        assert!(id_matches("prod.**", "prod.infra.cert-manager"));
        assert!(!id_matches("prod.**", "prod"), "** is one or more");
        assert!(id_matches("*.infra.*", "dev.infra.x"));
    }
}
