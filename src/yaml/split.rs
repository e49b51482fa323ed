//! Splitting a YAML stream into its documents as text, so plain manifests can be passed on
//! exactly as they were written (or as Helm printed them).
//!
//! A line that starts with `---` or `...` at column 0 is a document marker wherever it stands:
//! the YAML spec forbids such lines inside any scalar, so splitting on them is exact.

use crate::diagnostics::Diagnostic;
use crate::provenance::FileId;
use crate::value::Node;

use super::read::{parse_stream_from, Limits, Mode};

/// One document of a stream: its value and its text.
#[derive(Clone, Debug)]
pub struct Document {
    pub node: Node,
    /// The document's text without its leading `---` line, ending in one newline.
    pub text: String,
}

fn is_marker(line: &str) -> bool {
    ["---", "..."].iter().any(|m| {
        line.strip_prefix(m)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']))
    })
}

/// The chunks of `text`, one document each, with the line each starts on. A `---` starts a new
/// chunk unless nothing but directives and comments came before it in the current one (they
/// belong to the document it starts); a `...` ends the current chunk.
fn chunks(text: &str) -> Vec<(u32, &str)> {
    let mut out = Vec::new();
    let (mut start, mut start_line, mut offset, mut content) = (0, 1u32, 0, false);
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches(['\n', '\r']);
        let end = offset + line.len();
        if line.starts_with("---") && is_marker(bare) && content {
            out.push((start_line, &text[start..offset]));
            (start, start_line) = (offset, i as u32 + 1);
            content = false;
        }
        if line.starts_with("...") && is_marker(bare) {
            out.push((start_line, &text[start..end]));
            (start, start_line, content) = (end, i as u32 + 2, false);
        } else if !(bare.trim().is_empty()
            || bare.starts_with('#')
            || bare.starts_with('%')
            || (line.starts_with("---") && is_marker(bare)))
        {
            content = true;
        }
        offset = end;
    }
    if start < text.len() {
        out.push((start_line, &text[start..]));
    }
    out
}

/// A chunk's text as output shows it: without directives, a bare `---` line (with at most a
/// comment) or a `...` line.
fn body(chunk: &str) -> String {
    let mut lines: Vec<&str> = chunk.lines().collect();
    while lines
        .last()
        .is_some_and(|l| l.trim().is_empty() || (l.starts_with("...") && is_marker(l)))
    {
        lines.pop();
    }
    let bare_marker = |l: &str| {
        l.starts_with("---") && is_marker(l) && {
            let rest = l[3..].trim();
            rest.is_empty() || rest.starts_with('#')
        }
    };
    let kept: Vec<&str> = lines
        .into_iter()
        .filter(|l| !l.starts_with('%') && !bare_marker(l))
        .collect();
    let mut text = kept.join("\n").trim_end().to_string();
    text.push('\n');
    text
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
    for (line, chunk) in chunks(text) {
        if let Some(refused) = limits.refuse(file, line) {
            // One report per text: the first spent it, or it comes after the one that did.
            if diags.is_empty() {
                diags.push(refused);
            }
            break;
        }
        let parsed = parse_stream_from(chunk, file, line, limits, mode);
        // In Helm's output, the `# Source:` comment names the template a problem comes from.
        let source = chunk
            .lines()
            .find_map(|l| l.strip_prefix("# Source: "))
            .map(|template| format!("template {}", template.trim()));
        diags.extend(
            parsed
                .diagnostics
                .into_iter()
                .map(|d| match (&source, &d.object) {
                    (Some(template), None) => d.object(template.clone()),
                    _ => d,
                }),
        );
        let text = body(chunk);
        for node in parsed.docs {
            docs.push(Document {
                node,
                text: text.clone(),
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

    #[test]
    fn documents_keep_their_text_and_lines() {
        let text = "a: 1\n---\n# Source: c/templates/x.yaml\nb: 2\n\n---\nc: |\n  text\n";
        assert_eq!(
            docs(text),
            [
                (1, "a: 1\n".to_string()),
                (4, "# Source: c/templates/x.yaml\nb: 2\n".to_string()),
                (7, "c: |\n  text\n".to_string()),
            ]
        );
    }

    #[test]
    fn empty_and_comment_only_documents_are_skipped() {
        let text = "---\n---\n# only a comment\n---\nnull\n---\nx: 1\n";
        assert_eq!(docs(text), [(7, "x: 1\n".to_string())]);
    }

    #[test]
    fn indented_or_quoted_dashes_are_not_markers() {
        let text = "a: |\n  ---\n  b\nc: \"---\"\n----: d\n";
        assert_eq!(docs(text).len(), 1);
    }

    #[test]
    fn a_marker_with_content_still_parses() {
        let text = "--- |\n  block\n--- # comment\nx: 1\n...\n";
        let (docs, diags) = parse_documents(text, FileId(0), &Limits::default(), Mode::Strict);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].node.as_str(), Some("block\n"));
    }

    #[test]
    fn end_markers_directives_and_marker_comments() {
        let text = "a: 1\n...\nb: 2\n...\n";
        assert_eq!(
            docs(text),
            [(1, "a: 1\n".to_string()), (3, "b: 2\n".to_string())]
        );
        let text = "%YAML 1.1\n---\nc: 3\n--- # second\nd: 4\n";
        assert_eq!(
            docs(text),
            [(3, "c: 3\n".to_string()), (5, "d: 4\n".to_string())]
        );
        let text = "# Source: x\n---\ne: 5\n";
        assert_eq!(docs(text), [(3, "# Source: x\ne: 5\n".to_string())]);
    }

    #[test]
    fn errors_carry_the_line_in_the_whole_file() {
        let text = "a: 1\n---\nb: [\n";
        let (_, diags) = parse_documents(text, FileId(0), &Limits::default(), Mode::Strict);
        assert!(diags[0].loc.unwrap().line >= 3, "{diags:?}");
    }
}
