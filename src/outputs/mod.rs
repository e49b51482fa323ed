//! What a run produces besides stdout: a plain-manifest tree (`render-tree`), the comparison of
//! two revisions (`diff`), and the report of a whole-repository check (`validate`).

pub mod diff;
pub mod tree;
pub mod validate;
