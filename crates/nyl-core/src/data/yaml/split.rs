//! Splitting a YAML stream into its documents as text, so that every document is passed on byte
//! for byte as it was written (or as Helm printed it).
//!
//! A line that starts with `---` or `...` at column 0 (followed by nothing, a space or a tab) is a
//! document marker wherever it stands: the YAML spec forbids such lines inside any scalar, so
//! splitting on them is exact. Lines end at `\n`, `\r\n` or a `\r` alone, as YAML reads them.
//! The rules, chosen so that joining the pieces again gives the stream back when nothing is
//! removed:
//!
//! - A `---` line starts a new piece when the current one holds content (anything but blank
//!   lines, comments and directives). Before any content, comments stay with the piece the `---`
//!   starts (a file's header comment goes with its first document); a piece that began with a
//!   `---` of its own and holds no content is an empty document and is dropped.
//! - A `...` line ends the current piece; what follows it up to the next document belongs to that
//!   next document, except blank lines and comments at the very end of the stream, which stay with
//!   the last document (Helm ends a document `...` with a blank line).
//! - Content on the marker line (`--- {kind: ConfigMap}`, `--- |`) is content of that piece.
//! - Directives (`%YAML`, `%TAG`) are not passed on: in a joined stream they would apply to
//!   whatever document came next. A `%` line is a directive only before its document's `---` and
//!   content; past them it is content (a plain scalar's next line may start with `%`).
//! - A piece without a `---` line of its own (a file's first document, a document after `...`)
//!   is given one, so that every piece starts a document wherever it is placed.

use crate::data::diagnostics::Diagnostic;
use crate::data::provenance::FileId;
use crate::data::value::Node;

use super::read::{parse_stream_from, Limits, Mode};

/// One document of a stream as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The line of the stream the piece's source starts on (1-based).
    pub line: u32,
    /// The byte range of the piece in the stream (directives included).
    pub start: usize,
    pub end: usize,
    /// The document as output shows it, when that is not exactly its source: a `---` line put in
    /// front when it had none, directives left out, a final newline added.
    pub text: Option<String>,
}

impl Piece {
    /// The document as output shows it: starting a document, ending in a newline.
    pub fn text<'a>(&'a self, stream: &'a str) -> &'a str {
        self.text
            .as_deref()
            .unwrap_or(&stream[self.start..self.end])
    }
}

/// One document of a stream: its value and its text.
#[derive(Clone, Debug)]
pub struct Document {
    pub node: Node,
    /// As [`Piece::text`].
    pub text: String,
}

fn marker(line: &str, m: &str) -> bool {
    line.strip_prefix(m)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// Whether a line holds anything but blanks or a comment.
fn is_content(line: &str) -> bool {
    let first = line.bytes().find(|b| !matches!(b, b' ' | b'\t'));
    !matches!(first, None | Some(b'#' | b'\n' | b'\r'))
}

/// What follows `---` on a marker line counts as content unless it is blank or a comment.
fn marker_content(line: &str) -> bool {
    is_content(&line[3..])
}

#[derive(Clone, Copy, Default)]
struct Open {
    start: usize,
    line: u32,
    content: bool,
    /// Began with a `---` line of its own.
    marked: bool,
    /// Ended by a `...` line.
    ended: bool,
    /// Holds a directive line.
    directive: bool,
}

/// The documents of `text` as pieces, in order; empty ones (only comments, blank lines or
/// directives) are dropped.
pub fn split(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut open = Open {
        line: 1,
        ..Open::default()
    };
    // The piece recorded last, for what follows its `...` at the end of the stream.
    let mut last = Open::default();
    let bytes = text.as_bytes();
    // Without a `\r` every line starts after a `\n`, and inside a document that has content
    // only a line starting `---` or `...` changes anything: the splitter jumps from one such
    // line to the next (the lines between are only counted), which is most of a chart's output.
    let jump = memchr::memchr(b'\r', bytes).is_none();
    let mut markers = [Next::new(b"\n---"), Next::new(b"\n...")];
    let mut offset = 0;
    let mut line_no = 1u32;
    while offset < text.len() {
        if jump && open.content {
            // `offset - 1` is the `\n` that ends the previous line.
            let next = markers
                .iter_mut()
                .filter_map(|m| m.find(bytes, offset - 1))
                .min()
                .map_or(text.len(), |at| at + 1);
            line_no += memchr::memchr_iter(b'\n', &bytes[offset..next]).count() as u32;
            offset = next;
            if offset == text.len() {
                break;
            }
        }
        let end = super::lines::line_end(bytes, offset);
        let line = &text[offset..end];
        if line.starts_with("---") && marker(line, "---") {
            if open.content || open.marked {
                close(text, &open, offset, &mut out, &mut last);
                open = Open {
                    start: offset,
                    line: line_no,
                    ..Open::default()
                };
            }
            open.marked = true;
            open.content = marker_content(line);
        } else if line.starts_with("...") && marker(line, "...") {
            close(text, &open, end, &mut out, &mut last);
            open = Open {
                start: end,
                line: line_no + 1,
                ended: true,
                ..Open::default()
            };
        } else if line.starts_with('%') && !open.content && !open.marked {
            // Only before its `---` is a `%` line a directive; past it, it is content.
            open.directive = true;
        } else if is_content(line) {
            open.content = true;
        }
        offset = end;
        line_no += 1;
    }
    if open.content {
        close(text, &open, text.len(), &mut out, &mut last);
    } else if open.ended && open.start < text.len() {
        // Blank lines and comments after the last `...` stay with the last document.
        if let Some(piece) = out.last_mut() {
            piece.end = text.len();
            piece.text = output_text(
                text,
                piece.start,
                piece.end,
                !last.marked,
                last.directive || open.directive,
            );
        }
    }
    out
}

/// Where a stream of which `text` is the start can be cut, whatever follows: an offset `p` such
/// that the pieces of the whole stream are those of `text[..p]` followed by those of the rest
/// (their offsets and lines moved by `p` and the lines before it). What lets a release's output
/// be split while Helm is still printing it, holding one document at a time rather than all.
///
/// `p` starts the last `---` line (of the complete lines) such that the piece it ends holds
/// content, so it is closed there and not joined to what follows (comments before a `---` go
/// with the next piece when the current one has none), and a piece after it holds content, so
/// nothing later can reach back (comments after a last `...` join the last piece). A text with a
/// `\r` is not cut: its lines may end in ways a cut would have to know more about.
pub fn cut(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    if memchr::memchr(b'\r', bytes).is_some() {
        return None;
    }
    let complete = memchr::memrchr(b'\n', bytes)? + 1;
    // The complete lines' starts, from the last one back (each after a `\n`): backwards by
    // `memrchr`, as a reverse substring search is slow over the megabyte held.
    let starts = memchr::memrchr_iter(b'\n', &bytes[..complete - 1]).map(|i| i + 1);
    starts
        .filter(|&at| marker(&text[at..super::lines::line_end(bytes, at)], "---"))
        .find(|&at| starts_content(text, at, complete) && ends_content(text, at))
}

/// Whether a piece from the `---` line at `at` on holds content in `text[at..end]`: then the
/// last piece before `at` is never the stream's last (only that one takes what follows a last
/// `...`). Any content line counts but a `%` line, which is content only in the piece its own
/// `---` starts and is passed over here.
fn starts_content(text: &str, at: usize, end: usize) -> bool {
    super::lines::lines_inclusive(&text[at..end]).any(|line| {
        if marker(line, "---") {
            marker_content(line)
        } else {
            !marker(line, "...") && is_content(line) && !line.starts_with('%')
        }
    })
}

/// Whether the piece that the line at `at` ends holds content: the lines before it, back to the
/// marker (or the stream's start) the piece began at. A `%` line holds content only after a
/// `---` (before it, it is a directive), so one counts only once that marker is found.
fn ends_content(text: &str, at: usize) -> bool {
    let bytes = text.as_bytes();
    let mut percent = false;
    let mut end = at;
    while end > 0 {
        let start = memchr::memrchr(b'\n', &bytes[..end - 1]).map_or(0, |i| i + 1);
        let line = &text[start..end];
        if marker(line, "---") {
            return percent || marker_content(line);
        }
        if marker(line, "...") {
            return false;
        }
        if line.starts_with('%') {
            percent = true;
        } else if is_content(line) {
            return true;
        }
        end = start;
    }
    false
}

/// The next occurrence of a pattern, found once and kept until the search passes it.
struct Next {
    finder: memchr::memmem::Finder<'static>,
    /// The last answer and where its search started.
    found: Option<(usize, Option<usize>)>,
}

impl Next {
    fn new(pattern: &'static [u8]) -> Next {
        Next {
            finder: memchr::memmem::Finder::new(pattern),
            found: None,
        }
    }

    /// The first occurrence at or after `from`.
    fn find(&mut self, hay: &[u8], from: usize) -> Option<usize> {
        match self.found {
            Some((start, at)) if start <= from && at.is_none_or(|at| at >= from) => at,
            _ => {
                let at = self.finder.find(&hay[from..]).map(|i| from + i);
                self.found = Some((from, at));
                at
            }
        }
    }
}

/// Records the piece `open` up to `end`, when it holds content (and then keeps `open` as `last`).
fn close(text: &str, open: &Open, end: usize, out: &mut Vec<Piece>, last: &mut Open) {
    if open.content {
        *last = *open;
        out.push(Piece {
            line: open.line,
            start: open.start,
            end,
            text: output_text(text, open.start, end, !open.marked, open.directive),
        });
    }
}

/// A piece's output text when it differs from its source `start..end`: with a `---` line in
/// front (`marker`), directive lines left out, a final newline added.
fn output_text(
    stream: &str,
    start: usize,
    end: usize,
    marker: bool,
    directive: bool,
) -> Option<String> {
    let source = &stream[start..end];
    if !marker && !directive && source.ends_with(['\n', '\r']) {
        return None;
    }
    let mut piece = String::with_capacity(source.len() + 5);
    if marker {
        piece.push_str("---\n");
    }
    // The directives are the `%` lines before the document begins (its `---` or its content).
    let mut begun = false;
    for line in super::lines::lines_inclusive(source) {
        begun |= is_content(line) && !line.starts_with('%');
        if begun || !line.starts_with('%') {
            piece.push_str(line);
        }
    }
    if !piece.ends_with(['\n', '\r']) {
        piece.push('\n');
    }
    Some(piece)
}

/// Problems of a document named after its template: in Helm's output, the `# Source:` comment
/// names the template a problem comes from.
pub fn with_template(chunk: &str, problems: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let source = chunk
        .lines()
        .find_map(|l| l.strip_prefix("# Source: "))
        .map(|template| format!("template {}", template.trim()));
    problems
        .into_iter()
        .map(|d| match (&source, &d.object) {
            (Some(template), None) => d.object(template.clone()),
            _ => d,
        })
        .collect()
}

/// Parses every document of `text`, keeping each one's text. Documents that are empty or only
/// null are skipped, as Helm and kubectl skip them.
pub fn parse_documents(
    text: &str,
    file: FileId,
    limits: &Limits,
    mode: Mode,
) -> (Vec<Document>, Vec<Diagnostic>) {
    let mut docs = Vec::new();
    let mut diags = Vec::new();
    for piece in split(text) {
        if let Some(refused) = limits.refuse(file, piece.line) {
            // One report per text: the first spent it, or it comes after the one that did.
            if diags.is_empty() {
                diags.push(refused);
            }
            break;
        }
        let chunk = &text[piece.start..piece.end];
        let parsed = parse_stream_from(chunk, file, piece.line, limits, mode);
        diags.extend(with_template(chunk, parsed.diagnostics));
        for node in parsed.docs {
            docs.push(Document {
                node,
                text: piece.text(text).to_string(),
            });
        }
    }
    (docs, diags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(text: &str) -> Vec<(u32, String)> {
        let (docs, diags) = parse_documents(text, FileId(0), &Limits::default(), Mode::Strict);
        assert!(diags.is_empty(), "{diags:?}");
        docs.into_iter()
            .map(|d| (d.node.prov.loc.line, d.text))
            .collect()
    }

    fn texts(text: &str) -> Vec<String> {
        split(text)
            .iter()
            .map(|p| p.text(text).to_string())
            .collect()
    }

    #[test]
    fn helm_output_joins_back_byte_for_byte() {
        let helm = "---\n# Source: c/templates/a.yaml\na: |+\n  line\n\n\n\n---\n# Source: c/b.yaml\n\
                    b: 1\n...\n\n---\n# Source: c/c.yaml\nc: 1\n  \n   \n\n---\n# Source: c/d.yaml\n\
                    {d: 1}\n";
        let pieces = texts(helm);
        assert_eq!(pieces.len(), 4);
        assert_eq!(pieces.concat(), helm);
        assert_eq!(
            pieces[0],
            "---\n# Source: c/templates/a.yaml\na: |+\n  line\n\n\n\n"
        );
        assert_eq!(pieces[1], "---\n# Source: c/b.yaml\nb: 1\n...\n");
        assert_eq!(pieces[2], "\n---\n# Source: c/c.yaml\nc: 1\n  \n   \n\n");
        // A stream ending `...` keeps its blank line.
        let tail = "---\nb: 1\n...\n\n";
        assert_eq!(texts(tail).concat(), tail);
    }

    #[test]
    fn documents_keep_their_text_and_lines() {
        let text = "a: 1\n---\n# Source: c/templates/x.yaml\nb: 2\n\n---\nc: |\n  text\n";
        assert_eq!(
            docs(text),
            [
                (1, "---\na: 1\n".to_string()),
                (4, "---\n# Source: c/templates/x.yaml\nb: 2\n\n".to_string()),
                (7, "---\nc: |\n  text\n".to_string()),
            ]
        );
    }

    #[test]
    fn empty_and_comment_only_documents_are_skipped() {
        let text = "---\n---\n# only a comment\n---\nnull\n---\nx: 1\n";
        assert_eq!(docs(text), [(7, "---\nx: 1\n".to_string())]);
        assert_eq!(texts("---\n\n---\n# c\n"), Vec::<String>::new());
    }

    #[test]
    fn indented_or_quoted_dashes_are_not_markers() {
        let text = "a: |\n  ---\n  b\nc: \"---\"\n----: d\n";
        assert_eq!(docs(text).len(), 1);
    }

    #[test]
    fn content_on_the_marker_line_gets_no_second_marker() {
        let text =
            "--- {apiVersion: v1, kind: ConfigMap}\n--- |\n  block\n--- # comment\nx: 1\n...\n";
        let (docs, diags) = parse_documents(text, FileId(0), &Limits::default(), Mode::Strict);
        assert!(diags.is_empty(), "{diags:?}");
        let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "--- {apiVersion: v1, kind: ConfigMap}\n",
                "--- |\n  block\n",
                "--- # comment\nx: 1\n...\n"
            ]
        );
        assert_eq!(docs[1].node.as_str(), Some("block\n"));
    }

    #[test]
    fn end_markers_directives_and_header_comments() {
        let text = "a: 1\n...\nb: 2\n...\n";
        assert_eq!(
            docs(text),
            [
                (1, "---\na: 1\n...\n".to_string()),
                (3, "---\nb: 2\n...\n".to_string())
            ]
        );
        let text = "%YAML 1.1\n---\nc: 3\n--- # second\nd: 4";
        assert_eq!(
            docs(text),
            [
                (3, "---\nc: 3\n".to_string()),
                (5, "--- # second\nd: 4\n".to_string())
            ]
        );
        let text = "# Header\n---\ne: 5\n";
        assert_eq!(docs(text), [(3, "# Header\n---\ne: 5\n".to_string())]);
    }

    /// The findings of the `yaml_split` fuzz target (inputs in fuzz/regressions/yaml_split): each
    /// document's text is its source as written and reads alone as it reads in the stream.
    fn exact(text: &str) -> Vec<String> {
        let (docs, diags) = parse_documents(text, FileId(0), &Limits::default(), Mode::Strict);
        assert!(diags.is_empty(), "{diags:?}");
        let whole = super::super::parse_stream(text, FileId(0), &Limits::default());
        assert!(whole.diagnostics.is_empty(), "{:?}", whole.diagnostics);
        let value = |n: &Node| n.to_json();
        assert_eq!(
            docs.iter().map(|d| value(&d.node)).collect::<Vec<_>>(),
            whole.docs.iter().map(value).collect::<Vec<_>>(),
            "{text:?}"
        );
        for d in &docs {
            let alone = super::super::parse_stream(&d.text, FileId(0), &Limits::default());
            assert!(alone.diagnostics.is_empty(), "{:?}", alone.diagnostics);
            assert_eq!(alone.docs.len(), 1, "{:?}", d.text);
            assert_eq!(value(&alone.docs[0]), value(&d.node), "{:?}", d.text);
        }
        docs.into_iter().map(|d| d.text).collect()
    }

    #[test]
    fn a_scalar_line_starting_with_percent_is_content_not_a_directive() {
        assert_eq!(exact("a\n%b\n"), ["---\na\n%b\n"]);
        let text = "%YAML 1.1\n--- |\n%b\n---\na\n%c\n...\n";
        assert_eq!(exact(text), ["--- |\n%b\n", "---\na\n%c\n...\n"]);
    }

    #[test]
    fn a_marker_after_a_marker_with_content_starts_a_document() {
        assert_eq!(exact("--- a\n--- b\n"), ["--- a\n", "--- b\n"]);
        assert_eq!(exact("--- --- d\n"), ["--- --- d\n"]);
        let text = "c>\n d\n-p- d\n--- --- d\n--- --- >\n";
        assert_eq!(exact(text).concat(), format!("---\n{text}"));
    }

    #[test]
    fn a_marker_line_with_content_is_printed_once() {
        assert_eq!(exact("\n--- >\ned\n...\n"), ["\n--- >\ned\n...\n"]);
    }

    #[test]
    fn whitespace_at_the_end_of_block_scalars_is_kept() {
        let text = "a: |\n  x \n---\nb: |+\n  y\n\n\n---\nc: |\n  z\n\n---\nd: |+\n \n";
        assert_eq!(exact(text).concat(), format!("---\n{text}"));
        assert_eq!(exact("e: |\n ex- "), ["---\ne: |\n ex- \n"]);
        assert_eq!(exact("keep: |+\n "), ["---\nkeep: |+\n \n"]);
    }

    #[test]
    fn a_form_feed_is_content() {
        assert_eq!(exact("a\n\x0c \n"), ["---\na\n\x0c \n"]);
        assert_eq!(exact("a\n\x0c\x0c6\x0c\n"), ["---\na\n\x0c\x0c6\x0c\n"]);
    }

    #[test]
    fn a_carriage_return_alone_breaks_lines() {
        assert_eq!(
            exact("a: 1\r---  # c\rb: 2\r\n---\rc: 3"),
            ["---\na: 1\r", "---  # c\rb: 2\r\n", "---\rc: 3\n"]
        );
        assert_eq!(split("\n---  # c\rf")[0].line, 1);
        assert_eq!(exact("\n---  # c\rf"), ["\n---  # c\rf\n"]);
    }

    #[test]
    fn an_indented_comment_stays_between_a_directive_and_its_marker() {
        let text = "%YAML 1.1\n  # c\n---\nf: 6\n";
        assert_eq!(exact(text), ["  # c\n---\nf: 6\n"]);
        assert_eq!(split(text)[0].line, 1);
    }

    /// Found by the `yaml_split` fuzz target: the text of a last document with a directive got a
    /// second `---` when comments after its `...` joined it.
    #[test]
    fn what_follows_the_last_end_marker_joins_the_last_document_as_written() {
        let text = "%YAML 1.1\n---\na: 1\n...\n--- # second\n";
        assert_eq!(exact(text), ["---\na: 1\n...\n--- # second\n"]);
        let text = "a: 1\n...\n# c\n";
        assert_eq!(exact(text), ["---\na: 1\n...\n# c\n"]);
    }

    #[test]
    fn errors_carry_the_line_in_the_whole_file() {
        let text = "a: 1\n---\nb: [\n";
        let (_, diags) = parse_documents(text, FileId(0), &Limits::default(), Mode::Strict);
        assert!(diags[0].loc.unwrap().line >= 3, "{diags:?}");
    }

    /// Pieces as offsets, lines and texts, to compare splits of the same stream.
    fn pieces(text: &str, offset: usize, lines: u32) -> Vec<(usize, usize, u32, String)> {
        split(text)
            .iter()
            .map(|p| {
                (
                    p.start + offset,
                    p.end + offset,
                    p.line + lines,
                    p.text(text).to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn a_cut_never_changes_the_pieces_whatever_follows() {
        const LINES: &[&str] = &[
            "---\n",
            "--- |\n",
            "--- # c\n",
            "--- a\n",
            "---x\n",
            "...\n",
            "... # c\n",
            "# c\n",
            "\n",
            "  \n",
            "a: 1\n",
            "  b: |\n",
            "%YAML 1.2\n",
            "%x\n",
            " ---\n",
            "-- \n",
            "----\n",
        ];
        let mut rng = crate::data::yaml::Rng(0x2545_F491_4F6C_DD1D);
        let mut cuts = 0;
        for _ in 0..3000 {
            let text: String = (0..rng.below(14))
                .map(|_| LINES[rng.below(LINES.len())])
                .collect();
            let whole = pieces(&text, 0, 0);
            for len in 0..=text.len() {
                let Some(p) = cut(&text[..len]) else {
                    continue;
                };
                cuts += 1;
                let lines = text[..p].matches('\n').count() as u32;
                let mut joined = pieces(&text[..p], 0, 0);
                joined.extend(pieces(&text[p..], p, lines));
                assert_eq!(joined, whole, "cut at {p} of {:?}", &text[..len]);
            }
        }
        assert!(cuts > 1000, "{cuts} cuts");
    }

    #[test]
    fn a_cut_waits_for_content_on_both_sides() {
        assert_eq!(cut("a: 1\n---\nb: 2\n"), Some(5));
        // Nothing yet after the last marker; the one before it ends a piece without content.
        assert_eq!(cut("a: 1\n---\n# c\n"), None);
        assert_eq!(cut("# c\n---\nb: 2\n"), None);
        assert_eq!(cut("a: 1\n...\n# c\n---\nb: 2\n"), None);
        // Not a whole line yet, or a carriage return somewhere.
        assert_eq!(cut("a: 1\n---"), None);
        assert_eq!(cut("a: 1\r\n---\nb: 2\n"), None);
        assert_eq!(cut("a: 1\n---\nb: 2\n---\n"), Some(5));
    }
}
