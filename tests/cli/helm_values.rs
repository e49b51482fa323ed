//! Values reach Helm unchanged: for each kind of string go-yaml would refuse or change in plain
//! JSON, the values nyl hands Helm on stdin give the templates what `helm template -f FILE` gives
//! them for the same values file.

use std::fs;
use std::process::{Command, Stdio};

use nyl_core::data::provenance::FileId;
use nyl_core::data::yaml::{parse_stream, to_helm_json, Limits};
use serde_json::{json, Value};

use super::{helm, root, tempdir};

/// `.Values` as the dump chart's template saw them, with `-f values` and stdin `input`.
fn rendered(values: &str, input: &str) -> Result<Value, String> {
    let tmp = tempdir("helm-values");
    let chart = root().join("tests/fixtures/helm-values/dump");
    let mut child = Command::new(helm())
        .args(["template", "r", chart.to_str().unwrap(), "-f", values])
        .env("HOME", &tmp)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run helm");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8(out.stdout).unwrap();
    let doc = parse_stream(&text, FileId(0), &Limits::default())
        .docs
        .remove(0);
    let dump = doc.get("data").and_then(|d| d.get("values")).unwrap();
    Ok(serde_json::from_str(dump.as_str().unwrap()).unwrap())
}

#[test]
fn every_string_and_key_reaches_helm_as_written() {
    let long_key = "k".repeat(1100);
    // Each values file as a user writes it, the value it must give, and whether plain JSON on
    // stdin loses it (the separators are a regression case: they already pass).
    let cases = [
        (
            "DEL",
            r#"s: "a\x7Fb""#.to_string(),
            json!({"s": "a\u{7f}b"}),
            true,
        ),
        (
            "NEL",
            r#"s: "a\x85b""#.to_string(),
            json!({"s": "a\u{85}b"}),
            true,
        ),
        (
            "C1 controls",
            r#"s: "\x80\x9F\x81""#.to_string(),
            json!({"s": "\u{80}\u{9f}\u{81}"}),
            true,
        ),
        (
            "U+FFFE and U+FFFF",
            r#"s: "\uFFFE\uFFFF""#.to_string(),
            json!({"s": "\u{fffe}\u{ffff}"}),
            true,
        ),
        (
            "line and paragraph separators",
            r#"s: "a\u2028b\u2029c""#.to_string(),
            json!({"s": "a\u{2028}b\u{2029}c"}),
            false,
        ),
        (
            "a control character in a key",
            r#""k\x7F": "v""#.to_string(),
            json!({"k\u{7f}": "v"}),
            true,
        ),
        (
            "a key over 1024 characters",
            format!("m:\n  ? {long_key}\n  : [1]\n  short: 2\n"),
            json!({"m": {long_key.clone(): [1], "short": 2}}),
            true,
        ),
    ];
    let tmp = tempdir("helm-values-files");
    for (name, file_text, want, plain_loses) in cases {
        let file = tmp.join("values.yaml");
        fs::write(&file, &file_text).unwrap();
        let file = file.to_str().unwrap();
        let by_file = rendered(file, "").unwrap_or_else(|e| panic!("{name}: helm -f FILE: {e}"));
        assert_eq!(by_file, want, "{name}: helm template -f FILE");
        let ours = parse_stream(&file_text, FileId(0), &Limits::default())
            .docs
            .remove(0);
        let plain = rendered("-", &ours.to_json().to_string());
        assert_eq!(
            plain.as_ref().ok() != Some(&want),
            plain_loses,
            "{name}: plain JSON {plain:?}"
        );
        let encoded = rendered("-", &to_helm_json(&ours.to_json()))
            .unwrap_or_else(|e| panic!("{name}: nyl's values on stdin: {e}"));
        assert_eq!(encoded, by_file, "{name}: nyl's values on stdin");
    }
}
