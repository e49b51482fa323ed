//! The checks of the fuzz targets, one function per target taking the fuzzer's bytes. They live
//! here, not in `fuzz_targets/`, so that `tests/cli/fuzz_regressions.rs` replays every input of
//! `fuzz/regressions/` and `fuzz/corpus/` through the very same checks on the stable toolchain,
//! without libFuzzer: a regression fails `cargo test`.

use std::sync::LazyLock;

use nyl_core::data::diagnostics::{Code, Diagnostic};
use nyl_core::data::pointer::{join, Pointer};
use nyl_core::data::provenance::{FileId, Loc, Prov};
use nyl_core::data::value::{Node, Value};
use nyl_core::data::yaml::{
    parse_documents, parse_stream, resolve_plain, split, to_yaml, Document, Limits, Mode,
};
use nyl_core::project::objects;
use nyl_core::project::template;
use nyl_core::repository::argocd::{settings, Settings, PARAMETERS};
use nyl_render::parse_config;

pub const FILE: FileId = FileId(0);

/// A target's checks, on the fuzzer's bytes.
pub type Check = fn(&[u8]);

/// The targets by name (as `fuzz/Cargo.toml` names them), for replaying inputs.
pub const TARGETS: [(&str, Check); 6] = [
    ("yaml_read", yaml_read),
    ("yaml_split", yaml_split),
    ("pointer", pointer),
    ("argocd_params", argocd_params),
    ("nyl_toml", nyl_toml),
    ("template", template),
];

/// A fresh budget per parse (a budget is spent across the parses of a run): small enough that an
/// alias bomb costs milliseconds, not seconds (the budget itself is what is under test, not its
/// size).
fn limits() -> Limits {
    Limits::new(20_000, 1 << 20)
}

/// nyl reads every file as UTF-8 (anything else is refused before a parser sees it).
fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// The lines of `text` with their line breaks: `\n`, `\r\n`, or a `\r` alone, as YAML has them.
fn lines_inclusive(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = match rest.find(['\n', '\r']) {
            Some(i) if rest[i..].starts_with("\r\n") => i + 2,
            Some(i) => i + 1,
            None => rest.len(),
        };
        let (line, tail) = rest.split_at(end);
        rest = tail;
        Some(line)
    })
}

/// The number of lines of `text`.
fn lines(text: &str) -> u32 {
    u32::try_from(lines_inclusive(text).count().max(1)).unwrap_or(u32::MAX)
}

/// Every diagnostic points at a line of `text` (or at none: line 0, the whole file).
fn assert_lines_in(text: &str, diags: &[Diagnostic]) {
    let lines = lines(text);
    if let Some(d) = diags.iter().find(|d| d.loc.is_some_and(|l| l.line > lines)) {
        panic!("a diagnostic past the last line ({lines}): {d:?}");
    }
}

/// Every node of `node` was read from a line of `text`.
fn assert_node_lines_in(text: &str, node: &Node) {
    let lines = lines(text);
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        assert!(
            n.prov.loc.line <= lines,
            "a node past the last line ({lines}): {n:?}"
        );
        match &n.value {
            Value::Seq(items) => stack.extend(items),
            Value::Map(map) => stack.extend(map.values()),
            _ => {}
        }
    }
}

/// The only document `text` holds, as JSON, asserting that it reads back without a problem.
fn reread(text: &str) -> serde_json::Value {
    let parsed = parse_stream(text, FILE, &limits());
    assert!(
        parsed.diagnostics.is_empty(),
        "{text:?} reads back with {:?}",
        parsed.diagnostics
    );
    assert_eq!(
        parsed.docs.len(),
        1,
        "{text:?} reads back as {:?}",
        parsed.docs
    );
    parsed.docs[0].to_json()
}

/// The YAML reader on any text: it never panics, keeps within its limits, and every line it
/// reports (on a diagnostic or a node) is a line of the text.
pub fn yaml_read(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let parsed = parse_stream(text, FILE, &limits());
    assert_lines_in(text, &parsed.diagnostics);
    for doc in &parsed.docs {
        assert_node_lines_in(text, doc);
    }
    resolve_plain(text);
}

/// The lines of a stream that output must keep byte for byte, in order, written independently of
/// the splitter from the rules of docs/rendering.md ("Output"): all but blank and comment lines,
/// bare `---` and `...` lines (at most a comment after them) and directives (`%` lines before a
/// document's `---` and content); a last line is given a line break.
fn content_lines(text: &str) -> Vec<String> {
    fn marker<'a>(line: &'a str, m: &str) -> Option<&'a str> {
        line.strip_prefix(m)
            .filter(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
            .map(|rest| rest.trim_start_matches([' ', '\t', '\r', '\n']))
    }
    let blank = |rest: &str| rest.is_empty() || rest.starts_with('#');
    let mut prefix = true;
    let mut out = Vec::new();
    for line in lines_inclusive(text) {
        if marker(line, "...").is_some() {
            prefix = true;
        } else if marker(line, "---").is_some_and(blank) {
            prefix = false;
        } else if !(blank(line.trim_start_matches([' ', '\t', '\r', '\n']))
            || (prefix && line.starts_with('%')))
        {
            prefix = false;
            let mut line = line.to_string();
            if !line.ends_with(['\n', '\r']) {
                line.push('\n');
            }
            out.push(line);
        }
    }
    out
}

fn split_docs(text: &str) -> Option<Vec<Document>> {
    let (docs, diags) = parse_documents(text, FILE, &limits(), Mode::Strict);
    assert_lines_in(text, &diags);
    diags.is_empty().then_some(docs)
}

fn values(docs: &[Document]) -> Vec<serde_json::Value> {
    docs.iter().map(|d| d.node.to_json()).collect()
}

fn texts(text: &str) -> Vec<String> {
    split(text)
        .iter()
        .map(|p| p.text(text).to_string())
        .collect()
}

/// The splitter, printed and read again. For any stream:
/// - output keeps the stream's content lines byte for byte, in order, none lost or added;
/// - the printed pieces, split again and joined, are the printed text byte for byte.
///
/// For a stream that reads without a problem:
/// - the split is exact: when the whole stream reads at once, the documents are its documents;
/// - each document's text reads back alone as the document;
/// - the writer's YAML of each document reads back as the document.
pub fn yaml_split(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let pieces = texts(text);
    let printed = pieces.concat();
    assert_eq!(
        content_lines(&printed),
        content_lines(text),
        "printed {printed:?}"
    );
    // Where a blank line between two documents goes may differ; the bytes may not.
    assert_eq!(texts(&printed).concat(), printed, "printed {printed:?}");

    let docs = split_docs(text);
    // The other way round is allowed: saphyr refuses some streams whose documents it reads alone
    // (a `---` after a block scalar of blank lines is "wrongly indented"), and YAML reads them.
    let whole = parse_stream(text, FILE, &limits());
    if whole.diagnostics.is_empty() {
        let docs = docs
            .as_ref()
            .expect("the stream reads, but not its documents alone");
        let whole_values: Vec<_> = whole.docs.iter().map(Node::to_json).collect();
        assert_eq!(values(docs), whole_values, "split and whole stream differ");
    }
    for doc in docs.iter().flatten() {
        let value = doc.node.to_json();
        assert_eq!(reread(&doc.text), value, "the text {:?}", doc.text);
        let written = to_yaml(&doc.node, &|_| None);
        assert_eq!(reread(&written), value, "the written {written:?}");
    }
}

/// A tree with sequences, escaped keys and an empty key to resolve pointers in.
static TREE: LazyLock<Node> = LazyLock::new(|| {
    let yaml = "a:\n  - b: 1\n  - [x, y]\n\"~/\":\n  \"\": 2\n\"0\": {\"10\": 3}\n";
    parse_stream(yaml, FILE, &limits()).docs.remove(0)
});

/// RFC 6901 pointers: parsing never panics, and parse and format are inverse both ways
/// (escaping is canonical, so a valid pointer formats back to its exact text).
pub fn pointer(data: &[u8]) {
    let Some(text) = text(data) else { return };
    if let Ok(pointer) = Pointer::parse(text) {
        assert_eq!(join(pointer.tokens()), text);
        assert!(pointer.contains(&pointer));
        pointer.get(&TREE);
    }
    // The NUL-separated parts as decoded tokens (a few: the escaping is under test, not the count).
    let tokens: Vec<String> = text.split('\0').take(32).map(str::to_string).collect();
    let joined = join(&tokens);
    let pointer = Pointer::parse(&joined).expect("a joined pointer parses");
    assert_eq!(pointer.tokens(), tokens, "{joined:?}");
}

fn run(env: &[(&str, &str)]) -> Result<Settings, Vec<Diagnostic>> {
    let lookup = |key: &str| {
        env.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| (*v).to_string())
    };
    let result = settings(&lookup);
    if let Err(diags) = &result {
        assert!(!diags.is_empty());
        assert!(
            diags.iter().all(|d| matches!(
                d.code,
                Code::InvalidParameters | Code::InvalidApiVersionEntry
            )),
            "{diags:?}"
        );
    }
    result
}

/// What the settings must be for `params` (the known names only).
fn expected(params: &[(&str, &str)]) -> Result<Settings, ()> {
    let last = |name: &str| {
        let value = params.iter().rev().find(|(n, _)| *n == name)?.1;
        (!value.is_empty()).then(|| value.to_string())
    };
    Ok(Settings {
        target: last("target"),
        path: last("path"),
        allow_empty: match last("allow-empty").as_deref() {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => return Err(()),
        },
        values: last("values"),
        target_values: last("target-values"),
        ..Settings::default()
    })
}

/// The plugin's settings from Argo CD's environment. Any `ARGOCD_APP_PARAMETERS` text (with any
/// app name, API versions and allow-empty setting) gives settings or `invalid_parameters` (and
/// `invalid_api_version_entry` for `KUBE_API_VERSIONS`),
/// never a panic; and the parameters of a list Argo CD would send (one line `name<TAB>string`
/// each) come out exactly: the last of a name wins, an empty one is unset.
pub fn argocd_params(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let mut fields = text.splitn(4, '\0');
    let mut field = || fields.next().unwrap_or_default();
    let env = [
        ("ARGOCD_APP_PARAMETERS", field()),
        ("ARGOCD_APP_NAME", field()),
        ("KUBE_API_VERSIONS", field()),
        ("NYL_ALLOW_EMPTY", field()),
    ];
    if let Ok(s) = run(&env) {
        let set = [
            &s.target,
            &s.path,
            &s.values,
            &s.target_values,
            &s.kube_version,
        ];
        assert!(
            set.iter().all(|v| v.as_ref().is_none_or(|v| !v.is_empty())),
            "{s:?}"
        );
        assert!(
            s.api_versions
                .iter()
                .all(|v| !v.is_empty() && v.trim() == v),
            "{s:?}"
        );
    }

    let params: Vec<(&str, &str)> = text
        .lines()
        .map(|l| l.split_once('\t').unwrap_or((l, "")))
        .collect();
    let list: Vec<_> = params
        .iter()
        .map(|(name, value)| serde_json::json!({"name": name, "string": value}))
        .collect();
    let json = serde_json::Value::Array(list).to_string();
    let got = run(&[("ARGOCD_APP_PARAMETERS", &json)]);
    let all_known = params
        .iter()
        .all(|(name, _)| PARAMETERS.iter().any(|(known, _, _)| known == name));
    match (
        got,
        all_known.then(|| expected(&params)).and_then(Result::ok),
    ) {
        (Ok(got), Some(want)) => assert_eq!(got, want, "{json}"),
        (Err(_), None) => {}
        (got, want) => panic!("{json}: got {got:?}, want {want:?}"),
    }
}

/// Loading `nyl.toml` from any text: a config or diagnostics that point at its lines, never a
/// panic; a config it accepts keeps every search path inside the project.
pub fn nyl_toml(data: &[u8]) {
    let Some(text) = text(data) else { return };
    match parse_config(text, FILE, &objects::Limits::default()) {
        Ok((config, warnings)) => {
            assert_lines_in(text, &warnings);
            let paths = config
                .components_search_paths
                .iter()
                .chain(&config.targets_search_paths);
            for path in paths {
                assert!(
                    !path.starts_with('/') && !path.split('/').any(|s| s == ".."),
                    "{path:?}"
                );
            }
        }
        Err(diags) => {
            assert!(!diags.is_empty());
            assert_lines_in(text, &diags);
        }
    }
}

/// Rendering any text as an app file template: the rendered text, or problems at lines of the
/// text, never a panic; every line of what it renders maps to a line of the text (or to none), and
/// the documents read from it point there too.
pub fn template(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let values = parse_stream(
        "environment: test\nreplicas: 2\nhosts: [a, b]\n",
        FILE,
        &limits(),
    )
    .docs
    .into_iter()
    .next()
    .unwrap_or_else(|| Node::new(Value::Null, Prov::written(Loc::new(FILE, 0))));
    let context = template::Context {
        values: Some(values),
        target_name: Some("test".into()),
        ..template::Context::default()
    };
    match template::render(text, &context, FILE) {
        Ok(rendered) => {
            let lines = lines(text);
            for line in 1..=self::lines(&rendered.text) {
                let source = rendered.source_line(line);
                assert!(
                    source <= lines,
                    "rendered line {line} maps past the last ({lines}): {source}"
                );
            }
            assert!(rendered.templated.iter().all(|&l| l <= lines));
            let (docs, diags) = parse_documents(&rendered.text, FILE, &limits(), Mode::Strict);
            for mut doc in docs {
                rendered.remap_node(&mut doc.node);
                assert_node_lines_in(text, &doc.node);
            }
            let mut diags = diags;
            for d in &mut diags {
                rendered.remap_diagnostic(d, FILE);
            }
            assert_lines_in(text, &diags);
        }
        Err(diags) => {
            assert!(!diags.is_empty());
            assert_lines_in(text, &diags);
        }
    }
}
