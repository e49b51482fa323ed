//! The reference, generated from the code: `docs/reference.md` (every field of every file kind,
//! every diagnostic code) and the JSON Schemas `nyl schema KIND` prints. Both come from the same
//! shapes the strict checker uses, so none of them can drift from what nyl accepts.

use serde_json::{json, Map, Value};

use crate::data::diagnostics::{Class, Code, Severity};
use crate::project::objects::Limits;
use crate::project::schema::{expected, Field, FieldDefault, FileKind, Shape, FILE_KINDS};

/// `docs/reference.md`.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Reference\n\n<!-- Generated from crates/nyl-core/src/project/schema.rs and crates/nyl-core/src/data/diagnostics.rs by \
         `NYL_BLESS=reference_page_is_current cargo test --test cli reference`; do not edit. -->\n\n\
         Every field of every file kind nyl reads, and every diagnostic code. Unknown fields are \
         `unknown_field`, wrong types `invalid_field`, absent required fields `missing_field`. \
         Inside values (type *values* or *any*) nothing is checked. For nyl's own fields an \
         explicit null counts as absent. A list is written `[]`: `valueImports[].name` is the \
         `name` of every element. `nyl schema KIND` prints the JSON Schema of a kind.\n\n",
    );
    for kind in FILE_KINDS {
        out.push_str(&format!(
            "## {}\n\n{} `nyl schema {}`.",
            kind.title, kind.location, kind.name
        ));
        if !kind.api_versions.is_empty() {
            let apis: Vec<String> = kind.api_versions.iter().map(|a| format!("`{a}`")).collect();
            // Nyl's group for the same kind is read as nyl's own.
            out.push_str(&format!(" `apiVersion` is exactly {}", apis.join(" or ")));
            match kind.kind {
                Some(k) => out.push_str(&format!(", `kind` exactly `{k}`.")),
                None => out.push('.'),
            }
        }
        out.push_str(
            "\n\n| Field | Type | Required | Default | Description |\n|---|---|---|---|---|\n",
        );
        if let Shape::Object(fields) = kind.shape {
            rows(fields, "", &mut out);
        }
        out.push('\n');
    }
    out.push_str(
        "## Diagnostic codes\n\nA code keeps its meaning forever; a retired code is never reused. \
         Exit status 1 means problems in the input, 2 a usage or internal error; warnings alone \
         exit 0, except under `nyl validate --strict`, which fails on them with 1.\n\n\
         | Code | Severity | Exit | Meaning |\n|---|---|---|---|\n",
    );
    for code in Code::ALL {
        let exit = match (code.severity(), code.class()) {
            (Severity::Warning, _) => "0 (1 with `validate --strict`)",
            (Severity::Error, Class::Input) => "1",
            (Severity::Error, Class::Usage) => "2",
        };
        let doc = code.doc().split_whitespace().collect::<Vec<_>>().join(" ");
        out.push_str(&format!(
            "| `{}` | {} | {exit} | {doc} |\n",
            code.name(),
            code.severity()
        ));
    }
    out
}

fn rows(fields: &[Field], prefix: &str, out: &mut String) {
    for f in fields {
        let path = format!("{prefix}{}", f.name);
        let doc = f.doc.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push_str(&format!(
            "| `{path}` | {} | {} | {} | {doc} |\n",
            type_name(f.shape),
            if f.required { "yes" } else { "no" },
            default_text(f).map_or("none".to_string(), |d| format!("`{d}`")),
        ));
        match f.shape {
            Shape::Object(inner) => rows(inner, &format!("{path}."), out),
            Shape::List(Shape::Object(inner)) => rows(inner, &format!("{path}[]."), out),
            _ => {}
        }
    }
}

/// A field's default as the reference page shows it: a size in bytes also in MiB.
fn default_text(f: &Field) -> Option<String> {
    match f.default? {
        FieldDefault::Text(text) => Some(text.to_string()),
        FieldDefault::Limit => {
            let n = Limits::default_of(f.name)?;
            const MIB: u64 = 1 << 20;
            Some(if n >= MIB && n % MIB == 0 {
                format!("{n} ({} MiB)", n / MIB)
            } else {
                n.to_string()
            })
        }
    }
}

/// A field's default as a JSON Schema `default`, when it is a JSON value.
fn default_json(f: &Field) -> Option<Value> {
    match f.default? {
        FieldDefault::Text(text) => serde_json::from_str(text).ok(),
        FieldDefault::Limit => Limits::default_of(f.name).map(Value::from),
    }
}

fn type_name(shape: &Shape) -> String {
    match shape {
        Shape::Any => "any".into(),
        Shape::Values => "values".into(),
        Shape::Object(_) => "object".into(),
        other => expected(other)
            .trim_start_matches("a ")
            .trim_start_matches("an ")
            .to_string(),
    }
}

/// The JSON Schema (draft 2020-12) of a file kind.
pub fn json_schema(kind: &FileKind) -> Value {
    let mut schema = shape_schema(kind.shape);
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        if let (false, Some(prop)) = (kind.api_versions.is_empty(), props.get_mut("apiVersion")) {
            prop["enum"] = kind.api_versions.into();
        }
        if let (Some(value), Some(prop)) = (kind.kind, props.get_mut("kind")) {
            prop["const"] = value.into();
        }
    }
    let mut root = Map::new();
    root.insert(
        "$schema".into(),
        "https://json-schema.org/draft/2020-12/schema".into(),
    );
    root.insert("title".into(), kind.title.into());
    root.insert("description".into(), kind.location.into());
    if let Value::Object(body) = schema {
        root.extend(body);
    }
    Value::Object(root)
}

fn shape_schema(shape: &Shape) -> Value {
    match shape {
        Shape::Any => json!({}),
        Shape::Values => json!({"type": "object"}),
        Shape::String => json!({"type": "string"}),
        Shape::Bool => json!({"type": "boolean"}),
        Shape::Count => json!({"type": "integer", "minimum": 1}),
        Shape::List(item) => json!({"type": "array", "items": shape_schema(item)}),
        Shape::MapOf(value) => {
            json!({"type": "object", "additionalProperties": shape_schema(value)})
        }
        Shape::Object(fields) => {
            let mut props = Map::new();
            for f in *fields {
                let mut p = shape_schema(f.shape);
                if !f.required {
                    allow_null(&mut p);
                }
                p["description"] = f
                    .doc
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .into();
                if let Some(default) = default_json(f) {
                    p["default"] = default;
                }
                props.insert(f.name.into(), p);
            }
            let required: Vec<&str> = fields
                .iter()
                .filter(|f| f.required)
                .map(|f| f.name)
                .collect();
            json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
        }
    }
}

/// Optional fields may be null (nyl reads a null as absent).
fn allow_null(schema: &mut Value) {
    if let Some(t) = schema
        .get("type")
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        schema["type"] = json!([t, "null"]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_and_code_is_in_the_reference() {
        let page = markdown();
        fn walk(fields: &[crate::project::schema::Field], prefix: &str, page: &str) {
            for f in fields {
                let path = format!("{prefix}{}", f.name);
                assert!(page.contains(&format!("| `{path}` |")), "{path} missing");
                match f.shape {
                    Shape::Object(inner) => walk(inner, &format!("{path}."), page),
                    Shape::List(Shape::Object(inner)) => walk(inner, &format!("{path}[]."), page),
                    _ => {}
                }
            }
        }
        for kind in FILE_KINDS {
            if let Shape::Object(fields) = kind.shape {
                walk(fields, "", &page);
            }
        }
        for code in Code::ALL {
            assert!(
                page.contains(&format!("| `{}` |", code.name())),
                "{} missing",
                code.name()
            );
        }
    }
}
