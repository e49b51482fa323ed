//! The project's files: strict shapes of nyl's file kinds, the typed objects decoded from them,
//! layout patterns, the globs of `spec.apps`, the reference page generated from the shapes, and
//! app files rendered as templates.

pub mod glob;
pub mod layouts;
pub mod objects;
pub mod reference;
pub mod schema;
pub mod template;
