//! The documentation's commands, run as shown: every ```` ```sh ```` and ```` ```console ```` block
//! of README.md and docs/*.md runs in a scratch copy of the repository, with the built `nyl` on
//! `PATH` and the pinned helm. A failing command fails the test; a console block's output must
//! match what it shows, with `[..]` for any text within a line and a `...` line for any lines.
//! Blocks marked `no-run` (synopses; commands that need a network, a cluster or docker, or take
//! minutes) are not run. The conventions are in docs/testing.md.
//!
//! `NYL_BLESS=docs/PAGE.md` rewrites the outputs of the console commands that differ.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{golden, helm, root, tempdir};

/// A fenced block the test runs.
struct Block {
    /// 1-based line of the opening fence.
    line: usize,
    /// `in=DIR`: the directory of the scratch copy it runs in; else where the previous block left
    /// the shell (the copy's root for a page's first block).
    dir: Option<String>,
    body: Body,
}

enum Body {
    /// `sh`: every line must succeed; the output is not compared.
    Script(String),
    /// `console`: `$ ` commands, each followed by the output it must print.
    Session(Vec<Step>),
}

struct Step {
    command: String,
    expected: Vec<String>,
    /// 0-based line of the page where `expected` starts, and the fence's indentation (for blessing).
    expected_at: usize,
    indent: String,
}

/// The blocks of a page to run, or the page's problems with its fences and markers.
fn parse(page: &str) -> Result<Vec<Block>, Vec<String>> {
    let lines: Vec<&str> = page.lines().collect();
    let mut blocks = Vec::new();
    let mut problems = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        let fence = trimmed.len() - trimmed.trim_start_matches('`').len();
        let info = &trimmed[fence..];
        // CommonMark: three or more backticks, and an info string without one.
        if fence < 3 || info.contains('`') {
            i += 1;
            continue;
        }
        let indent = lines[i][..lines[i].len() - trimmed.len()].to_string();
        let open = i;
        let end = (open + 1..lines.len())
            .find(|&j| {
                let close = lines[j].trim();
                close.len() >= fence && close.chars().all(|c| c == '`')
            })
            .unwrap_or(lines.len());
        // Content lines lose the fence's indentation (a block inside a list item).
        let content: Vec<&str> = lines[open + 1..end]
            .iter()
            .map(|l| l.strip_prefix(indent.as_str()).unwrap_or(l.trim_start()))
            .collect();
        i = end + 1;

        let mut words = info.split_whitespace();
        let lang = words.next().unwrap_or_default();
        let mut dir = None;
        let mut run = true;
        for word in words {
            match word {
                "no-run" => run = false,
                w if w.starts_with("in=") => dir = Some(w["in=".len()..].to_string()),
                w => problems.push(format!(
                    "line {}: unknown marker {w:?} (markers: no-run, in=DIR)",
                    open + 1
                )),
            }
        }
        let runnable = matches!(lang, "sh" | "console");
        if !runnable && (dir.is_some() || !run) {
            problems.push(format!(
                "line {}: markers belong on sh and console blocks only",
                open + 1
            ));
        }
        if matches!(lang, "bash" | "shell" | "shell-session") {
            problems.push(format!(
                "line {}: write commands as ```sh or ```console (this test runs those)",
                open + 1
            ));
        }
        if !runnable || !run {
            continue;
        }
        let body = if lang == "sh" {
            Body::Script(content.join("\n"))
        } else {
            match session(&content, open + 1, &indent) {
                Ok(steps) => Body::Session(steps),
                Err(problem) => {
                    problems.push(problem);
                    continue;
                }
            }
        };
        blocks.push(Block {
            line: open + 1,
            dir,
            body,
        });
    }
    if problems.is_empty() {
        Ok(blocks)
    } else {
        Err(problems)
    }
}

/// Splits a console block into commands: a `$ ` line, and the lines after it while a line ends in
/// `\`; the lines up to the next command are its output.
fn session(content: &[&str], first: usize, indent: &str) -> Result<Vec<Step>, String> {
    let mut steps: Vec<Step> = Vec::new();
    let mut continued = false;
    for (n, line) in content.iter().enumerate() {
        if continued {
            let step = steps.last_mut().expect("a continued command");
            step.command.push('\n');
            step.command.push_str(line);
            step.expected_at = first + n + 1;
        } else if let Some(command) = line.strip_prefix("$ ") {
            steps.push(Step {
                command: command.to_string(),
                expected: Vec::new(),
                expected_at: first + n + 1,
                indent: indent.to_string(),
            });
        } else if let Some(step) = steps.last_mut() {
            step.expected.push((*line).to_string());
            continue;
        } else {
            return Err(format!(
                "line {}: a console block starts with a `$ ` command",
                first + n + 1
            ));
        }
        continued = line.ends_with('\\');
    }
    Ok(steps)
}

/// Whether `actual` is what `expected` shows: `[..]` stands for any text within a line, a line
/// `...` for any number of lines.
fn output_matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=actual.len()).any(|skip| output_matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual.split_first().is_some_and(|(line, others)| {
            line_matches(first, line) && output_matches(rest, others)
        }),
    }
}

fn line_matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split("[..]").collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return line == pattern;
    }
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    // The leftmost place of each middle part leaves the most room for the others.
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// One bash script for the page: blocks share the shell (its directory and exports), each
/// command's output goes to a file of `out`. A script block runs under `set -e`, so its first
/// failing line ends the shell; a console command's status is recorded.
fn script(blocks: &[Block], scratch: &Path, out: &Path) -> String {
    let mut s = String::new();
    for (b, block) in blocks.iter().enumerate() {
        if let Some(dir) = &block.dir {
            let _ = writeln!(s, "cd {} || exit", quote(&scratch.join(dir)));
        }
        match &block.body {
            Body::Script(text) => {
                let file = quote(&out.join(format!("{b}")));
                let ok = quote(&out.join(format!("{b}.ok")));
                let _ = writeln!(
                    s,
                    "set -e\n{{\n{text}\n}} >{file} 2>&1 </dev/null\nset +e\n: >{ok}"
                );
            }
            Body::Session(steps) => {
                for (n, step) in steps.iter().enumerate() {
                    let file = quote(&out.join(format!("{b}.{n}")));
                    let rc = quote(&out.join(format!("{b}.{n}.rc")));
                    let _ = writeln!(
                        s,
                        "{{\n{}\n}} >{file} 2>&1 </dev/null\necho $? >{rc}",
                        step.command
                    );
                }
            }
        }
    }
    s
}

/// The tracked files of the repository, copied, with the pinned helm where
/// `scripts/install-helm` looks for it (so it installs nothing).
fn scratch_copy() -> PathBuf {
    let scratch = tempdir("docs");
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("run git ls-files");
    assert!(listed.status.success(), "git ls-files failed");
    for name in listed.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = std::str::from_utf8(name).expect("utf-8 file name");
        let from = root().join(name);
        if !from.is_file() {
            continue; // deleted in the work tree
        }
        let to = scratch.join(name);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(&from, &to).unwrap();
    }
    let pinned = scratch.join("tools/helm-4.3.1/helm");
    fs::create_dir_all(pinned.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(helm(), pinned).unwrap();
    scratch
}

/// Runs a page's blocks; returns its failures (empty when every command did what it shows).
fn run_page(name: &str, page: &str) -> Vec<String> {
    let blocks = match parse(page) {
        Ok(blocks) if blocks.is_empty() => return Vec::new(),
        Ok(blocks) => blocks,
        Err(problems) => return problems.iter().map(|p| format!("{name}: {p}")).collect(),
    };
    let scratch = scratch_copy();
    let out = tempdir("docs-out");
    // `nyl` is the binary under test, found on PATH as a reader's would be.
    let bin = tempdir("docs-bin");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_nyl"), bin.join("nyl")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let home = tempdir("docs-home");
    let status = Command::new("bash")
        .args([
            "--noprofile",
            "--norc",
            "-c",
            &script(&blocks, &scratch, &out),
        ])
        .current_dir(&scratch)
        .env_clear()
        .env("PATH", path)
        .env("NYL_HELM", helm())
        .env("HOME", &home)
        .stdin(Stdio::null())
        .status()
        .expect("run bash");

    let read = |file: String| fs::read_to_string(out.join(file)).ok();
    let mut failures = Vec::new();
    let mut blessed = Vec::new();
    for (b, block) in blocks.iter().enumerate() {
        match &block.body {
            Body::Script(_) => {
                if read(format!("{b}.ok")).is_none() {
                    failures.push(format!(
                        "{name}:{}: the block failed ({status}); its output:\n{}",
                        block.line,
                        read(format!("{b}")).unwrap_or_default()
                    ));
                    break; // `set -e` ended the shell: nothing after it ran
                }
            }
            Body::Session(steps) => {
                for (n, step) in steps.iter().enumerate() {
                    let Some(rc) = read(format!("{b}.{n}.rc")) else {
                        failures.push(format!(
                            "{name}:{}: `{}` did not run: the shell ended before it",
                            step.expected_at, step.command
                        ));
                        return finish(failures, &scratch, &[&out, &bin, &home]);
                    };
                    let actual = read(format!("{b}.{n}")).unwrap_or_default();
                    let lines: Vec<&str> = actual.lines().collect();
                    if rc.trim() != "0" {
                        failures.push(format!(
                            "{name}:{}: `{}` exited {} (show a failing command as \
                             `CMD; echo \"exit $?\"`); its output:\n{actual}",
                            step.expected_at,
                            step.command,
                            rc.trim()
                        ));
                    } else if !output_matches(&step.expected, &lines) {
                        if golden::blessed(name) {
                            blessed.push((step, lines.join("\n")));
                            continue;
                        }
                        let expected = step.expected.join("\n") + "\n";
                        let diff = similar::TextDiff::from_lines(expected.as_str(), &actual)
                            .unified_diff()
                            .header("shown", "printed")
                            .to_string();
                        failures.push(format!(
                            "{name}:{}: `{}` printed other output than the page shows \
                             (NYL_BLESS={name} rewrites it, read the diff first):\n{diff}",
                            step.expected_at, step.command
                        ));
                    }
                }
            }
        }
    }
    if !blessed.is_empty() {
        bless(name, page, &blessed);
    }
    finish(failures, &scratch, &[&out, &bin, &home])
}

/// Removes a page's directories when it passed; keeps the scratch copy of a failed one to look at.
fn finish(mut failures: Vec<String>, scratch: &Path, others: &[&Path]) -> Vec<String> {
    if failures.is_empty() {
        let _ = fs::remove_dir_all(scratch);
    } else {
        failures.push(format!("(the scratch copy is kept: {})", scratch.display()));
    }
    for dir in others {
        let _ = fs::remove_dir_all(dir);
    }
    failures
}

/// Rewrites the shown output of each step with what it printed.
fn bless(name: &str, page: &str, steps: &[(&Step, String)]) {
    let mut lines: Vec<String> = page.lines().map(str::to_string).collect();
    // From the end, so earlier line numbers stay right.
    for (step, actual) in steps.iter().rev() {
        let new = actual
            .lines()
            .map(|l| format!("{}{l}", step.indent).trim_end().to_string());
        lines.splice(
            step.expected_at..step.expected_at + step.expected.len(),
            new,
        );
    }
    fs::write(root().join(name), lines.join("\n") + "\n").expect("bless the page");
}

fn pages() -> Vec<String> {
    let mut pages = vec!["README.md".to_string()];
    let mut docs: Vec<String> = fs::read_dir(root().join("docs"))
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.ends_with(".md").then(|| format!("docs/{name}"))
        })
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

#[test]
fn docs_commands_run_as_shown() {
    let failures: Vec<String> = std::thread::scope(|scope| {
        let runs: Vec<_> = pages()
            .into_iter()
            .map(|name| {
                scope.spawn(move || {
                    let page = fs::read_to_string(root().join(&name)).unwrap();
                    run_page(&name, &page)
                })
            })
            .collect();
        runs.into_iter()
            .flat_map(|run| run.join().expect("a page's run panicked"))
            .collect()
    });
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

/// The quickstart is a reader's first run: all of it runs, nothing is left out.
#[test]
fn docs_quickstart_runs_end_to_end() {
    let page = fs::read_to_string(root().join("docs/quickstart.md")).unwrap();
    let blocks = parse(&page).unwrap_or_else(|p| panic!("{}", p.join("\n")));
    assert!(
        !page.contains(" no-run"),
        "docs/quickstart.md marks a block no-run"
    );
    assert!(blocks.len() >= 8, "docs/quickstart.md lost its steps");
}

#[test]
fn docs_placeholders_match_within_a_line_and_across_lines() {
    let shown = |s: &str| s.lines().map(str::to_string).collect::<Vec<_>>();
    assert!(line_matches(
        "helm: [..]/helm ([..])",
        "helm: /tmp/x/helm (v4.3.1)"
    ));
    assert!(line_matches("a[..]", "a"));
    assert!(!line_matches("a[..]b[..]c", "a-c-b"));
    assert!(!line_matches("exit 0", "exit 1"));
    assert!(output_matches(
        &shown("one\n...\nfour"),
        &["one", "two", "three", "four"]
    ));
    assert!(output_matches(&shown("one\n...\nfour"), &["one", "four"]));
    assert!(!output_matches(&shown("one\n...\nfour"), &["one", "two"]));
    assert!(!output_matches(&shown("one"), &["one", "two"]));
}

/// The test fails on a failing command, a failing console command and a wrong output, and reads
/// every marker.
#[test]
fn docs_failures_are_reported() {
    let page = "\
```sh
true
false
```

```console
$ echo same
same
$ echo printed
shown
$ false
```
";
    // Runs a page that must fail, and removes the scratch copy it keeps.
    let failing = |page: &str| {
        let failures = run_page("docs/example.md", page);
        let kept = failures.last().expect("failures");
        let kept = kept.trim_start_matches("(the scratch copy is kept: ");
        fs::remove_dir_all(kept.trim_end_matches(')')).expect("the kept scratch copy");
        failures
    };
    let failures = failing(page).join("\n");
    assert!(
        failures.contains("docs/example.md:1: the block failed"),
        "{failures}"
    );
    assert!(
        !failures.contains("printed other output"),
        "ran after a failed block"
    );

    let failures = failing(&page[page.find("```console").unwrap()..]);
    assert_eq!(failures.len(), 3, "{failures:?}");
    assert!(failures[0].contains("`echo printed` printed other output"));
    assert!(failures[1].contains("`false` exited 1"));
    assert!(failures[2].starts_with("(the scratch copy is kept"));

    let failures = run_page("docs/example.md", "```sh norun\nfalse\n```\n");
    assert!(
        failures[0].contains("unknown marker \"norun\""),
        "{failures:?}"
    );
}
