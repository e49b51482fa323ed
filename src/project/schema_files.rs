//! Chart files that hold values schemas (`values.schema.json`, packaged subcharts), checked when
//! the project is loaded: a schema that could make Helm's validator read a file or a URL is refused.

use std::fs;
use std::path::Path;

/// Keywords that make a validator load what they name unless it is a fragment of the same
/// document. They are refused wherever they stand, data included: a `$ref` may point into a
/// `default` and make it a schema.
const REFERENCE_KEYWORDS: &[&str] = &["$ref", "$dynamicRef", "$recursiveRef", "$id"];

/// Keywords whose value is data (a default, an example): draft-04's `id` in there is an
/// object's field, not an identifier.
const DATA_KEYWORDS: &[&str] = &["default", "const", "enum", "examples", "example"];

/// The draft metaschemas Helm's validator has built in, so naming one in `$schema` loads nothing.
/// The unversioned `json-schema.org/schema` is its latest draft (2020-12): charts of
/// prometheus-community name it, and Helm renders them without a request.
const METASCHEMAS: &[&str] = &[
    "json-schema.org/schema",
    "json-schema.org/draft-04/schema",
    "json-schema.org/draft-06/schema",
    "json-schema.org/draft-07/schema",
    "json-schema.org/draft/2019-09/schema",
    "json-schema.org/draft/2020-12/schema",
];

/// The keywords of a schema that could make a validator read something outside the document
/// (a file, a URL): the JSON Pointer of each, with what it names. Local are only same-document
/// fragments (`#/$defs/x`, `#anchor`) and the built-in metaschemas; `$vocabulary` is refused
/// outright (only metaschemas declare vocabularies).
pub fn external_references(schema: &serde_json::Value) -> Vec<(String, String)> {
    use serde_json::Value;
    let mut out = Vec::new();
    // (pointer, value, inside a data keyword)
    let mut stack = vec![(String::new(), schema, false)];
    while let Some((at, value, data)) = stack.pop() {
        let children: Vec<(String, &Value)> = match value {
            Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v))
                .collect(),
            _ => Vec::new(),
        };
        let mut next = Vec::new();
        for (key, child) in children {
            let mut path = at.clone();
            path.push('/');
            nyl_core::data::pointer::escape_into(&key, &mut path);
            let named = child.as_str().map(str::to_string);
            let refused = match key.as_str() {
                _ if !value.is_object() => None,
                "$vocabulary" => Some(child.to_string()),
                // The root's identity only names the document: every reference must still be a
                // fragment of it, so nothing is loaded (Helm renders such a chart without a
                // request: traefik's names itself https://traefik.io/...).
                "$id" | "id" if at.is_empty() => None,
                "$schema" => named.filter(|s| !is_metaschema(s)),
                "id" if !data => named.filter(|s| !s.starts_with('#')),
                k if REFERENCE_KEYWORDS.contains(&k) => named.filter(|s| !s.starts_with('#')),
                _ => None,
            };
            match refused {
                Some(target) => out.push((path, target)),
                None => {
                    let data = data || (value.is_object() && DATA_KEYWORDS.contains(&key.as_str()));
                    next.push((path, child, data));
                }
            }
        }
        stack.extend(next.into_iter().rev());
    }
    out
}

fn is_metaschema(uri: &str) -> bool {
    let bare = uri.strip_suffix('#').unwrap_or(uri);
    ["http://", "https://"]
        .iter()
        .filter_map(|scheme| bare.strip_prefix(scheme))
        .any(|rest| METASCHEMAS.contains(&rest))
}

/// Whether Helm loads `path` (inside a chart) as a values schema.
pub fn is_schema(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "values.schema.json")
}

/// Whether Helm loads `path` (inside a chart) as a packaged subchart.
pub fn is_package(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let in_charts = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|p| p == "charts");
    in_charts && (name.ends_with(".tgz") || name.ends_with(".tar.gz"))
}

/// The problems of a chart file that holds schemas: a `values.schema.json`, or a packaged
/// subchart whose schemas (nested packages included) are read from the archive. At most
/// `max_bytes` are read or decompressed. Each problem is (the file as shown, the message).
pub fn schema_file_problems(path: &Path, shown: &str, max_bytes: u64) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let left = std::cell::Cell::new(max_bytes);
    let result = fs::File::open(path).and_then(|file| {
        let reader = Budgeted {
            inner: file,
            left: &left,
        };
        if is_schema(path) {
            scan_schema(reader, shown, &mut out)
        } else {
            scan_package(reader, shown, &left, &mut out)
        }
    });
    if let Err(e) = result {
        out.push((shown.to_string(), unreadable(&e, max_bytes)));
    }
    out
}

fn unreadable(e: &std::io::Error, max_bytes: u64) -> String {
    let why = if e.kind() == std::io::ErrorKind::FileTooLarge {
        format!("it holds more than {max_bytes} bytes (limits.max_total_bytes)")
    } else {
        e.to_string()
    };
    format!("cannot be checked for references outside it ({why}), so it is not handed to Helm")
}

fn scan_schema(
    mut reader: impl std::io::Read,
    shown: &str,
    out: &mut Vec<(String, String)>,
) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes)?;
    // Helm reads what serde_json refuses (invalid UTF-8 becomes U+FFFD), so a schema nyl cannot
    // read is refused rather than left to Helm.
    let schema: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    for (at, target) in external_references(&schema) {
        let keyword = at.rsplit('/').next().unwrap_or_default();
        let what = match keyword {
            "$id" | "id" => {
                "gives the schema an identity outside this document, against which Helm would \
                 resolve references: remove it"
            }
            "$schema" => {
                "is no standard draft, so Helm would load it as a metaschema (a file of the \
                 machine or a URL): name a draft such as \
                 https://json-schema.org/draft/2020-12/schema, or leave it out"
            }
            "$vocabulary" => "declares vocabularies, which only metaschemas do: remove it",
            _ => {
                "is not a fragment of this schema, so Helm would load it (a file of the machine \
                 or a URL): copy the definition under $defs and refer to it as \"#/$defs/NAME\""
            }
        };
        out.push((shown.to_string(), format!("at {at}: {target:?} {what}")));
    }
    Ok(())
}

fn scan_package(
    reader: impl std::io::Read,
    shown: &str,
    left: &std::cell::Cell<u64>,
    out: &mut Vec<(String, String)>,
) -> std::io::Result<()> {
    // Every gzip member, as Go's reader (and so Helm) reads them: a second member may go on
    // with the archive where the first one ends.
    let gz = Budgeted {
        inner: flate2::read::MultiGzDecoder::new(reader),
        left,
    };
    let mut archive = tar::Archive::new(gz);
    for entry in archive.entries()? {
        let mut entry = entry?;
        if sparse_names(&mut entry)? {
            // Go takes a PAX sparse file's name from its records, which this reader ignores.
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "it holds a PAX sparse file, which nyl does not read as Helm does",
            ));
        }
        let raw = entry.path_bytes().into_owned();
        let name = format!("{shown}:{}", String::from_utf8_lossy(&raw));
        let inner = member_path(&raw);
        if is_schema(&inner) {
            scan_schema(&mut entry, &name, out)?;
        } else if is_package(&inner) {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut bytes)?;
            scan_package(bytes.as_slice(), &name, left, out)?;
        }
    }
    Ok(())
}

/// An archive member's path as Helm reads it: `\` separates too, and `.` and `..` are resolved
/// (`charts/x/../a.tgz` is `charts/a.tgz`), so what Helm loads as a schema or a subchart is
/// checked as one whatever its name is written like.
fn member_path(raw: &[u8]) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let slashed: Vec<u8> = raw
        .iter()
        .map(|&b| if b == b'\\' { b'/' } else { b })
        .collect();
    let mut path = std::path::PathBuf::new();
    for part in Path::new(std::ffi::OsStr::from_bytes(&slashed)).components() {
        match part {
            std::path::Component::Normal(part) => path.push(part),
            std::path::Component::ParentDir => {
                path.pop();
            }
            _ => {}
        }
    }
    path
}

/// Whether a member carries PAX records of a GNU sparse file (`GNU.sparse.*`).
fn sparse_names<R: std::io::Read>(entry: &mut tar::Entry<'_, R>) -> std::io::Result<bool> {
    let Some(records) = entry.pax_extensions()? else {
        return Ok(false);
    };
    for record in records {
        if record?.key_bytes().starts_with(b"GNU.sparse.") {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A reader that fails once more than the shared budget has been read through it.
struct Budgeted<'a, R> {
    inner: R,
    left: &'a std::cell::Cell<u64>,
}

impl<R: std::io::Read> std::io::Read for Budgeted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let left = self
            .left
            .get()
            .checked_sub(n as u64)
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::FileTooLarge))?;
        self.left.set(left);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::external_references;

    fn refused(schema: &serde_json::Value) -> Vec<String> {
        external_references(schema)
            .into_iter()
            .map(|(at, _)| at)
            .collect()
    }

    #[test]
    fn the_unversioned_metaschema_is_a_standard_draft() {
        for named in [
            "https://json-schema.org/schema#",
            "http://json-schema.org/schema",
        ] {
            assert_eq!(refused(&json!({"$schema": named})), Vec::<String>::new());
        }
        // Only the exact name: a path below it is another document.
        assert_eq!(
            refused(&json!({"$schema": "https://json-schema.org/schema/extra"})),
            ["/$schema"]
        );
    }

    #[test]
    fn fragments_and_standard_drafts_are_local() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "$id": "https://charts.example.com/app.schema.json",
            "definitions": {"a": {"type": "string"}},
            "properties": {
                "a": {"$ref": "#/definitions/a"},
                "b": {"$dynamicRef": "#meta"},
                "$ref": {"type": "object"},
                "id": {"type": "string", "default": {"id": "x", "$comment": "data"}},
            },
        });
        assert_eq!(refused(&schema), Vec::<String>::new());
    }

    #[test]
    fn anything_else_is_refused_wherever_it_stands() {
        let schema = json!({
            "$schema": "https://example.com/meta",
            "$vocabulary": {"https://example.com/v": true},
            "properties": {
                // Below the root, an identity is a resource of its own to resolve against.
                "s": {"id": "http://example.com/s", "type": "string"},
                // A property named like a data keyword holds a schema all the same.
                "default": {"$ref": "file:///etc/passwd"},
                "b": {"items": [{"$recursiveRef": "other.json"}]},
                // A reference inside data is refused too: a `$ref` may point there.
                "c": {"default": {"$ref": "http://127.0.0.1/x", "$id": "y"}},
            },
        });
        assert_eq!(
            refused(&schema),
            [
                "/$schema",
                "/$vocabulary",
                "/properties/s/id",
                "/properties/default/$ref",
                "/properties/b/items/0/$recursiveRef",
                "/properties/c/default/$ref",
                "/properties/c/default/$id",
            ]
        );
    }
}
