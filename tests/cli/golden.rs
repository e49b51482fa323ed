//! Golden outputs: a mismatch shows a unified diff of expected against actual, and blessing
//! rewrites only the goldens it names.
//!
//! `NYL_BLESS` holds comma-separated golden names or glob patterns over them:
//! `NYL_BLESS=tree_glob_braces,validate_text` or `NYL_BLESS='tree_*'`. A bare `NYL_BLESS=1` (or
//! `*`) is refused: blessing everything at once lets odd texts in unread.

use std::fs;

use crate::root;

/// Whether `NYL_BLESS` names the golden `name`.
pub fn blessed(name: &str) -> bool {
    let Some(list) = std::env::var_os("NYL_BLESS") else {
        return false;
    };
    let list = list.to_string_lossy();
    let patterns: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    assert!(
        !patterns.iter().any(|p| ["1", "*", "**"].contains(p)),
        "NYL_BLESS={list} would bless every golden at once: name the goldens to rewrite, \
         NYL_BLESS=case_a,case_b or a pattern NYL_BLESS='tree_*', and read each changed file"
    );
    patterns.iter().any(|p| {
        globset::Glob::new(p)
            .unwrap_or_else(|e| panic!("NYL_BLESS: {e}"))
            .compile_matcher()
            .is_match(name)
    })
}

/// Fails with a unified diff when `actual` is not `expected`.
pub fn assert_same(name: &str, expected: &str, actual: &str) {
    if expected != actual {
        let diff = similar::TextDiff::from_lines(expected, actual)
            .unified_diff()
            .context_radius(3)
            .header("expected", "actual")
            .to_string();
        panic!(
            "golden {name} differs; after reading the diff, accept it with \
             NYL_BLESS={name} cargo test --test cli {name}\n{diff}"
        );
    }
}

#[test]
fn reference_page_is_current() {
    let name = "reference_page_is_current";
    let path = root().join("docs/reference.md");
    let expected = nyl_core::project::reference::markdown();
    if blessed(name) {
        fs::write(&path, &expected).expect("write docs/reference.md");
    }
    let actual = fs::read_to_string(&path).unwrap_or_default();
    assert_same(name, &actual, &expected);
}
