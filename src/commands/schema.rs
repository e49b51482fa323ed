//! `nyl schema KIND`: the JSON Schema of a file kind, for editors.

use std::process::ExitCode;

use nyl_core::project::{reference, schema};

use super::print::write_stdout;

pub(super) fn print_schema(name: &str) -> ExitCode {
    let Some(kind) = schema::FILE_KINDS.iter().find(|k| k.name == name) else {
        return ExitCode::from(2);
    };
    let mut text = serde_json::to_string_pretty(&reference::json_schema(kind)).unwrap_or_default();
    text.push('\n');
    write_stdout(&text)
}
