//! Reading YAML into the value tree the way Helm does: go-yaml v2 (YAML 1.1) resolution of plain
//! scalars, then the JSON conversion of sigs.k8s.io/yaml (string map keys, no `.inf`/`.nan`).
//!
//! Two modes, chosen by the caller: [`Mode::Strict`] for nyl's own files, [`Mode::Lenient`] for
//! what Helm reads or writes (chart values, user values, Helm's output), which accepts what go-yaml
//! accepts and the parser alone would refuse.
//!
//! The tree is built from parser events with an explicit stack, so nesting depth costs heap, not
//! call stack. Aliases are deep clones; the budget is checked before each clone, which stops alias
//! bombs before they allocate.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;

use indexmap::IndexMap;
use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Tag};

use crate::data::diagnostics::{Code, Diagnostic};
use crate::data::provenance::{FileId, Loc, Prov};
use crate::data::value::{Map, Node, Value};

/// How deep a document may nest by default, the root being depth 1. JSON Pointers that build
/// values are held to the same depth.
pub const MAX_DEPTH: usize = 256;

/// The nodes a run keeps by default. A render copies an invocation's values a few times (layers,
/// imports, coalescing, JSON for Helm), so one of the costliest shape (500,000 nodes of one-key
/// mappings, with 64 MiB of scalars beside) peaks at about 800 MB.
pub const MAX_NODES: usize = 500_000;

/// The bytes of keys and scalars a run keeps by default.
pub const MAX_BYTES: usize = 64 << 20;

/// The budget of a run: how much every parse that shares one `Limits` may keep together, and
/// how deep one document may nest. It records what was spent, so that a run bounds its memory
/// across all its documents and files, not per document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Nodes kept, every alias expansion counted.
    pub max_nodes: usize,
    /// Bytes of scalars and keys kept, every alias expansion counted.
    pub max_bytes: usize,
    /// Nesting depth of one document, the root being depth 1.
    pub max_depth: usize,
    /// Nodes and bytes spent so far, and whether the budget is exhausted (which ends every
    /// later parse at once, without a second report).
    spent: Cell<(usize, usize, bool)>,
}

/// A point in a run's spending; see [`Limits::spent`].
#[derive(Clone, Copy, Debug)]
pub struct Spent((usize, usize, bool));

impl Default for Limits {
    fn default() -> Self {
        Limits::new(MAX_NODES, MAX_BYTES)
    }
}

impl Limits {
    pub fn new(max_nodes: usize, max_bytes: usize) -> Self {
        Limits {
            max_nodes,
            max_bytes,
            max_depth: MAX_DEPTH,
            spent: Cell::new((0, 0, false)),
        }
    }

    /// What has been spent so far, to [`rewind`](Self::rewind) to.
    pub fn spent(&self) -> Spent {
        Spent(self.spent.get())
    }

    /// Gives back what was spent since `to`: for a caller that has dropped everything parsed
    /// since then (a budget broken in between is whole again).
    pub fn rewind(&self, to: Spent) {
        self.spent.set(to.0);
    }

    /// Once the budget is spent, what any later parse reports instead of reading: it keeps
    /// nothing, and says so, so that no file passes for empty.
    pub fn refuse(&self, file: FileId, line: u32) -> Option<Diagnostic> {
        self.spent.get().2.then(|| {
            Diagnostic::new(
                Code::RepositoryTooComplex,
                format!(
                    "not read: the run already keeps as much YAML as its limits allow \
                     (limits.max_nodes {}, limits.max_value_bytes {})",
                    self.max_nodes, self.max_bytes
                ),
            )
            .at(Loc::new(file, line))
        })
    }
}

/// How strictly a text is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// nyl's own files (nyl.toml, targets, invocations, contracts): a duplicate key is an error.
    Strict,
    /// Text Helm reads or wrote, read as go-yaml (Helm, kubectl, Argo CD, Flux) reads it: the last
    /// of duplicate keys counts (with a warning), a flow collection's lines may sit at any column,
    /// and a tab may follow a `:`. Values and lines are the same as go-yaml gives.
    Lenient,
}

/// The documents of a stream (empty and null documents left out) and the problems found.
#[derive(Debug)]
pub struct Parsed {
    pub docs: Vec<Node>,
    pub diagnostics: Vec<Diagnostic>,
}

/// What a scalar resolves to.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    /// The scalar's text, as is.
    String,
    /// `.inf` and `.nan`: floats with no JSON form.
    NotJson,
}

/// Resolves an unquoted, untagged scalar as go-yaml v2's `resolve()` does.
pub fn resolve_plain(s: &str) -> Scalar {
    if let Some(keyword) = keyword(s) {
        return keyword;
    }
    match s.as_bytes().first() {
        Some(b'0'..=b'9' | b'+' | b'-') => number(&s.replace('_', "")),
        Some(b'.') => dot_float(s),
        _ => Scalar::String,
    }
}

fn keyword(s: &str) -> Option<Scalar> {
    Some(match s {
        "" | "~" | "null" | "Null" | "NULL" => Scalar::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Scalar::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Scalar::Bool(false)
        }
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF"
        | ".nan" | ".NaN" | ".NAN" => Scalar::NotJson,
        _ => return None,
    })
}

/// The digit-or-sign branch of go-yaml: int, then uint, then float, then the `0b` oddity.
fn number(plain: &str) -> Scalar {
    if let Some(i) = go_parse_int(plain) {
        return Scalar::Number(i.into());
    }
    if let Some(u) = go_parse_uint(plain) {
        return Scalar::Number(u.into());
    }
    if let Some(f) = yaml_float(plain) {
        return f;
    }
    // go-yaml retries `0b` with ParseInt(rest, 2), which takes a sign after the prefix.
    match plain
        .strip_prefix("0b")
        .and_then(|rest| signed(rest, |d| digits(d, 2)))
    {
        Some(i) => Scalar::Number(i.into()),
        None => Scalar::String,
    }
}

/// go-yaml hands a leading `.` straight to ParseFloat, which allows `_` only between digits.
fn dot_float(s: &str) -> Scalar {
    let b = s.as_bytes();
    let digit_at = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let underscores_ok = (0..b.len())
        .filter(|&i| b[i] == b'_')
        .all(|i| i > 0 && digit_at(i - 1) && digit_at(i + 1));
    match underscores_ok.then(|| yaml_float(&s.replace('_', ""))) {
        Some(Some(f)) => f,
        _ => Scalar::String,
    }
}

/// A float matching go-yaml's `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$` that is
/// finite as f64 (ParseFloat fails on overflow, so those stay strings).
fn yaml_float(s: &str) -> Option<Scalar> {
    if !matches_float_syntax(s.as_bytes()) {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    serde_json::Number::from_f64(f).map(Scalar::Number)
}

fn matches_float_syntax(b: &[u8]) -> bool {
    let count = |from: usize| {
        b.iter()
            .skip(from)
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let int_digits = count(i);
    i += int_digits;
    if b.get(i) == Some(&b'.') {
        let frac_digits = count(i + 1);
        if int_digits + frac_digits == 0 {
            return false;
        }
        i += 1 + frac_digits;
    } else if int_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1 + usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        let exp_digits = count(i);
        if exp_digits == 0 {
            return false;
        }
        i += exp_digits;
    }
    i == b.len()
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
fn go_parse_int(s: &str) -> Option<i64> {
    signed(s, go_parse_uint)
}

/// An optional sign, then a magnitude parsed by `magnitude`, in i64 range.
fn signed(s: &str, magnitude: impl Fn(&str) -> Option<u64>) -> Option<i64> {
    let (negative, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let m = i128::from(magnitude(body)?);
    i64::try_from(if negative { -m } else { m }).ok()
}

/// Go's `strconv.ParseUint(s, 0, 64)`: `0x`, `0o`, `0b` prefixes, and a bare leading `0` is octal.
fn go_parse_uint(s: &str) -> Option<u64> {
    let prefixed =
        |p: &[u8]| s.len() >= 3 && s.as_bytes()[0] == b'0' && p.contains(&s.as_bytes()[1]);
    let (radix, rest) = if prefixed(b"xX") {
        (16, &s[2..])
    } else if prefixed(b"oO") {
        (8, &s[2..])
    } else if prefixed(b"bB") {
        (2, &s[2..])
    } else if s == "0" {
        return Some(0);
    } else if let Some(octal) = s.strip_prefix('0') {
        (8, octal)
    } else {
        (10, s)
    };
    digits(rest, radix)
}

/// Unsigned digits of `radix` only (`from_str_radix` alone would also take a `+`).
fn digits(s: &str, radix: u32) -> Option<u64> {
    let valid = !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
    valid.then(|| u64::from_str_radix(s, radix).ok()).flatten()
}

/// Resolves a scalar event: quoted and block scalars are strings unless a core tag says
/// otherwise; tags go-yaml does not resolve (`!!binary`, `!custom`, `!`) leave the text a string.
fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Scalar {
    match tag {
        Some(t)
            if t.is_yaml_core_schema()
                && ["int", "float", "bool", "null"].contains(&t.suffix.as_str()) =>
        {
            resolve_plain(text)
        }
        Some(_) => Scalar::String,
        None if matches!(style, ScalarStyle::Plain) => resolve_plain(text),
        None => Scalar::String,
    }
}

/// The value of a resolved scalar; `None` when it has no JSON form.
fn scalar_value(scalar: Scalar, text: &str) -> Option<Value> {
    Some(match scalar {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Number(n) => Value::Number(n),
        Scalar::String => Value::String(text.to_string()),
        Scalar::NotJson => return None,
    })
}

/// A scalar key as sigs.k8s.io/yaml stringifies it (it maps infinities to `.inf`, not errors).
fn scalar_key(scalar: Scalar, text: &str) -> String {
    match scalar {
        Scalar::NotJson if text.starts_with('-') => "-.inf".into(),
        Scalar::NotJson if text.eq_ignore_ascii_case(".nan") => ".nan".into(),
        Scalar::NotJson => ".inf".into(),
        Scalar::Null => "null".into(),
        Scalar::Bool(b) => b.to_string(),
        Scalar::Number(n) => number_key(&n),
        Scalar::String => text.to_string(),
    }
}

/// The key form of an aliased node; `None` for a mapping or sequence.
fn value_key(value: &Value) -> Option<String> {
    match value {
        Value::Null => Some("null".into()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(number_key(n)),
        Value::String(s) => Some(s.clone()),
        Value::Seq(_) | Value::Map(_) => None,
    }
}

fn number_key(n: &serde_json::Number) -> String {
    if n.is_f64() {
        n.as_f64().map_or_else(|| n.to_string(), go_format_float32)
    } else {
        n.to_string()
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`, which sigs.k8s.io/yaml uses for float keys:
/// shortest float32 digits, exponent form when the exponent is below -4 or at least 6.
fn go_format_float32(f: f64) -> String {
    let f = f as f32;
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        let dot = if rest.is_empty() { "" } else { "." };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!(
            "{sign}{first}{dot}{rest}e{exp_sign}{:02}",
            exp.unsigned_abs()
        );
    }
    format!("{sign}{}", place_point(&digits, exp + 1))
}

/// Digits `d1d2...` with the decimal point after `point` digits (may be outside the digits).
fn place_point(digits: &str, point: i32) -> String {
    let n = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point >= n {
        format!(
            "{digits}{}",
            "0".repeat((point - n).unsigned_abs() as usize)
        )
    } else {
        let (int, frac) = digits.split_at(point.unsigned_abs() as usize);
        format!("{int}.{frac}")
    }
}

/// A finished node with the figures the limits need when it is cloned.
#[derive(Clone)]
struct Built {
    node: Node,
    /// Nodes in the subtree.
    size: usize,
    /// Bytes of the subtree's scalars and keys.
    bytes: usize,
    /// Levels in the subtree (a leaf is 1).
    height: usize,
}

impl Built {
    fn leaf(node: Node, bytes: usize) -> Self {
        Built {
            node,
            size: 1,
            bytes,
            height: 1,
        }
    }
}

/// What a mapping under construction expects next.
#[derive(Default)]
enum KeySlot {
    #[default]
    Key,
    Value {
        key: String,
        line: u32,
    },
    Merge {
        line: u32,
    },
    /// The value of an entry that was rejected.
    Skip,
}

struct Member {
    node: Node,
    /// The line of the key when the entry was written in this mapping, `None` when merged in.
    written_at: Option<u32>,
}

#[derive(Default)]
struct MapBuild {
    members: IndexMap<String, Member>,
    slot: KeySlot,
}

enum Kind {
    Seq(Vec<Node>),
    Map(MapBuild),
}

/// A sequence or mapping whose end has not been seen yet.
struct Frame {
    kind: Kind,
    line: u32,
    anchor: usize,
    size: usize,
    bytes: usize,
    height: usize,
}

impl MapBuild {
    /// Takes the node that follows the current key slot.
    fn accept(&mut self, node: Node, mode: Mode, diags: &mut Vec<Diagnostic>) {
        match std::mem::take(&mut self.slot) {
            KeySlot::Key => {
                let msg = format!("a mapping key must be a scalar, not a {}", node.type_name());
                diags.push(Diagnostic::new(Code::InvalidDocument, msg).at(node.prov.loc));
                self.slot = KeySlot::Skip;
            }
            KeySlot::Value { key, line } => self.write(key, line, node, mode, diags),
            KeySlot::Merge { line } => self.merge(node, line, diags),
            KeySlot::Skip => {}
        }
    }

    /// An explicit entry: it replaces a merged one, and a second explicit one is a duplicate (an
    /// error that keeps the first, or when lenient a warning that keeps the last, as go-yaml does).
    fn write(
        &mut self,
        key: String,
        line: u32,
        node: Node,
        mode: Mode,
        diags: &mut Vec<Diagnostic>,
    ) {
        let loc = Loc::new(node.prov.loc.file, line);
        let member = Member {
            node,
            written_at: Some(line),
        };
        match self.members.get_mut(&key) {
            Some(Member {
                written_at: Some(first),
                ..
            }) if mode == Mode::Strict => {
                let msg = format!(
                    "duplicate key {key:?} (first written on line {first}); the first one is kept"
                );
                diags.push(Diagnostic::new(Code::DuplicateKey, msg).at(loc));
            }
            Some(written) if written.written_at.is_some() => {
                let first = written.written_at.unwrap_or(line);
                let msg = format!(
                    "duplicate key {key:?} (first written on line {first}); the last one counts, as in Helm and kubectl"
                );
                diags.push(Diagnostic::new(Code::DuplicateKeyLastWins, msg).at(loc));
                *written = member;
            }
            Some(merged) => *merged = member,
            None => {
                self.members.insert(key, member);
            }
        }
    }

    /// `<<`: a mapping or a list of mappings, applied as go-yaml v2 (Helm) applies it: the merged
    /// entries replace keys written before the `<<`, keys written after it win, and within a list
    /// an earlier mapping wins over a later one.
    fn merge(&mut self, node: Node, line: u32, diags: &mut Vec<Diagnostic>) {
        let loc = Loc::new(node.prov.loc.file, line);
        let maps: Option<Vec<Map>> = match node.value {
            Value::Map(map) => Some(vec![map]),
            Value::Seq(items) => items.into_iter().map(|n| into_map(n.value)).collect(),
            _ => None,
        };
        let Some(maps) = maps else {
            let msg = "the value of a merge key (<<) must be a mapping or a list of mappings";
            diags.push(Diagnostic::new(Code::InvalidDocument, msg).at(loc));
            return;
        };
        for (key, node) in maps.into_iter().rev().flatten() {
            self.members.insert(
                key,
                Member {
                    node,
                    written_at: None,
                },
            );
        }
    }

    fn finish(self) -> Map {
        self.members.into_iter().map(|(k, m)| (k, m.node)).collect()
    }
}

fn into_map(value: Value) -> Option<Map> {
    match value {
        Value::Map(map) => Some(map),
        _ => None,
    }
}

/// Turns parser events into documents, one document at a time.
struct Builder<'a> {
    file: FileId,
    limits: &'a Limits,
    mode: Mode,
    docs: Vec<Node>,
    diags: Vec<Diagnostic>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Built>,
    root: Option<Node>,
    /// Set once the document broke a limit: its remaining events are ignored.
    dropped: bool,
}

impl<'a> Builder<'a> {
    fn new(file: FileId, limits: &'a Limits, mode: Mode) -> Self {
        Builder {
            file,
            limits,
            mode,
            docs: Vec::new(),
            diags: Vec::new(),
            stack: Vec::new(),
            anchors: HashMap::new(),
            root: None,
            dropped: false,
        }
    }

    /// Handles one event; `Err` stops the whole stream.
    fn event(&mut self, event: Event, line: u32) -> Result<(), Diagnostic> {
        match event {
            Event::DocumentEnd => self.end_document(),
            _ if self.dropped => {}
            Event::Scalar(text, style, anchor, tag) => {
                self.scalar(&text, style, anchor, tag.as_deref(), line);
            }
            Event::Alias(id) => self.alias(id, line)?,
            Event::SequenceStart(anchor, _) => self.open(Kind::Seq(Vec::new()), anchor, line),
            Event::MappingStart(anchor, _) => {
                self.open(Kind::Map(MapBuild::default()), anchor, line);
            }
            Event::SequenceEnd | Event::MappingEnd => self.close(),
            Event::StreamStart | Event::StreamEnd | Event::DocumentStart(_) | Event::Nothing => {}
        }
        Ok(())
    }

    /// Keeps the finished document unless it is empty or null, and resets the per-document state.
    fn end_document(&mut self) {
        if let Some(root) = self.root.take().filter(|n| !n.is_null()) {
            self.docs.push(root);
        }
        self.stack.clear();
        self.anchors.clear();
        self.dropped = false;
    }

    fn loc(&self, line: u32) -> Loc {
        Loc::new(self.file, line)
    }

    /// The mapping waiting for a key, if that is what the next node is.
    fn key_slot(&mut self) -> Option<&mut KeySlot> {
        match self.stack.last_mut().map(|f| &mut f.kind) {
            Some(Kind::Map(map)) if matches!(map.slot, KeySlot::Key) => Some(&mut map.slot),
            _ => None,
        }
    }

    /// The line a new node is attributed to: its key's line for a mapping value, else its own.
    fn node_line(&self, own: u32) -> u32 {
        match self.stack.last().map(|f| &f.kind) {
            Some(Kind::Map(MapBuild {
                slot: KeySlot::Value { line, .. } | KeySlot::Merge { line },
                ..
            })) => *line,
            _ => own,
        }
    }

    /// Books `nodes` more nodes and `bytes` more bytes reaching `height` levels below the current
    /// one; on the first broken limit the document is dropped with one diagnostic (and with the
    /// run's budget spent, every later document too).
    fn charge(&mut self, nodes: usize, bytes: usize, height: usize, line: u32) -> bool {
        let limits = self.limits;
        let (spent_nodes, spent_bytes, _) = limits.spent.get();
        let (total_nodes, total_bytes) = (
            spent_nodes.saturating_add(nodes),
            spent_bytes.saturating_add(bytes),
        );
        let msg = if total_nodes > limits.max_nodes {
            format!(
                "the YAML of this run expands to more than {} nodes (limits.max_nodes, all \
                 documents and files together, aliases counted)",
                limits.max_nodes
            )
        } else if total_bytes > limits.max_bytes {
            format!(
                "the YAML of this run expands to more than {} bytes of keys and scalars \
                 (limits.max_value_bytes, all documents and files together, aliases counted)",
                limits.max_bytes
            )
        } else if self.stack.len().saturating_add(height) > limits.max_depth {
            format!(
                "the document nests deeper than {} levels (max_depth)",
                limits.max_depth
            )
        } else {
            limits.spent.set((total_nodes, total_bytes, false));
            return true;
        };
        let run_spent = total_nodes > limits.max_nodes || total_bytes > limits.max_bytes;
        limits.spent.set((spent_nodes, spent_bytes, run_spent));
        let diag = Diagnostic::new(Code::RepositoryTooComplex, msg).at(self.loc(line));
        self.diags.push(diag);
        self.stack.clear();
        self.anchors.clear();
        self.dropped = true;
        false
    }

    fn scalar(
        &mut self,
        text: &str,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<&Tag>,
        line: u32,
    ) {
        let resolved = resolve_scalar(text, style, tag);
        if self.key_slot().is_some() {
            // Only an unquoted, untagged `<<` is a merge key.
            let merge = text == "<<" && tag.is_none() && matches!(style, ScalarStyle::Plain);
            return self.key_scalar(text, merge, resolved, anchor, line);
        }
        let value = self.leaf_value(resolved, text, line);
        let node = Node::new(value, Prov::written(self.loc(self.node_line(line))));
        let built = Built::leaf(node, text.len());
        if self.charge(1, text.len(), 1, line) && self.register(anchor, &built, line) {
            self.deliver(built);
        }
    }

    /// The value of a scalar that is not a key; `.inf` and `.nan` are reported and become null.
    fn leaf_value(&mut self, resolved: Scalar, text: &str, line: u32) -> Value {
        scalar_value(resolved, text).unwrap_or_else(|| {
            let msg = format!(
                "{text:?} is a float with no JSON form, which Helm rejects; quote it to make it a string"
            );
            self.diags
                .push(Diagnostic::new(Code::UnsupportedValue, msg).at(self.loc(line)));
            Value::Null
        })
    }

    fn key_scalar(&mut self, text: &str, merge: bool, resolved: Scalar, anchor: usize, line: u32) {
        if !self.charge_key(text.len(), line) {
            return;
        }
        if anchor > 0 {
            // An anchored key may be aliased as a value, so it is kept as a node as well (a key
            // `.inf` is valid, so it becomes null there without a report).
            let value = scalar_value(resolved.clone(), text).unwrap_or(Value::Null);
            let node = Node::new(value, Prov::written(self.loc(line)));
            if !self.register(anchor, &Built::leaf(node, text.len()), line) {
                return;
            }
        }
        let next = if merge {
            KeySlot::Merge { line }
        } else {
            KeySlot::Value {
                key: scalar_key(resolved, text),
                line,
            }
        };
        if let Some(slot) = self.key_slot() {
            *slot = next;
        }
    }

    fn alias(&mut self, id: usize, line: u32) -> Result<(), Diagnostic> {
        // The parser rejects unknown names, so a missing id is an anchor still being built.
        let Some(target) = self.anchors.get(&id) else {
            let msg = "an alias refers to the node that contains it";
            return Err(Diagnostic::new(Code::YamlSyntax, msg).at(self.loc(line)));
        };
        let (size, bytes, height) = (target.size, target.bytes, target.height);
        let key = value_key(&target.node.value);
        if self.key_slot().is_some() {
            if self.charge_key(key.as_ref().map_or(0, String::len), line) {
                self.alias_key(key, line);
            }
            return Ok(());
        }
        if self.charge(size, bytes, height, line) {
            if let Some(target) = self.anchors.get(&id).cloned() {
                self.deliver(target);
            }
        }
        Ok(())
    }

    /// An alias used as a key: its scalar's key form, or rejected for a collection.
    fn alias_key(&mut self, key: Option<String>, line: u32) {
        let next = match key {
            Some(key) => KeySlot::Value { key, line },
            None => {
                let msg = "a mapping key must be a scalar, not an alias of a collection";
                self.diags
                    .push(Diagnostic::new(Code::InvalidDocument, msg).at(self.loc(line)));
                KeySlot::Skip
            }
        };
        if let Some(slot) = self.key_slot() {
            *slot = next;
        }
    }

    /// Books a mapping key of `bytes` bytes, kept in the mapping being built.
    fn charge_key(&mut self, bytes: usize, line: u32) -> bool {
        if !self.charge(0, bytes, 0, line) {
            return false;
        }
        if let Some(frame) = self.stack.last_mut() {
            frame.bytes += bytes;
        }
        true
    }

    fn open(&mut self, kind: Kind, anchor: usize, line: u32) {
        if self.charge(1, 0, 1, line) {
            let line = self.node_line(line);
            self.stack.push(Frame {
                kind,
                line,
                anchor,
                size: 1,
                bytes: 0,
                height: 1,
            });
        }
    }

    fn close(&mut self) {
        let Some(frame) = self.stack.pop() else {
            return;
        };
        let value = match frame.kind {
            Kind::Seq(items) => Value::Seq(items),
            Kind::Map(map) => Value::Map(map.finish()),
        };
        let node = Node::new(value, Prov::written(self.loc(frame.line)));
        let built = Built {
            node,
            size: frame.size,
            bytes: frame.bytes,
            height: frame.height,
        };
        if self.register(frame.anchor, &built, frame.line) {
            self.deliver(built);
        }
    }

    /// Keeps a copy of an anchored node for its aliases; the copy counts against the budget.
    fn register(&mut self, anchor: usize, built: &Built, line: u32) -> bool {
        if anchor == 0 {
            return true;
        }
        if !self.charge(built.size, built.bytes, 0, line) {
            return false;
        }
        self.anchors.insert(anchor, built.clone());
        true
    }

    fn deliver(&mut self, built: Built) {
        let Some(frame) = self.stack.last_mut() else {
            self.root = Some(built.node);
            return;
        };
        frame.size += built.size;
        frame.bytes += built.bytes;
        frame.height = frame.height.max(built.height + 1);
        match &mut frame.kind {
            Kind::Seq(items) => items.push(built.node),
            Kind::Map(map) => map.accept(built.node, self.mode, &mut self.diags),
        }
    }
}

/// The parser's 1-based line, moved to where the parsed text starts in its file.
fn line_of(line: usize, first_line: u32) -> u32 {
    u32::try_from(line)
        .unwrap_or(u32::MAX)
        .saturating_add(first_line.saturating_sub(1))
}

/// The line of the last character of `text`, where what the parser finds at the end of the input
/// belongs (it puts that on the line after).
fn last_line(text: &str) -> usize {
    let b = text.as_bytes();
    let breaks = (0..b.len())
        .filter(|&i| b[i] == b'\n' || (b[i] == b'\r' && b.get(i + 1) != Some(&b'\n')))
        .count();
    (breaks + usize::from(!text.ends_with(['\n', '\r']))).max(1)
}

/// The parser's own error (on the text's `last` line at most). Its cap on nested flow
/// collections is a complexity limit, not bad syntax.
fn scan_error(e: &ScanError, last: usize, file: FileId, first_line: u32) -> Diagnostic {
    let diag = match e.info() {
        "recursion limit exceeded" => Diagnostic::new(
            Code::RepositoryTooComplex,
            "the document nests more than 255 flow collections ([ ] or { }), the parser's limit",
        ),
        info => Diagnostic::new(Code::YamlSyntax, info),
    };
    diag.at(Loc::new(
        file,
        line_of(e.marker().line().min(last), first_line),
    ))
}

/// Parses every document of a YAML stream, strictly. A syntax error stops the stream and returns
/// no documents; other problems are reported and parsing goes on.
pub fn parse_stream(text: &str, file: FileId, limits: &Limits) -> Parsed {
    parse_stream_from(text, file, 1, limits, Mode::Strict)
}

/// Like [`parse_stream`], for text that starts at line `first_line` of its file, in `mode`.
pub fn parse_stream_from(
    text: &str,
    file: FileId,
    first_line: u32,
    limits: &Limits,
    mode: Mode,
) -> Parsed {
    if let Some(refused) = limits.refuse(file, first_line) {
        return Parsed {
            docs: Vec::new(),
            diagnostics: vec![refused],
        };
    }
    // A failed pass keeps nothing: what it spent is given back before the next.
    let before = limits.spent();
    let last = last_line(text);
    // Without a final line break the parser reads the last line of a block scalar differently
    // (it keeps a blank one, or adds a line break clipping would not), so it gets one.
    let mut text = if text.is_empty() || text.ends_with(['\n', '\r']) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("{text}\n"))
    };
    // Each retry moves one token right or turns one tab into a space, so this bound is never
    // reached by text that go-yaml reads; it only caps the work on text nobody can read.
    let mut retries = 16 + 8 * text.lines().count();
    loop {
        match parse_once(&text, file, (first_line, last), limits, mode) {
            Ok(parsed) => return parsed,
            Err((parsed, error)) => {
                let relaxed = match (mode, retries) {
                    (Mode::Lenient, 1..) => relax(&text, error.as_ref()),
                    _ => None,
                };
                match relaxed {
                    Some(relaxed) => {
                        limits.rewind(before);
                        retries -= 1;
                        text = Cow::Owned(relaxed);
                    }
                    None => return parsed,
                }
            }
        }
    }
}

/// The parser's error, and whether the innermost collection it had opened is a flow one (it may
/// not have opened the one the error is in yet).
struct Failure {
    error: ScanError,
    in_flow: bool,
}

/// Whether the collection that starts at `at` is a flow one (`[` or `{` there); `line_starts`
/// holds the byte offset of each line of `text`.
fn starts_flow(text: &str, line_starts: &[usize], at: &saphyr_parser::Marker) -> bool {
    at.line()
        .checked_sub(1)
        .and_then(|line| line_starts.get(line))
        .and_then(|&start| text[start..].chars().nth(at.col()))
        .is_some_and(|c| matches!(c, '[' | '{'))
}

/// One pass of the parser; a syntax error returns what was reported with the parser's error.
fn parse_once(
    text: &str,
    file: FileId,
    (first_line, last): (u32, usize),
    limits: &Limits,
    mode: Mode,
) -> Result<Parsed, (Parsed, Option<Failure>)> {
    let mut builder = Builder::new(file, limits, mode);
    let mut parser = Parser::new_from_str(text);
    // Whether each open collection is a flow one, for relaxing an error (lenient reading only).
    let mut flows: Vec<bool> = Vec::new();
    let line_starts: Vec<usize> = match mode {
        Mode::Strict => Vec::new(),
        Mode::Lenient => std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect(),
    };
    while let Some(next) = parser.next_event() {
        if limits.refuse(file, first_line).is_some() {
            // Spent here, and reported where it happened: nothing more is kept.
            return Ok(Parsed {
                docs: Vec::new(),
                diagnostics: builder.diags,
            });
        }
        let (step, error) = match next {
            Ok((event, span)) => {
                if mode == Mode::Lenient {
                    match event {
                        Event::SequenceStart(..) | Event::MappingStart(..) => {
                            flows.push(starts_flow(text, &line_starts, &span.start));
                        }
                        Event::SequenceEnd | Event::MappingEnd => {
                            flows.pop();
                        }
                        _ => {}
                    }
                }
                let line = line_of(span.start.line().min(last), first_line);
                (builder.event(event, line), None)
            }
            Err(e) => (Err(scan_error(&e, last, file, first_line)), Some(e)),
        };
        if let Err(diag) = step {
            builder.diags.push(diag);
            let parsed = Parsed {
                docs: Vec::new(),
                diagnostics: builder.diags,
            };
            let failure = error.map(|error| Failure {
                error,
                in_flow: flows.last() == Some(&true),
            });
            return Err((parsed, failure));
        }
    }
    Ok(Parsed {
        docs: builder.docs,
        diagnostics: builder.diags,
    })
}

/// `text` changed so that the parser accepts what go-yaml accepts at `error`, with every value
/// and line as go-yaml reads them; `None` when go-yaml refuses it too.
/// - A tab after a `:` is separation to go-yaml: it becomes a space; so do tabs that start a line
///   inside a flow collection, where the parser takes them for block indentation.
/// - The parser's indentation errors arise only inside flow collections (`[ ]`, `{ }`) and quoted
///   scalars, where go-yaml checks no indentation. Moving a line right changes nothing there
///   (quoted and plain scalars fold a line's leading spaces away). A quoted scalar's lines move
///   right of its quote; the lines from the token to the end of its flow collection move by the
///   token's column (at least 1), so that a collection needs a few passes, not one per line.
fn relax(text: &str, failure: Option<&Failure>) -> Option<String> {
    let Failure { error, in_flow } = failure?;
    let line = error.marker().line().checked_sub(1)?;
    let line_start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
    let rest = text.get(line_start..)?;
    let col = error.marker().col();
    let at = line_start + rest.char_indices().nth(col).map_or(rest.len(), |(i, _)| i);
    let head = &text[line_start..at];
    match error.info() {
        "':' must be followed by a valid YAML whitespace" => {
            let gap = head.len() - head.trim_end_matches([' ', '\t']).len();
            let separated =
                head[..head.len() - gap].ends_with(':') && head[head.len() - gap..].contains('\t');
            separated.then(|| format!("{}{}{}", &text[..at - gap], " ".repeat(gap), &text[at..]))
        }
        "invalid indentation" | "invalid indentation in flow construct"
            if head.chars().all(|c| c == ' ' || c == '\t') =>
        {
            pad_lines(text, line_start..=flow_end(text, at), |_| col.max(1))
        }
        "tabs disallowed within this context (block indentation)" if *in_flow => {
            let spaces = head.replace('\t', " ");
            (spaces != head).then(|| format!("{}{spaces}{}", &text[..line_start], &text[at..]))
        }
        "invalid indentation in quoted scalar" => {
            let quote = text[at..]
                .chars()
                .next()
                .filter(|c| matches!(c, '"' | '\''))?;
            let end = quoted_end(text, at + 1, quote);
            pad_lines(text, at + 1..=end, |indent| {
                (col + 1).saturating_sub(indent)
            })
        }
        _ => None,
    }
}

/// `text` with each line that starts inside `lines` (byte offsets) and has content moved right
/// by `pad(its indentation in characters)` spaces; `None` when no line moved.
fn pad_lines(
    text: &str,
    lines: std::ops::RangeInclusive<usize>,
    pad: impl Fn(usize) -> usize,
) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 64);
    let mut start = 0;
    let mut moved = false;
    for line in text.split_inclusive('\n') {
        let content = line.trim_start_matches([' ', '\t']);
        let spaces = if lines.contains(&start) && !content.trim().is_empty() {
            pad(line.len() - content.len())
        } else {
            0
        };
        out.extend(std::iter::repeat_n(' ', spaces));
        out.push_str(line);
        moved |= spaces > 0;
        start += line.len();
    }
    moved.then_some(out)
}

/// The byte offset of the quote that closes a quoted scalar whose text starts at `from` (the
/// end of `text` when none does). Escapes are `\x` in double quotes and `''` in single quotes.
fn quoted_end(text: &str, from: usize, quote: char) -> usize {
    let mut chars = text[from..].char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if quote == '"' => {
                chars.next();
            }
            '\'' if quote == '\'' && chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                chars.next();
            }
            c if c == quote => return from + i,
            _ => {}
        }
    }
    text.len()
}

/// The byte offset of the bracket that closes the innermost flow collection holding the token
/// at `at` (the end of `text` when none does). In a flow collection only quoted scalars (where
/// they start a token), comments (after a space) and brackets matter: a plain scalar there holds
/// no bracket.
fn flow_end(text: &str, at: usize) -> usize {
    let mut depth = 0usize;
    let mut token_start = true;
    let mut after_space = true;
    let mut chars = text[at..].char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let space = matches!(c, ' ' | '\t' | '\r' | '\n');
        match c {
            '"' | '\'' if token_start => {
                let end = quoted_end(text, at + i + c.len_utf8(), c);
                while chars.peek().is_some_and(|&(j, _)| at + j <= end) {
                    chars.next();
                }
                token_start = false;
            }
            '#' if after_space => {
                while chars.peek().is_some_and(|&(_, n)| n != '\n') {
                    chars.next();
                }
            }
            '[' | '{' => {
                depth += 1;
                token_start = true;
            }
            ']' | '}' => match depth.checked_sub(1) {
                Some(d) => {
                    depth = d;
                    token_start = false;
                }
                None => return at + i,
            },
            ',' => token_start = true,
            ':' if chars.peek().is_none_or(|&(_, n)| {
                matches!(n, ' ' | '\t' | '\r' | '\n' | ',' | '[' | ']' | '{' | '}')
            }) =>
            {
                token_start = true;
            }
            '?' if token_start => {}
            _ if space => {}
            _ => token_start = false,
        }
        after_space = space;
    }
    text.len()
}

#[cfg(test)]
// A test times the alias bomb; the core itself reads no clock (clippy.toml).
#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::*;

    fn parse(text: &str) -> Parsed {
        parse_stream(text, FileId(0), &Limits::default())
    }

    /// The only document of `text`, as JSON, asserting that nothing was reported.
    fn doc(text: &str) -> serde_json::Value {
        let parsed = parse(text);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        assert_eq!(parsed.docs.len(), 1, "{text:?}");
        parsed.docs[0].to_json()
    }

    fn codes(parsed: &Parsed) -> Vec<Code> {
        parsed.diagnostics.iter().map(|d| d.code).collect()
    }

    fn line_of_diag(parsed: &Parsed, i: usize) -> u32 {
        parsed.diagnostics[i].loc.map_or(0, |l| l.line)
    }

    fn int(i: i64) -> Scalar {
        Scalar::Number(i.into())
    }

    fn float(f: f64) -> Scalar {
        Scalar::Number(serde_json::Number::from_f64(f).unwrap())
    }

    #[test]
    fn plain_scalars_resolve_like_go_yaml_v2() {
        let t = Scalar::Bool(true);
        let f = Scalar::Bool(false);
        let table: &[(&str, Scalar)] = &[
            ("", Scalar::Null),
            ("~", Scalar::Null),
            ("null", Scalar::Null),
            ("Null", Scalar::Null),
            ("NULL", Scalar::Null),
            ("nULL", Scalar::String),
            ("y", t.clone()),
            ("Y", t.clone()),
            ("yes", t.clone()),
            ("Yes", t.clone()),
            ("YES", t.clone()),
            ("true", t.clone()),
            ("True", t.clone()),
            ("TRUE", t.clone()),
            ("on", t.clone()),
            ("On", t.clone()),
            ("ON", t.clone()),
            ("n", f.clone()),
            ("N", f.clone()),
            ("no", f.clone()),
            ("No", f.clone()),
            ("NO", f.clone()),
            ("false", f.clone()),
            ("False", f.clone()),
            ("FALSE", f.clone()),
            ("off", f.clone()),
            ("Off", f.clone()),
            ("OFF", f.clone()),
            ("yEs", Scalar::String),
            ("oN", Scalar::String),
            (".inf", Scalar::NotJson),
            (".Inf", Scalar::NotJson),
            ("+.INF", Scalar::NotJson),
            ("-.inf", Scalar::NotJson),
            ("-.Inf", Scalar::NotJson),
            (".nan", Scalar::NotJson),
            (".NaN", Scalar::NotJson),
            (".NAN", Scalar::NotJson),
            ("+.nan", Scalar::String),
            ("inf", Scalar::String),
            ("0", int(0)),
            ("-0", int(0)),
            ("42", int(42)),
            ("+1", int(1)),
            ("-17", int(-17)),
            ("010", int(8)),
            ("0_10", int(8)),
            ("0x1F", int(31)),
            ("0X1f", int(31)),
            ("-0x10", int(-16)),
            ("0o17", int(15)),
            ("0O17", int(15)),
            ("0b101", int(5)),
            ("0B101", int(5)),
            ("-0b101", int(-5)),
            ("0b-101", int(-5)),
            ("1_000", int(1000)),
            ("9223372036854775807", int(i64::MAX)),
            ("-9223372036854775808", int(i64::MIN)),
            (
                "12345678901234567890",
                Scalar::Number(12_345_678_901_234_567_890u64.into()),
            ),
            ("99999999999999999999", float(1e20)),
            ("-99999999999999999999", float(-1e20)),
            ("08", float(8.0)),
            ("1.5", float(1.5)),
            ("-1.5", float(-1.5)),
            ("1e3", float(1000.0)),
            ("1E-2", float(0.01)),
            ("+1.5e+3", float(1500.0)),
            (".5", float(0.5)),
            ("-.5", float(-0.5)),
            (".5_0", float(0.5)),
            ("._5", Scalar::String),
            ("1.", float(1.0)),
            ("1_0.5", float(10.5)),
            ("1e999", Scalar::String),
            ("0x", Scalar::String),
            ("0xG", Scalar::String),
            ("0b2", Scalar::String),
            ("1.2.3", Scalar::String),
            ("1e", Scalar::String),
            (".", Scalar::String),
            ("-", Scalar::String),
            ("+", Scalar::String),
            ("2001-12-14", Scalar::String),
            ("2001-12-14T21:59:43.10-05:00", Scalar::String),
            ("1:20", Scalar::String),
            ("7d", Scalar::String),
            ("20Gi", Scalar::String),
            ("<<", Scalar::String),
            ("hello", Scalar::String),
        ];
        for (text, want) in table {
            assert_eq!(&resolve_plain(text), want, "{text:?}");
        }
    }

    #[test]
    fn quoted_block_and_tagged_scalars() {
        let v = doc(concat!(
            "a: \"Yes\"\nb: '010'\nc: |\n  10\nd: >-\n  true\n",
            "e: !!str 10\nf: !!int '10'\ng: !!bool \"on\"\nh: !!null ''\ni: !!float 1\n",
            "j: !custom 10\nk: ! true\nl: !!binary aGk=\nm: !!str\n",
        ));
        let want = json!({
            "a": "Yes", "b": "010", "c": "10\n", "d": "true",
            "e": "10", "f": 10, "g": true, "h": null, "i": 1,
            "j": "10", "k": "true", "l": "aGk=", "m": "",
        });
        assert_eq!(v, want);
    }

    #[test]
    fn infinity_and_nan_are_reported_and_become_null() {
        let parsed = parse("a: 1\nb: .inf\nc: [-.Inf, .nan]\nd: '.inf'\n");
        assert_eq!(codes(&parsed), [Code::UnsupportedValue; 3]);
        assert_eq!(line_of_diag(&parsed, 0), 2);
        assert!(parsed.diagnostics[0].message.contains(".inf"));
        let want = json!({"a": 1, "b": null, "c": [null, null], "d": ".inf"});
        assert_eq!(parsed.docs[0].to_json(), want);
    }

    #[test]
    fn keys_are_stringified_like_sigs_k8s_io_yaml() {
        let v = doc(concat!(
            "010: octal\n0x10: hex\ntrue: bool\nno: bool2\n~: null\n1.5: f\n1.0: g\n1e3: h\n",
            "1e20: i\n0.00001: j\n0.0001: k\n1234567.0: l\n3.14159265358979: m\n",
            ".inf: n\n-.inf: o\n.NaN: p\n'010': q\n12345678901234567890: r\n2001-12-14: s\n",
        ));
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let want = [
            "8",
            "16",
            "true",
            "false",
            "null",
            "1.5",
            "1",
            "1000",
            "1e+20",
            "1e-05",
            "0.0001",
            "1.234567e+06",
            "3.1415927",
            ".inf",
            "-.inf",
            ".nan",
            "010",
            "12345678901234567890",
            "2001-12-14",
        ];
        assert_eq!(keys, want);
    }

    #[test]
    fn collection_keys_are_invalid_and_their_entries_skipped() {
        let parsed = parse("? [a, b]\n: 1\nb: 2\n{c: d}: 3\nbase: &m {x: 1}\n*m : 4\ne: 5\n");
        assert_eq!(codes(&parsed), [Code::InvalidDocument; 3]);
        let lines: Vec<u32> = (0..3).map(|i| line_of_diag(&parsed, i)).collect();
        assert_eq!(lines, [1, 4, 6]);
        let want = json!({"b": 2, "base": {"x": 1}, "e": 5});
        assert_eq!(parsed.docs[0].to_json(), want);
    }

    #[test]
    fn a_duplicate_key_is_reported_and_the_first_value_kept() {
        let parsed = parse("a: 1\nb:\n  x: 1\n  z: 2\n  x: 3\na: 4\n");
        assert_eq!(codes(&parsed), [Code::DuplicateKey, Code::DuplicateKey]);
        assert_eq!(line_of_diag(&parsed, 0), 5);
        assert!(parsed.diagnostics[0].message.contains("\"x\""));
        assert!(parsed.diagnostics[0].message.contains("line 3"));
        assert_eq!(line_of_diag(&parsed, 1), 6);
        assert!(parsed.diagnostics[1].message.contains("line 1"));
        assert_eq!(
            parsed.docs[0].to_json(),
            json!({"a": 1, "b": {"x": 1, "z": 2}})
        );
        // Keys that stringify alike are duplicates too, as they are after JSON conversion.
        assert_eq!(codes(&parse("010: a\n8: b\n")), [Code::DuplicateKey]);
    }

    fn lenient(text: &str) -> Parsed {
        parse_stream_from(text, FileId(0), 1, &Limits::default(), Mode::Lenient)
    }

    #[test]
    fn when_lenient_a_duplicate_key_warns_and_the_last_value_counts() {
        let parsed = lenient("a: 1\nb:\n  x: 1\n  z: 2\n  x: 3\na: 4\n");
        assert_eq!(codes(&parsed), [Code::DuplicateKeyLastWins; 2]);
        assert!(parsed.diagnostics.iter().all(|d| !d.is_error()));
        assert_eq!(line_of_diag(&parsed, 0), 5);
        assert!(parsed.diagnostics[0]
            .message
            .contains("\"x\" (first written on line 3)"));
        assert_eq!(
            parsed.docs[0].to_json(),
            json!({"a": 4, "b": {"x": 3, "z": 2}})
        );
        assert_eq!(parsed.docs[0].get("a").unwrap().prov.loc.line, 6);
    }

    #[test]
    fn when_lenient_a_flow_collection_may_sit_at_any_column() {
        // As go-yaml reads them (checked with helm 4.3.1): no indentation inside `[ ]` and `{ }`.
        let cases = [
            (
                "command: [\n  \"sh\",\n  \"-c\"\n]\n",
                json!({"command": ["sh", "-c"]}),
            ),
            (
                "s:\n  command: [\n  \"sh\",\n  \"-c\"\n  ]\nt: 1\n",
                json!({"s": {"command": ["sh", "-c"]}, "t": 1}),
            ),
            (
                "a:\n  b:\n    c: {\nx: \"multi\n line\",\n\tw: plain\n  words\n }\n",
                json!({"a": {"b": {"c": {"x": "multi line", "w": "plain words"}}}}),
            ),
            ("a: [\n\"x\"]\nb: {\n}\n", json!({"a": ["x"], "b": {}})),
            (
                "a:\n  b: \"x\n y\n\n  \\\"z\\\"\"\n  c: 'p\nq''\n'\n",
                json!({"a": {"b": "x y\n\"z\"", "c": "p q' "}}),
            ),
        ];
        for (text, want) in cases {
            let parsed = lenient(text);
            assert!(
                parsed.diagnostics.is_empty(),
                "{text:?}: {:?}",
                parsed.diagnostics
            );
            assert_eq!(parsed.docs[0].to_json(), want, "{text:?}");
            assert_eq!(codes(&parse(text)), [Code::YamlSyntax], "strict: {text:?}");
        }
        let parsed = lenient("s:\n  command: [\n  \"sh\",\n  ]\nt:\n  u: 1\n");
        assert_eq!(
            parsed.docs[0]
                .get("t")
                .unwrap()
                .get("u")
                .unwrap()
                .prov
                .loc
                .line,
            6
        );
    }

    #[test]
    fn when_lenient_only_the_flow_collection_moves() {
        // Brackets in quotes and comments, and an apostrophe in a plain scalar, do not end the
        // collection early or late: the key after it stays where it was.
        let text = concat!(
            "a:\n  b: [\nx,\n'[it''s',  # a ] in a comment\n\"y]\", it's\n, {k: [1,\n2]}]\n",
            "  c: 1\n",
        );
        let parsed = lenient(text);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let want = json!({"a": {"b": ["x", "[it's", "y]", "it's", {"k": [1, 2]}], "c": 1}});
        assert_eq!(parsed.docs[0].to_json(), want);
        assert_eq!(
            parsed.docs[0]
                .get("a")
                .unwrap()
                .get("c")
                .unwrap()
                .prov
                .loc
                .line,
            8
        );
    }

    #[test]
    fn when_lenient_a_long_flow_collection_at_column_zero_reads() {
        // As `toPrettyJson` output after a key prints it.
        let mut text = String::from("a:\n  b:\n    c: {\n");
        for i in 0..500 {
            text.push_str(&format!("\"k{i}\": [\n{i}\n],\n"));
        }
        text.push_str("\"last\": true\n}\n    d: 1\n");
        let parsed = lenient(&text);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let b = parsed.docs[0].get("a").unwrap().get("b").unwrap().to_json();
        assert_eq!(b["c"].as_object().unwrap().len(), 501);
        assert_eq!(
            (b["c"]["k499"].clone(), b["d"].clone()),
            (json!([499]), json!(1))
        );
    }

    #[test]
    fn when_lenient_a_tab_may_follow_a_colon() {
        let parsed = lenient("a:\tb\nm: {k:\t\tv, p: \"x\\ty\"}\nl: [1,\t2]\nq: \"c:\td\"\n");
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        assert_eq!(
            parsed.docs[0].to_json(),
            json!({"a": "b", "m": {"k": "v", "p": "x\ty"}, "l": [1, 2], "q": "c:\td"})
        );
        assert_eq!(codes(&parse("a:\tb\n")), [Code::YamlSyntax]);
        // Tabs that start a line in a flow collection are separation too (checked with helm 4.3.1).
        let parsed = lenient("a:\n  c: [\n\t1,\n\t2]\n  d: {\n\tk: 1}\n");
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        assert_eq!(
            parsed.docs[0].to_json(),
            json!({"a": {"c": [1, 2], "d": {"k": 1}}})
        );
    }

    #[test]
    fn when_lenient_what_go_yaml_refuses_stays_a_syntax_error() {
        // go-yaml refuses tabs as block indentation too, and a misindented block key.
        for text in ["a:\n\tb\n", "a:\n  b: 1\n c: 2\n", "a: [1, 2\n"] {
            assert_eq!(codes(&lenient(text)), [Code::YamlSyntax], "{text:?}");
        }
    }

    #[test]
    fn merged_entries_replace_keys_before_the_merge_and_yield_to_keys_after_it() {
        // As go-yaml v2, which Helm reads values with, does: `a` before `<<` is replaced.
        let text = "base: &b {a: 1, b: 2, c: 3}\nm:\n  a: 10\n  <<: *b\n  c: 30\n";
        let v = doc(text);
        assert_eq!(v["m"], json!({"a": 1, "b": 2, "c": 30}));
        let keys: Vec<&String> = v["m"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", "b", "c"]);
    }

    #[test]
    fn in_a_merge_list_earlier_mappings_win() {
        let text = "x: &x {a: 1, b: 1}\ny: &y {b: 2, c: 2}\nm:\n  <<: [*x, *y, {d: 4, c: 4}]\n";
        assert_eq!(doc(text)["m"], json!({"a": 1, "b": 1, "c": 2, "d": 4}));
    }

    #[test]
    fn merged_entries_keep_the_lines_they_were_written_on() {
        let parsed = parse("base: &b\n  a: 1\n  b: 2\nm:\n  <<: *b\n  b: 3\n");
        let m = parsed.docs[0].get("m").unwrap();
        assert_eq!(m.get("a").unwrap().prov.loc.line, 2);
        assert_eq!(m.get("b").unwrap().prov.loc.line, 6);
    }

    #[test]
    fn a_merge_of_something_other_than_mappings_is_invalid() {
        for (text, line) in [
            ("s: &s x\nm:\n  <<: *s\n  a: 1\n", 3),
            ("m:\n  <<: [{a: 1}, 2]\n  a: 1\n", 2),
        ] {
            let parsed = parse(text);
            assert_eq!(codes(&parsed), [Code::InvalidDocument], "{text}");
            assert_eq!(line_of_diag(&parsed, 0), line);
            assert_eq!(parsed.docs[0].to_json()["m"], json!({"a": 1}));
        }
    }

    #[test]
    fn only_a_plain_untagged_double_angle_key_merges() {
        let v = doc("b: &b {a: 1}\nq:\n  '<<': *b\nt:\n  !!str <<: *b\n");
        assert_eq!(v["q"], json!({"<<": {"a": 1}}));
        assert_eq!(v["t"], json!({"<<": {"a": 1}}));
    }

    #[test]
    fn an_alias_is_a_deep_copy_with_the_anchors_provenance() {
        let parsed = parse("a: &x\n  k: [1, {z: 2}]\nb: *x\nc: &s text\nd: *s\n");
        let v = parsed.docs[0].to_json();
        assert_eq!(v["b"], v["a"]);
        assert_eq!(v["d"], json!("text"));
        let b = parsed.docs[0].get("b").unwrap();
        assert_eq!(b.prov.loc.line, 1);
        assert_eq!(b.get("k").unwrap().prov.loc.line, 2);
    }

    #[test]
    fn an_anchored_key_can_be_aliased_as_a_key_or_a_value() {
        let v = doc("&k 010: a\nb: *k\nm: {*k : c}\nx: &n ~\n*n : d\n");
        assert_eq!(
            v,
            json!({"8": "a", "b": 8, "m": {"8": "c"}, "x": null, "null": "d"})
        );
    }

    #[test]
    fn unknown_and_self_containing_aliases_are_syntax_errors() {
        for (text, line) in [("a: 1\n---\nb: *nope\n", 3), ("a: &x [1, *x]\n", 1)] {
            let parsed = parse(text);
            assert_eq!(codes(&parsed), [Code::YamlSyntax], "{text}");
            assert_eq!(line_of_diag(&parsed, 0), line, "{text}");
            assert!(parsed.docs.is_empty());
        }
    }

    fn alias_bomb(levels: usize, width: usize) -> String {
        let mut text = format!("l0: &l0 [{}]\n", vec!["\"lol\""; width].join(", "));
        for i in 1..levels {
            let refs = vec![format!("*l{}", i - 1); width].join(", ");
            text.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
        }
        text
    }

    #[test]
    fn an_alias_bomb_is_stopped_quickly() {
        let start = Instant::now();
        let parsed = parse(&format!("{}---\nok: 1\n", alias_bomb(10, 10)));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "took {:?}",
            start.elapsed()
        );
        assert_eq!(codes(&parsed), [Code::RepositoryTooComplex]);
        assert!(parsed.diagnostics[0].message.contains("500000"));
        assert!(
            parsed.docs.is_empty(),
            "the run's budget is spent: nothing is kept"
        );
    }

    #[test]
    fn the_budget_is_shared_by_every_document_and_parse_of_a_run() {
        // 100 documents of 2,000 nodes (the map, its key's value and 1,998 items) each.
        let doc = format!("a: [{}]\n", vec!["1"; 1_998].join(","));
        let text = vec![doc.as_str(); 100].join("---\n");
        let run = Limits::new(300_000, usize::MAX);
        let parsed = parse_stream(&text, FileId(0), &run);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let parsed = parse_stream(&text, FileId(0), &run);
        assert_eq!(codes(&parsed), [Code::RepositoryTooComplex]);
        assert!(parsed.diagnostics[0].message.contains("limits.max_nodes"));
        assert_eq!(
            line_of_diag(&parsed, 0),
            101,
            "the 51st document holds the 300,001st node"
        );
        // Spent: a later parse keeps nothing, and says so (an empty file would pass).
        let later = parse_stream("a: 1\n", FileId(0), &run);
        assert!(later.docs.is_empty());
        assert_eq!(codes(&later), [Code::RepositoryTooComplex]);
        assert!(later.diagnostics[0].message.starts_with("not read"));
    }

    #[test]
    fn aliases_of_long_scalars_count_their_bytes_each_time() {
        let long = "x".repeat(1000);
        let text = format!("a: &a {long}\nb: [{}]\n", vec!["*a"; 99].join(","));
        // The key bytes (a, b) and 101 copies of 1,000 bytes (scalar, anchor copy, 99 aliases).
        let fits = Limits::new(usize::MAX, 101_002);
        assert!(parse_stream(&text, FileId(0), &fits).diagnostics.is_empty());
        let short = Limits::new(usize::MAX, 101_001);
        let parsed = parse_stream(&text, FileId(0), &short);
        assert_eq!(codes(&parsed), [Code::RepositoryTooComplex]);
        assert!(parsed.diagnostics[0]
            .message
            .contains("limits.max_value_bytes"));
    }

    #[test]
    fn aliases_count_against_the_node_budget() {
        // Three levels of ten: about 2,500 nodes with the anchors' copies; four: about 25,000.
        let limits = Limits {
            max_nodes: 3000,
            ..Limits::default()
        };
        let small = parse_stream(&alias_bomb(3, 10), FileId(0), &limits.clone());
        assert!(small.diagnostics.is_empty(), "{:?}", small.diagnostics);
        let big = parse_stream(&alias_bomb(4, 10), FileId(0), &limits);
        assert_eq!(codes(&big), [Code::RepositoryTooComplex]);
        assert!(big.docs.is_empty());
    }

    #[test]
    fn deep_nesting_is_too_complex_and_does_not_crash() {
        let block = format!("{}x\n", "- ".repeat(100_000));
        let flow = "[".repeat(100_000);
        for text in [block, flow] {
            let parsed = parse(&text);
            assert_eq!(codes(&parsed), [Code::RepositoryTooComplex]);
            assert!(parsed.docs.is_empty());
        }
        let parsed = parse(&format!("{}x\n", "- ".repeat(256)));
        assert!(parsed.diagnostics[0].message.contains("256"));
    }

    #[test]
    fn nesting_up_to_the_depth_limit_is_accepted() {
        let limits = Limits {
            max_depth: 4,
            ..Limits::default()
        };
        let ok = parse_stream("a:\n  b:\n    c: 1\n", FileId(0), &limits);
        assert!(ok.diagnostics.is_empty(), "{:?}", ok.diagnostics);
        let deep = parse_stream("a:\n  b:\n    c: [1]\n", FileId(0), &limits);
        assert_eq!(codes(&deep), [Code::RepositoryTooComplex]);
        assert!(deep.diagnostics[0].message.contains('4'));
        // An alias brings its depth with it.
        let aliased = parse_stream("x: &x [[1]]\ny:\n  z: *x\n", FileId(0), &limits);
        assert_eq!(codes(&aliased), [Code::RepositoryTooComplex]);
    }

    #[test]
    fn values_get_their_keys_line_and_items_and_roots_their_own() {
        let text = "\n# c\nkey:\n  a: 1\nlist:\n  - x\n  -\n    z: 2\n---\n\n- 1\n";
        let parsed = parse(text);
        assert!(parsed.diagnostics.is_empty());
        let [first, second] = &parsed.docs[..] else {
            panic!("{:?}", parsed.docs)
        };
        let line = |n: &Node| n.prov.loc.line;
        assert_eq!(line(first), 3);
        assert_eq!(line(first.get("key").unwrap()), 3);
        assert_eq!(line(first.get("key").unwrap().get("a").unwrap()), 4);
        let list = first.get("list").unwrap();
        assert_eq!(line(list), 5);
        let items = list.as_seq().unwrap();
        assert_eq!((line(&items[0]), line(&items[1])), (6, 8));
        assert_eq!(line(items[1].get("z").unwrap()), 8);
        assert_eq!(line(second), 11);
        assert_eq!(line(&second.as_seq().unwrap()[0]), 11);
        assert_eq!(first.prov, Prov::written(Loc::new(FileId(0), 3)));
    }

    #[test]
    fn empty_and_null_documents_are_skipped() {
        let parsed = parse("---\n---\n# only a comment\n---\n~\n---\nnull\n...\n---\na: 1\n---\n");
        assert!(parsed.diagnostics.is_empty());
        assert_eq!(parsed.docs.len(), 1);
        assert_eq!(parsed.docs[0].to_json(), json!({"a": 1}));
        assert_eq!(parsed.docs[0].prov.loc.line, 10);
        assert!(parse("").docs.is_empty());
    }

    #[test]
    fn arbitrary_input_never_panics() {
        const PIECES: &[&str] = &[
            "a",
            ":",
            ": ",
            "- ",
            "\n",
            "  ",
            "\t",
            ":\t",
            "\n]",
            "\n}",
            "[",
            "]",
            "{",
            "}",
            ",",
            "&a ",
            "*a",
            "&b ",
            "*b",
            "<<: ",
            "? ",
            "!!str ",
            "!x ",
            "|",
            ">-",
            "'",
            "\"",
            "#",
            "---\n",
            "...\n",
            ".inf",
            "0x1",
            "%YAML 1.1\n",
            "\u{feff}",
            "é",
            "\r",
        ];
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let limits = Limits {
            max_depth: 16,
            ..Limits::new(2_000, 64 << 20)
        };
        for _ in 0..3000 {
            let text: String = (0..next(40)).map(|_| PIECES[next(PIECES.len())]).collect();
            for mode in [Mode::Strict, Mode::Lenient] {
                let parsed = parse_stream_from(&text, FileId(0), 1, &limits.clone(), mode);
                let syntax = parsed
                    .diagnostics
                    .iter()
                    .any(|d| d.code == Code::YamlSyntax);
                assert!(!syntax || parsed.docs.is_empty(), "{text:?}");
            }
        }
    }

    /// Found by the `yaml_split` fuzz target (fuzz/regressions/yaml_split): the text read
    /// differently once printed with a final line break.
    #[test]
    fn a_missing_final_line_break_changes_nothing() {
        for text in [
            "a: |\n  x ",
            "--- >\n x\n ",
            "a: |+\n  x",
            "a: |+\n ",
            "a: b",
        ] {
            assert_eq!(doc(text), doc(&format!("{text}\n")), "{text:?}");
        }
    }

    /// Found by the `yaml_split` fuzz target: the parser puts what it finds at the end of the
    /// input (an error, an implicit null) on the line after the text.
    #[test]
    fn the_end_of_the_input_is_on_its_last_line() {
        let cases = [
            (": 2\nima: 2\nimagereplp", 3),
            ("a: 1\nb", 2),
            ("a: 1\nb\n", 2),
            ("a: 1\rb: [", 2),
            ("a: 1\r\nb: [\r\n", 2),
            ("a: [", 1),
        ];
        for (text, line) in cases {
            let parsed = parse(text);
            assert_eq!(codes(&parsed), [Code::YamlSyntax], "{text:?}");
            assert_eq!(line_of_diag(&parsed, 0), line, "{text:?}");
        }
        let parsed = parse(": a: \n?\n?");
        assert_eq!(codes(&parsed), [Code::DuplicateKey; 2]);
        assert_eq!((line_of_diag(&parsed, 0), line_of_diag(&parsed, 1)), (3, 3));
        let parsed = parse("a:\n  b:");
        let Value::Map(map) = &parsed.docs[0].value else {
            panic!("{parsed:?}")
        };
        assert!(map.values().all(|n| n.prov.loc.line <= 2), "{parsed:?}");
    }

    #[test]
    fn a_syntax_error_stops_the_stream_at_its_line() {
        let parsed = parse("ok: 1\n---\na:\n  b: 1\n c: 2\n");
        assert_eq!(codes(&parsed), [Code::YamlSyntax]);
        assert_eq!(line_of_diag(&parsed, 0), 5);
        assert!(parsed.diagnostics[0]
            .message
            .contains("did not find expected key"));
        assert!(parsed.docs.is_empty());
        let parsed = parse("a: b: c\n");
        assert_eq!(codes(&parsed), [Code::YamlSyntax]);
        assert_eq!(line_of_diag(&parsed, 0), 1);
    }
}
