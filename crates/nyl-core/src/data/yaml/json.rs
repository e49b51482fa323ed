//! Values as Helm must receive them: JSON text (which Helm reads as YAML 1.1 through go-yaml) in
//! the one form go-yaml reads back exactly.
//!
//! Plain JSON is not enough: go-yaml refuses DEL, U+0080 to U+009F (but U+0085), U+FFFE and
//! U+FFFF anywhere in its input (`control characters are not allowed`), folds U+0085 (a YAML 1.1
//! line break) into a space, and takes no implicit key longer than 1024 characters. Inside a
//! double-quoted scalar every one of these characters can be written as a `\uXXXX` escape, and a
//! long key can be written as an explicit `? KEY : VALUE` entry; both verified with helm 4.3.1
//! (tests/cli/helm_values.rs). Values without such characters and keys stay plain JSON.

use serde_json::Value;

/// Keys longer than this (in characters, quotes and escapes included) are written explicitly;
/// go-yaml's limit for an implicit key is 1024.
const IMPLICIT_KEY_MAX: usize = 1000;

/// `value` as text Helm reads back as exactly `value`.
pub fn to_helm_json(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let mut quoted = String::new();
                string(key, &mut quoted);
                if quoted.chars().count() > IMPLICIT_KEY_MAX {
                    out.push_str("? ");
                    out.push_str(&quoted);
                    out.push_str(" : ");
                } else {
                    out.push_str(&quoted);
                    out.push(':');
                }
                write(item, out);
            }
            out.push('}');
        }
        // Null, booleans and numbers are ASCII, as serde_json writes them.
        other => out.push_str(&other.to_string()),
    }
}

/// A JSON string literal with the characters go-yaml would refuse or fold escaped.
fn string(s: &str, out: &mut String) {
    let quoted = Value::String(s.to_string()).to_string();
    for c in quoted.chars() {
        if matches!(c, '\u{7f}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}') {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn plain_values_stay_plain_json() {
        let v = json!({"a": [1, 2.5, null, true], "b": {"c": "é\t\"x\"", "yes": "on"}});
        assert_eq!(to_helm_json(&v), v.to_string());
    }

    #[test]
    fn characters_go_yaml_refuses_or_folds_are_escaped() {
        let v = json!({"k\u{85}": "a\u{7f}\u{80}\u{85}\u{9f}\u{a0}\u{2028}\u{fffe}\u{ffff}😀"});
        assert_eq!(
            to_helm_json(&v),
            r#"{"k\u0085":"a\u007f\u0080\u0085\u009f\u{a0}\u{2028}\ufffe\uffff😀"}"#
                .replace("\\u{a0}", "\u{a0}")
                .replace("\\u{2028}", "\u{2028}")
        );
        // Escaping leaves the JSON meaning alone.
        assert_eq!(serde_json::from_str::<Value>(&to_helm_json(&v)).unwrap(), v);
    }

    #[test]
    fn a_long_key_is_written_explicitly() {
        let long = "k".repeat(1200);
        let v = json!({"a": {"short": 1}, "m": {long.clone(): [1]}});
        let text = to_helm_json(&v);
        assert!(text.contains(&format!("{{? \"{long}\" : [1]}}")), "{text}");
        assert!(text.starts_with("{\"a\":{\"short\":1},"));
    }
}
