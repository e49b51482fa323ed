//! Flux's postBuild substitution, as its documentation and the kustomize-controller describe it,
//! written here to check what a rendered tree becomes once Flux has applied it:
//! - an object labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled` is skipped;
//! - nothing is substituted unless some variable is set (`substituteStrategy` left at its default);
//! - `$$` is an escaped `$` (both characters become one `$`, and what follows is plain text);
//! - `${var}` is the variable's value, empty when it is unset; `${var:-d}` and `${var:=d}` give
//!   `d` when it is unset or empty, `${var-d}` and `${var=d}` when it is unset;
//! - a bare `$var` is plain text; any other `${...}` form is not needed by these tests and is an
//!   error here, as a malformed one is an error in Flux.

use nyl_core::data::provenance::FileId;
use nyl_core::data::yaml::{parse_stream, Limits};

const KEY: &str = "kustomize.toolkit.fluxcd.io/substitute";

/// One resource's text as Flux applies it with the variables `vars`.
pub fn apply(text: &str, vars: &[(&str, &str)]) -> Result<String, String> {
    let doc = parse_stream(text, FileId(0), &Limits::default()).docs[0].to_json();
    let disabled = ["labels", "annotations"]
        .iter()
        .any(|m| doc["metadata"][m][KEY] == "disabled");
    if disabled || vars.is_empty() {
        return Ok(text.to_string());
    }
    substitute(text, vars)
}

fn substitute(text: &str, vars: &[(&str, &str)]) -> Result<String, String> {
    let lookup = |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('{') {
            let end = tail.find('}').ok_or("missing closing brace")?;
            let expr = &tail[..end];
            let name_len = expr
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(expr.len());
            let (name, op) = expr.split_at(name_len);
            if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
                return Err(format!("unable to parse variable name in ${{{expr}}}"));
            }
            let value = lookup(name);
            out.push_str(&match op {
                "" => value.unwrap_or_default().to_string(),
                _ if op.starts_with(":-") || op.starts_with(":=") => value
                    .filter(|v| !v.is_empty())
                    .map_or(op[2..].to_string(), str::to_string),
                _ if op.starts_with('-') || op.starts_with('=') => {
                    value.map_or(op[1..].to_string(), str::to_string)
                }
                _ => return Err(format!("${{{expr}}} is not a form these tests implement")),
            });
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[test]
fn the_helper_follows_fluxs_rules() {
    let vars = [("A", "a"), ("E", "")];
    let s = |t: &str| substitute(t, &vars).unwrap();
    assert_eq!(s("$$ $${A} ${A} $A"), "$ ${A} a $A");
    assert_eq!(s("${B} ${B:-d} ${E:-d} ${E-d} ${B=d}"), " d d  d");
    assert!(substitute("${A / 2}", &vars).is_err());
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\ndata: {a: $$}\n";
    assert_eq!(apply(cm, &vars).unwrap(), cm);
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: $$}\n";
    assert_eq!(apply(cm, &[]).unwrap(), cm, "no variables: no substitution");
    assert!(apply(cm, &vars).unwrap().contains("a: $}"));
}
