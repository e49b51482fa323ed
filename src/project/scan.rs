//! The repository's files below a directory, as `validate`, `render-tree` and `diff` see them:
//! every path `spec.apps` globs match against, the YAML files to check, the chart directories.

use std::path::{Path, PathBuf};

use crate::project::{self, Project};

/// The files and directories below a directory.
pub(crate) struct Tree {
    /// Every file and directory, relative to the project root with `/`, charts and hidden
    /// directories left out: what `spec.apps` globs match against.
    pub(crate) paths: Vec<String>,
    /// YAML files outside charts and the targets search paths (which the project loads itself).
    pub(crate) yaml_files: Vec<PathBuf>,
    /// Directories holding `Chart.yaml`.
    pub(crate) charts: Vec<PathBuf>,
}

impl Tree {
    pub(crate) fn scan(project: &Project, dir: &Path) -> Tree {
        let root = &project.root;
        let target_dirs: Vec<PathBuf> = project
            .config
            .targets_search_paths
            .iter()
            .map(|p| project.config_dir.join(p))
            .collect();
        let mut tree = Tree {
            paths: Vec::new(),
            yaml_files: Vec::new(),
            charts: Vec::new(),
        };
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let mut walk = walkdir::WalkDir::new(&dir).sort_by_file_name().into_iter();
        while let Some(entry) = walk.next() {
            let Ok(entry) = entry else { continue };
            let path = entry.path();
            if entry.depth() > 0 && project::is_hidden(path) {
                if entry.file_type().is_dir() {
                    walk.skip_current_dir();
                }
                continue;
            }
            if entry.file_type().is_dir() {
                if path.join("Chart.yaml").is_file() {
                    tree.charts.push(path.to_path_buf());
                    walk.skip_current_dir();
                    continue;
                }
            } else if entry.file_type().is_symlink() {
                if project::is_yaml(path) || path.is_dir() {
                    // read_documents refuses it with not_regular_file.
                    tree.yaml_files.push(path.to_path_buf());
                }
                continue;
            } else if project::is_yaml(path) && !target_dirs.iter().any(|t| path.starts_with(t)) {
                tree.yaml_files.push(path.to_path_buf());
            }
            if let Ok(rel) = path.strip_prefix(root) {
                let rel = rel.to_string_lossy().replace('\\', "/");
                if !rel.is_empty() {
                    tree.paths.push(rel);
                }
            }
        }
        tree
    }

    /// What the `paths` of a scan of the whole project list for `path` (canonical, inside the
    /// project), found without the walk: `None` when the scan would not list it (the root itself,
    /// or a hidden entry, a link or a chart on the way).
    pub(crate) fn listed(project: &Project, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&project.root).ok()?;
        let mut at = project.root.clone();
        if rel.as_os_str().is_empty() || at.join("Chart.yaml").is_file() {
            return None;
        }
        for part in rel.components() {
            at.push(part);
            let meta = std::fs::symlink_metadata(&at).ok()?;
            if project::is_hidden(&at)
                || meta.file_type().is_symlink()
                || (meta.is_dir() && at.join("Chart.yaml").is_file())
            {
                return None;
            }
        }
        Some(rel.to_string_lossy().replace('\\', "/"))
    }
}
