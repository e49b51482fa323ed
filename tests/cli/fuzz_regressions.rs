//! Every input of `fuzz/regressions/` (what the fuzz targets once crashed on) and `fuzz/corpus/`
//! (their seeds) through the fuzz targets' own checks, on the stable toolchain without libFuzzer:
//! a fixed crash that comes back fails here, in CI, not only in the next `scripts/fuzz` run.

use std::fs;

#[path = "../../fuzz/src/lib.rs"]
mod checks;

#[test]
fn fuzz_inputs_pass_their_targets_checks() {
    let mut replayed = 0;
    let mut failed = Vec::new();
    for dir in ["regressions", "corpus"] {
        let root = crate::root().join("fuzz").join(dir);
        for entry in fs::read_dir(&root).expect("fuzz inputs") {
            let target_dir = entry.expect("fuzz inputs").path();
            let name = target_dir
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string();
            let (_, check) = checks::TARGETS
                .iter()
                .find(|(t, _)| *t == name)
                .unwrap_or_else(|| panic!("{}: no fuzz target of that name", target_dir.display()));
            for input in fs::read_dir(&target_dir).expect("fuzz inputs") {
                let path = input.expect("fuzz inputs").path();
                let data = fs::read(&path).expect("a fuzz input");
                if std::panic::catch_unwind(|| check(&data)).is_err() {
                    failed.push(path.display().to_string());
                }
                replayed += 1;
            }
        }
    }
    assert!(failed.is_empty(), "failing their checks again: {failed:#?}");
    // The 12 regressions of yaml_split alone; a wrong directory would replay nothing.
    assert!(replayed >= 12, "only {replayed} fuzz inputs found");
}
