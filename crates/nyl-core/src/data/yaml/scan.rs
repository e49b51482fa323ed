//! A cheap scan of one document's text for the few fields nyl must look at: top-level
//! `apiVersion` and `kind`, `metadata.name` and `metadata.namespace` (and where a namespace would
//! go), and for a CustomResourceDefinition `spec.group`, `spec.names.kind` and `spec.scope`.
//!
//! It reads block mappings line by line and one-line flow mappings, and is sure only of what it
//! understands: plain keys, one-line scalars that read back as the same string, no anchors, tags,
//! aliases or duplicates among those fields. A quoted scalar or flow collection that goes on past
//! its line (a CRD's long `description: '...'`, an alert's annotation) is passed over whole when
//! it closes at the end of a line and every line it spans is indented deeper than the line it
//! opens on; go-yaml does not hold those lines to the indentation, so one that is not deeper could
//! look like a key, and then the scan is unsure. Anything else is `None`, and the caller reads the
//! document with the full reader.

use serde::{Deserialize, Serialize};

use super::read::{resolve_plain, Scalar};
use super::write::is_plain_safe;

/// What the scan (or the full reader) found in a document.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    /// `metadata.namespace`; `None` when absent, null or empty.
    pub namespace: Option<String>,
    /// Set for a CustomResourceDefinition.
    pub crd: Option<Crd>,
    /// Where `metadata.namespace` goes when it is missing; `None` when the document has one, or
    /// when only the full reader knows.
    pub slot: Option<Edit>,
}

/// The kind a CustomResourceDefinition defines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Crd {
    pub group: String,
    pub kind: String,
    pub cluster_scoped: bool,
}

/// A textual edit: `remove` bytes at `at` replaced by `before`, the value, `after`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edit {
    pub at: usize,
    pub remove: usize,
    pub before: String,
    pub after: String,
}

impl Edit {
    /// `text` with the edit applied for `value` (already a YAML scalar).
    pub fn apply(&self, text: &str, value: &str) -> String {
        let (removed, inserted) = self.splice(value);
        [&text[..removed.start], &inserted, &text[removed.end..]].concat()
    }

    /// The edit for `value` as the bytes it removes and the text that takes their place, for
    /// writers that keep the text as it is and write the pieces around it.
    pub fn splice(&self, value: &str) -> (std::ops::Range<usize>, String) {
        let inserted = [self.before.as_str(), value, self.after.as_str()].concat();
        (self.at..self.at + self.remove, inserted)
    }
}

/// The deepest indentation of a key the scan reads (`metadata.name` at 2 or 4, a CRD's
/// `spec.names.kind` at 4 or 8); deeper lines are not kept one by one.
const MAX_INDENT: usize = 8;
/// The indentation of the one line that stands for a run of deeper lines.
const DEEP: usize = MAX_INDENT + 1;

/// One line: where it starts, its text without the line break, its indentation.
struct Line<'a> {
    start: usize,
    text: &'a str,
    indent: usize,
}

impl Line<'_> {
    fn is_blank_or_comment(&self) -> bool {
        let rest = &self.text[self.indent..];
        rest.trim_end().is_empty() || rest.starts_with('#')
    }
    /// The offset of the next line.
    fn next(&self, doc: &str) -> usize {
        let end = self.start + self.text.len();
        doc[end..].find('\n').map_or(doc.len(), |i| end + i + 1)
    }
}

/// A mapping entry: its key, its value as written on the key's line (comment stripped), the
/// line index of the key, and the lines below it up to the next entry.
struct Entry<'a> {
    key: &'a str,
    value: &'a str,
    line: usize,
    body: std::ops::Range<usize>,
}

/// Scans a document's text; `None` when only the full reader can tell.
pub fn scan(doc: &str) -> Option<Head> {
    scan_with(doc, false)
}

/// As [`scan`], but following a quoted scalar or flow collection over the lines it spans (as
/// go-yaml does, whatever their indentation). Only for a document the full reader has read too,
/// to find where its namespace goes; the caller checks that both agree.
pub fn scan_following(doc: &str) -> Option<Head> {
    scan_with(doc, true)
}

fn scan_with(doc: &str, follow: bool) -> Option<Head> {
    let lines = lines(doc, follow)?;
    let top = entries(&lines, 0..lines.len(), None)?;
    let one = |key: &str| -> Option<Option<&Entry>> {
        let mut found = top.iter().filter(|e| e.key == key);
        let first = found.next();
        found.next().is_none().then_some(first)
    };
    let scalar_of = |e: Option<&Entry>| -> Option<Option<String>> {
        match e {
            None => Some(None),
            Some(e) => only_scalar(e),
        }
    };
    let mut head = Head {
        api_version: scalar_of(one("apiVersion")?)?,
        kind: scalar_of(one("kind")?)?,
        ..Head::default()
    };
    match one("metadata")? {
        None => {
            let first = top.first()?;
            head.slot = Some(Edit {
                at: lines[first.line].start,
                remove: 0,
                before: "metadata:\n  namespace: ".into(),
                after: "\n".into(),
            });
        }
        Some(meta) => metadata(doc, &lines, meta, &mut head)?,
    }
    let is_crd = head.kind.as_deref() == Some("CustomResourceDefinition")
        && head
            .api_version
            .as_deref()
            .is_some_and(|a| a.starts_with("apiextensions.k8s.io/"));
    if is_crd {
        head.crd = Some(crd(&lines, one("spec")??)?);
    }
    Some(head)
}

/// The document's lines after its `---` line and leading comments, up to a `...` line, without
/// block scalar content; `None` when a tab indents a line, or a quoted scalar or flow collection
/// goes on past its line (unless `follow`, and then only when it never closes or a line it spans
/// looks like a top-level key nyl reads).
fn lines(doc: &str, follow: bool) -> Option<Vec<Line<'_>>> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut block: Option<usize> = None;
    let mut started = false;
    let mut spanned = 0;
    let bytes = doc.as_bytes();
    let mut special = [
        Next::new(b'"', b'\'', b'['),
        Next::new(b'{', b'|', b'>'),
        Next::new(b'\t', b'\r', b'\r'),
    ];
    while offset < doc.len() {
        if let Some(b) = block {
            // Block scalar content (a ConfigMap's files, a rule's expression): every line
            // indented deeper than the block's key is passed over at the cost of finding its
            // end; the first one that is not is read below.
            while bytes
                .get(offset..=offset + b)
                .is_some_and(|s| s.iter().all(|c| *c == b' '))
            {
                offset = super::lines::line_end(bytes, offset);
            }
            if offset >= doc.len() {
                break;
            }
        }
        let start = offset;
        offset = super::lines::line_end(bytes, start);
        let raw = &doc[start..offset];
        if start < spanned {
            const READ: [&str; 4] = ["apiVersion:", "kind:", "metadata:", "spec:"];
            if READ.iter().any(|k| raw.starts_with(k)) {
                return None;
            }
            continue;
        }
        let text = raw.trim_end_matches(['\n', '\r']);
        if !started && text.starts_with("---") {
            // Content on the marker line is for the full reader.
            let rest = text[3..].trim_start();
            if !(rest.is_empty() || rest.starts_with('#')) {
                return None;
            }
            started = true;
            continue;
        }
        if text.starts_with("...") && (text.len() == 3 || text[3..].starts_with([' ', '\t'])) {
            break;
        }
        let indent = text.len() - text.trim_start_matches(' ').len();
        let line = Line {
            start,
            text,
            indent,
        };
        if let Some(b) = block {
            // The indentation first: it is cheap, and decides for most content lines.
            if indent > b || line.text.trim().is_empty() {
                continue; // block scalar content
            }
            block = None;
        }
        if line.is_blank_or_comment() {
            continue;
        }
        if text[indent..].starts_with('\t') {
            return None;
        }
        if indent > MAX_INDENT && !follow {
            // Deeper than any field the scan reads: the whole run of such lines is passed over
            // at once and kept as one line that marks it, so a mapping whose keys stand there is
            // one the scan cannot read.
            if out.last().is_none_or(|l: &Line| l.indent != DEEP) {
                out.push(Line {
                    indent: DEEP,
                    ..line
                });
            }
            offset = skip_deep(doc, start, &mut special)?;
            continue;
        }
        match line_kind(&text[indent..]) {
            LineKind::BlockScalar => block = Some(indent),
            LineKind::Other => {}
            LineKind::Open(at) if follow => {
                let from = start + indent + at;
                spanned = from + closes(&doc[from..])?;
            }
            LineKind::Open(at) => {
                // Its lines are passed over; the line itself is kept (a field the scan reads
                // with a value that goes on is one it cannot read, and says so).
                offset = spanned_end(doc, start + indent + at, indent)?;
            }
        }
        if indent > MAX_INDENT {
            // As above, one line at a time: a quoted scalar or flow collection is followed.
            if out.last().is_none_or(|l: &Line| l.indent != DEEP) {
                out.push(Line {
                    indent: DEEP,
                    ..line
                });
            }
            continue;
        }
        out.push(line);
    }
    Some(out)
}

/// The next of three bytes, found once and kept until the search passes it.
struct Next {
    bytes: [u8; 3],
    /// The last answer and where its search started.
    found: Option<(usize, Option<usize>)>,
}

impl Next {
    fn new(a: u8, b: u8, c: u8) -> Next {
        Next {
            bytes: [a, b, c],
            found: None,
        }
    }

    /// The first occurrence at or after `from`.
    fn find(&mut self, hay: &[u8], from: usize) -> Option<usize> {
        match self.found {
            Some((start, at)) if start <= from && at.is_none_or(|at| at >= from) => at,
            _ => {
                let [a, b, c] = self.bytes;
                let at = memchr::memchr3(a, b, c, &hay[from..]).map(|i| from + i);
                self.found = Some((from, at));
                at
            }
        }
    }
}

/// From the deep line at `at`, past every line the scan would not keep one by one: deeper than
/// [`MAX_INDENT`], blank, a comment, or the content of a block scalar that starts there. Returns
/// where the next line to read starts; `None` when one of them is indented by a tab or opens a
/// quoted scalar or flow collection that it does not close (as [`lines`] without `follow`).
/// Only the lines that hold a byte that could open one are looked at closely; the others cost
/// finding their end and their indentation.
fn skip_deep(doc: &str, mut at: usize, special: &mut [Next; 3]) -> Option<usize> {
    let bytes = doc.as_bytes();
    let mut block: Option<usize> = None;
    while at < bytes.len() {
        // Most lines: deeper than MAX_INDENT, with no byte before their `\n` that can open
        // something, indent by a tab or break the line. Such a line is skipped; it only ends a
        // block scalar that it is not indented deeper than.
        let newline = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i + 1);
        let quick = bytes.get(at..=at + MAX_INDENT) == Some(&[b' '; MAX_INDENT + 1])
            && special
                .iter_mut()
                .all(|s| s.find(bytes, at).is_none_or(|i| i >= newline));
        if quick {
            if let Some(b) = block {
                let indent = bytes[at..newline].iter().position(|c| *c != b' ');
                if indent.is_some_and(|i| i <= b) && !doc[at..newline].trim().is_empty() {
                    block = None;
                }
            }
            at = newline;
            continue;
        }
        let end = super::lines::line_end(bytes, at);
        let line = &bytes[at..end];
        let indent = line.iter().position(|b| *b != b' ').unwrap_or(line.len());
        let text = doc[at..end].trim_end_matches(['\n', '\r']);
        // A visible ASCII byte after the indentation is not blank; anything else may be.
        let blank = match line.get(indent) {
            Some(b) if b.is_ascii_graphic() => false,
            _ => text.trim().is_empty(),
        };
        if let Some(b) = block {
            if indent > b || blank {
                at = end;
                continue;
            }
            block = None;
        }
        if blank || text[indent..].starts_with('#') {
            at = end;
            continue;
        }
        if indent <= MAX_INDENT {
            return Some(at);
        }
        if text[indent..].starts_with('\t') {
            return None;
        }
        let marked = special
            .iter_mut()
            .any(|s| s.find(bytes, at).is_some_and(|i| i < end));
        if marked {
            match line_kind(&text[indent..]) {
                LineKind::BlockScalar => block = Some(indent),
                LineKind::Open(open) => {
                    at = spanned_end(doc, at + indent + open, indent)?;
                    continue;
                }
                LineKind::Other => {}
            }
        }
        at = end;
    }
    Some(at)
}

/// Where the line ends on which the quoted scalar or flow collection that opens at `from` (on a
/// line indented by `indent`) closes; `None` unless it closes with nothing but blanks or a
/// comment after it on that line, and every line it goes on to is blank or indented deeper than
/// `indent` by spaces. Such a value is what its opening line says it is (a plain scalar that goes
/// on with a quote at the start of a line would not close so), and none of its lines can be a key
/// of the mappings the scan reads: they are passed over as a whole, as go-yaml reads them.
fn spanned_end(doc: &str, from: usize, indent: usize) -> Option<usize> {
    let bytes = doc.as_bytes();
    let close = from + closes(&doc[from..])?;
    let end = super::lines::line_end(bytes, close);
    let after = doc[close..end].trim_end_matches(['\n', '\r']);
    let after = after.trim_start_matches([' ', '\t']);
    if !(after.is_empty() || after.starts_with('#')) {
        return None;
    }
    let next = super::lines::line_end(bytes, from);
    let deeper = super::lines::lines_inclusive(&doc[next..end]).all(|line| {
        let text = line.trim_end_matches(['\n', '\r']);
        let spaces = text.len() - text.trim_start_matches(' ').len();
        text.trim().is_empty() || (spaces > indent && !text[spaces..].starts_with('\t'))
    });
    deeper.then_some(end)
}

/// The bytes that can open a block scalar, a quoted scalar or a flow collection.
const OPENERS: [bool; 256] = table(b"\"'[{|>");

enum LineKind {
    BlockScalar,
    /// A quoted scalar or flow collection starts at this offset and does not close on the line.
    Open(usize),
    Other,
}

/// Whether a line (after its indentation) opens a block scalar, or a quoted scalar or flow
/// collection that it does not close.
fn line_kind(line: &str) -> LineKind {
    // Most lines hold none of the characters that open one of these: one pass over the bytes.
    if !line.bytes().any(|b| OPENERS[usize::from(b)]) {
        return LineKind::Other;
    }
    let mut rest = line;
    loop {
        if let Some(r) = rest.strip_prefix("- ") {
            rest = r.trim_start_matches(' ');
        } else if rest == "-" {
            return LineKind::Other;
        } else {
            break;
        }
    }
    let value = if rest.starts_with(['"', '\'', '{', '[']) {
        rest
    } else {
        match colon_space(rest) {
            Some(i) => rest[i + 2..].trim_start_matches(' '),
            None => return LineKind::Other,
        }
    };
    let value = skip_properties(value);
    if value.starts_with(['|', '>']) {
        return LineKind::BlockScalar;
    }
    if value.starts_with(['"', '\'', '{', '[']) && closes(value).is_none() {
        return LineKind::Open(line.len() - value.len());
    }
    LineKind::Other
}

/// Where the first `: ` of a line starts.
fn colon_space(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    memchr::memchr_iter(b':', b).find(|&i| b.get(i + 1) == Some(&b' '))
}

/// `value` after any anchor (`&a`) and tag (`!t`) before it.
fn skip_properties(mut value: &str) -> &str {
    while value.starts_with(['&', '!']) {
        value = value
            .find(' ')
            .map_or("", |i| value[i..].trim_start_matches(' '));
    }
    value
}

/// The byte length of the quoted scalar or flow collection at the start of `s`, when it closes
/// (on its line, or for a whole remaining document, on a later one).
fn closes(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    loop {
        // A quote opens a scalar only where a token starts.
        let token_start = i == 0 || matches!(b[i - 1], b'[' | b'{' | b',' | b':' | b' ' | b'\n');
        match b.get(i)? {
            b'"' if token_start => i = double_quoted_end(b, i + 1)?,
            b'\'' if token_start => i = single_quoted_end(b, i + 1)?,
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.checked_sub(1)?,
            _ => {}
        }
        if depth == 0 {
            return Some(i + 1);
        }
        // Inside a collection only quotes and brackets change anything: on to the next one.
        i += 1 + b[i + 1..].iter().position(|c| FLOW[usize::from(*c)])?;
    }
}

/// The bytes that open or close a quoted scalar or flow collection.
const FLOW: [bool; 256] = table(b"\"'[]{}");

/// A table of `bytes`, for loops that test every byte of a line.
const fn table(bytes: &[u8]) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        table[bytes[i] as usize] = true;
        i += 1;
    }
    table
}

/// Where the double-quoted scalar whose text starts at `from` closes (a `\` escapes the byte
/// after it).
fn double_quoted_end(b: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let at = from + memchr::memchr2(b'"', b'\\', b.get(from..)?)?;
        if b[at] == b'"' {
            return Some(at);
        }
        from = at + 2;
    }
}

/// Where the single-quoted scalar whose text starts at `from` closes (`''` is a quote in it).
fn single_quoted_end(b: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let at = from + memchr::memchr(b'\'', &b[from..])?;
        if b.get(at + 1) != Some(&b'\'') {
            return Some(at);
        }
        from = at + 2;
    }
}

/// The entries of the block mapping on `range` of `lines`, whose keys stand deeper than
/// `parent` (at column 0 for the top level, `None`); `None` for anything but a block mapping of
/// plain keys.
fn entries<'a>(
    lines: &[Line<'a>],
    range: std::ops::Range<usize>,
    parent: Option<usize>,
) -> Option<Vec<Entry<'a>>> {
    let Some(first) = lines.get(range.start).filter(|_| !range.is_empty()) else {
        return Some(Vec::new());
    };
    let indent = first.indent;
    if indent == DEEP || parent.map_or(indent != 0, |p| indent <= p) {
        return None;
    }
    let mut out: Vec<Entry<'a>> = Vec::new();
    for i in range.clone() {
        let line = &lines[i];
        if line.indent > indent {
            continue;
        }
        if line.indent < indent {
            return None;
        }
        let rest = &line.text[indent..];
        if !out.is_empty() && (rest == "-" || rest.starts_with("- ")) {
            continue; // a sequence that is the previous key's value, at the key's column
        }
        let (key, value) = key_value(&line.text[indent..])?;
        if let Some(last) = out.last_mut() {
            last.body.end = i;
        }
        out.push(Entry {
            key,
            value,
            line: i,
            body: i + 1..range.end,
        });
    }
    Some(out)
}

/// The block mapping that is an entry's value, on the lines below its key.
fn nested<'a>(lines: &[Line<'a>], e: &Entry<'a>) -> Option<Vec<Entry<'a>>> {
    entries(lines, e.body.clone(), Some(lines[e.line].indent))
}

/// A plain key and its value as written, comment stripped; `None` for any other kind of line.
fn key_value(text: &str) -> Option<(&str, &str)> {
    let (key, value) = match colon_space(text) {
        Some(i) => (&text[..i], &text[i + 2..]),
        None => (text.strip_suffix(':')?, ""),
    };
    if !is_plain_safe(key) {
        return None;
    }
    Some((key, strip_comment(value.trim_start_matches(' '))))
}

/// A value without its trailing comment: for quoted scalars after the closing quote, for flow
/// collections after the closing bracket, else from ` #`.
fn strip_comment(value: &str) -> &str {
    let end = if value.starts_with(['"', '\'', '{', '[']) {
        closes(value).unwrap_or(value.len())
    } else {
        value.find(" #").unwrap_or(value.len())
    };
    let (kept, rest) = value.split_at(end);
    let rest = rest.trim_start_matches([' ', '\t']);
    if rest.is_empty() || rest.starts_with('#') {
        kept.trim_end_matches([' ', '\t'])
    } else {
        value.trim_end_matches([' ', '\t'])
    }
}

/// A one-line scalar as the string it reads as: `Some(None)` for null or empty, `None` when the
/// scan cannot tell (escapes, tags, numbers and other non-strings).
fn scalar(value: &str) -> Option<Option<String>> {
    if value.is_empty() {
        return Some(None);
    }
    if let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        return (!inner.contains(['"', '\\'])).then(|| non_empty(inner));
    }
    if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        return (!inner.contains('\'')).then(|| non_empty(inner));
    }
    if is_plain_safe(value) {
        return Some(Some(value.to_string()));
    }
    matches!(resolve_plain(value), Scalar::Null).then_some(None)
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// An entry whose whole value is a scalar on its line.
fn only_scalar(e: &Entry) -> Option<Option<String>> {
    if !e.body.is_empty() {
        return None;
    }
    scalar(e.value)
}

/// The entries of a one-line flow mapping `{k: v, ...}`: keys plain, values as written.
fn flow_entries(value: &str) -> Option<Vec<(&str, &str)>> {
    let inner = value.strip_prefix('{')?.strip_suffix('}')?;
    let mut out = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let colon = rest.find(':')?;
        let key = rest[..colon].trim();
        if !is_plain_safe(key) {
            return None;
        }
        let after = rest[colon + 1..].trim_start();
        let end = if after.starts_with(['"', '\'', '{', '[']) {
            closes(after)?
        } else {
            after.find([',', '{', '[', '}', ']']).unwrap_or(after.len())
        };
        let (v, tail) = after.split_at(end);
        out.push((key, v.trim()));
        let tail = tail.trim_start();
        rest = match tail.strip_prefix(',') {
            Some(t) => t.trim_start(),
            None if tail.is_empty() => tail,
            None => return None,
        };
    }
    Some(out)
}

/// Reads `metadata` (block or one-line flow) into `head`, with the namespace's slot.
fn metadata(doc: &str, lines: &[Line], meta: &Entry, head: &mut Head) -> Option<()> {
    let line = &lines[meta.line];
    if meta.value.starts_with('{') {
        if !meta.body.is_empty() {
            return None;
        }
        let fields = flow_entries(meta.value)?;
        let get = |key: &str| -> Option<Option<&str>> {
            let mut found = fields.iter().filter(|(k, _)| *k == key).map(|(_, v)| *v);
            let first = found.next();
            found.next().is_none().then_some(first)
        };
        head.name = get("name")?.map_or(Some(None), scalar)?;
        let namespace = get("namespace")?;
        head.namespace = namespace.map_or(Some(None), scalar)?;
        if namespace.is_some() && head.namespace.is_none() {
            return None; // an empty namespace to replace inside a flow mapping: the full reader's
        }
        if namespace.is_none() {
            let brace = line.start + line.text.find('{')? + 1;
            head.slot = Some(Edit {
                at: brace,
                remove: 0,
                before: "namespace: ".into(),
                after: if fields.is_empty() { "" } else { ", " }.into(),
            });
        }
        return Some(());
    }
    if !meta.value.is_empty() {
        return None;
    }
    let fields = nested(lines, meta)?;
    let indent = fields.first().map_or(2, |f| lines[f.line].indent);
    let get = |key: &str| -> Option<Option<&Entry>> {
        let mut found = fields.iter().filter(|e| e.key == key);
        let first = found.next();
        found.next().is_none().then_some(first)
    };
    head.name = get("name")?.map_or(Some(None), |e| only_scalar(e))?;
    match get("namespace")? {
        Some(e) => {
            head.namespace = only_scalar(e)?;
            if head.namespace.is_none() {
                let l = &lines[e.line];
                head.slot = Some(Edit {
                    at: l.start,
                    remove: l.text.len(),
                    before: format!("{}namespace: ", " ".repeat(indent)),
                    after: String::new(),
                });
            }
        }
        None => {
            head.slot = Some(Edit {
                at: line.next(doc),
                remove: 0,
                before: format!("{}namespace: ", " ".repeat(indent)),
                after: "\n".into(),
            });
        }
    }
    Some(())
}

/// `spec.group`, `spec.names.kind` and `spec.scope` of a CustomResourceDefinition.
fn crd(lines: &[Line], spec: &Entry) -> Option<Crd> {
    if !spec.value.is_empty() {
        return None;
    }
    let fields = nested(lines, spec)?;
    let get = |key: &str| -> Option<&Entry> {
        let mut found = fields.iter().filter(|e| e.key == key);
        let first = found.next();
        found.next().is_none().then_some(first)?
    };
    let text = |e: &Entry| only_scalar(e).flatten();
    let names = get("names")?;
    let kind = if names.value.starts_with('{') {
        let fields = flow_entries(names.value)?;
        let mut kinds = fields.iter().filter(|(k, _)| *k == "kind");
        let kind = kinds.next()?.1;
        if kinds.next().is_some() {
            return None;
        }
        scalar(kind)??
    } else {
        let fields = nested(lines, names)?;
        let mut kinds = fields.iter().filter(|e| e.key == "kind");
        let kind = kinds.next()?;
        if kinds.next().is_some() {
            return None;
        }
        text(kind)?
    };
    Some(Crd {
        group: text(get("group")?)?,
        kind,
        cluster_scoped: text(get("scope")?)? == "Cluster",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Head {
        scan(text).unwrap_or_else(|| panic!("unsure: {text}"))
    }

    fn with_namespace(text: &str) -> String {
        head(text).slot.expect("a slot").apply(text, "ns")
    }

    #[test]
    fn block_metadata_gets_the_namespace_inserted() {
        let text = "---\n# Source: c/t.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  \
                    name: sa # the account\n  labels:\n    a: b\nspec: {}\n";
        let h = head(text);
        assert_eq!(h.api_version.as_deref(), Some("v1"));
        assert_eq!(h.kind.as_deref(), Some("ServiceAccount"));
        assert_eq!(h.name.as_deref(), Some("sa"));
        assert_eq!(h.namespace, None);
        assert_eq!(
            with_namespace(text),
            text.replace("metadata:\n", "metadata:\n  namespace: ns\n")
        );
    }

    #[test]
    fn flow_absent_and_empty_metadata() {
        let flow = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"c\", labels: {a: b}}\n";
        assert_eq!(head(flow).name.as_deref(), Some("c"));
        assert!(with_namespace(flow).contains("metadata: {namespace: ns, name: \"c\""));
        let empty = "kind: ConfigMap\nmetadata: {}\n";
        assert!(with_namespace(empty).contains("metadata: {namespace: ns}\n"));
        let absent = "---\nkind: ConfigMap\ndata: {}\n";
        assert_eq!(
            with_namespace(absent),
            "---\nmetadata:\n  namespace: ns\nkind: ConfigMap\ndata: {}\n"
        );
        let null = "kind: ConfigMap\nmetadata:\n    name: x\n    namespace: \"\"\n";
        assert_eq!(
            with_namespace(null),
            "kind: ConfigMap\nmetadata:\n    name: x\n    namespace: ns\n"
        );
        let set = "kind: ConfigMap\nmetadata:\n  namespace: 'other'\n";
        assert_eq!(head(set).namespace.as_deref(), Some("other"));
        assert_eq!(head(set).slot, None);
    }

    #[test]
    fn crds_tell_their_scope() {
        let text = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
                    metadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  \
                    names:\n    kind: Widget\n    plural: widgets\n  scope: Cluster\n  versions:\n  \
                    - name: v1\n    schema:\n      description: |\n        kind: Nope\n";
        assert_eq!(
            head(text).crd,
            Some(Crd {
                group: "example.com".into(),
                kind: "Widget".into(),
                cluster_scoped: true
            })
        );
    }

    #[test]
    fn block_scalars_and_closed_flow_are_skipped() {
        let text = "kind: ConfigMap\nmetadata:\n  name: x\ndata:\n  run.sh: |\n    echo \"hi\n    \
                    kind: Nope\n  more: [a, \"b, c\"]\n";
        assert_eq!(head(text).kind.as_deref(), Some("ConfigMap"));
    }

    #[test]
    fn block_scalar_content_ends_at_the_first_line_no_deeper_than_its_key() {
        // Content lines (one blank, one that reads like a key) are passed over whole; the line
        // after them is read, whatever breaks the lines.
        for newline in ["\n", "\r\n", "\r"] {
            let text = "kind: ConfigMap\ndata:\n  f: |\n    kind: Nope\n\n    x\n  g: y\nmetadata:\n  name: after\n"
                .replace('\n', newline);
            let found = scan(&text).unwrap();
            assert_eq!(found.kind.as_deref(), Some("ConfigMap"), "{newline:?}");
            assert_eq!(found.name.as_deref(), Some("after"), "{newline:?}");
        }
    }

    #[test]
    fn following_spans_finds_metadata_past_a_flow_that_spans_lines() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  command: [\n    \"sh\",\n  ]\n  args: \"a\n\nb\"\n";
        assert_eq!(scan(text), None);
        let h = scan_following(text).unwrap();
        assert_eq!(h.name.as_deref(), Some("p"));
        assert!(h.slot.is_some());
        let hiding = "kind: Pod\ndata:\n  x: \"open\nkind: Secret\"\n";
        assert_eq!(
            scan_following(hiding),
            None,
            "a spanned line that looks like a key"
        );
        assert_eq!(scan_following("kind: Pod\nx: [\n"), None, "never closes");
    }

    #[test]
    fn closes_finds_where_quotes_and_flows_end() {
        for (text, end) in [
            (r#""a\"b" x"#, Some(6)),
            ("'it''s' x", Some(7)),
            (r#"[a, "b]", 'c]'] # d"#, Some(15)),
            ("{a: [b, {c: d}]}, e", Some(16)),
            (r#"[a, b"c, d]"#, Some(11)),
            ("[a:'b]', c]", Some(11)),
            ("[a\n  , b]", Some(9)),
            ("[a", None),
            ("[a]]", Some(3)),
            ("a]", Some(1)),
            (r#""abc\"#, None),
            ("'abc''", None),
            ("", None),
        ] {
            assert_eq!(closes(text), end, "{text:?}");
        }
    }

    #[test]
    fn deep_runs_are_passed_over_but_what_they_open_is_seen() {
        let crd = |body: &str| {
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  \
                 name: w.example.com\nspec:\n  group: example.com\n  names:\n    kind: W\n  \
                 versions:\n    - name: v1\n      schema:\n{body}  scope: Cluster\n"
            )
        };
        let sure = [
            // Closed quotes and flows, and a block scalar whose content holds an open quote.
            "          a: \"x\"\n          b: {c: [d]}\n          e: |\n            \"open\n            [\n",
            // Blank lines of spaces, a shallow comment and a tab inside block content.
            "          a: b\n               \n  # note\n\n          c: >-\n           \td\n",
            // Quoted scalars and flows over lines indented deeper than their own, closing at the
            // end of a line (a CRD's descriptions): passed over whole.
            "          a: [\n            b]\n",
            "          - 'open\n            on'  # c\n",
            "          description: 'Container name: required,\n\n            more: x.'\n",
            "          rule: '[has(self.a), has(self.b)].filter(x,\n            x)'\n",
        ];
        for body in sure {
            let h = head(&crd(body));
            assert!(h.crd.is_some_and(|c| c.cluster_scoped), "{body}");
        }
        let unsure = [
            // A quoted scalar or flow opened deep goes on to a line that is not deeper: go-yaml
            // reads it as part of the value, the scan cannot tell.
            "          a: \"open\n  scope: Namespaced\"\n",
            "          a: 'open\n          b: c'\n",
            "          a: [\n          b]\n",
            // ... or closes with more on its line (a plain scalar going on with a quote).
            "          a: x\n            'y\n            z' w\n",
            // ... or never closes.
            "          a: 'open\n            on\n",
            // A tab after the indentation.
            "          a: b\n          \tc: d\n",
            "          a: 'x\n          \ty'\n",
        ];
        for body in unsure {
            assert_eq!(scan(&crd(body)), None, "{body}");
        }
    }

    #[test]
    fn unsure_documents_go_to_the_full_reader() {
        for text in [
            "kind: ConfigMap\nmetadata:\n          name: deep\n",
            "--- {kind: ConfigMap}\n",
            "\"kind\": ConfigMap\n",
            "kind: ConfigMap\nkind: Secret\n",
            "kind: &k ConfigMap\n",
            "kind: yes\n",
            "kind: \"a\\tb\"\n",
            "data:\n  x: \"open\nkind: Secret\"\n",
            "command: [\n  sh\n]\n",
            // A field the scan reads, with a value over lines.
            "kind: ConfigMap\nmetadata:\n  name: 'a\n    b'\n",
            "kind: 'Config\n  Map'\n",
            "- a\n",
            "metadata: *m\n",
            "metadata:\n  name: a\n  name: b\n",
            "kind:\n  ConfigMap\n",
            "\tkind: x\n",
            "kind: ConfigMap\nmetadata: {namespace: \"\"}\n",
        ] {
            assert_eq!(scan(text), None, "{text}");
        }
    }
}
