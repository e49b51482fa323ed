//! Helm -> expansion: rendering the entries level by level, in parallel, feeding chart output
//! back through the app pipeline until only plain manifests are left.

pub mod render;
