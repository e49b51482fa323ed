//! The project's files: strict shapes of nyl's file kinds, the typed objects decoded from them,
//! layout patterns, the globs of `spec.apps`, and the reference page generated from the shapes.

pub mod glob;
pub mod layouts;
pub mod objects;
pub mod reference;
pub mod schema;
