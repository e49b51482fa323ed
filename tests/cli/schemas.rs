//! `nyl schema KIND` against a real JSON Schema validator: the schemas accept the shipped
//! examples and fixtures, and reject unknown fields.

use std::fs;
use std::path::Path;

use nyl_core::data::provenance::FileId;
use nyl_core::data::yaml::{parse_stream, Limits};
use nyl_core::project::objects::{classify, Aliases, DocKind, Place};
use serde_json::Value;

use super::{args, nyl, root};

fn schema(kind: &str) -> jsonschema::Validator {
    let (status, stdout, stderr) = nyl(&root(), &args(&format!("schema {kind}")), &[]);
    assert_eq!(status, 0, "{stderr}");
    let schema: Value = serde_json::from_str(&stdout).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

fn yaml_docs(path: &Path) -> Vec<Value> {
    let text = fs::read_to_string(path).unwrap();
    parse_stream(&text, FileId(0), &Limits::default())
        .docs
        .iter()
        .map(nyl_core::data::value::Node::to_json)
        .collect()
}

/// Every document of the given kind in the YAML files below `dirs`.
fn documents(dirs: &[&str], want: DocKind) -> Vec<Value> {
    let mut out = Vec::new();
    for dir in dirs {
        for entry in walkdir::WalkDir::new(root().join(dir))
            .into_iter()
            .filter_map(Result::ok)
        {
            let p = entry.path();
            let yaml = p.extension().is_some_and(|e| e == "yaml");
            if !yaml
                || p.components().any(|c| c.as_os_str() == "templates")
                || !entry.file_type().is_file()
            {
                continue;
            }
            let text = fs::read_to_string(p).unwrap();
            for doc in parse_stream(&text, FileId(0), &Limits::default()).docs {
                let kind = [Place::Targets, Place::App]
                    .into_iter()
                    .find_map(|place| classify(&doc, place, &Aliases::new()).ok());
                if kind == Some(want) {
                    out.push(doc.to_json());
                }
            }
        }
    }
    out
}

const VALID: &[&str] = &[
    "examples/platform",
    "tests/fixtures/imports",
    "tests/fixtures/seed",
    "tests/fixtures/render",
];

fn accepts_and_rejects(kind: &str, docs: &[Value], nested: &str) {
    let validator = schema(kind);
    assert!(!docs.is_empty(), "no {kind} documents found");
    for doc in docs {
        let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{kind} rejects {doc}: {errors:?}");
        let mut bad = doc.clone();
        bad["unknownField"] = "x".into();
        assert!(
            !validator.is_valid(&bad),
            "{kind} accepts an unknown top-level field"
        );
        let mut bad = doc.clone();
        if let Some(obj) = bad.pointer_mut(nested).and_then(Value::as_object_mut) {
            obj.insert("unknownField".into(), "x".into());
            assert!(
                !validator.is_valid(&bad),
                "{kind} accepts an unknown field in {nested}"
            );
        }
    }
}

#[test]
fn cluster_and_deployment_target_schemas() {
    accepts_and_rejects("cluster", &documents(VALID, DocKind::Cluster), "/metadata");
    accepts_and_rejects(
        "deployment-target",
        &documents(VALID, DocKind::DeploymentTarget),
        "/metadata",
    );
}

#[test]
fn invocation_and_helm_chart_schemas() {
    accepts_and_rejects(
        "invocation",
        &documents(VALID, DocKind::Invocation),
        "/metadata",
    );
    accepts_and_rejects(
        "helm-chart",
        &documents(VALID, DocKind::HelmChart),
        "/spec/chart",
    );
}

#[test]
fn component_schema() {
    let docs: Vec<Value> = VALID
        .iter()
        .flat_map(|d| {
            walkdir::WalkDir::new(root().join(d))
                .into_iter()
                .filter_map(Result::ok)
        })
        .filter(|e| e.file_name() == "nyl-component.yaml")
        .flat_map(|e| yaml_docs(e.path()))
        .collect();
    accepts_and_rejects("component", &docs, "/valueImports/0");
}

#[test]
fn config_schema() {
    let docs: Vec<Value> = [
        "examples/platform/nyl.toml",
        "tests/fixtures/imports/nyl.toml",
        "tests/fixtures/validate/nyl.toml",
    ]
    .iter()
    .map(|p| {
        let table: toml::Table = fs::read_to_string(root().join(p)).unwrap().parse().unwrap();
        serde_json::to_value(table).unwrap()
    })
    .collect();
    accepts_and_rejects("config", &docs, "/project");
}

#[test]
fn a_schema_rejects_what_the_checker_rejects() {
    let validator = schema("invocation");
    let doc: Value = serde_json::json!({
        "apiVersion": "components.k8s.nyl/v1", "kind": "a/b",
        "metadata": {"name": "x"}, "valueImports": {"enabled": "false"}
    });
    assert!(!validator.is_valid(&doc), "enabled must be a boolean");
    let wrong_api = serde_json::json!({"apiVersion": "components.k8s.nyl/v2", "kind": "a", "metadata": {"name": "x"}});
    assert!(!validator.is_valid(&wrong_api));
}
