//! What Helm rendered, taken apart: documents passed on as text, scanned, and the namespace rule.

pub mod manifest;

use manifest::Manifest;

use crate::values::release::Release;

/// One entry of an app, in input order.
#[derive(Clone, Debug)]
pub enum Entry {
    Release(Box<Release>),
    /// A plain Kubernetes manifest, passed on as written.
    Manifest(Box<Manifest>),
}
