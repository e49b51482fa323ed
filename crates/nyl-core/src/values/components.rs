//! Component contracts (`nyl-component.yaml`) and value imports.
//!
//! A contract names target values a component understands (`from`, a JSON Pointer into the
//! effective target values) and where they land in its chart values (`to`). Evaluating an
//! invocation builds `imports ⊕ spec`: the imported values form the lower layer, the invocation's
//! spec is merged over them by [`crate::values::merge`], and chart defaults stay Helm's job.
//!
//! The rules, each checked here and nowhere else:
//! - imports are opt-in: without a contract an invocation receives only its spec;
//! - an optional import whose `from` is absent contributes nothing; a present null, false or empty
//!   value is imported as written;
//! - a required import whose `from` is absent fails (`missing_required_import`), also without a
//!   target, and setting its destination in spec does not satisfy it;
//! - `valueImports.exclude` skips named imports (required ones too) and every name must be
//!   declared; `valueImports.enabled: false` skips all;
//! - a spec value that is neither a mapping nor null at a proper ancestor of an applied import's
//!   destination is an `import_conflict`;
//! - remote chart shortcuts never read a contract, accept `enabled` but no `exclude` names.

use std::collections::{BTreeSet, HashMap};

use tracing::debug;

use crate::data::diagnostics::{Code, Diagnostic};
use crate::data::pointer::Pointer;
use crate::data::provenance::{Layer, Loc, Prov};
use crate::data::value::{Map, Node, Value};
use crate::project::objects::{self, ChartSource, Invocation, CONTRACT_API};
use crate::project::schema;
use crate::values::merge::merge_with;
use crate::values::targets::Target;

/// A checked component contract.
#[derive(Clone, Debug, PartialEq)]
pub struct Contract {
    pub imports: Vec<ValueImport>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ValueImport {
    pub name: String,
    pub from: Pointer,
    pub to: Pointer,
    pub required: bool,
    pub loc: Loc,
}

/// Checks a parsed `nyl-component.yaml`. `component` names the component in diagnostics.
pub fn parse_contract(
    docs: &[Node],
    component: &str,
    file_loc: Loc,
) -> Result<Contract, Vec<Diagnostic>> {
    let object = format!("component {component}");
    let doc = match docs {
        [doc] => doc,
        [] => {
            return Err(vec![Diagnostic::new(
            Code::MissingField,
            "nyl-component.yaml is empty; it needs at least `apiVersion: components.nyl/v1alpha1`",
        )
        .at(file_loc)
        .object(object)])
        }
        [_, second, ..] => {
            return Err(vec![Diagnostic::new(
                Code::InvalidDocument,
                "nyl-component.yaml must hold exactly one document",
            )
            .at(second.prov.loc)
            .object(object)])
        }
    };
    objects::check_shape(doc, &schema::CONTRACT, Some(&object))?;
    let api = doc
        .field("apiVersion")
        .and_then(Node::as_str)
        .unwrap_or_default();
    if api != CONTRACT_API {
        return Err(vec![objects::unknown_api_version(doc, api).object(object)]);
    }
    let mut problems = Vec::new();
    let mut imports = Vec::new();
    let items = doc
        .field("valueImports")
        .and_then(Node::as_seq)
        .unwrap_or_default();
    for item in items {
        match parse_import(item, &object) {
            Ok(import) => imports.push(import),
            Err(e) => problems.extend(e),
        }
    }
    check_names_and_destinations(&imports, &object, &mut problems);
    if problems.is_empty() {
        Ok(Contract { imports })
    } else {
        Err(problems)
    }
}

fn parse_import(item: &Node, object: &str) -> Result<ValueImport, Vec<Diagnostic>> {
    let text = |key: &str| item.field(key).and_then(Node::as_str).unwrap_or_default();
    let name = text("name");
    let pointer = |key: &str| {
        Pointer::parse(text(key)).map_err(|e| {
            let loc = item.field(key).map_or(item.prov.loc, |n| n.prov.loc);
            // A pointer too deep to use is too long to print whole.
            let shown: String = text(key).chars().take(80).collect();
            let cut = if shown.len() < text(key).len() {
                "…"
            } else {
                ""
            };
            Diagnostic::new(
                Code::InvalidPointer,
                format!("import {name:?}: `{key}` {shown:?}{cut} is not a JSON Pointer: {e}"),
            )
            .at(loc)
            .object(object)
        })
    };
    match (pointer("from"), pointer("to")) {
        (Ok(from), Ok(to)) => Ok(ValueImport {
            name: name.to_string(),
            from,
            to,
            required: item
                .field("required")
                .and_then(Node::as_bool)
                .unwrap_or(false),
            loc: item.prov.loc,
        }),
        (from, to) => Err([from.err(), to.err()].into_iter().flatten().collect()),
    }
}

fn check_names_and_destinations(imports: &[ValueImport], object: &str, out: &mut Vec<Diagnostic>) {
    let mut names: HashMap<&str, Loc> = HashMap::new();
    for (i, import) in imports.iter().enumerate() {
        if let Some(first) = names.insert(&import.name, import.loc) {
            out.push(
                Diagnostic::new(
                    Code::DuplicateImport,
                    format!(
                        "two value imports are named {:?}; names must be unique",
                        import.name
                    ),
                )
                .at(import.loc)
                .related(first)
                .object(object),
            );
        }
        for earlier in &imports[..i] {
            let relation = if earlier.to == import.to {
                "equals"
            } else if earlier.to.contains(&import.to) {
                "is inside"
            } else if import.to.contains(&earlier.to) {
                "contains"
            } else {
                continue;
            };
            out.push(
                Diagnostic::new(
                    Code::ImportDestinationOverlap,
                    format!(
                        "the destination {} of import {:?} {relation} the destination {} of import \
                         {:?}; destinations must not overlap",
                        import.to, import.name, earlier.to, earlier.name
                    ),
                )
                .at(import.loc)
                .related(earlier.loc)
                .object(object),
            );
        }
    }
}

/// What evaluation knows of a local component: its name and its contract, if it has one.
#[derive(Clone, Copy, Debug)]
pub struct Component<'a> {
    pub name: &'a str,
    pub contract: Option<&'a Contract>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportStatus {
    /// The value was found in the target values and imported.
    Applied,
    /// `from` is absent from the target values (or there is no target).
    Absent,
    /// Named in `valueImports.exclude`.
    Excluded,
    /// `valueImports.enabled` is false.
    Disabled,
}

/// How one import of the contract fared for one invocation.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ImportReport {
    pub name: String,
    pub from: String,
    pub to: String,
    pub required: bool,
    pub status: ImportStatus,
    /// The spec replaced some of the imported value.
    pub overridden: bool,
}

/// The values Helm receives for one invocation, and how each import fared.
#[derive(Clone, Debug)]
pub struct Evaluation {
    pub values: Node,
    pub imports: Vec<ImportReport>,
    /// The imported values alone, before the spec was merged over them (for explain).
    pub imported: Node,
}

/// Evaluates `imports ⊕ spec` for one invocation against the target (or none).
pub fn evaluate(
    inv: &Invocation,
    chart: &ChartSource<Component<'_>>,
    target: Option<&Target>,
) -> Result<Evaluation, Vec<Diagnostic>> {
    let who = inv.display();
    let mut problems = Vec::new();
    let contract = match chart {
        ChartSource::Remote(_) => {
            if let Some((_, loc)) = inv.exclude.first() {
                problems.push(
                    Diagnostic::new(
                        Code::RemoteImportExclude,
                        "remote charts have no contract, so valueImports.exclude has nothing to \
                         exclude; remove it (valueImports.enabled is accepted)",
                    )
                    .at(*loc)
                    .object(&who),
                );
            }
            None
        }
        ChartSource::Local(Component { name, contract }) => {
            check_excludes(inv, name, *contract, &mut problems);
            *contract
        }
    };
    let imports = contract.map_or(&[][..], |c| &c.imports[..]);
    let mut tree = Node::new(Value::Map(Map::new()), Prov::written(inv.loc));
    let mut reports = Vec::new();
    for (index, import) in imports.iter().enumerate() {
        let status = apply(inv, import, index as u32, target, &mut tree, &mut problems);
        if status == ImportStatus::Applied {
            check_conflict(inv, import, &mut problems);
        }
        reports.push(ImportReport {
            name: import.name.clone(),
            from: import.from.to_string(),
            to: import.to.to_string(),
            required: import.required,
            status,
            overridden: false,
        });
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut overridden = BTreeSet::new();
    let imported = tree.clone();
    let values = merge_with(tree, inv.spec.clone(), &mut |_, old, _| {
        collect_imports(old, &mut overridden);
    });
    for (index, report) in reports.iter_mut().enumerate() {
        report.overridden = overridden.contains(&(index as u32));
        if report.overridden {
            debug!(invocation = %who, import = %report.name, "spec overrides imported value");
        }
    }
    Ok(Evaluation {
        values,
        imports: reports,
        imported,
    })
}

fn check_excludes(
    inv: &Invocation,
    component: &str,
    contract: Option<&Contract>,
    out: &mut Vec<Diagnostic>,
) {
    let declared: Vec<&str> = contract.map_or(vec![], |c| {
        c.imports.iter().map(|i| i.name.as_str()).collect()
    });
    for (name, loc) in &inv.exclude {
        if !declared.contains(&name.as_str()) {
            let known = if declared.is_empty() {
                "it declares no imports".to_string()
            } else {
                format!("it declares: {}", declared.join(", "))
            };
            out.push(
                Diagnostic::new(
                    Code::UnknownImportExclude,
                    format!("valueImports.exclude names {name:?}, which component {component} does not declare; {known}"),
                )
                .at(*loc)
                .object(inv.display()),
            );
        }
    }
}

/// Decides the status of one import and, when it applies, writes it into `tree`.
fn apply(
    inv: &Invocation,
    import: &ValueImport,
    index: u32,
    target: Option<&Target>,
    tree: &mut Node,
    problems: &mut Vec<Diagnostic>,
) -> ImportStatus {
    let who = inv.display();
    if !inv.imports_enabled {
        debug!(invocation = %who, import = %import.name, "import skipped: valueImports.enabled is false");
        return ImportStatus::Disabled;
    }
    if inv.exclude.iter().any(|(n, _)| *n == import.name) {
        debug!(invocation = %who, import = %import.name, "import skipped: excluded");
        return ImportStatus::Excluded;
    }
    let Some(value) = target.and_then(|t| import.from.get(&t.values)) else {
        debug!(invocation = %who, import = %import.name, from = %import.from, "import skipped: absent from target values");
        if import.required {
            problems.push(missing_required(inv, import, target));
        }
        return ImportStatus::Absent;
    };
    let mut value = value.clone();
    retag_imported(&mut value, index);
    put(tree, import, index, value);
    debug!(invocation = %who, import = %import.name, from = %import.from, to = %import.to, "import applied");
    ImportStatus::Applied
}

fn missing_required(inv: &Invocation, import: &ValueImport, target: Option<&Target>) -> Diagnostic {
    let (component, name, from, to) = (&inv.kind, &import.name, &import.from, &import.to);
    let message = match target {
        Some(t) => format!(
            "component {component} requires import {name:?} (from {from} to {to}), but target {} \
             has no value at {from}; set it in the Cluster or DeploymentTarget values, or add \
             {name:?} to valueImports.exclude",
            t.display
        ),
        None => format!(
            "component {component} requires import {name:?} (from {from} to {to}), but there is no \
             target; render with --target NAME, or add {name:?} to valueImports.exclude"
        ),
    };
    Diagnostic::new(Code::MissingRequiredImport, message)
        .at(inv.loc)
        .object(inv.display())
}

/// Marks every node of an imported value as belonging to import `index`, keeping which Cluster
/// or DeploymentTarget wrote it.
fn retag_imported(node: &mut Node, index: u32) {
    if let Layer::TargetValues { object } = node.prov.layer {
        node.prov.layer = Layer::Import { index, object };
    }
    match &mut node.value {
        Value::Seq(items) => items.iter_mut().for_each(|n| retag_imported(n, index)),
        Value::Map(map) => map.values_mut().for_each(|n| retag_imported(n, index)),
        _ => {}
    }
}

/// Writes `value` at the import's destination, creating the mappings on the way. Destinations of
/// one contract never overlap, so the path holds only mappings this function created.
fn put(tree: &mut Node, import: &ValueImport, index: u32, value: Node) {
    let path_prov = Prov {
        loc: import.loc,
        layer: Layer::ImportPath { index },
    };
    let Some((last, parents)) = import.to.tokens().split_last() else {
        return;
    };
    let mut current = tree;
    for token in parents {
        let Value::Map(map) = &mut current.value else {
            return;
        };
        let child = map
            .entry(token.clone())
            .or_insert_with(|| Node::new(Value::Map(Map::new()), path_prov));
        if !matches!(child.value, Value::Map(_)) {
            *child = Node::new(Value::Map(Map::new()), path_prov);
        }
        current = child;
    }
    if let Value::Map(map) = &mut current.value {
        map.insert(last.clone(), value);
    }
}

/// `import_conflict` when the spec holds a scalar or sequence at a proper ancestor of the
/// import's destination.
fn check_conflict(inv: &Invocation, import: &ValueImport, out: &mut Vec<Diagnostic>) {
    let tokens = import.to.tokens();
    let mut current = &inv.spec;
    for (depth, token) in tokens[..tokens.len() - 1].iter().enumerate() {
        let Some(child) = current.get(token) else {
            return;
        };
        match child.value {
            Value::Map(_) => current = child,
            Value::Null => return,
            _ => {
                let at = crate::data::pointer::join(&tokens[..=depth]);
                out.push(
                    Diagnostic::new(
                        Code::ImportConflict,
                        format!(
                            "spec sets {at} to a {}, but import {:?} (from {}) writes to {} inside \
                             it; make {at} a mapping, set {} instead, or add {:?} to \
                             valueImports.exclude",
                            child.type_name(),
                            import.name,
                            import.from,
                            import.to,
                            import.to,
                            import.name
                        ),
                    )
                    .at(child.prov.loc)
                    .object(inv.display()),
                );
                return;
            }
        }
    }
}

fn collect_imports(node: &Node, out: &mut BTreeSet<u32>) {
    if let Layer::Import { index, .. } | Layer::ImportPath { index } = node.prov.layer {
        out.insert(index);
    }
    match &node.value {
        Value::Seq(items) => items.iter().for_each(|n| collect_imports(n, out)),
        Value::Map(map) => map.values().for_each(|n| collect_imports(n, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::provenance::{FileId, ObjectId};
    use crate::data::yaml::{parse_stream, Limits};
    use crate::project::objects;

    fn docs(text: &str) -> Vec<Node> {
        let parsed = parse_stream(text, FileId(0), &Limits::default());
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        parsed.docs
    }

    fn contract(imports: &str) -> Contract {
        let text = format!("apiVersion: components.nyl/v1alpha1\nvalueImports:\n{imports}");
        parse_contract(&docs(&text), "test/C", Loc::new(FileId(0), 0)).expect("valid contract")
    }

    fn contract_errors(text: &str) -> Vec<Code> {
        parse_contract(&docs(text), "test/C", Loc::new(FileId(0), 0))
            .expect_err("invalid contract")
            .into_iter()
            .map(|d| d.code)
            .collect()
    }

    fn remote() -> ChartSource<Component<'static>> {
        ChartSource::Remote(objects::RemoteChart::parse("oci://example.test/charts/c").unwrap())
    }

    fn invocation(rest: &str) -> Invocation {
        let text = format!(
            "apiVersion: components.k8s.nyl/v1\nkind: test/C\nmetadata: {{name: x}}\n{rest}"
        );
        objects::invocation(&docs(&text)[0], ObjectId(1)).expect("valid invocation")
    }

    fn target(values: &str) -> Target {
        let mut values = docs(values).remove(0);
        values.set_layer(Layer::TargetValues {
            object: ObjectId(0),
        });
        Target {
            name: "t".into(),
            display: "Cluster/t".into(),
            cluster: "t".into(),
            cluster_document: values.clone(),
            target_document: None,
            values,
            kube_version: None,
            api_versions: vec![],
        }
    }

    fn eval(c: &Contract, inv: &Invocation, t: Option<&Target>) -> Result<Evaluation, Vec<Code>> {
        let chart = ChartSource::Local(Component {
            name: "test/C",
            contract: Some(c),
        });
        evaluate(inv, &chart, t).map_err(|e| e.into_iter().map(|d| d.code).collect())
    }

    fn values(e: &Evaluation) -> serde_json::Value {
        e.values.to_json()
    }

    fn json(text: &str) -> serde_json::Value {
        docs(text).remove(0).to_json()
    }

    const SEED: &str = "  - {name: scheduling, from: /postgres/scheduling, to: /scheduling}\n  \
        - {name: storageClass, from: /postgres/storageClass, to: /storage/storageClass}\n  \
        - {name: backup, from: /postgres/backup, to: /backup, required: true}\n";
    const TARGET: &str = "postgres:\n  scheduling: {nodeSelector: {pool: compute}}\n  \
        storageClass: local\n  backup: {destinationPath: s3://b, retentionPolicy: 30d}\n";

    #[test]
    fn spec_wins_over_imports_and_maps_merge() {
        let inv = invocation("spec:\n  storage: {size: 20Gi}\n  backup: {retentionPolicy: 7d}\n");
        let e = eval(&contract(SEED), &inv, Some(&target(TARGET))).unwrap();
        assert_eq!(
            values(&e),
            json("scheduling: {nodeSelector: {pool: compute}}\nstorage: {storageClass: local, size: 20Gi}\nbackup: {destinationPath: s3://b, retentionPolicy: 7d}\n")
        );
        let overridden: Vec<_> = e
            .imports
            .iter()
            .map(|i| (i.name.as_str(), i.overridden))
            .collect();
        assert_eq!(
            overridden,
            [
                ("scheduling", false),
                ("storageClass", false),
                ("backup", true)
            ]
        );
        assert!(e.imports.iter().all(|i| i.status == ImportStatus::Applied));
    }

    #[test]
    fn without_a_contract_only_the_spec_arrives() {
        let inv = invocation("spec: {a: 1}\n");
        let chart = ChartSource::Local(Component {
            name: "test/C",
            contract: None,
        });
        let e = evaluate(&inv, &chart, Some(&target(TARGET))).unwrap();
        assert_eq!(values(&e), json("a: 1\n"));
        assert!(e.imports.is_empty());
    }

    #[test]
    fn falsy_spec_values_replace_imports() {
        for falsy in ["false", "0", "\"\"", "[]", "null"] {
            let inv = invocation(&format!("spec: {{scheduling: {falsy}}}\n"));
            let e = eval(&contract(SEED), &inv, Some(&target(TARGET))).unwrap();
            assert_eq!(
                values(&e)["scheduling"],
                json(&format!("v: {falsy}\n"))["v"],
                "{falsy}"
            );
            assert!(e.imports[0].overridden, "{falsy}");
        }
    }

    #[test]
    fn empty_map_in_spec_keeps_imported_keys() {
        let inv = invocation("spec: {scheduling: {}}\n");
        let e = eval(&contract(SEED), &inv, Some(&target(TARGET))).unwrap();
        assert_eq!(
            values(&e)["scheduling"],
            json("v: {nodeSelector: {pool: compute}}\n")["v"]
        );
        assert!(!e.imports[0].overridden);
    }

    #[test]
    fn present_null_false_and_empty_target_values_are_imported() {
        let c = contract("  - {name: a, from: /a, to: /a, required: true}\n  - {name: b, from: /b, to: /b, required: true}\n  - {name: c, from: /c, to: /c, required: true}\n");
        let e = eval(
            &c,
            &invocation(""),
            Some(&target("a: null\nb: false\nc: {}\n")),
        )
        .unwrap();
        assert_eq!(values(&e), json("a: null\nb: false\nc: {}\n"));
    }

    #[test]
    fn optional_absent_contributes_nothing_and_required_absent_fails() {
        let e = eval(
            &contract(SEED),
            &invocation(""),
            Some(&target("postgres: {backup: {x: 1}}\n")),
        )
        .unwrap();
        assert_eq!(values(&e), json("backup: {x: 1}\n"));
        assert_eq!(e.imports[0].status, ImportStatus::Absent);
        let err = eval(
            &contract(SEED),
            &invocation(""),
            Some(&target("postgres: {}\n")),
        )
        .unwrap_err();
        assert_eq!(err, [Code::MissingRequiredImport]);
    }

    #[test]
    fn spec_at_the_destination_does_not_satisfy_required() {
        let inv = invocation("spec: {backup: {retentionPolicy: 7d}}\n");
        assert_eq!(
            eval(&contract(SEED), &inv, Some(&target("postgres: {}\n"))).unwrap_err(),
            [Code::MissingRequiredImport]
        );
    }

    #[test]
    fn targetless_optional_imports_are_absent_and_required_fail() {
        let c = contract("  - {name: a, from: /a, to: /a}\n");
        let e = eval(&c, &invocation(""), None).unwrap();
        assert_eq!(e.imports[0].status, ImportStatus::Absent);
        assert_eq!(
            eval(&contract(SEED), &invocation(""), None).unwrap_err(),
            [Code::MissingRequiredImport]
        );
    }

    #[test]
    fn missing_required_message_names_component_import_pointers_and_target() {
        let chart = ChartSource::Local(Component {
            name: "test/C",
            contract: Some(&contract(SEED)),
        });
        let with = evaluate(&invocation(""), &chart, Some(&target("postgres: {}\n"))).unwrap_err();
        let m = &with[0].message;
        for part in [
            "test/C",
            "\"backup\"",
            "/postgres/backup",
            "/backup",
            "Cluster/t",
        ] {
            assert!(m.contains(part), "{m} lacks {part}");
        }
        let without = evaluate(&invocation(""), &chart, None).unwrap_err();
        assert!(
            without[0].message.contains("no target"),
            "{}",
            without[0].message
        );
    }

    #[test]
    fn exclude_skips_required_imports_and_enabled_false_skips_all() {
        let inv = invocation("valueImports: {exclude: [backup]}\n");
        let e = eval(&contract(SEED), &inv, None).unwrap();
        assert_eq!(e.imports[2].status, ImportStatus::Excluded);
        let inv = invocation("valueImports: {enabled: false}\n");
        let e = eval(&contract(SEED), &inv, Some(&target(TARGET))).unwrap();
        assert!(e.imports.iter().all(|i| i.status == ImportStatus::Disabled));
        assert_eq!(values(&e), json("{}\n"));
    }

    #[test]
    fn exclude_names_must_be_declared() {
        let inv = invocation("valueImports: {exclude: [backpu, backup]}\n");
        assert_eq!(
            eval(&contract(SEED), &inv, None).unwrap_err(),
            [Code::UnknownImportExclude]
        );
        let chart = ChartSource::Local(Component {
            name: "test/C",
            contract: None,
        });
        let errs =
            evaluate(&invocation("valueImports: {exclude: [a]}\n"), &chart, None).unwrap_err();
        assert_eq!(errs[0].code, Code::UnknownImportExclude);
    }

    #[test]
    fn remote_charts_accept_enabled_but_no_exclude_names() {
        let e = evaluate(
            &invocation("valueImports: {enabled: false}\nspec: {a: 1}\n"),
            &remote(),
            Some(&target(TARGET)),
        )
        .unwrap();
        assert_eq!(values(&e), json("a: 1\n"));
        assert!(evaluate(
            &invocation("valueImports: {exclude: []}\n"),
            &remote(),
            None
        )
        .is_ok());
        let errs = evaluate(
            &invocation("valueImports: {exclude: [x]}\n"),
            &remote(),
            None,
        )
        .unwrap_err();
        assert_eq!(errs[0].code, Code::RemoteImportExclude);
    }

    #[test]
    fn scalar_or_sequence_at_a_proper_ancestor_conflicts() {
        for bad in ["20Gi", "[a]", "0", "false"] {
            let inv = invocation(&format!("spec: {{storage: {bad}}}\n"));
            assert_eq!(
                eval(&contract(SEED), &inv, Some(&target(TARGET))).unwrap_err(),
                [Code::ImportConflict],
                "{bad}"
            );
        }
        let inv = invocation("spec: {storage: null}\n");
        let e = eval(&contract(SEED), &inv, Some(&target(TARGET))).unwrap();
        assert!(values(&e)["storage"].is_null());
        assert!(e.imports[1].overridden);
    }

    #[test]
    fn no_conflict_when_the_import_is_not_applied() {
        let inv = invocation("spec: {storage: 20Gi}\n");
        let e = eval(
            &contract(SEED),
            &inv,
            Some(&target("postgres: {backup: {}}\n")),
        )
        .unwrap();
        assert_eq!(values(&e)["storage"], "20Gi");
    }

    #[test]
    fn a_scalar_at_the_destination_itself_is_an_override() {
        let inv = invocation("spec: {scheduling: none}\n");
        let e = eval(&contract(SEED), &inv, Some(&target(TARGET))).unwrap();
        assert_eq!(values(&e)["scheduling"], "none");
        assert!(e.imports[0].overridden);
    }

    #[test]
    fn imported_nodes_keep_where_they_were_written() {
        let e = eval(&contract(SEED), &invocation(""), Some(&target(TARGET))).unwrap();
        let pool = crate::data::pointer::Pointer::parse("/scheduling/nodeSelector/pool").unwrap();
        let node = pool.get(&e.values).unwrap();
        assert_eq!(
            node.prov.layer,
            Layer::Import {
                index: 0,
                object: ObjectId(0)
            }
        );
        assert_eq!(node.prov.loc.line, 2);
    }

    #[test]
    fn escaped_pointers_and_array_elements_import() {
        let c = contract("  - {name: p, from: /l/a~1b, to: /ns/a~1b}\n  - {name: t, from: /x~0y, to: /t}\n  - {name: e, from: /list/1, to: /e}\n  - {name: end, from: /list/-, to: /end}\n");
        let e = eval(
            &c,
            &invocation(""),
            Some(&target("l: {a/b: 1}\nx~y: 2\nlist: [a, b]\n")),
        )
        .unwrap();
        assert_eq!(values(&e), json("ns: {a/b: 1}\nt: 2\ne: b\n"));
        assert_eq!(e.imports[3].status, ImportStatus::Absent);
    }

    #[test]
    fn contract_problems_are_all_reported() {
        assert_eq!(
            contract_errors("apiVersion: components.nyl/v2\n"),
            [Code::UnknownApiVersion]
        );
        assert_eq!(
            contract_errors("apiVersion: components.nyl/v1alpha1\nvalueImports:\n  - {name: a, from: /a, to: /a, requird: true}\nextra: 1\n"),
            [Code::UnknownField, Code::UnknownField]
        );
        assert_eq!(
            contract_errors("apiVersion: components.nyl/v1alpha1\nvalueImports:\n  - {name: a, from: a, to: ''}\n  - {name: b, from: /b~2, to: /b}\n"),
            [Code::InvalidPointer, Code::InvalidPointer, Code::InvalidPointer]
        );
        assert_eq!(
            contract_errors("apiVersion: components.nyl/v1alpha1\nvalueImports:\n  - {name: a, from: /a, to: /a}\n  - {name: a, from: /b, to: /b}\n"),
            [Code::DuplicateImport]
        );
        assert_eq!(
            contract_errors("apiVersion: components.nyl/v1alpha1\nvalueImports:\n  - {name: a, from: /a, to: /a}\n  - {name: b, from: /b, to: /a/b}\n  - {name: c, from: /c, to: /a}\n  - {name: d, from: /d, to: /ab}\n"),
            [Code::ImportDestinationOverlap, Code::ImportDestinationOverlap, Code::ImportDestinationOverlap]
        );
    }
}
