//! The project's own files by name (`nyl.toml`, the secrets settings, a component's contract),
//! and which files nyl reads at all: regular files, not hidden, YAML by their extension.

use std::fs;
use std::path::Path;

use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::data::provenance::{FileId, Loc};

pub const CONFIG_FILE: &str = "nyl.toml";

/// Where Nyl also keeps nyl.toml, beside its configuration, at the root of a Git worktree: the
/// project root is then the worktree's (apps may live anywhere in it), and the paths nyl.toml
/// names are relative to `nyl/`, as in Nyl.
pub const NESTED_CONFIG_FILE: &str = "nyl/nyl.toml";

/// Whether `dir` holds a project's nyl.toml, at its root or in `nyl/`.
pub fn holds_config(dir: &Path) -> bool {
    dir.join(CONFIG_FILE).is_file() || dir.join(NESTED_CONFIG_FILE).is_file()
}

/// Where Nyl configures its secrets provider, beside nyl.toml.
pub const SECRETS_FILES: [&str; 4] = [
    "nyl-secrets.yaml",
    "nyl-secrets.yml",
    "nyl-secrets.json",
    "nyl-secrets.toml",
];

/// The project's own settings files: their problems concern every target.
pub fn is_settings_file(display_path: &str) -> bool {
    let name = display_path.strip_prefix("nyl/").unwrap_or(display_path);
    name == CONFIG_FILE || SECRETS_FILES.contains(&name)
}

pub const CONTRACT_FILE: &str = "nyl-component.yaml";

/// `not_regular_file` for what stands where a file was expected.
pub fn not_regular(meta: &fs::Metadata) -> Diagnostic {
    let what = if meta.file_type().is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    };
    Diagnostic::new(
        Code::NotRegularFile,
        format!("{what}: nyl reads only regular files, so nothing outside the repository is reached through a link"),
    )
}

/// A name starting with `.`: other tools' files (Argo CD's `.argocd-source.yaml`), which no
/// command reads from a directory.
pub fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}

pub fn is_yaml(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    )
}

/// A file that cannot be read: not UTF-8 is a problem of the input, anything else of the machine.
pub(super) fn read_error(e: &std::io::Error, file: FileId) -> Diagnostic {
    let d = if e.kind() == std::io::ErrorKind::InvalidData {
        Diagnostic::new(Code::YamlSyntax, "the file is not valid UTF-8")
    } else {
        Diagnostic::new(Code::IoError, format!("cannot read: {e}"))
    };
    d.at(Loc::new(file, 0))
}
