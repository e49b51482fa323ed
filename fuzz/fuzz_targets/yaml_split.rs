//! The splitter, printed and read again. For a stream that reads without a problem:
//! - the split is exact: when the whole stream reads at once, the documents are its documents;
//! - each document's text (what `render` prints for a plain manifest) reads back as the document;
//! - the writer's YAML of each document reads back as the document;
//! - the stream `render` prints (`---` and each text) splits into the same documents and texts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nyl_render::yaml::{parse_documents, parse_stream, to_yaml, Document, Mode};
use nyl_render_fuzz::{assert_lines_in, limits, reread, text, FILE};

fn split(text: &str) -> Option<Vec<Document>> {
    let (docs, diags) = parse_documents(text, FILE, &limits(), Mode::Strict);
    assert_lines_in(text, &diags);
    diags.is_empty().then_some(docs)
}

fn values(docs: &[Document]) -> Vec<serde_json::Value> {
    docs.iter().map(|d| d.node.to_json()).collect()
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = text(data) else { return };
    let docs = split(text);

    // The other way round is allowed: saphyr refuses some streams whose documents it reads alone
    // (a `---` after a block scalar of blank lines is "wrongly indented"), and YAML reads them.
    let whole = parse_stream(text, FILE, &limits());
    if whole.diagnostics.is_empty() {
        let docs = docs
            .as_ref()
            .expect("the stream reads, but not its documents alone");
        let whole_values: Vec<_> = whole.docs.iter().map(|n| n.to_json()).collect();
        assert_eq!(values(docs), whole_values, "split and whole stream differ");
    }
    let Some(docs) = docs else { return };

    for doc in &docs {
        let value = doc.node.to_json();
        assert_eq!(reread(&doc.text), value, "the text {:?}", doc.text);
        let written = to_yaml(&doc.node, &|_| None);
        assert_eq!(reread(&written), value, "the written {written:?}");
    }

    let printed: String = docs.iter().map(|d| format!("---\n{}", d.text)).collect();
    let again = split(&printed).expect("the printed stream reads back");
    assert_eq!(values(&again), values(&docs), "printed {printed:?}");
    // A text keeps a `---` line only when what follows the marker is a marker again (`--- ---`);
    // printed, that is an empty document more, and the text comes back without what preceded it.
    let marker = |t: &str| {
        t.lines().any(|l| {
            l.starts_with("---") && !l[3..].starts_with(|c: char| !c.is_ascii_whitespace())
        })
    };
    if !docs.iter().any(|d| marker(&d.text)) {
        let texts = |docs: &[Document]| docs.iter().map(|d| d.text.clone()).collect::<Vec<_>>();
        assert_eq!(texts(&again), texts(&docs), "printed {printed:?}");
    }
});
