//! Writing the value tree as block-style YAML that reads back (by Helm's go-yaml v2 and by
//! [`parse_stream`](super::parse_stream)) as the same JSON value.

use crate::data::value::{Map, Node, Value};

use super::read::{resolve_plain, Scalar};

/// YAML parsers refuse implicit keys longer than this, so longer keys use the explicit `?` form.
const MAX_IMPLICIT_KEY: usize = 1024;

/// Renders `node` as a YAML document ending in a newline. `comment` is asked about every leaf
/// (scalar, null, empty mapping or sequence); its answer is appended to the leaf's line.
pub fn to_yaml(node: &Node, comment: &dyn Fn(&Node) -> Option<String>) -> String {
    let mut w = Writer {
        out: String::new(),
        comment,
    };
    match &node.value {
        Value::Map(map) if !map.is_empty() => w.map(map, 0, false),
        Value::Seq(items) if !items.is_empty() => w.seq(items, 0, false),
        _ => w.one_line_leaf(node),
    }
    w.out
}

struct Writer<'a> {
    out: String,
    comment: &'a dyn Fn(&Node) -> Option<String>,
}

impl Writer<'_> {
    fn pad(&mut self, indent: usize) {
        self.out.extend(std::iter::repeat_n(' ', indent));
    }

    /// The entries of `map` at column `indent`; with `inline_first` the first entry continues
    /// the current line (after a sequence dash).
    fn map(&mut self, map: &Map, indent: usize, inline_first: bool) {
        for (i, (key, value)) in map.iter().enumerate() {
            if i > 0 || !inline_first {
                self.pad(indent);
            }
            self.key(key, indent);
            match &value.value {
                Value::Map(m) if !m.is_empty() => {
                    self.out.push('\n');
                    self.map(m, indent + 2, false);
                }
                Value::Seq(s) if !s.is_empty() => {
                    self.out.push('\n');
                    self.seq(s, indent + 2, false);
                }
                _ => self.leaf(value, indent),
            }
        }
    }

    /// The items of a sequence, dashes at column `indent`; a collection item starts on its
    /// dash's line.
    fn seq(&mut self, items: &[Node], indent: usize, inline_first: bool) {
        for (i, item) in items.iter().enumerate() {
            if i > 0 || !inline_first {
                self.pad(indent);
            }
            self.out.push('-');
            match &item.value {
                Value::Map(m) if !m.is_empty() => {
                    self.out.push(' ');
                    self.map(m, indent + 2, true);
                }
                Value::Seq(s) if !s.is_empty() => {
                    self.out.push(' ');
                    self.seq(s, indent + 2, true);
                }
                _ => self.leaf(item, indent),
            }
        }
    }

    /// `key:`, or `? key` and `:` on the next line when the key is too long to be implicit.
    fn key(&mut self, key: &str, indent: usize) {
        let text = quoted_if_needed(key);
        if text.len() > MAX_IMPLICIT_KEY {
            self.out.push_str("? ");
            self.out.push_str(&text);
            self.out.push('\n');
            self.pad(indent);
        } else {
            self.out.push_str(&text);
        }
        self.out.push(':');
    }

    /// A leaf after `key:` or `-`, through the end of its line (or of its block scalar, whose
    /// content is indented two more than `indent`).
    fn leaf(&mut self, node: &Node, indent: usize) {
        self.out.push(' ');
        match &node.value {
            Value::String(s) if suits_literal_block(s) => self.literal_block(s, node, indent + 2),
            _ => self.one_line_leaf(node),
        }
    }

    fn one_line_leaf(&mut self, node: &Node) {
        self.out.push_str(&inline_scalar(&node.value));
        self.comment(node);
        self.out.push('\n');
    }

    /// `|`, `|-` or `|+` (clip, strip or keep the final line breaks) and the content lines.
    fn literal_block(&mut self, s: &str, node: &Node, indent: usize) {
        let (header, body) = match s.strip_suffix('\n') {
            None => ("|-", s),
            Some(rest) if rest.ends_with('\n') => ("|+", rest),
            Some(rest) => ("|", rest),
        };
        self.out.push_str(header);
        self.comment(node);
        self.out.push('\n');
        for line in body.split('\n') {
            if !line.is_empty() {
                self.pad(indent);
                self.out.push_str(line);
            }
            self.out.push('\n');
        }
    }

    fn comment(&mut self, node: &Node) {
        if let Some(text) = (self.comment)(node) {
            self.out.push_str("  # ");
            // A line break would end the comment and turn the rest into YAML.
            self.out
                .extend(text.chars().map(|c| if needs_escape(c) { ' ' } else { c }));
        }
    }
}

/// A leaf on one line: a scalar, `{}` or `[]`.
fn inline_scalar(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quoted_if_needed(s),
        Value::Map(_) => "{}".into(),
        Value::Seq(_) => "[]".into(),
    }
}

/// Multi-line text that a literal block keeps exactly: it must not start with a space (that
/// would need an indentation indicator) or an empty line, and holds no other line-break or
/// control characters.
fn suits_literal_block(s: &str) -> bool {
    s.contains('\n')
        && !s.starts_with([' ', '\n'])
        && !s.chars().any(|c| c != '\n' && needs_escape(c))
}

pub(crate) fn quoted_if_needed(s: &str) -> String {
    if is_plain_safe(s) {
        s.to_string()
    } else {
        double_quoted(s)
    }
}

/// Characters that cannot appear raw in a one-line scalar: C0/C1 controls (tab and line feed
/// included), YAML 1.1's extra line breaks, the byte-order mark and the non-characters.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{FEFF}' | '\u{FFFE}' | '\u{FFFF}'
        )
}

/// Whether `s` reads back as the same string when written unquoted, as a value or as a key.
pub(crate) fn is_plain_safe(s: &str) -> bool {
    const INDICATORS: &[char] = &[
        '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@',
        '`',
    ];
    let Some(first) = s.chars().next() else {
        return false;
    };
    // Most keys and names: a letter, then letters, digits and `_-./`. Of the rules below only
    // the last can refuse those (`yes`, `null` and the other keywords); the others cost more
    // than the whole rest of the scan of a line.
    let simple = |b: &u8| b.is_ascii_alphanumeric() || b"_-./".contains(b);
    if first.is_ascii_alphabetic() && s.as_bytes().iter().all(simple) {
        return matches!(resolve_plain(s), Scalar::String);
    }
    !first.is_whitespace()
        && !s.ends_with(char::is_whitespace)
        && !INDICATORS.contains(&first)
        // `...` at the start of a line ends the document; `<<` as a key is a merge.
        && !s.starts_with("...")
        && s != "<<"
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
        && !s.chars().any(needs_escape)
        && matches!(resolve_plain(s), Scalar::String)
}

/// A double-quoted scalar with JSON-style escapes (all of which YAML understands).
fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::data::provenance::{FileId, Loc, Prov};
    use crate::data::yaml::Rng;
    use crate::data::yaml::{parse_stream, Limits};

    fn node(v: serde_json::Value) -> Node {
        use serde_json::Value as J;
        let value = match v {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(b),
            J::Number(n) => Value::Number(n),
            J::String(s) => Value::String(s),
            J::Array(items) => Value::Seq(items.into_iter().map(node).collect()),
            J::Object(map) => Value::Map(map.into_iter().map(|(k, v)| (k, node(v))).collect()),
        };
        Node::new(value, Prov::written(Loc::new(FileId(0), 0)))
    }

    fn yaml(v: serde_json::Value) -> String {
        to_yaml(&node(v), &|_| None)
    }

    /// Parses `text` back, asserting one document and no diagnostics.
    fn reread(text: &str) -> serde_json::Value {
        let parsed = parse_stream(text, FileId(0), &Limits::default());
        assert!(
            parsed.diagnostics.is_empty(),
            "{text}\n{:?}",
            parsed.diagnostics
        );
        assert_eq!(parsed.docs.len(), 1, "{text}");
        parsed.docs[0].to_json()
    }

    const VALUES: &str = "\
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
    fn values_read_and_written_back_are_the_same_text() {
        let parsed = parse_stream(VALUES, FileId(0), &Limits::default());
        assert_eq!(to_yaml(&parsed.docs[0], &|_| None), VALUES);
    }

    #[test]
    fn scalars_and_empty_collections() {
        let v = json!({"n": null, "t": true, "f": false, "i": -3, "u": u64::MAX,
            "x": 1.5, "e": 1e20, "m": {}, "s": []});
        // `n` alone would read back as false.
        let want = "\"n\": null\nt: true\nf: false\ni: -3\nu: 18446744073709551615\nx: 1.5\ne: 1e+20\nm: {}\ns: []\n";
        assert_eq!(yaml(v.clone()), want);
        assert_eq!(reread(want), v);
        assert_eq!(yaml(json!(42)), "42\n");
        assert_eq!(yaml(json!({})), "{}\n");
        assert_eq!(yaml(json!("a\nb")), "\"a\\nb\"\n");
    }

    #[test]
    fn strings_are_quoted_unless_plain_reads_them_back() {
        let quoted = [
            "yes",
            "on",
            "Off",
            "y",
            "010",
            "0x1F",
            "1.0",
            "1e3",
            "-.5",
            "null",
            "~",
            "",
            "a: b",
            "#x",
            "a #x",
            " lead",
            "trail ",
            "- x",
            "-",
            "*x",
            "&x",
            "!x",
            "x:",
            "?x",
            "[a]",
            "{a}",
            "'a'",
            "\"a\"",
            "%x",
            "@x",
            "`x",
            "|",
            ">",
            "<<",
            "...",
            "--- x",
            "tab\tx",
            "nul\u{0}",
            "ls\u{2028}x",
            "nel\u{85}x",
            "\u{feff}bom",
        ];
        for s in quoted {
            let text = yaml(json!({ s: s }));
            assert!(text.starts_with('"'), "{s:?} as a key: {text}");
            assert!(text.contains(": \""), "{s:?} as a value: {text}");
            assert_eq!(reread(&text), json!({ s: s }), "{text}");
        }
        let plain = [
            "a#b",
            "a:b",
            "s3://x/y",
            "hello world",
            "2001-12-14",
            "1.2.3",
            "x-y",
            "é",
            "7d",
            "-x-",
        ];
        for s in plain {
            let want = if s.starts_with('-') {
                format!("\"{s}\": \"{s}\"\n")
            } else {
                format!("{s}: {s}\n")
            };
            assert_eq!(yaml(json!({ s: s })), want);
        }
        assert_eq!(yaml(json!(["a\"b\\c\td"])), "- \"a\\\"b\\\\c\\td\"\n");
    }

    #[test]
    fn multi_line_strings_use_literal_blocks_with_the_right_chomping() {
        let cases = [
            ("a\nb\n", "k: |\n  a\n  b\n"),
            ("a\nb", "k: |-\n  a\n  b\n"),
            ("a\n\n", "k: |+\n  a\n\n"),
            ("a\n\nb\n", "k: |\n  a\n\n  b\n"),
            ("a\n  indented\n", "k: |\n  a\n    indented\n"),
            (" lead\nx", "k: \" lead\\nx\"\n"),
            ("\nx", "k: \"\\nx\"\n"),
            ("a\r\nb", "k: \"a\\r\\nb\"\n"),
        ];
        for (s, want) in cases {
            let text = yaml(json!({ "k": s }));
            assert_eq!(text, want, "{s:?}");
            assert_eq!(reread(&text), json!({ "k": s }));
        }
        let nested = yaml(json!({"list": ["x\ny", {"k": "p\nq\n"}]}));
        assert_eq!(
            nested,
            "list:\n  - |-\n    x\n    y\n  - k: |\n      p\n      q\n"
        );
        assert_eq!(reread(&nested), json!({"list": ["x\ny", {"k": "p\nq\n"}]}));
    }

    #[test]
    fn sequences_and_maps_nest_in_block_style() {
        let v = json!([[1, 2], [], [[3]], {"a": 1, "b": [{"c": 2}]}]);
        let want = "- - 1\n  - 2\n- []\n- - - 3\n- a: 1\n  b:\n    - c: 2\n";
        assert_eq!(yaml(v.clone()), want);
        assert_eq!(reread(want), v);
    }

    #[test]
    fn comments_go_on_the_lines_of_leaves() {
        let v = node(json!({"a": 1, "b": {}, "c": [], "d": "x\ny", "e": {"f": null}, "g": ["s"]}));
        let text = to_yaml(&v, &|n| Some(n.type_name().to_string()));
        let want =
            "a: 1  # number\nb: {}  # mapping\nc: []  # sequence\nd: |-  # string\n  x\n  y\n\
                    e:\n  f: null  # null\ng:\n  - s  # string\n";
        assert_eq!(text, want);
        assert_eq!(reread(&text), v.to_json());
        let root = to_yaml(&node(json!("x")), &|_| Some("line one\nline two".into()));
        assert_eq!(root, "x  # line one line two\n");
    }

    #[test]
    fn a_key_too_long_to_be_implicit_is_written_explicitly() {
        let key = "k".repeat(2000);
        let v = json!({ key.clone(): {"a": 1}, "b": [{ key.clone(): 2 }] });
        let text = yaml(v.clone());
        assert!(text.starts_with(&format!("? {key}\n:\n  a: 1\n")), "{text}");
        assert_eq!(reread(&text), v);
    }

    const PIECES: &[&str] = &[
        "a",
        "Z",
        " ",
        "  ",
        ":",
        ": ",
        "#",
        " #",
        "-",
        "- ",
        "?",
        "\n",
        "\n\n",
        "\t",
        "\r",
        "\"",
        "'",
        "\\",
        "é",
        "\u{1F600}",
        "\u{2028}",
        "\u{85}",
        "\u{0}",
        "\u{7f}",
        "\u{feff}",
        "0",
        "1",
        ".",
        "e",
        "x",
        "yes",
        "no",
        "null",
        "~",
        "{",
        "}",
        "[",
        "]",
        ",",
        "|",
        ">",
        "*",
        "&",
        "!",
        "%",
        "@",
        "`",
        "<<",
        "---",
        "...",
        "0x",
        "_",
        "+",
        ".inf",
    ];

    fn gen_string(rng: &mut Rng) -> String {
        (0..rng.below(6))
            .map(|_| PIECES[rng.below(PIECES.len())])
            .collect()
    }

    fn gen_number(rng: &mut Rng) -> serde_json::Value {
        match rng.below(5) {
            0 => json!(rng.next().cast_signed()),
            1 => json!(rng.next()),
            2 => json!(i64::try_from(rng.below(2000)).unwrap() - 1000),
            3 => json!(f64::from_bits(rng.next())),
            _ => json!(f64::from(u32::try_from(rng.below(100_000)).unwrap()) / 64.0),
        }
    }

    fn gen_value(rng: &mut Rng, depth: usize) -> serde_json::Value {
        let kinds = if depth >= 4 { 6 } else { 8 };
        match rng.below(kinds) {
            0 => json!(null),
            1 => json!(rng.below(2) == 0),
            2 => gen_number(rng),
            3 | 4 => json!(gen_string(rng)),
            5 => [json!({}), json!([])][rng.below(2)].clone(),
            6 => (0..rng.below(5))
                .map(|_| (gen_string(rng), gen_value(rng, depth + 1)))
                .collect(),
            _ => (0..rng.below(5))
                .map(|_| gen_value(rng, depth + 1))
                .collect(),
        }
    }

    #[test]
    fn generated_trees_read_back_as_the_same_json() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let comment = |n: &Node| {
            matches!(n.value, Value::Bool(_) | Value::String(_)).then(|| "c: # d\ne".into())
        };
        for _ in 0..3000 {
            let v = gen_value(&mut rng, 0);
            if v.is_null() {
                continue; // a null document is skipped on reading
            }
            let text = to_yaml(&node(v.clone()), &|_| None);
            assert_eq!(reread(&text), v, "{text}");
            let commented = to_yaml(&node(v.clone()), &comment);
            assert_eq!(reread(&commented), v, "{commented}");
        }
    }
}
