//! The YAML reader on any text: it never panics, keeps within its limits, and every line it
//! reports (on a diagnostic or a node) is a line of the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nyl_render::yaml::{parse_stream, resolve_plain};
use nyl_render_fuzz::{assert_lines_in, assert_node_lines_in, limits, text, FILE};

fuzz_target!(|data: &[u8]| {
    let Some(text) = text(data) else { return };
    let parsed = parse_stream(text, FILE, &limits());
    assert_lines_in(text, &parsed.diagnostics);
    for doc in &parsed.docs {
        assert_node_lines_in(text, doc);
    }
    resolve_plain(text);
});
