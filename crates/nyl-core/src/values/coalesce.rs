//! Helm's coalescing of user values over a chart's defaults, computed by nyl where it must know
//! the values a chart ends up with before Helm runs (explain, schema checks). Helm stays the
//! authority: a differential test (tests/cli/coalesce.rs) compares this with the `.Values` Helm
//! 4.3.1 renders. The rules are Helm 4.3's (they changed in 4.2 and may change again); nyl warns
//! with `helm_rules_differ` when another Helm minor version renders.
//!
//! `helm template` does three things with a chart, and so does [`coalesce`]:
//! 1. Dependencies (`Chart.yaml`): each one names a vendored subchart, renamed to its `alias`;
//!    subcharts no dependency names stay as they are. With the user values coalesced over the
//!    chart, `tags` and then `condition` (the first of its comma-separated paths that holds a
//!    boolean) switch dependencies off; a disabled subchart contributes nothing. Subcharts are
//!    decided the same way, one level down.
//! 2. Imports, deepest chart first: every chart with dependencies gets as its defaults its own
//!    values merged with its subcharts' (nulls kept), and below them the `import-values` of its
//!    dependencies (`exports.NAME` at the top, or `child` at `parent`; the chart's own values win).
//! 3. Coalescing, by the table below, of the user values over the chart's defaults, then of each
//!    subchart's key over the subchart's defaults, after the parent's `global` has been merged
//!    over the subchart's (the parent wins); every enabled subchart gets a `global` mapping.
//!
//! | user \ default   | mapping                | other         | null    | absent |
//! |------------------|------------------------|---------------|---------|--------|
//! | mapping          | merged (below)         | user          | user    | user   |
//! | null, top level  | deleted                | deleted       | deleted | null   |
//! | other            | user                   | user          | user    | user   |
//! | absent           | default, nulls dropped | default       | -       | -      |
//!
//! Inside a merged mapping a user null deletes the key only where the default is not null, so a
//! null the chart also has stays; chart defaults lose their nulls before the merge. A subchart's
//! key is merged keeping the nulls on both sides (the subchart's own coalescing deletes them one
//! level down).

use crate::data::diagnostics::{Code, Diagnostic};
use crate::data::provenance::Prov;
use crate::data::value::{Map, Node, Value};

/// The Helm minor version whose rules this module follows.
pub const HELM_RULES: (u64, u64) = (4, 3);

/// `helm_rules_differ` when `version` (as `helm version` prints it) is another minor version.
pub fn rules_warning(version: &str) -> Option<Diagnostic> {
    let (major, minor) = HELM_RULES;
    (parse_version(version) != Some(HELM_RULES)).then(|| {
        Diagnostic::new(
            Code::HelmRulesDiffer,
            format!(
                "helm is {version}, but nyl coalesces values for explain and the schema check by Helm {major}.{minor}'s rules; where they differ, Helm's render is the authority"
            ),
        )
    })
}

/// A chart's defaults, its vendored subcharts and its dependencies.
#[derive(Clone, Debug, Default)]
pub struct ChartValues {
    /// The chart's name (`Chart.yaml`), or the alias it is used under.
    pub name: String,
    /// The chart's `values.yaml`, every document merged.
    pub defaults: Option<Node>,
    /// The subcharts vendored as directories under `charts/`.
    pub subcharts: Vec<ChartValues>,
    /// `dependencies` of `Chart.yaml`; `None` without the field.
    pub dependencies: Option<Vec<Dependency>>,
}

/// One entry of `dependencies` in `Chart.yaml`.
#[derive(Clone, Debug, Default)]
pub struct Dependency {
    pub name: String,
    pub alias: Option<String>,
    /// Comma-separated paths into the values.
    pub condition: Option<String>,
    pub tags: Vec<String>,
    pub import_values: Vec<Import>,
}

/// One entry of a dependency's `import-values`.
#[derive(Clone, Debug, PartialEq)]
pub enum Import {
    /// `NAME`: the subchart's `exports.NAME`, at the top of the parent's values.
    Exports(String),
    /// `{child, parent}`: dotted paths in the subchart's values and the parent's (`.` the top).
    Path { child: String, parent: String },
}

/// Whether nulls survive: Helm coalesces user values (nulls delete) but merges subchart tables
/// and imports (nulls kept).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Nulls {
    Delete,
    Keep,
}

/// The values the chart's templates see: `user` coalesced over the chart's defaults.
pub fn coalesce(user: Node, chart: &ChartValues) -> Node {
    let mut chart = chart.clone();
    let prov = user.prov;
    let Value::Map(user_map) = user.value else {
        return user;
    };
    // Mappings Helm creates (a subchart's key, `global`) are attributed to the user values.
    enable(&mut chart, &user_map, "", prov);
    import(&mut chart, prov);
    let mut values = user_map;
    coalesce_chart(&chart, &mut values, Nulls::Delete, prov);
    Node::new(Value::Map(values), prov)
}

/// Merges the documents of a values file as Helm 4.3 does: each over the ones before it, maps
/// merged, a null deleting what came before.
pub fn merge_documents(docs: Vec<Node>) -> Option<Node> {
    docs.into_iter()
        .reduce(|earlier, later| match (earlier.value, later.value) {
            (Value::Map(earlier), Value::Map(mut map)) => {
                coalesce_tables(&mut map, earlier, Nulls::Delete);
                Node::new(Value::Map(map), later.prov)
            }
            (_, value) => Node::new(value, later.prov),
        })
}

/// The subcharts the chart is rendered with: those no dependency names as they are, then one
/// per dependency (under its alias) that names a vendored subchart.
fn resolve(chart: &mut ChartValues) {
    let Some(deps) = &mut chart.dependencies else {
        return;
    };
    let named = |c: &ChartValues| deps.iter().any(|d| d.name == c.name);
    let mut subcharts: Vec<ChartValues> = chart
        .subcharts
        .iter()
        .filter(|c| !named(c))
        .cloned()
        .collect();
    for dep in deps.iter_mut() {
        if let Some(sub) = chart.subcharts.iter().find(|c| c.name == dep.name) {
            let mut sub = sub.clone();
            if let Some(alias) = &dep.alias {
                sub.name.clone_from(alias);
            }
            subcharts.push(sub);
        }
        if let Some(alias) = &dep.alias {
            dep.name = alias.clone();
        }
    }
    chart.subcharts = subcharts;
}

/// Step 1: drops the dependencies that `tags` or `condition` switch off, at every level. `values`
/// are the values the chart's parent saw, `path` the chart's place below the top (`a.b.`).
fn enable(chart: &mut ChartValues, values: &Map, path: &str, prov: Prov) {
    resolve(chart);
    if chart.dependencies.is_none() {
        return;
    }
    let mut seen = values.clone();
    coalesce_chart(chart, &mut seen, Nulls::Delete, prov);
    let deps = chart.dependencies.take().unwrap_or_default();
    let (deps, off): (Vec<Dependency>, Vec<Dependency>) =
        deps.into_iter().partition(|d| enabled(d, &seen, path));
    chart
        .subcharts
        .retain(|c| !off.iter().any(|d| d.name == c.name));
    for sub in &mut chart.subcharts {
        let sub_path = format!("{path}{}.", sub.name);
        enable(sub, &seen, &sub_path, prov);
    }
    chart.dependencies = (!deps.is_empty()).then_some(deps);
}

/// Whether a dependency is on: tags first (off when one is false and none true), then the first
/// condition path that holds a boolean.
fn enabled(dep: &Dependency, values: &Map, path: &str) -> bool {
    let tags = values.get("tags").and_then(Node::as_map);
    let flags: Vec<bool> = dep
        .tags
        .iter()
        .filter_map(|t| tags.and_then(|tags| tags.get(t)).and_then(Node::as_bool))
        .collect();
    let by_tags = flags.contains(&true) || !flags.contains(&false);
    let by_condition = dep.condition.as_deref().and_then(|conditions| {
        conditions
            .trim()
            .split(',')
            .filter(|c| !c.is_empty())
            .find_map(|c| lookup(values, &format!("{path}{c}")).and_then(Node::as_bool))
    });
    by_condition.unwrap_or(by_tags)
}

/// The node at a dotted path.
fn lookup<'a>(values: &'a Map, path: &str) -> Option<&'a Node> {
    let mut keys = path.split('.');
    let mut node = values.get(keys.next()?)?;
    for key in keys {
        node = node.as_map()?.get(key)?;
    }
    Some(node)
}

/// Step 2, deepest chart first: a chart with dependencies takes its merged values and imports
/// as its defaults.
fn import(chart: &mut ChartValues, prov: Prov) {
    for sub in &mut chart.subcharts {
        import(sub, prov);
    }
    let Some(deps) = &chart.dependencies else {
        return;
    };
    let mut merged = Map::new();
    coalesce_chart(chart, &mut merged, Nulls::Keep, prov);
    let mut imported = Map::new();
    for dep in deps {
        for import in &dep.import_values {
            let (child, parent) = match import {
                Import::Exports(name) => (format!("exports.{name}"), "."),
                Import::Path { child, parent } => (child.clone(), parent.as_str()),
            };
            let Some(Value::Map(table)) =
                lookup(&merged, &format!("{}.{child}", dep.name)).map(|n| &n.value)
            else {
                tracing::debug!(dependency = %dep.name, %child, "import-values: no such table");
                continue;
            };
            let table = at_path(parent, table.clone(), prov);
            coalesce_tables(&mut imported, table, Nulls::Keep);
        }
    }
    let prov = chart.defaults.as_ref().map_or(prov, |d| d.prov);
    coalesce_tables(&mut merged, imported, Nulls::Keep);
    chart.defaults = Some(Node::new(Value::Map(merged), prov));
}

/// `table` placed at a dotted path (`.` is the top).
fn at_path(path: &str, table: Map, prov: Prov) -> Map {
    if path == "." {
        return table;
    }
    path.rsplit('.').fold(table, |inner, key| {
        Map::from_iter([(key.to_string(), Node::new(Value::Map(inner), prov))])
    })
}

/// Step 3 for one chart: its defaults under `values`, then its subcharts under their keys.
fn coalesce_chart(chart: &ChartValues, values: &mut Map, nulls: Nulls, prov: Prov) {
    coalesce_defaults(chart, values, nulls);
    let parent_global = values.get("global").cloned();
    for sub in &chart.subcharts {
        let entry = values
            .entry(sub.name.clone())
            .or_insert_with(|| Node::new(Value::Map(Map::new()), prov));
        // Helm stops with an error on a subchart key that is not a mapping; so does its render.
        let Value::Map(sub_values) = &mut entry.value else {
            continue;
        };
        merge_globals(sub_values, parent_global.as_ref(), prov);
        coalesce_chart(sub, sub_values, nulls, prov);
    }
}

/// The parent's `global` merged over the subchart's (the parent wins), always a mapping.
fn merge_globals(sub: &mut Map, parent: Option<&Node>, prov: Prov) {
    let mut own = match sub.get("global").map(|g| &g.value) {
        None => Map::new(),
        Some(Value::Map(map)) => map.clone(),
        Some(_) => return,
    };
    let prov = parent.map_or(prov, |p| p.prov);
    let parent = match parent.map(|p| &p.value) {
        None => Map::new(),
        Some(Value::Map(map)) => map.clone(),
        Some(_) => return,
    };
    for (key, value) in parent {
        match (&value.value, own.get(&key).map(|n| &n.value)) {
            (Value::Map(_), Some(Value::Map(theirs))) => {
                let theirs = theirs.clone();
                let mut ours = value;
                if let Value::Map(map) = &mut ours.value {
                    coalesce_tables(map, theirs, Nulls::Keep);
                }
                own.insert(key, ours);
            }
            // A mapping never replaces a scalar here, nor a scalar a mapping.
            (Value::Map(_), Some(_)) | (_, Some(Value::Map(_))) => {}
            _ => {
                own.insert(key, value);
            }
        }
    }
    sub.insert("global".to_string(), Node::new(Value::Map(own), prov));
}

/// The chart's own defaults under `values`.
fn coalesce_defaults(chart: &ChartValues, values: &mut Map, nulls: Nulls) {
    let Some(Value::Map(defaults)) = chart.defaults.as_ref().map(|d| &d.value) else {
        return;
    };
    for (key, default) in defaults {
        match values.get_mut(key) {
            Some(user) if user.is_null() && nulls == Nulls::Delete => {
                values.shift_remove(key);
            }
            Some(user) => {
                let (Value::Map(user), Value::Map(default)) = (&mut user.value, &default.value)
                else {
                    continue;
                };
                let nulls = if chart.subcharts.iter().any(|c| &c.name == key) {
                    Nulls::Keep
                } else {
                    nulls
                };
                let mut default = default.clone();
                if nulls == Nulls::Delete {
                    drop_nulls(&mut default);
                }
                coalesce_tables(user, default, nulls);
            }
            None if nulls == Nulls::Delete && default.is_null() => {}
            None => {
                let mut default = default.clone();
                if let (Nulls::Delete, Value::Map(map)) = (nulls, &mut default.value) {
                    drop_nulls(map);
                }
                values.insert(key.clone(), default);
            }
        }
    }
}

/// `src` under `dst` (`dst` wins); a null in `dst` deletes the key where `src` had a value,
/// unless nulls are kept.
fn coalesce_tables(dst: &mut Map, mut src: Map, nulls: Nulls) {
    let had_value: Vec<String> = src
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, _)| k.clone())
        .collect();
    for (key, value) in dst.iter() {
        if value.is_null() {
            src.insert(key.clone(), value.clone());
        }
    }
    for (key, value) in src {
        match dst.get_mut(&key) {
            Some(mine) if nulls == Nulls::Delete && mine.is_null() && had_value.contains(&key) => {
                dst.shift_remove(&key);
            }
            None => {
                dst.insert(key, value);
            }
            Some(mine) => {
                if let (Value::Map(mine), Value::Map(theirs)) = (&mut mine.value, value.value) {
                    coalesce_tables(mine, theirs, nulls);
                }
            }
        }
    }
}

/// Removes null entries at every depth.
fn drop_nulls(map: &mut Map) {
    map.retain(|_, v| !v.is_null());
    for node in map.values_mut() {
        if let Value::Map(inner) = &mut node.value {
            drop_nulls(inner);
        }
    }
}

/// `v3.19.0`, `v4.3.1+gabc` -> (major, minor).
pub fn parse_version(text: &str) -> Option<(u64, u64)> {
    let mut parts = text.trim().trim_start_matches('v').split(['.', '+', '-']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::yaml::doc;

    fn chart(defaults: &str) -> ChartValues {
        ChartValues {
            name: "c".into(),
            defaults: Some(doc(defaults)),
            ..ChartValues::default()
        }
    }

    fn sub(name: &str, defaults: &str) -> ChartValues {
        ChartValues {
            name: name.into(),
            ..chart(defaults)
        }
    }

    fn json(text: &str) -> serde_json::Value {
        doc(text).to_json()
    }

    #[test]
    fn user_values_win_and_maps_merge() {
        let v = coalesce(
            doc("a: {x: 1}\nlist: [9]\n"),
            &chart("a: {x: 0, w: 2}\nlist: [1, 2]\nkeep: 3\n"),
        );
        assert_eq!(v.to_json(), json("a: {x: 1, w: 2}\nlist: [9]\nkeep: 3\n"));
    }

    #[test]
    fn a_user_null_deletes_a_default_and_a_null_the_chart_shares_stays_when_nested() {
        let v = coalesce(
            doc("a: null\nb: {c: null, e: null}\nlone: null\ntop: null\n"),
            &chart("a: 1\nb: {c: 2, d: 3, e: null}\ntop: null\n"),
        );
        assert_eq!(v.to_json(), json("b: {d: 3, e: null}\nlone: null\n"));
    }

    #[test]
    fn a_type_mismatch_keeps_the_user_value() {
        let v = coalesce(doc("a: 5\nb: {x: 1}\n"), &chart("a: {x: 1}\nb: 7\n"));
        assert_eq!(v.to_json(), json("a: 5\nb: {x: 1}\n"));
    }

    #[test]
    fn subcharts_get_their_key_and_the_parent_globals() {
        let parent = ChartValues {
            subcharts: vec![
                sub("db", "size: 1Gi\nglobal: {region: us, tier: 1}\n"),
                sub("bare", "x: 1\n"),
            ],
            ..chart("global: {region: eu}\n")
        };
        let v = coalesce(doc("db: {size: 5Gi}\n"), &parent);
        assert_eq!(
            v.to_json(),
            json(concat!(
                "db: {size: 5Gi, global: {region: eu, tier: 1}}\nglobal: {region: eu}\n",
                "bare: {x: 1, global: {region: eu}}\n"
            ))
        );
        let alone = ChartValues {
            subcharts: vec![sub("bare", "x: 1\n")],
            ..chart("a: 1\n")
        };
        assert_eq!(
            coalesce(doc("{}"), &alone).to_json(),
            json("a: 1\nbare: {x: 1, global: {}}\n")
        );
    }

    fn dependency(name: &str) -> Dependency {
        Dependency {
            name: name.into(),
            ..Dependency::default()
        }
    }

    #[test]
    fn conditions_and_tags_switch_subcharts_off() {
        let parent = ChartValues {
            subcharts: vec![sub("db", "size: 1\n"), sub("cache", "ttl: 2\n")],
            dependencies: Some(vec![
                Dependency {
                    condition: Some("nothere.enabled,db.enabled".into()),
                    ..dependency("db")
                },
                Dependency {
                    tags: vec!["extras".into()],
                    ..dependency("cache")
                },
            ]),
            ..chart("db: {enabled: false}\ntags: {extras: true}\n")
        };
        let v = coalesce(doc("tags: {extras: false}\n"), &parent);
        assert_eq!(
            v.to_json(),
            json("db: {enabled: false}\ntags: {extras: false}\n")
        );
        let v = coalesce(doc("db: {enabled: true}\n"), &parent);
        assert_eq!(
            v.to_json()["db"],
            json("enabled: true\nsize: 1\nglobal: {}\n")
        );
        assert_eq!(v.to_json()["cache"]["ttl"], 2);
    }

    #[test]
    fn an_alias_renames_and_import_values_reach_the_parent() {
        let parent = ChartValues {
            subcharts: vec![sub(
                "db",
                "exports: {conn: {host: h, port: 1}}\nuser: {name: u}\n",
            )],
            dependencies: Some(vec![Dependency {
                alias: Some("primary".into()),
                import_values: vec![
                    Import::Exports("conn".into()),
                    Import::Path {
                        child: "user".into(),
                        parent: "creds.main".into(),
                    },
                ],
                ..dependency("db")
            }]),
            ..chart("port: 9\n")
        };
        let v = coalesce(doc("{}"), &parent).to_json();
        assert_eq!(v["host"], "h");
        assert_eq!(v["port"], 9, "the parent's own value wins over an import");
        assert_eq!(v["creds"], json("main: {name: u}\n"));
        assert_eq!(v["primary"]["user"], json("name: u\n"));
        assert!(v.get("db").is_none());
    }

    #[test]
    fn documents_of_a_values_file_merge_and_a_later_null_deletes() {
        let docs = vec![
            doc("a: {x: 1, k: 2, m: {p: 1}}\nl: [1]\ns: 1\nz: 1\n"),
            doc("a: {x: null, m: {q: 2}}\nl: [2]\ns: {m: 1}\nz: null\n"),
            doc("w: 3\n"),
        ];
        assert_eq!(
            merge_documents(docs).unwrap().to_json(),
            json("a: {k: 2, m: {p: 1, q: 2}}\nl: [2]\ns: {m: 1}\nw: 3\n")
        );
    }
}
