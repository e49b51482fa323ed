//! Differential test: nyl's own coalescing of values over chart defaults (used by explain and
//! schema checks) against what the real Helm hands the templates, subcharts included.

use std::collections::BTreeMap;
use std::fs;

use nyl_core::data::provenance::FileId;
use nyl_core::data::yaml::{parse_stream, Limits};
use nyl_core::values::coalesce::coalesce;
use nyl_render::Project;
use serde_json::Value;

use super::{helm_stdout, root, tempdir};

/// `.Values` as each rendered chart's dump shows them, by chart name (aliases included).
fn helm_values(chart: &str, user_json: &str) -> BTreeMap<String, Value> {
    let tmp = tempdir("coalesce");
    let values = tmp.join("values.json");
    fs::write(&values, user_json).unwrap();
    let chart = root().join("tests/fixtures/coalesce/charts").join(chart);
    let text = helm_stdout(
        &[
            "template",
            "r",
            chart.to_str().unwrap(),
            "-f",
            values.to_str().unwrap(),
        ],
        &tmp,
    );
    parse_stream(&text, FileId(0), &Limits::default())
        .docs
        .iter()
        .map(nyl_core::data::value::Node::to_json)
        .map(|d| {
            let name = d["metadata"]["name"].as_str().unwrap().to_string();
            let values = serde_json::from_str(d["data"]["values"].as_str().unwrap()).unwrap();
            (name, values)
        })
        .collect()
}

/// For each case, nyl's values for the chart equal the parent's `.Values` Helm rendered, and
/// each subchart Helm rendered sees what nyl has under its key. The subcharts expected to
/// render (by name, alias for an aliased one) are given per case, so a subchart that tags or a
/// condition switch off is shown to stay off.
fn differential(chart: &str, cases: &[(&str, &[&str])]) {
    let (mut project, _) = Project::load(root().join("tests/fixtures/coalesce"), None)
        .map_err(|_| ())
        .expect("project");
    let dir = root().join("tests/fixtures/coalesce/charts").join(chart);
    let values = project.chart_values(&dir).expect("chart values");
    for (case, subcharts) in cases {
        let user = parse_stream(case, FileId(0), &Limits::default())
            .docs
            .into_iter()
            .next()
            .unwrap_or_else(|| {
                parse_stream("{}", FileId(0), &Limits::default())
                    .docs
                    .remove(0)
            });
        let ours = coalesce(user.clone(), &values).to_json();
        let mut rendered = helm_values(chart, &user.to_json().to_string());
        let parent = rendered.remove(chart).expect("the parent's dump");
        assert_eq!(ours, parent, "{chart} .Values for {case:?}");
        let names: Vec<&String> = rendered.keys().collect();
        assert_eq!(names, *subcharts, "subcharts rendered for {case:?}");
        for (name, theirs) in rendered {
            assert_eq!(ours[&name], theirs, "{name} .Values for {case:?}");
        }
    }
}

#[test]
fn nyl_coalesces_like_helm() {
    let child: &[&str] = &["child"];
    differential(
        "parent",
        &[
            ("{}", child),
            ("replicas: 3\nlist: [9]\nimage: {tag: '2.0'}", child),
            (
                "nested: {drop: null, deep: {y: null, z: 3}}\nscalar: null\nlone: null",
                child,
            ),
            ("table: 5\nscalar: {now: a-map}", child),
            (
                "child: {size: 9Gi, extra: null, mode: null}\nglobal: {region: ap, new: 1}",
                child,
            ),
            ("global: {tier: null}\nchild: {global: {own: false}}", child),
            // A null the chart shares stays; one over a value deletes it (Helm 4.3).
            ("shared: {x: null, y2: null}\ndropped: null", child),
            ("child: {extra: {a: null, b: null}}", child),
        ],
    );
}

#[test]
fn nyl_coalesces_dependencies_like_helm() {
    // db by its condition, replica (db under an alias) by its own condition and then db's,
    // cache by a tag; extra is vendored but not a dependency, so always there. The chart's
    // values.yaml has two documents, db's subchart grand its own condition, and db exports
    // values the parent imports.
    differential(
        "deps",
        &[
            ("{}", &["db", "extra"]),
            (
                "tags: {extras: true}\nreplica: {enabled: true}\ndb: {grand: {enabled: false}}",
                &["cache", "db", "extra", "replica"],
            ),
            ("db: {enabled: false}\nreplica: {enabled: null}", &["extra"]),
            (
                "m: {x: null, keep: null}\nlater: {b: null}\ndb: {settings: {off: null, pool: null}}",
                &["db", "extra"],
            ),
            (
                "global: {g: 1, own: 5}\ncache: {global: {own: 2}}\ntags: {extras: true}",
                &["cache", "db", "extra"],
            ),
            (
                "imported: {settings: {pool: 9}}\nhost: mine\nport: null",
                &["db", "extra"],
            ),
            (
                "replica: {enabled: true, settings: {pool: 1}}\ndb: {nulls: {x: null}}",
                &["db", "extra", "replica"],
            ),
        ],
    );
}
