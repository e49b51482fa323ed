//! What `nyl values` and `nyl explain` print.

pub mod report;
