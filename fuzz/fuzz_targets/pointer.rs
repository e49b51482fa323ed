//! RFC 6901 pointers: parsing never panics, and parse and format are inverse both ways
//! (escaping is canonical, so a valid pointer formats back to its exact text).
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use nyl_render::pointer::{join, Pointer};
use nyl_render::value::Node;
use nyl_render::yaml::parse_stream;
use nyl_render_fuzz::{limits, text, FILE};

/// A tree with sequences, escaped keys and an empty key to resolve pointers in.
static TREE: LazyLock<Node> = LazyLock::new(|| {
    let yaml = "a:\n  - b: 1\n  - [x, y]\n\"~/\":\n  \"\": 2\n\"0\": {\"10\": 3}\n";
    parse_stream(yaml, FILE, &limits()).docs.remove(0)
});

fuzz_target!(|data: &[u8]| {
    let Some(text) = text(data) else { return };
    if let Ok(pointer) = Pointer::parse(text) {
        assert_eq!(join(pointer.tokens()), text);
        assert!(pointer.contains(&pointer));
        pointer.get(&TREE);
    }
    // The NUL-separated parts as decoded tokens (a few: the escaping is under test, not the count).
    let tokens: Vec<String> = text.split('\0').take(32).map(str::to_string).collect();
    let joined = join(&tokens);
    let pointer = Pointer::parse(&joined).expect("a joined pointer parses");
    assert_eq!(pointer.tokens(), tokens, "{joined:?}");
});
