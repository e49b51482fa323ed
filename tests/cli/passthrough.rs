//! Chart output passed on byte for byte: `nyl render` against `helm template` of the same chart.

use super::{args, helm_stdout, nyl, root, tempdir};

/// What the real Helm prints for the fixture's Bytes chart, as the invocation renders it.
fn helm_template() -> String {
    helm_stdout(
        &[
            "template",
            "bytes",
            "components/pass/v1/Bytes",
            "--namespace",
            "monitoring",
            "--include-crds",
        ],
        &root().join("tests/fixtures/passthrough"),
    )
}

#[test]
fn render_is_byte_identical_to_helm_template() {
    let expected = helm_template();
    // The fixture exercises what a re-writing reader would lose.
    for (what, bytes) in [
        ("a kept block scalar's blank lines", "    line\n\n\n\n---\n"),
        ("an end marker", "  size: 3\n...\n"),
        (
            "content on a marker line",
            "\n{apiVersion: v1, kind: ConfigMap",
        ),
        (
            "whitespace-only lines ending a document",
            "  a: b\n  \n    \n",
        ),
        (
            "a CRD's own comment",
            "# A CRD with a comment of its own.\n",
        ),
        (
            "a comment-led document",
            "# comment-led document\n\napiVersion",
        ),
    ] {
        assert!(
            expected.contains(bytes),
            "helm printed no {what}: {expected}"
        );
    }
    let repo = root().join("tests/fixtures/passthrough");
    let cache = tempdir("passthrough-cache");
    let env = [("NYL_CACHE_DIR".to_string(), cache.display().to_string())];
    for run in ["cold", "warm (from the cache)", "without the cache"] {
        let extra = if run == "without the cache" {
            "--no-cache "
        } else {
            ""
        };
        let (status, stdout, stderr) = nyl(
            &repo,
            &args(&format!("render {extra}apps/bytes.yaml")),
            &env,
        );
        assert_eq!(status, 0, "{stderr}");
        assert!(
            stdout == expected,
            "{run}: nyl render differs from helm template\n--- nyl\n{stdout}\n--- helm\n{expected}"
        );
    }
}
