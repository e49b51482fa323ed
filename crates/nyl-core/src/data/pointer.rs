//! RFC 6901 JSON Pointers.
//!
//! `~1` decodes to `/` and `~0` to `~`; any other `~` escape is invalid. Reading follows the RFC: in a
//! sequence a token selects an element when it is a decimal index without leading zeros, and `-`
//! (past the end) never resolves. Writing (value-import destinations) only ever builds mappings, so
//! every token of a destination names a mapping key.

use std::fmt;

use crate::data::value::{Node, Value};

/// A parsed, non-empty JSON Pointer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pointer {
    text: String,
    tokens: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PointerError {
    #[error("a pointer must not be empty")]
    Empty,
    #[error("a pointer must start with '/'")]
    NoLeadingSlash,
    #[error(
        "'~' must be followed by '0' or '1' (found {0:?}); write '~0' for '~' and '~1' for '/'"
    )]
    BadEscape(String),
    #[error(
        "a pointer of {0} tokens is deeper than {max}, the nesting limit of YAML documents",
        max = crate::data::yaml::MAX_DEPTH
    )]
    TooDeep(usize),
}

impl Pointer {
    pub fn parse(text: &str) -> Result<Pointer, PointerError> {
        if text.is_empty() {
            return Err(PointerError::Empty);
        }
        let rest = text.strip_prefix('/').ok_or(PointerError::NoLeadingSlash)?;
        // A value no document can hold (and whose nesting would cost recursion everywhere).
        let depth = rest.split('/').count();
        if depth > crate::data::yaml::MAX_DEPTH {
            return Err(PointerError::TooDeep(depth));
        }
        let tokens = rest.split('/').map(unescape).collect::<Result<_, _>>()?;
        Ok(Pointer {
            text: text.to_string(),
            tokens,
        })
    }

    /// The decoded reference tokens.
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when `self` equals `other` or is a proper ancestor of it (token-wise, so `/a/b` does
    /// not contain `/a/bc`).
    pub fn contains(&self, other: &Pointer) -> bool {
        other.tokens.starts_with(&self.tokens)
    }

    /// Resolves the pointer in `node`; `None` when any token is absent.
    pub fn get<'a>(&self, node: &'a Node) -> Option<&'a Node> {
        get_tokens(node, &self.tokens)
    }
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn unescape(token: &str) -> Result<String, PointerError> {
    if !token.contains('~') {
        return Ok(token.to_string());
    }
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c != '~' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('0') => out.push('~'),
            Some('1') => out.push('/'),
            Some(other) => return Err(PointerError::BadEscape(format!("~{other}"))),
            None => return Err(PointerError::BadEscape("~".into())),
        }
    }
    Ok(out)
}

/// Appends `key` to `out` escaped as a reference token.
pub fn escape_into(key: &str, out: &mut String) {
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

/// Visits every leaf (scalar, null, empty map or empty sequence) with its JSON Pointer.
pub fn for_each_leaf(node: &Node, f: &mut dyn FnMut(&str, &Node)) {
    fn walk(node: &Node, path: &mut String, f: &mut dyn FnMut(&str, &Node)) {
        let len = path.len();
        match &node.value {
            Value::Map(map) if !map.is_empty() => {
                for (k, v) in map {
                    path.push('/');
                    escape_into(k, path);
                    walk(v, path, f);
                    path.truncate(len);
                }
            }
            Value::Seq(items) if !items.is_empty() => {
                for (i, v) in items.iter().enumerate() {
                    path.push('/');
                    path.push_str(&i.to_string());
                    walk(v, path, f);
                    path.truncate(len);
                }
            }
            _ => f(path, node),
        }
    }
    walk(node, &mut String::new(), f);
}

/// Builds the pointer text for a list of decoded tokens.
pub fn join(tokens: &[String]) -> String {
    let mut out = String::new();
    for t in tokens {
        out.push('/');
        escape_into(t, &mut out);
    }
    out
}

fn get_tokens<'a>(node: &'a Node, tokens: &[String]) -> Option<&'a Node> {
    let mut current = node;
    for token in tokens {
        current = match &current.value {
            Value::Map(map) => map.get(token.as_str())?,
            Value::Seq(items) => items.get(array_index(token)?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// An RFC 6901 array index: `0`, or digits without a leading zero.
fn array_index(token: &str) -> Option<usize> {
    let valid = token == "0"
        || (!token.is_empty()
            && !token.starts_with('0')
            && token.bytes().all(|b| b.is_ascii_digit()));
    if valid {
        token.parse().ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::provenance::{FileId, Loc, Prov};
    use crate::data::yaml::doc;

    fn p(text: &str) -> Pointer {
        Pointer::parse(text).unwrap()
    }

    #[test]
    fn escapes_decode_per_rfc_6901() {
        assert_eq!(p("/a~1b/c~0d").tokens(), ["a/b", "c~d"]);
        // `~01` is `~1` literally, not `/`: decoding is one pass, left to right.
        assert_eq!(p("/~01").tokens(), ["~1"]);
        assert_eq!(
            p("/nodeSelector/scheduling.example.com~1pool").tokens()[1],
            "scheduling.example.com/pool"
        );
    }

    #[test]
    fn invalid_pointers_are_rejected() {
        assert_eq!(Pointer::parse(""), Err(PointerError::Empty));
        let deepest = "/a".repeat(crate::data::yaml::MAX_DEPTH);
        assert_eq!(Pointer::parse(&deepest).unwrap().tokens().len(), 256);
        assert_eq!(
            Pointer::parse(&format!("{deepest}/a")),
            Err(PointerError::TooDeep(257))
        );
        assert_eq!(Pointer::parse("a/b"), Err(PointerError::NoLeadingSlash));
        assert_eq!(
            Pointer::parse("/a~2"),
            Err(PointerError::BadEscape("~2".into()))
        );
        assert_eq!(
            Pointer::parse("/a~"),
            Err(PointerError::BadEscape("~".into()))
        );
    }

    #[test]
    fn root_slash_is_the_empty_key() {
        assert_eq!(p("/").tokens(), [""]);
    }

    #[test]
    fn array_index_selects_an_element() {
        let d = doc("list: [a, b, {c: d}]\n");
        assert_eq!(p("/list/1").get(&d).and_then(Node::as_str), Some("b"));
        assert_eq!(p("/list/2/c").get(&d).and_then(Node::as_str), Some("d"));
        assert!(p("/list/3").get(&d).is_none());
        assert!(p("/list/-").get(&d).is_none(), "'-' is past the end");
        assert!(
            p("/list/01").get(&d).is_none(),
            "leading zeros are not indexes"
        );
        assert!(p("/list/x").get(&d).is_none());
    }

    #[test]
    fn a_numeric_token_is_a_key_in_a_mapping() {
        let d = doc("m: {'0': zero}\n");
        assert_eq!(p("/m/0").get(&d).and_then(Node::as_str), Some("zero"));
    }

    #[test]
    fn scalars_have_no_children() {
        let d = doc("a: 1\n");
        assert!(p("/a/b").get(&d).is_none());
    }

    #[test]
    fn present_null_resolves() {
        let d = doc("a: null\n");
        assert!(p("/a").get(&d).is_some_and(Node::is_null));
    }

    #[test]
    fn containment_is_token_wise() {
        assert!(p("/a").contains(&p("/a/b")));
        assert!(p("/a/b").contains(&p("/a/b")));
        assert!(!p("/a/b").contains(&p("/a/bc")));
        assert!(!p("/a/b").contains(&p("/a")));
    }

    #[test]
    fn join_escapes_tokens() {
        assert_eq!(join(&["a/b".into(), "~".into()]), "/a~1b/~0");
        let _ = Node::new(Value::Null, Prov::written(Loc::new(FileId(0), 1)));
    }
}
