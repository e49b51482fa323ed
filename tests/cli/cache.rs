//! The render cache and parallel renders, through whole runs of the binary.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{args, copy_dir, nyl, root, tempdir};

struct Run {
    status: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// (hits, misses) from the summary line.
    fn counts(&self) -> (usize, usize) {
        let line = self
            .stderr
            .lines()
            .find_map(|l| {
                l.split_once("render cache: ")
                    .map(|(_, rest)| rest.to_string())
            })
            .unwrap_or_else(|| panic!("no cache summary in {}", self.stderr));
        let numbers: Vec<usize> = line
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect();
        (numbers[0], numbers[1])
    }
}

/// A private copy of the render fixture and a cache directory for it.
fn setup(name: &str) -> (PathBuf, PathBuf) {
    let tmp = tempdir(name);
    let repo = tmp.join("repo");
    fs::create_dir_all(&repo).unwrap();
    copy_dir(&root().join("tests/fixtures/render"), &repo);
    (repo, tmp.join("cache"))
}

fn render(repo: &Path, cache: &Path, extra: &str) -> Run {
    let line = format!(
        "render --target prod-eu-1 {extra} apps/dump.yaml apps/nested.yaml apps/helmchart.yaml"
    );
    let env = [
        ("NYL_CACHE_DIR".to_string(), cache.display().to_string()),
        (
            "RUST_LOG".to_string(),
            "nyl_render::helm::cache=info".to_string(),
        ),
    ];
    let (status, stdout, stderr) = nyl(repo, &args(&line), &env);
    Run {
        status,
        stdout,
        stderr,
    }
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from}", path.display());
    fs::write(path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn a_hit_gives_byte_identical_output_also_on_a_fresh_copy() {
    let (repo, cache) = setup("cache-hit");
    let cold = render(&repo, &cache, "");
    assert_eq!(cold.status, 0, "{}", cold.stderr);
    assert_eq!(
        cold.counts(),
        (0, 5),
        "dump, parent, its child and two HelmCharts: {}",
        cold.stderr
    );
    let warm = render(&repo, &cache, "");
    assert_eq!(warm.counts(), (5, 0));
    assert_eq!(warm.stdout, cold.stdout);
    // Argo CD unpacks a fresh copy of the repository for every request: content, not paths.
    let copy = repo.parent().unwrap().join("copy");
    fs::create_dir_all(&copy).unwrap();
    copy_dir(&repo, &copy);
    let fresh = render(&copy, &cache, "");
    assert_eq!(fresh.counts(), (5, 0));
    assert_eq!(fresh.stdout, cold.stdout);
}

/// A render no lookup can find starts Helm before the chart is hashed (the `seen` file has no
/// bit for its inputs). Whatever that file says, the output is the same and what is stored hits.
#[test]
fn the_seen_file_never_changes_the_output_only_whether_a_lookup_is_made() {
    let (repo, cache) = setup("cache-seen");
    let cold = render(&repo, &cache, "");
    assert_eq!(cold.counts(), (0, 5), "{}", cold.stderr);
    let seen = cache.join("seen");
    assert_eq!(
        fs::metadata(&seen).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(render(&repo, &cache, "").counts(), (5, 0));
    // Lost, or all bits cleared: rendered again, not looked up, and stored again.
    for lost in [None, Some(vec![0u8; 8192])] {
        match &lost {
            None => fs::remove_file(&seen).unwrap(),
            Some(zeros) => fs::write(&seen, zeros).unwrap(),
        }
        let run = render(&repo, &cache, "");
        assert_eq!(run.counts(), (0, 5), "{}", run.stderr);
        assert_eq!(run.stdout, cold.stdout);
        assert_eq!(render(&repo, &cache, "").counts(), (5, 0));
    }
    // With one thread of work the chart is hashed after Helm: stored under the same keys.
    fs::remove_file(&seen).unwrap();
    let one = render(&repo, &cache, "-j 1");
    assert_eq!(one.counts(), (0, 5), "{}", one.stderr);
    assert_eq!(one.stdout, cold.stdout);
    assert_eq!(render(&repo, &cache, "").counts(), (5, 0));
    // Unreadable: looked up, and found.
    fs::remove_file(&seen).unwrap();
    fs::create_dir(&seen).unwrap();
    let run = render(&repo, &cache, "");
    assert_eq!(run.counts(), (5, 0), "{}", run.stderr);
    assert_eq!(run.stdout, cold.stdout);
}

#[test]
fn every_key_input_change_is_a_miss() {
    let (repo, cache) = setup("cache-keys");
    let base = render(&repo, &cache, "");
    assert_eq!(base.status, 0, "{}", base.stderr);
    assert_eq!(render(&repo, &cache, "").counts(), (5, 0));

    // A chart file: only the releases of that chart miss (dump and the parent's child).
    edit(
        &repo.join("components/example/v1/Dump/templates/dump.yaml"),
        "What Helm ended up with",
        "What Helm got",
    );
    let run = render(&repo, &cache, "");
    assert_eq!(run.counts(), (3, 2));
    assert_ne!(run.stdout, base.stdout);

    // The contract.
    edit(
        &repo.join("components/example/v1/Dump/nyl-component.yaml"),
        "to: /storage/class}",
        "to: /storage/klass}",
    );
    assert_eq!(render(&repo, &cache, "").counts(), (3, 2));

    // A Cluster value that reaches an import.
    edit(
        &repo.join("targets/prod.yaml"),
        "fromTarget: cluster-value",
        "fromTarget: changed",
    );
    assert_eq!(render(&repo, &cache, "").counts(), (3, 2));

    // The kube version misses everything; asking again for it hits.
    assert_eq!(
        render(&repo, &cache, "--kube-version 1.28.0").counts(),
        (0, 5)
    );
    assert_eq!(
        render(&repo, &cache, "--kube-version 1.28.0").counts(),
        (5, 0)
    );
}

#[test]
fn another_helm_binary_is_a_miss() {
    let (repo, cache) = setup("cache-helm");
    assert_eq!(render(&repo, &cache, "").counts(), (0, 5));
    // A copy of the binary is another binary to the cache (its identity is probed once per run).
    let other = repo.parent().unwrap().join("other-helm");
    fs::copy(super::helm(), &other).unwrap();
    let env = [
        ("NYL_CACHE_DIR".to_string(), cache.display().to_string()),
        (
            "RUST_LOG".to_string(),
            "nyl_render::helm::cache=info".to_string(),
        ),
        ("NYL_HELM".to_string(), other.display().to_string()),
    ];
    let (status, _, stderr) = nyl(
        &repo,
        &args("render --target prod-eu-1 apps/dump.yaml apps/nested.yaml apps/helmchart.yaml"),
        &env,
    );
    assert_eq!(status, 0, "{stderr}");
    assert!(
        stderr.contains("render cache: 0 hits, 5 misses"),
        "{stderr}"
    );
}

#[test]
fn a_corrupt_entry_is_a_miss_never_wrong_output() {
    let (repo, cache) = setup("cache-corrupt");
    let cold = render(&repo, &cache, "");
    let entries: Vec<PathBuf> = walkdir::WalkDir::new(&cache)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "entry"))
        .map(walkdir::DirEntry::into_path)
        .collect();
    assert_eq!(entries.len(), 5);
    // One entry flipped, one truncated, one emptied.
    let mut flipped = fs::read(&entries[0]).unwrap();
    for (from, to) in [("ConfigMap", "ConfigMaq"), ("Widget", "Widgat")] {
        if let Some(at) = flipped
            .windows(from.len())
            .position(|w| w == from.as_bytes())
        {
            flipped[at..at + to.len()].copy_from_slice(to.as_bytes());
        }
    }
    assert_ne!(flipped, fs::read(&entries[0]).unwrap());
    fs::write(&entries[0], flipped).unwrap();
    let bytes = fs::read(&entries[1]).unwrap();
    fs::write(&entries[1], &bytes[..bytes.len() / 2]).unwrap();
    fs::write(&entries[2], "").unwrap();
    let run = render(&repo, &cache, "");
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(run.stdout, cold.stdout);
    assert_eq!(run.counts(), (2, 3));
    assert_eq!(
        run.stderr.matches("corrupt render cache entry").count(),
        3,
        "{}",
        run.stderr
    );
}

#[test]
fn concurrent_writers_do_not_corrupt_the_cache() {
    let (repo, cache) = setup("cache-concurrent");
    let runs: Vec<Run> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| render(&repo, &cache, "-j 2")))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for run in &runs {
        assert_eq!(run.status, 0, "{}", run.stderr);
        assert_eq!(run.stdout, runs[0].stdout);
    }
    let after = render(&repo, &cache, "");
    assert_eq!(after.counts(), (5, 0), "{}", after.stderr);
    assert!(!after.stderr.contains("corrupt"), "{}", after.stderr);
    assert_eq!(after.stdout, runs[0].stdout);
}

#[test]
fn an_unwritable_cache_costs_one_warning_not_the_render() {
    let (repo, tmp) = setup("cache-unwritable");
    fs::write(&tmp, "a file where the cache directory should be").unwrap();
    let run = render(&repo, &tmp.join("cache"), "");
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(run.stdout.contains("kind: ConfigMap"));
    assert_eq!(
        run.stderr.matches("render cache not written").count(),
        1,
        "{}",
        run.stderr
    );
}

#[test]
fn no_cache_and_refresh() {
    let (repo, cache) = setup("cache-flags");
    let env = [
        ("NYL_CACHE_DIR".to_string(), cache.display().to_string()),
        ("RUST_LOG".to_string(), "nyl_render::helm=debug".to_string()),
    ];
    let off = render(&repo, &cache, "--no-cache");
    assert_eq!(off.status, 0, "{}", off.stderr);
    assert!(
        !off.stderr.contains("render cache:"),
        "nothing counted: {}",
        off.stderr
    );
    assert_eq!(
        fs::read_dir(&cache).map_or(0, Iterator::count),
        0,
        "--no-cache writes no render entry, and the pinned helm's version is read from the \
         binary, so no `helm version` answer is remembered either"
    );
    // The version a release build of Helm recorded: no `helm version` process at all.
    let (status, _, stderr) = nyl(&repo, &args("render --no-cache apps/dump.yaml"), &env);
    assert_eq!(status, 0, "{stderr}");
    assert!(
        stderr.contains("helm found") && !stderr.contains("asking its version"),
        "{stderr}"
    );

    // A helm whose build says nothing (here a script that runs it) is asked, and the answer is
    // remembered: no render output, so `--no-cache` keeps and uses it.
    let wrapper = repo.parent().unwrap().join("helm-wrapper");
    fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec '{}' \"$@\"\n", super::helm().display()),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    let wrapped = [
        env[0].clone(),
        env[1].clone(),
        ("NYL_HELM".to_string(), wrapper.display().to_string()),
    ];
    let (status, _, stderr) = nyl(&repo, &args("render --no-cache apps/dump.yaml"), &wrapped);
    assert_eq!(status, 0, "{stderr}");
    assert!(stderr.contains("asking its version"), "{stderr}");
    let probe = fs::read_dir(cache.join("helm-probes"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    fs::write(&probe, "v9.8.7").unwrap();
    let (status, _, stderr) = nyl(&repo, &args("render --no-cache apps/dump.yaml"), &wrapped);
    assert_eq!(status, 0, "{stderr}");
    assert!(stderr.contains("v9.8.7"), "the remembered answer: {stderr}");
    assert!(!stderr.contains("asking its version"), "{stderr}");

    assert_eq!(render(&repo, &cache, "").counts(), (0, 5));
    assert_eq!(
        render(&repo, &cache, "--refresh").counts(),
        (0, 5),
        "--refresh does not read"
    );
    assert_eq!(render(&repo, &cache, "").counts(), (5, 0));
}

#[test]
fn parallel_renders_keep_order_and_bytes() {
    let (repo, cache) = setup("parallel");
    let serial = render(&repo, &cache, "-j 1 --no-cache");
    let parallel = render(&repo, &cache, "-j 8 --no-cache");
    assert_eq!(serial.status, 0, "{}", serial.stderr);
    assert_eq!(parallel.stdout, serial.stdout);
}

#[test]
fn the_cache_stays_within_its_bound() {
    let (repo, cache) = setup("cache-bound");
    let env = [
        ("NYL_CACHE_DIR".to_string(), cache.display().to_string()),
        ("NYL_CACHE_MAX_BYTES".to_string(), "1500".to_string()),
    ];
    let (status, _, stderr) = nyl(
        &repo,
        &args("render --target prod-eu-1 -j 1 apps/dump.yaml apps/nested.yaml apps/helmchart.yaml"),
        &env,
    );
    assert_eq!(status, 0, "{stderr}");
    let sizes: Vec<u64> = walkdir::WalkDir::new(&cache)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "entry"))
        .map(|e| e.metadata().unwrap().len())
        .collect();
    assert!(!sizes.is_empty() && sizes.len() < 5, "{sizes:?}");
    assert!(sizes.iter().sum::<u64>() <= 1500, "{sizes:?}");
}

/// The owner of a file this process just created: the user the tests run as.
fn my_uid(dir: &Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    let probe = dir.join("uid-probe");
    fs::write(&probe, "").unwrap();
    let uid = fs::metadata(&probe).unwrap().uid();
    fs::remove_file(&probe).unwrap();
    uid
}

fn entry_files(cache: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = walkdir::WalkDir::new(cache)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "entry"))
        .map(walkdir::DirEntry::into_path)
        .collect();
    entries.sort();
    entries
}

/// Overwrites every entry with a well-formed one (right key, digest and length) whose output
/// is not what Helm rendered, as someone who can write the cache directory could.
fn forge(cache: &Path) {
    for entry in entry_files(cache) {
        let key = entry.file_stem().unwrap().to_str().unwrap().to_string();
        let yaml = format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: forged-{}\n",
            &key[..8]
        );
        // An entry: the output, the index of its documents (one document, from byte 0 to the
        // end, on line 1, its text its bytes, left to the full reader: varints and absent
        // fields), then the trailer.
        assert!(yaml.len() < 128, "one byte as a varint");
        let index = [1, 0, yaml.len() as u8, 1, 0, 0];
        let body = [yaml.as_bytes(), &index].concat();
        // The digest of the digests of its blocks: one block, as the body is short.
        let block = xxhash_rust::xxh3::xxh3_128(&body).to_le_bytes();
        let digest = xxhash_rust::xxh3::xxh3_128(&block);
        let trailer = format!(
            "nyl-cache-v8 {key} {digest:032x} {:020} {:020}\n",
            index.len(),
            yaml.len()
        );
        fs::write(&entry, [body.as_slice(), trailer.as_bytes()].concat()).unwrap();
    }
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn planted_entries_are_served_only_from_what_the_user_alone_can_write() {
    let (repo, cache) = setup("cache-planted");
    let cold = render(&repo, &cache, "");
    assert_eq!(cold.status, 0, "{}", cold.stderr);
    forge(&cache);
    // The control: forged entries in the user's own private directory are served (so the
    // forgery is well-formed and the cases below would show it).
    let served = render(&repo, &cache, "");
    assert!(served.stdout.contains("name: forged-"), "{}", served.stderr);

    let untrusted = |run: &Run, why: &str| {
        assert_eq!(run.status, 0, "{}", run.stderr);
        assert_eq!(run.stdout, cold.stdout, "rendered anew, not planted");
        assert_eq!(run.stderr.matches(why).count(), 1, "{}", run.stderr);
    };

    // A directory others can write (as a 777 one another user pre-created): not used at all.
    chmod(&cache, 0o777);
    let run = render(&repo, &cache, "");
    untrusted(
        &run,
        "render cache directory is writable by group or others",
    );
    assert!(!run.stderr.contains("render cache:"), "{}", run.stderr);
    chmod(&cache, 0o700);

    // Entries others can write: each rendered again (and replaced), one warning for the run.
    forge(&cache);
    for entry in entry_files(&cache) {
        chmod(&entry, 0o666);
    }
    let run = render(&repo, &cache, "");
    untrusted(&run, "render cache entry is writable by group or others");
    assert_eq!(run.counts(), (0, 5));
    assert_eq!(
        render(&repo, &cache, "").counts(),
        (5, 0),
        "replaced by own"
    );

    // Another user's entries or directory. As root the test plants them for `nobody`; as any
    // other user it cannot, and points the cache at `/`, which root owns.
    forge(&cache);
    if my_uid(cache.parent().unwrap()) == 0 {
        for entry in entry_files(&cache) {
            std::os::unix::fs::chown(&entry, Some(65534), Some(65534)).unwrap();
        }
        untrusted(
            &render(&repo, &cache, ""),
            "render cache entry is owned by another user",
        );
        std::os::unix::fs::chown(&cache, Some(65534), Some(65534)).unwrap();
        untrusted(
            &render(&repo, &cache, ""),
            "render cache directory is owned by another user",
        );
    } else {
        untrusted(
            &render(&repo, Path::new("/"), ""),
            "render cache directory is owned by another user",
        );
    }
}

#[test]
fn a_new_cache_directory_is_private() {
    use std::os::unix::fs::MetadataExt;
    let (repo, cache) = setup("cache-private");
    let cache = cache.join("nested/nyl");
    assert_eq!(render(&repo, &cache, "").status, 0);
    assert_eq!(fs::metadata(&cache).unwrap().mode() & 0o777, 0o700);
    for entry in entry_files(&cache) {
        assert_eq!(fs::metadata(&entry).unwrap().mode() & 0o777, 0o600);
    }
}

#[test]
fn api_versions_helm_would_read_otherwise_are_refused_not_cached() {
    let (repo, cache) = setup("cache-api-versions");
    let target = repo.join("targets/prod.yaml");
    // Helm reads only the first line of `--api-versions`: with the newline this Cluster would
    // render as if it served only x/v1, under the key of the two-entry list below.
    edit(
        &target,
        "      - monitoring.coreos.com/v1",
        "      - \"x/v1\\nmonitoring.coreos.com/v1\"",
    );
    let run = render(&repo, &cache, "");
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("targets/prod.yaml:9: error invalid_api_version_entry"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
    assert!(entry_files(&cache).is_empty(), "nothing rendered or cached");

    edit(
        &target,
        "      - \"x/v1\\nmonitoring.coreos.com/v1\"",
        "      - x/v1\n      - monitoring.coreos.com/v1",
    );
    let run = render(&repo, &cache, "");
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(run.stdout.contains("hasMonitoring: \"true\""));
}

#[test]
fn chart_file_names_count_as_bytes() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    // Two repositories whose charts differ only in a file name that is not UTF-8 (0xfe, 0xff:
    // alike when converted lossily); the chart prints its files' names.
    let (first, cache) = setup("cache-file-names");
    let second = first.parent().unwrap().join("second");
    fs::create_dir_all(&second).unwrap();
    copy_dir(&first, &second);
    let mut outputs = Vec::new();
    for (repo, byte) in [(&first, 0xfe_u8), (&second, 0xff_u8)] {
        let chart = repo.join("components/example/v1/Dump");
        fs::write(
            chart.join("templates/files.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-files\ndata:\n  names: \
             \"{{ range $path, $_ := .Files.Glob \"files/*\" }}{{ $path | b64enc }}{{ end }}\"\n",
        )
        .unwrap();
        fs::create_dir_all(chart.join("files")).unwrap();
        fs::write(
            chart.join("files").join(OsStr::from_bytes(&[b'f', byte])),
            "",
        )
        .unwrap();
        let run = render(repo, &cache, "");
        assert_eq!(run.status, 0, "{}", run.stderr);
        outputs.push(run.stdout);
    }
    // base64 of "files/f\xfe" and "files/f\xff".
    assert!(
        outputs[0].contains("names: \"ZmlsZXMvZv4=\""),
        "{}",
        outputs[0]
    );
    assert!(
        outputs[1].contains("names: \"ZmlsZXMvZv8=\""),
        "{}",
        outputs[1]
    );
}

#[test]
fn eviction_examines_a_bounded_number_of_entries() {
    let (repo, cache) = setup("cache-evict-bounded");
    // 3000 entries an earlier nyl left without an index: no run stats them all, and writing
    // runs bring the cache under its bound.
    for i in 0..3000 {
        let shard = cache.join(format!("{:02x}", i % 256));
        fs::create_dir_all(&shard).unwrap();
        fs::write(shard.join(format!("{i:064x}.entry")), [b'x'; 10]).unwrap();
    }
    let env = [
        ("NYL_CACHE_DIR".to_string(), cache.display().to_string()),
        ("NYL_CACHE_MAX_BYTES".to_string(), "20000".to_string()),
        (
            "RUST_LOG".to_string(),
            "nyl_render::helm::cache=debug".to_string(),
        ),
    ];
    let mut removed = 0;
    for _ in 0..3 {
        let (status, _, stderr) = nyl(
            &repo,
            &args("render --target prod-eu-1 --refresh -j 1 apps/dump.yaml"),
            &env,
        );
        assert_eq!(status, 0, "{stderr}");
        let line = stderr
            .lines()
            .find(|l| l.contains("render cache swept"))
            .unwrap_or_else(|| panic!("no sweep logged: {stderr}"));
        let field = |name: &str| -> usize {
            line.split(&format!("{name}="))
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in {line}"))
        };
        assert!(field("examined") <= field("budget"), "{line}");
        assert!(field("budget") < 3000, "{line}");
        removed += field("removed");
    }
    let total: u64 = entry_files(&cache)
        .iter()
        .map(|e| fs::metadata(e).unwrap().len())
        .sum();
    assert!(
        removed > 0 && total <= 20000,
        "{removed} removed, {total} bytes left"
    );
}
