//! App files as templates, as Nyl renders them: the text of a file is a MiniJinja template
//! (`{{ values.environment }}`, `{% if %}`), rendered before its YAML is read.
//!
//! Pure: the caller reads the file and hands over its text and the context; this module renders
//! it and says, for every line of the result, which line of the file it comes from, so that every
//! later message and every value's provenance points into the file as written.
//!
//! - **Context**: `values` (the target's effective values), `cluster` (the target's Cluster
//!   document without `spec.live`) and `target` (its DeploymentTarget document), as Nyl documents
//!   them. A render without a target has none of them.
//! - **What nyl cannot offer** (`secrets`, `env`, `lookup`, `inputs`: Nyl's secrets provider,
//!   process environment, live cluster state and release inputs) is `template_unavailable` at any
//!   use, never an empty string.
//! - **Undefined values** are errors when printed, iterated or given to a filter
//!   (`template_undefined`); a test of truth (`{% if values.debug %}`) or `is defined` is allowed,
//!   as Nyl's templates use them for optional values.
//! - **Filters**: MiniJinja's builtins (`default`, `tojson`, `indent`, ...) and Nyl's `b64encode`
//!   and `b64decode`.
//!
//! Line mapping: the template is rendered a second time with a marker (private-use characters
//! holding the line number) after the last content of each line of literal text. The markers are
//! taken out again, and their positions give each rendered line its source line. When the marked
//! rendering does not give back exactly the plain one (a `{% filter %}` block that changed the
//! markers), the lines are mapped only when their count did not change.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use minijinja::value::{Enumerator, Object, Value as JValue};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, State, UndefinedBehavior};

use crate::data::diagnostics::{Code, Diagnostic};
use crate::data::provenance::{FileId, Loc};
use crate::data::value::{Node, Value};

/// Bounds a template's work (MiniJinja instructions), so that a loop over a huge range ends in an
/// error rather than a hang.
const FUEL: u64 = 5_000_000;

/// Marks the start and end of a line marker in the marked rendering.
const MARK_OPEN: char = '\u{E000}';
const MARK_CLOSE: char = '\u{E001}';

/// Whether `text` holds template syntax: an expression, a statement or a comment.
pub fn has_syntax(text: &str) -> bool {
    ["{{", "{%", "{#"].iter().any(|d| text.contains(d))
}

/// What a template sees.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The target's effective values; `None` without a target.
    pub values: Option<Node>,
    pub cluster: Option<Node>,
    pub target: Option<Node>,
    /// The selected target's name, for messages; `None` without a target.
    pub target_name: Option<String>,
}

/// A rendered file: its text, and where each of its lines comes from.
#[derive(Clone, Debug)]
pub struct Rendered {
    pub text: String,
    /// For rendered line `i + 1`, the source line (0: not known).
    lines: Vec<u32>,
    /// Source lines whose text the template changed (their values came from the template).
    pub templated: Vec<u32>,
}

impl Rendered {
    /// The source line of rendered line `line` (1-based); 0 when not known.
    pub fn source_line(&self, line: u32) -> u32 {
        if line == 0 {
            return 0;
        }
        self.lines
            .get(line as usize - 1)
            .or(self.lines.last())
            .copied()
            .unwrap_or(0)
    }

    /// Points `node`'s provenance (and its children's) at the source lines.
    pub fn remap_node(&self, node: &mut Node) {
        node.prov.loc.line = self.source_line(node.prov.loc.line);
        match &mut node.value {
            Value::Seq(items) => items.iter_mut().for_each(|n| self.remap_node(n)),
            Value::Map(map) => map.values_mut().for_each(|n| self.remap_node(n)),
            _ => {}
        }
    }

    /// Points a diagnostic's locations in this file at the source lines.
    pub fn remap_diagnostic(&self, d: &mut Diagnostic, file: FileId) {
        for loc in [&mut d.loc, &mut d.related].into_iter().flatten() {
            if loc.file == file {
                loc.line = self.source_line(loc.line);
            }
        }
    }
}

/// Renders `source` (the text of `file`) with `context`. Problems name the expression and the
/// source line.
pub fn render(source: &str, context: &Context, file: FileId) -> Result<Rendered, Vec<Diagnostic>> {
    let used = Used::default();
    let env = environment(&used);
    let ctx = context_value(context);
    let plain = env.render_str(source, ctx.clone());
    let uses = used.take();
    if !uses.is_empty() {
        let line = plain.as_ref().err().and_then(Error::line);
        return Err(unavailable(source, &uses, line, file));
    }
    let text = plain.map_err(|e| vec![render_error(source, &e, context, file)])?;
    let (lines, templated) = map_lines(source, &text, &env, &ctx);
    Ok(Rendered {
        text,
        lines,
        templated,
    })
}

/// The MiniJinja environment nyl renders app files with.
fn environment(used: &Used) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
    // Text templating must not change the literal text around expressions (a block scalar at
    // the end of a file keeps its newline). The default delimiters always build.
    if let Ok(syntax) = minijinja::syntax::SyntaxConfig::builder()
        .keep_trailing_newline(true)
        .build()
    {
        env.set_syntax(syntax);
    }
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_fuel(Some(FUEL));
    env.set_formatter(|out, state, value| {
        if let Some(u) = value.downcast_object_ref::<Unavailable>() {
            return Err(u.fail(&u.path));
        }
        minijinja::escape_formatter(out, state, value)
    });
    env.add_filter("b64encode", |s: String| {
        base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
    });
    env.add_filter("b64decode", |s: String| -> Result<String, Error> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("not base64: {e}")))?;
        String::from_utf8(bytes)
            .map_err(|_| Error::new(ErrorKind::InvalidOperation, "decoded bytes are not UTF-8"))
    });
    for name in UNAVAILABLE.iter().map(|(name, _)| *name) {
        env.add_global(
            name,
            JValue::from_object(Unavailable {
                path: name.to_string(),
                used: used.clone(),
            }),
        );
    }
    env
}

/// The names Nyl's templates may use that nyl cannot offer, with what to do instead.
const UNAVAILABLE: [(&str, &str); 4] = [
    (
        "secrets",
        "Nyl's secrets provider, which nyl does not read: keep secrets out of rendered manifests \
         (a Secret managed in the cluster, e.g. by External Secrets or Sealed Secrets) and refer \
         to it by name",
    ),
    (
        "env",
        "the environment of the process, which nyl does not hand to templates so that one \
         repository renders the same everywhere: put the value in the target's values (or pass \
         it as the Argo CD plugin's runtime values)",
    ),
    (
        "lookup",
        "live cluster state, which nyl never reads (it renders without a cluster connection): \
         write the value into the target's values",
    ),
    (
        "inputs",
        "Nyl's release inputs (a Release's `spec.inputs`, bound per ApplicationGroup by a \
         DeploymentTarget's `spec.releaseInputs`), which nyl does not read: put the value in the \
         target's values",
    ),
];

/// The uses of unavailable names during one render (`secrets.token`, `env`).
#[derive(Clone, Debug, Default)]
struct Used(Arc<Mutex<Vec<String>>>);

impl Used {
    fn record(&self, path: &str) {
        let mut uses = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !uses.iter().any(|u| u == path) {
            uses.push(path.to_string());
        }
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// A name nyl cannot offer (or something reached through it): every use is recorded, and the
/// render fails with `template_unavailable` even where the engine would carry on (a truth test).
#[derive(Debug)]
struct Unavailable {
    path: String,
    used: Used,
}

impl Unavailable {
    /// Records the use of `path` and fails the render (the message is [`unavailable`]'s).
    fn fail(&self, path: &str) -> Error {
        self.used.record(path);
        Error::new(ErrorKind::InvalidOperation, "unavailable")
    }
}

impl Object for Unavailable {
    fn get_value(self: &Arc<Self>, key: &JValue) -> Option<JValue> {
        self.used.record(&self.path);
        Some(JValue::from_object(Unavailable {
            path: format!("{}.{key}", self.path),
            used: self.used.clone(),
        }))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.used.record(&self.path);
        Enumerator::NonEnumerable
    }

    fn is_true(self: &Arc<Self>) -> bool {
        self.used.record(&self.path);
        false
    }

    fn call(self: &Arc<Self>, _: &mut State<'_, '_>, _: &[JValue]) -> Result<JValue, Error> {
        Err(self.fail(&self.path))
    }

    fn call_method(
        self: &Arc<Self>,
        _: &mut State<'_, '_>,
        method: &str,
        _: &[JValue],
    ) -> Result<JValue, Error> {
        Err(self.fail(&format!("{}.{method}()", self.path)))
    }
}

fn context_value(context: &Context) -> JValue {
    let mut pairs: Vec<(&str, JValue)> = Vec::new();
    for (name, node) in [
        ("values", &context.values),
        ("cluster", &context.cluster),
        ("target", &context.target),
    ] {
        if let Some(node) = node {
            pairs.push((name, to_jinja(node)));
        }
    }
    JValue::from_pairs(pairs)
}

/// A value tree as MiniJinja sees it; maps keep their order.
fn to_jinja(node: &Node) -> JValue {
    match &node.value {
        Value::Null => JValue::from(()),
        Value::Bool(b) => JValue::from(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                JValue::from(i)
            } else if let Some(u) = n.as_u64() {
                JValue::from(u)
            } else {
                JValue::from(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => JValue::from(s.as_str()),
        Value::Seq(items) => items.iter().map(to_jinja).collect(),
        Value::Map(map) => JValue::from_pairs(map.iter().map(|(k, v)| (k.as_str(), to_jinja(v)))),
    }
}

/// The text of source line `line` (1-based), trimmed.
fn source_line(source: &str, line: usize) -> &str {
    source
        .lines()
        .nth(line.saturating_sub(1))
        .unwrap_or("")
        .trim()
}

/// The template tags on `line` of `source` that name `root` (`{{ secrets.get('x') }}`), or the
/// line itself when none does.
fn tags_naming(source: &str, root: &str) -> Option<(usize, String)> {
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(source.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    pieces(source).into_iter().find_map(|p| match p {
        Piece::Tag { range, .. } => {
            let text = &source[range.clone()];
            names(text).contains(&root).then(|| {
                let line = line_starts.partition_point(|&s| s <= range.start);
                (line, text.to_string())
            })
        }
        Piece::Data(_) => None,
    })
}

/// The identifiers a tag uses as names (not attributes, not inside string literals).
fn names(tag: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = tag.as_bytes();
    let mut i = 0;
    let mut quote = None;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some(q) = quote {
            if c == b'\\' {
                i += 1;
            } else if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        if c == b'\'' || c == b'"' {
            quote = Some(c);
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let attribute = tag[..start].trim_end().ends_with('.');
            if !attribute {
                out.push(&tag[start..i]);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// `template_unavailable` for each name nyl cannot offer that the template used.
fn unavailable(
    source: &str,
    uses: &[String],
    error_line: Option<usize>,
    file: FileId,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (root, what) in UNAVAILABLE {
        let Some(path) = uses
            .iter()
            .find(|u| u.as_str() == root || u.starts_with(&format!("{root}.")))
        else {
            continue;
        };
        let (line, expression) = match tags_naming(source, root) {
            Some(found) => found,
            None => {
                let line = error_line.unwrap_or(0);
                (line, source_line(source, line).to_string())
            }
        };
        out.push(
            Diagnostic::new(
                Code::TemplateUnavailable,
                format!(
                    "{expression:?} uses `{path}`: `{root}` is {what}; nothing was rendered from \
                     this file"
                ),
            )
            .at(Loc::new(file, line as u32)),
        );
    }
    out
}

/// A MiniJinja error as a diagnostic at its source line, naming the expression.
fn render_error(source: &str, e: &Error, context: &Context, file: FileId) -> Diagnostic {
    let line = e.line().unwrap_or(0);
    let expression = e
        .range()
        .and_then(|r| source.get(r))
        .filter(|s| !s.trim().is_empty())
        .map_or_else(|| source_line(source, line).to_string(), str::to_string);
    let detail = e.detail().map_or_else(String::new, |d| format!(" ({d})"));
    let (code, message) = match e.kind() {
        ErrorKind::UndefinedError => {
            let hint = match &context.target_name {
                Some(name) => format!(
                    "the target {name:?} has no such value: add it to the target's (or its \
                     Cluster's) `spec.values`, or guard it with `is defined` or `| default(...)`"
                ),
                None => "no target is selected, so there are no `values`, `cluster` or `target`: \
                         render with --target NAME"
                    .to_string(),
            };
            (
                Code::TemplateUndefined,
                format!("{expression:?} is undefined: {hint}"),
            )
        }
        ErrorKind::SyntaxError => (
            Code::TemplateError,
            format!(
                "{:?} is not a valid template{detail}; app files are MiniJinja templates as in \
                 Nyl: if this text is for a chart that `tpl`s its values, wrap it in \
                 `{{% raw %}}...{{% endraw %}}`, or set `templating = false` under [project] in \
                 nyl.toml",
                source_line(source, line)
            ),
        ),
        kind => (
            Code::TemplateError,
            format!("{expression:?} cannot be rendered: {kind}{detail}"),
        ),
    };
    Diagnostic::new(code, message).at(Loc::new(file, line as u32))
}

/// A piece of template source: literal text, or a tag with its delimiters.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Data(std::ops::Range<usize>),
    Tag {
        range: std::ops::Range<usize>,
        /// `{{-`: trims the whitespace before it.
        trim_before: bool,
        /// `-}}`: trims the whitespace after it.
        trim_after: bool,
    },
}

/// Where the tag opened at `start` ends (past its closing delimiter), skipping string literals
/// in expressions and statements.
fn tag_end(source: &str, start: usize) -> Option<usize> {
    let bytes = source.as_bytes();
    let (close, strings) = match bytes[start + 1] {
        b'{' => (b'}', true),
        b'%' => (b'%', true),
        _ => (b'#', false),
    };
    let mut i = start + 2;
    let mut quote = None;
    while i + 1 < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(_) if c == b'\\' => i += 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if strings && (c == b'\'' || c == b'"') => quote = Some(c),
            None if c == close && bytes[i + 1] == b'}' => return Some(i + 2),
            None => {}
        }
        i += 1;
    }
    None
}

/// The word of a statement tag (`raw`, `endraw`), without whitespace control.
fn statement(tag: &str) -> &str {
    tag[2..tag.len() - 2].trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace())
}

/// `source` as literal text and tags. The text of a `{% raw %}` block is literal. An unclosed
/// tag runs to the end (the engine reports it).
fn pieces(source: &str) -> Vec<Piece> {
    let bytes = source.as_bytes();
    let mut out = Vec::new();
    let mut data_start = 0;
    let mut raw = false;
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] != b'{' || !matches!(bytes[i + 1], b'{' | b'%' | b'#') {
            i += 1;
            continue;
        }
        let Some(end) = tag_end(source, i) else {
            out.push(Piece::Data(data_start..i));
            out.push(Piece::Tag {
                range: i..source.len(),
                trim_before: false,
                trim_after: false,
            });
            return out;
        };
        let tag = &source[i..end];
        let is_statement = bytes[i + 1] == b'%';
        if raw && !(is_statement && statement(tag) == "endraw") {
            i += 1;
            continue;
        }
        raw = is_statement && statement(tag) == "raw";
        out.push(Piece::Data(data_start..i));
        out.push(Piece::Tag {
            range: i..end,
            trim_before: tag.as_bytes().get(2) == Some(&b'-'),
            trim_after: tag.len() >= 5 && tag.as_bytes()[tag.len() - 3] == b'-',
        });
        data_start = end;
        i = end;
    }
    out.push(Piece::Data(data_start..source.len()));
    out
}

fn marker(line: usize) -> String {
    format!("{MARK_OPEN}{line}{MARK_CLOSE}")
}

/// `source` with a line marker after the last content of each line of literal text (or at its
/// newline when the line holds none), except where whitespace control would trim across it.
fn marked(source: &str) -> String {
    let pieces = pieces(source);
    let mut out = String::with_capacity(source.len() * 2);
    let mut line = 1;
    for (k, piece) in pieces.iter().enumerate() {
        let range = match piece {
            Piece::Tag { range, .. } => {
                let text = &source[range.clone()];
                out.push_str(text);
                line += text.matches('\n').count();
                continue;
            }
            Piece::Data(range) => range.clone(),
        };
        let text = &source[range.clone()];
        let prev_trims = k > 0
            && matches!(
                pieces[k - 1],
                Piece::Tag {
                    trim_after: true,
                    ..
                }
            );
        let next_trims = matches!(
            pieces.get(k + 1),
            Some(Piece::Tag {
                trim_before: true,
                ..
            })
        );
        // Whitespace control trims the whole run of whitespace at either end of the text.
        let first_content = text.find(|c: char| !c.is_whitespace());
        let last_content = text.rfind(|c: char| !c.is_whitespace());
        let mut line_start = 0;
        // A line's first content is marked too: a line that whitespace control joins to the one
        // before it still names its own.
        let at_line_start = range.start == 0 || source.as_bytes()[range.start - 1] == b'\n';
        let start_marked =
            |out: &mut String, segment: &str, line: usize, own_line: bool| match segment
                .find(|c: char| !c.is_whitespace())
                .filter(|_| own_line)
            {
                Some(q) => {
                    out.push_str(&segment[..q]);
                    out.push_str(&marker(line));
                    out.push_str(&segment[q..]);
                }
                None => out.push_str(segment),
            };
        for (p, _) in text.match_indices('\n') {
            let end = if p > 0 && text.as_bytes()[p - 1] == b'\r' {
                p - 1
            } else {
                p
            };
            let at = match text[line_start..end].rfind(|c: char| !c.is_whitespace()) {
                Some(q) => {
                    let c = text[line_start + q..]
                        .chars()
                        .next()
                        .map_or(1, char::len_utf8);
                    Some(line_start + q + c)
                }
                None => {
                    let leading = first_content.is_none_or(|c| c > p) && prev_trims;
                    let trailing = last_content.is_none_or(|c| c < p) && next_trims;
                    (!leading && !trailing).then_some(end)
                }
            };
            let own_line = line_start > 0 || at_line_start;
            match at {
                Some(at) => {
                    start_marked(&mut out, &text[line_start..at], line, own_line);
                    out.push_str(&marker(line));
                    out.push_str(&text[at..=p]);
                }
                None => start_marked(&mut out, &text[line_start..=p], line, own_line),
            }
            line_start = p + 1;
            line += 1;
        }
        let own_line = line_start > 0 || at_line_start;
        start_marked(&mut out, &text[line_start..], line, own_line);
    }
    out
}

/// For each line of `rendered`, its source line, and the source lines the template changed.
fn map_lines(
    source: &str,
    rendered: &str,
    env: &Environment<'static>,
    ctx: &JValue,
) -> (Vec<u32>, Vec<u32>) {
    let source_lines: Vec<&str> = source.lines().collect();
    let rendered_lines: Vec<&str> = rendered.lines().collect();
    let clean = !source.contains([MARK_OPEN, MARK_CLOSE]);
    let mapped = clean
        .then(|| env.render_str(&marked(source), ctx.clone()).ok())
        .flatten()
        .and_then(|m| {
            unmark(&m, source_lines.len().max(1) as u32).filter(|(text, _)| text == rendered)
        });
    let lines: Vec<u32> = match mapped {
        Some((_, lines)) => lines,
        None if rendered_lines.len() == source_lines.len() => {
            (1..=rendered_lines.len() as u32).collect()
        }
        None => {
            tracing::debug!("template lines could not be mapped; messages name no line");
            vec![0; rendered_lines.len()]
        }
    };
    let mut templated: Vec<u32> = rendered_lines
        .iter()
        .zip(&lines)
        .filter(|(text, &line)| {
            !text.trim().is_empty()
                && (line == 0
                    || source_lines
                        .get(line as usize - 1)
                        .is_none_or(|s| s != *text))
        })
        .map(|(_, &line)| line)
        .collect();
    templated.sort_unstable();
    templated.dedup();
    (lines, templated)
}

/// The marked rendering without its markers, and for each line the first marker on it or after
/// it (lines an expression printed carry the marker of the line that holds the expression).
fn unmark(marked: &str, last_line: u32) -> Option<(String, Vec<u32>)> {
    let mut text = String::with_capacity(marked.len());
    let mut first: Vec<Option<u32>> = vec![None];
    let mut chars = marked.chars();
    while let Some(c) = chars.next() {
        match c {
            MARK_OPEN => {
                let digits: String = chars.by_ref().take_while(|&c| c != MARK_CLOSE).collect();
                let line = digits.parse().ok()?;
                let current = first.last_mut()?;
                current.get_or_insert(line);
            }
            '\n' => {
                text.push(c);
                first.push(None);
            }
            c => text.push(c),
        }
    }
    if text.ends_with('\n') || text.is_empty() {
        first.pop();
    }
    // Lines after the last marker come from the source's last line (it has no newline to mark).
    let mut next = None;
    let mut lines = vec![0; first.len()];
    for (i, line) in first.iter().enumerate().rev() {
        next = line.or(next);
        lines[i] = next.unwrap_or(last_line);
    }
    Some((text, lines))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::provenance::{Layer, Prov};
    use crate::data::value::Map;

    fn node(json: &serde_json::Value) -> Node {
        Node::from_json(
            json,
            Prov {
                loc: Loc::new(FileId(1), 1),
                layer: Layer::Written,
            },
        )
    }

    fn ctx() -> Context {
        Context {
            values: Some(node(&serde_json::json!({
                "environment": "staging", "replicas": 2, "debug": false,
                "hosts": ["a", "b"], "config": {"x": 1, "a": "two"}
            }))),
            cluster: Some(node(&serde_json::json!({"metadata": {"name": "kasoku"}}))),
            target: Some(node(&serde_json::json!({"metadata": {"name": "staging"}}))),
            target_name: Some("staging".into()),
        }
    }

    fn ok(source: &str) -> Rendered {
        render(source, &ctx(), FileId(0)).unwrap()
    }

    fn err(source: &str) -> Vec<Diagnostic> {
        render(source, &ctx(), FileId(0)).unwrap_err()
    }

    #[test]
    fn context_values_cluster_and_target_render() {
        let r = ok("env: {{ values.environment }}\nn: {{ values.replicas }}\nc: {{ cluster.metadata.name }}-{{ target.metadata.name }}\n");
        assert_eq!(r.text, "env: staging\nn: 2\nc: kasoku-staging\n");
        assert_eq!(r.templated, [1, 2, 3]);
    }

    #[test]
    fn filters_of_nyl_and_minijinja() {
        let r = ok("a: {{ 'hi' | b64encode }}\nb: {{ 'aGk=' | b64decode }}\nc: {{ values.config | tojson }}\nd: {{ values.missing | default('x') }}\n");
        assert_eq!(
            r.text,
            "a: aGk=\nb: hi\nc: {\"x\": 1, \"a\": \"two\"}\nd: x\n"
        );
    }

    #[test]
    fn lines_map_through_blocks_and_loops() {
        let source = "a: 1\n{% if values.debug %}\nb: 2\n{% endif %}\nhosts:\n{% for h in values.hosts %}\n  - {{ h }}\n{% endfor %}\nz: {{ values.replicas }}\n";
        let r = ok(source);
        assert_eq!(r.text, "a: 1\n\nhosts:\n\n  - a\n\n  - b\n\nz: 2\n");
        let lines: Vec<u32> = (1..=9).map(|l| r.source_line(l)).collect();
        assert_eq!(lines, [1, 4, 5, 6, 7, 6, 7, 8, 9]);
        assert_eq!(r.templated, [7, 9]);
    }

    #[test]
    fn lines_map_with_whitespace_control() {
        let source =
            "a: 1\n{%- if true %}\nb: {{ values.replicas -}}\n\n  \nc: 3\n{% endif -%}\n\nd: 4\n";
        let r = ok(source);
        assert_eq!(r.text, "a: 1\nb: 2c: 3\nd: 4\n");
        assert_eq!(r.source_line(1), 1);
        assert_eq!(r.source_line(2), 3);
        assert_eq!(r.source_line(3), 9);
        assert_eq!(r.templated, [3]);
    }

    #[test]
    fn a_last_line_without_newline_is_the_sources_last() {
        let r = ok("a: 1\nb: 2\n{{ 3 }}");
        assert_eq!(r.text, "a: 1\nb: 2\n3");
        assert_eq!(r.source_line(3), 3);
    }

    #[test]
    fn multi_line_output_maps_to_its_expression() {
        let r = ok("x: 1\ny: |\n  {{ 'one\\ntwo' }}\nz: 2\n");
        assert_eq!(r.text, "x: 1\ny: |\n  one\ntwo\nz: 2\n");
        assert_eq!(r.source_line(3), 3);
        assert_eq!(r.source_line(4), 3);
        assert_eq!(r.source_line(5), 4);
    }

    #[test]
    fn raw_blocks_and_strings_with_delimiters_are_literal() {
        let r = ok("a: \"{% raw %}{{ .Values.x }}{% endraw %}\"\nb: {{ '}}' }}\n");
        assert_eq!(r.text, "a: \"{{ .Values.x }}\"\nb: }}\n");
        assert_eq!(r.source_line(2), 2);
    }

    #[test]
    fn undefined_is_an_error_but_a_truth_test_is_not() {
        let d = err("a: 1\nb: {{ values.nope }}\n");
        assert_eq!(d[0].code, Code::TemplateUndefined);
        assert_eq!(d[0].loc.unwrap().line, 2);
        assert!(d[0].message.contains("values.nope"), "{}", d[0].message);
        assert_eq!(ok("{% if values.nope %}x{% endif %}y").text, "y");
        let none = render("a: {{ values.x }}", &Context::default(), FileId(0)).unwrap_err();
        assert!(none[0].message.contains("--target"), "{}", none[0].message);
    }

    #[test]
    fn secrets_env_and_lookup_are_unavailable_at_any_use() {
        for source in [
            "a: 1\nt: {{ secrets.get('token') }}\n",
            "a: 1\nt: {{ secrets.token }}\n",
            "a: 1\n{% if secrets.token %}x{% endif %}\n",
        ] {
            let d = err(source);
            assert_eq!(d.len(), 1, "{source}");
            assert_eq!(d[0].code, Code::TemplateUnavailable);
            assert_eq!(d[0].loc.unwrap().line, 2, "{source}");
            assert!(d[0].message.contains("secrets"), "{}", d[0].message);
        }
        assert_eq!(
            err("i: {{ inputs.tag }}")[0].code,
            Code::TemplateUnavailable
        );
        let d = err("e: {{ env.HOME }}\nl: {{ lookup('v1', 'Secret') }}\n");
        let codes: Vec<_> = d.iter().map(|d| (d.code, d.loc.unwrap().line)).collect();
        assert_eq!(codes, [(Code::TemplateUnavailable, 1)]);
        // A loop variable of such a name is the template's own.
        assert_eq!(
            ok("{% for env in values.hosts %}{{ env }}{% endfor %}").text,
            "ab"
        );
    }

    #[test]
    fn syntax_errors_name_the_line_and_the_way_out() {
        let d = err("a: 1\nb: \"{{ .Values.x }}\"\n");
        assert_eq!(d[0].code, Code::TemplateError);
        assert_eq!(d[0].loc.unwrap().line, 2);
        assert!(
            d[0].message.contains("templating = false"),
            "{}",
            d[0].message
        );
    }

    #[test]
    fn runaway_loops_end() {
        let d =
            err("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
        assert_eq!(d[0].code, Code::TemplateError);
    }

    #[test]
    fn remap_points_nodes_at_source_lines() {
        let r = ok("a: 1\n{% if true %}\nb: {{ values.replicas }}\n{% endif %}\n");
        let mut n = Node::new(
            Value::Map(Map::new()),
            Prov {
                loc: Loc::new(FileId(0), 3),
                layer: Layer::Written,
            },
        );
        r.remap_node(&mut n);
        assert_eq!(n.prov.loc.line, 3);
        assert_eq!(r.source_line(2), 2);
    }
}
