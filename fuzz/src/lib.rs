//! What the fuzz targets share: the limits they parse under and the checks every target makes.

use nyl_render::diagnostics::Diagnostic;
use nyl_render::provenance::FileId;
use nyl_render::value::{Node, Value};
use nyl_render::yaml::{parse_stream, Limits};

pub const FILE: FileId = FileId(0);

/// A fresh budget per parse (a budget is spent across the parses of a run): small enough that an
/// alias bomb costs milliseconds, not seconds (the budget itself is what is under test, not its
/// size).
pub fn limits() -> Limits {
    Limits::new(20_000, 1 << 20)
}

/// nyl reads every file as UTF-8 (anything else is refused before a parser sees it).
pub fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// The number of lines of `text`, at most: `\r` may break lines as well, and counting both
/// over-counts CRLF, which only loosens the bound.
fn lines(text: &str) -> u32 {
    text.matches(['\n', '\r']).count() as u32 + 1
}

/// Every diagnostic points at a line of `text` (or at none: line 0, the whole file).
pub fn assert_lines_in(text: &str, diags: &[Diagnostic]) {
    let lines = lines(text);
    for d in diags
        .iter()
        .filter(|d| d.loc.is_some_and(|l| l.line > lines))
    {
        panic!("a diagnostic past the last line ({lines}): {d:?}");
    }
}

/// Every node of `node` was read from a line of `text`.
pub fn assert_node_lines_in(text: &str, node: &Node) {
    let lines = lines(text);
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        assert!(
            n.prov.loc.line <= lines,
            "a node past the last line ({lines}): {n:?}"
        );
        match &n.value {
            Value::Seq(items) => stack.extend(items),
            Value::Map(map) => stack.extend(map.values()),
            _ => {}
        }
    }
}

/// The only document `text` holds, as JSON, asserting that it reads back without a problem.
pub fn reread(text: &str) -> serde_json::Value {
    let parsed = parse_stream(text, FILE, &limits());
    assert!(
        parsed.diagnostics.is_empty(),
        "{text:?} reads back with {:?}",
        parsed.diagnostics
    );
    assert_eq!(
        parsed.docs.len(),
        1,
        "{text:?} reads back as {:?}",
        parsed.docs
    );
    parsed.docs[0].to_json()
}
