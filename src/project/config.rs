//! `nyl.toml`: read within the operator's ceilings, decoded from TOML into the same value tree
//! (with lines) as every YAML kind, and checked beyond its shape (search paths inside the
//! project, layouts, aliases).

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use super::files::{not_regular, read_error, CONFIG_FILE};
use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::data::provenance::{Catalog, FileId, Loc, Prov};
use nyl_core::data::value::{Node, Value};
use nyl_core::project::layouts;
use nyl_core::project::objects::{self, Config, RemoteChart};

/// `nyl.toml`, its limits held to the operator's ceilings (`NYL_MAX_*`), with the warnings of
/// limits it tried to raise.
pub(super) fn load_config(
    root: &Path,
    config_dir: &Path,
    catalog: &mut Catalog,
) -> Result<(Config, Vec<Diagnostic>), Vec<Diagnostic>> {
    let ceilings =
        objects::Limits::ceilings(&|name| std::env::var(name).ok().filter(|v| !v.is_empty()))?;
    let path = config_dir.join(CONFIG_FILE);
    let display = path
        .strip_prefix(root)
        .unwrap_or(&path)
        .display()
        .to_string();
    let file = catalog.add_file(display);
    // A link is not followed (it could name any file of the machine), and the size is checked
    // before reading, against the operator's ceiling since the file's own limits are not read yet.
    let meta = fs::symlink_metadata(&path).map_err(|e| vec![read_error(&e, file)])?;
    if !meta.file_type().is_file() {
        return Err(vec![not_regular(&meta).at(Loc::new(file, 0))]);
    }
    if meta.len() > ceilings.max_file_bytes {
        return Err(vec![Diagnostic::new(
            Code::FileTooLarge,
            format!(
                "the file has {} bytes, more than {}",
                meta.len(),
                objects::Limits::describe("max_file_bytes", ceilings.max_file_bytes)
            ),
        )
        .at(Loc::new(file, 0))]);
    }
    let text = fs::read_to_string(&path).map_err(|e| vec![read_error(&e, file)])?;
    parse_config(&text, file, &ceilings)
}

/// Decodes and checks the text of `nyl.toml` (`file` is its id) under the operator's `ceilings`:
/// everything of loading it but the reading, so it can be fuzzed without a project on disk.
pub fn parse_config(
    text: &str,
    file: FileId,
    ceilings: &objects::Limits,
) -> Result<(Config, Vec<Diagnostic>), Vec<Diagnostic>> {
    let (config, warnings) =
        objects::config(&toml_to_node(text, file).map_err(|d| vec![d])?, ceilings)?;
    let mut problems = alias_problems(&config);
    problems.extend(search_path_problems(&config));
    problems.extend(layout_problems(&config));
    if problems.is_empty() {
        Ok((config, warnings))
    } else {
        Err(problems)
    }
}

/// Search paths must stay inside the project: relative, and no `..`.
fn search_path_problems(config: &Config) -> Vec<Diagnostic> {
    let paths = config
        .components_search_paths
        .iter()
        .chain(&config.targets_search_paths)
        .chain(&config.helm_chart_search_paths);
    paths
        .filter(|p| Path::new(p).is_absolute() || p.split(['/', '\\']).any(|s| s == ".."))
        .map(|p| {
            Diagnostic::new(
                Code::PathOutsideProject,
                format!("search path {p:?} must be relative to the project root, without '..'"),
            )
            .object(CONFIG_FILE)
        })
        .collect()
}

/// Layouts whose templates use placeholders their app pattern does not bind, or that share a name.
fn layout_problems(config: &Config) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut names = HashMap::new();
    for (layout, loc) in &config.layouts {
        if let Some(first) = names.insert(layout.name.as_str(), *loc) {
            out.push(
                Diagnostic::new(
                    Code::LayoutOverlap,
                    format!("two layouts are named {:?}", layout.name),
                )
                .at(*loc)
                .related(first)
                .object(CONFIG_FILE),
            );
        }
        let bound = layouts::placeholders(&layout.app);
        let templates = [
            Some(&layout.id),
            Some(&layout.chart),
            layout.target.as_ref(),
            layout.namespace.as_ref(),
            layout.release.as_ref(),
        ]
        .into_iter()
        .flatten()
        .chain(&layout.values);
        for template in templates {
            for name in layouts::placeholders(template)
                .into_iter()
                .filter(|n| !bound.contains(n))
            {
                out.push(
                    Diagnostic::new(
                        Code::UnresolvedPlaceholder,
                        format!(
                            "layout {:?}: {template:?} uses {{{name}}}, which its app pattern {:?} does not bind",
                            layout.name, layout.app
                        ),
                    )
                    .at(*loc)
                    .object(CONFIG_FILE),
                );
            }
        }
    }
    out
}

fn alias_problems(config: &Config) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (alias, (to, loc)) in &config.aliases {
        let result = if RemoteChart::is_shortcut(to) {
            RemoteChart::parse_checked(to, Code::InvalidField).map(drop)
        } else {
            objects::check_component_path(to)
                .map_err(|why| Diagnostic::new(Code::InvalidField, why))
        };
        if let Err(d) = result {
            out.push(
                Diagnostic::new(d.code, format!("alias {alias:?}: {}", d.message))
                    .at(*loc)
                    .object(CONFIG_FILE),
            );
        }
    }
    out
}

/// Turns TOML into the value tree, with line numbers, so `nyl.toml` is checked by the same strict
/// shapes as every YAML kind.
pub(super) fn toml_to_node(text: &str, file: FileId) -> Result<Node, Diagnostic> {
    use toml::de::{DeTable, DeValue};
    // Where each line starts, found once: a line is then a binary search, not a count from the
    // start for every key.
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    // An error at the end of the text is on its last line, not the one after.
    let last = (starts.len() - usize::from(text.ends_with('\n'))).max(1);
    let line_of = |offset: usize| starts.partition_point(|&s| s <= offset).min(last) as u32;
    let table = DeTable::parse(text).map_err(|e| {
        let line = e.span().map_or(0, |s| line_of(s.start));
        Diagnostic::new(Code::YamlSyntax, format!("invalid TOML: {}", e.message()))
            .at(Loc::new(file, line))
    })?;
    fn convert(
        value: &DeValue<'_>,
        line: u32,
        file: FileId,
        line_of: &dyn Fn(usize) -> u32,
    ) -> Node {
        let prov = Prov::written(Loc::new(file, line));
        let value = match value {
            DeValue::String(s) => Value::String(s.to_string()),
            DeValue::Boolean(b) => Value::Bool(*b),
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).map_or_else(
                |_| Value::String(i.as_str().to_string()),
                |n| Value::Number(n.into()),
            ),
            DeValue::Float(f) => Value::String(f.as_str().to_string()),
            DeValue::Datetime(d) => Value::String(d.to_string()),
            DeValue::Array(items) => Value::Seq(
                items
                    .iter()
                    .map(|v| convert(v.get_ref(), line_of(v.span().start), file, line_of))
                    .collect(),
            ),
            DeValue::Table(table) => Value::Map(
                table
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.get_ref().to_string(),
                            convert(v.get_ref(), line_of(k.span().start), file, line_of),
                        )
                    })
                    .collect(),
            ),
        };
        Node::new(value, prov)
    }
    Ok(convert(
        &DeValue::Table(table.into_inner()),
        1,
        file,
        &line_of,
    ))
}
