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
    renders_as("apps/bytes.yaml", &expected, &tempdir("passthrough-cache"));
}

/// The bytes of `text` around `at`, for a message.
fn around(text: &str, at: usize) -> std::borrow::Cow<'_, str> {
    let bytes = text.as_bytes();
    String::from_utf8_lossy(&bytes[at.saturating_sub(200)..(at + 200).min(bytes.len())])
}

/// `nyl render APP` of the passthrough fixture prints `expected` cold, from the cache and without
/// it.
fn renders_as(app: &str, expected: &str, cache: &std::path::Path) {
    let repo = root().join("tests/fixtures/passthrough");
    let env = [
        ("NYL_CACHE_DIR".to_string(), cache.display().to_string()),
        (
            "RUST_LOG".to_string(),
            "nyl_render::helm::cache=debug".to_string(),
        ),
    ];
    for run in ["cold", "warm (from the cache)", "without the cache"] {
        let extra = if run == "without the cache" {
            "--no-cache "
        } else {
            ""
        };
        let (status, stdout, stderr) = nyl(&repo, &args(&format!("render {extra}{app}")), &env);
        assert_eq!(status, 0, "{stderr}");
        // A warm run is served by the entry the cold one stored: verified, not rendered again.
        assert!(
            !stderr.contains("corrupt render cache entry"),
            "{run}: {stderr}"
        );
        // (A nested invocation rendered before may be a hit in the cold run too.)
        assert_eq!(
            stderr.contains("cache miss"),
            run == "cold",
            "{run}: {stderr}"
        );
        assert!(
            stderr.contains("cache hit") || !run.starts_with("warm"),
            "{run}: {stderr}"
        );
        if stdout != expected {
            let at = stdout
                .bytes()
                .zip(expected.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            panic!(
                "{run}: nyl render differs from helm template at byte {at} of {} (expected {})\n\
                 --- nyl\n{}\n--- helm\n{}",
                stdout.len(),
                expected.len(),
                around(&stdout, at),
                around(expected, at),
            );
        }
    }
}

/// A release that prints more than a megabyte is kept in a file while Helm prints it and passed
/// on from there (the cache entry, or a file of its own): the same bytes as a small one's.
#[test]
fn a_large_release_is_passed_on_as_helm_printed_it_from_its_file() {
    let repo = root().join("tests/fixtures/passthrough");
    let helm = helm_stdout(
        &[
            "template",
            "large",
            "components/pass/v1/Large",
            "--namespace",
            "monitoring",
        ],
        &repo,
    );
    assert!(helm.len() > 1 << 20, "{} bytes: not large", helm.len());
    let cache = tempdir("passthrough-large-cache");
    let env = [("NYL_CACHE_DIR".to_string(), cache.display().to_string())];
    // The nested invocation Helm prints last becomes what nyl renders for it.
    let (status, inner, stderr) = nyl(&repo, &args("render apps/inner.yaml"), &env);
    assert_eq!(status, 0, "{stderr}");
    let nested = helm
        .rfind("---\n# Source: large/templates/m-nested.yaml\n")
        .expect("the nested invocation");
    // Service accounts without a namespace get the release's, inserted as a line of its own.
    let placed = |text: &str| {
        text.replace(
            "metadata:\n  name: sa-",
            "metadata:\n  namespace: monitoring\n  name: sa-",
        )
        .replace(
            "metadata:\n  name: sb-",
            "metadata:\n  namespace: monitoring\n  name: sb-",
        )
    };
    let expected = placed(&helm[..nested]) + &inner;
    assert!(
        expected
            .matches("namespace: monitoring\n  name: sa-")
            .count()
            == 700
    );
    renders_as("apps/large.yaml", &expected, &cache);
    // A large entry of the cache is read as one: in memory, for outputs that read every document.
    let (status, json, stderr) = nyl(&repo, &args("render -o json apps/large.yaml"), &env);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(json.matches("\"name\": \"flow-b-").count(), 700);
}

/// A file nyl cannot write Helm's output into fails the render, with nothing on stdout: never an
/// exit 0 with the output cut. Provoked with a file size limit (`RLIMIT_FSIZE`) below the
/// output, as a full disk would. (Helm itself, its stdout a file that a write fails on, exits 0
/// with the file cut: the reason nyl writes the file itself, docs/performance.md, 2026-12-04.)
#[test]
fn an_output_file_that_cannot_be_written_fails_the_render() {
    use std::os::unix::process::CommandExt;
    let repo = root().join("tests/fixtures/passthrough");
    for line in [
        "render apps/large.yaml",
        "render --no-cache apps/large.yaml",
    ] {
        let cache = tempdir("passthrough-unwritable-cache");
        let dir = cache.display().to_string();
        let env = [
            ("NYL_CACHE_DIR".to_string(), dir.clone()),
            ("TMPDIR".to_string(), dir),
        ];
        let mut cmd = super::nyl_command(&repo, &args(line), &env);
        // SAFETY: setrlimit between fork and exec touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 512 << 10,
                    rlim_max: 512 << 10,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &raw const limit) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
        let out = cmd.output().expect("run nyl");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{line}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{line}: {} bytes printed",
            out.stdout.len()
        );
        assert!(
            stderr.contains("error helm_failed:")
                && stderr.contains("cannot move Helm's output into a file"),
            "{line}: {stderr}"
        );
        std::fs::remove_dir_all(&cache).ok();
    }
}
