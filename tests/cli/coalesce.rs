//! Differential test: nyl's own coalescing of values over chart defaults (used by explain and
//! schema checks) against what the real Helm hands the templates, subcharts included.

use std::fs;
use std::process::Command;

use nyl_render::coalesce::coalesce;
use nyl_render::project::Project;
use nyl_render::provenance::FileId;
use nyl_render::yaml::{parse_stream, Limits};
use serde_json::Value;

use super::{helm, root, tempdir};

/// `.Values` of the parent chart and of its subchart, as Helm rendered them.
fn helm_values(user_json: &str) -> (Value, Value) {
    let tmp = tempdir("coalesce");
    let values = tmp.join("values.json");
    fs::write(&values, user_json).unwrap();
    let chart = root().join("tests/fixtures/coalesce/charts/parent");
    let out = Command::new(helm())
        .args([
            "template",
            "r",
            chart.to_str().unwrap(),
            "-f",
            values.to_str().unwrap(),
        ])
        .env("HOME", &tmp)
        .output()
        .expect("run helm");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let docs: Vec<Value> = parse_stream(&text, FileId(0), &Limits::default())
        .docs
        .iter()
        .map(|d| d.to_json())
        .collect();
    let dump = |name: &str| {
        let doc = docs
            .iter()
            .find(|d| d["metadata"]["name"] == name)
            .expect("dump");
        serde_json::from_str::<Value>(doc["data"]["values"].as_str().unwrap()).unwrap()
    };
    (dump("parent"), dump("child"))
}

#[test]
fn nyl_coalesces_like_helm() {
    let (mut project, _) = Project::load(root().join("tests/fixtures/coalesce"))
        .map_err(|_| ())
        .expect("project");
    let chart = project
        .chart_values(&root().join("tests/fixtures/coalesce/charts/parent"))
        .expect("chart values");
    let cases = [
        "{}",
        "replicas: 3\nlist: [9]\nimage: {tag: '2.0'}",
        "nested: {drop: null, deep: {y: null, z: 3}}\nscalar: null\nlone: null",
        "table: 5\nscalar: {now: a-map}",
        "child: {size: 9Gi, extra: null, mode: null}\nglobal: {region: ap, new: 1}",
        "global: {tier: null}\nchild: {global: {own: false}}",
    ];
    for case in cases {
        let user = parse_stream(case, FileId(0), &Limits::default())
            .docs
            .into_iter()
            .next();
        let user = user.unwrap_or_else(|| {
            parse_stream("{}", FileId(0), &Limits::default())
                .docs
                .remove(0)
        });
        let ours = coalesce(user.clone(), &chart).to_json();
        let (parent, child) = helm_values(&user.to_json().to_string());
        // The parent sees its subchart's coalesced values under the subchart's key, as Helm does.
        assert_eq!(ours, parent, "parent .Values for {case:?}");
        assert_eq!(ours["child"], child, "child .Values for {case:?}");
    }
}
