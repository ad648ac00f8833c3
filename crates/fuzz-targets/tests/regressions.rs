//! Every input under `fuzz/regressions/<target>/` (crashes and hangs the fuzzers found,
//! and hand-written edge cases) through its target, on stable, in the ordinary test
//! suite. `docs/fuzzing.md` says how an input gets there.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use canvas_fuzz_targets::{Bounded, TARGETS, target};

// As in the fuzz binaries: an input asking for gigabytes aborts instead of passing
// because the memory was never touched.
#[global_allocator]
static ALLOC: Bounded = Bounded;

/// The CLI reads these files on its main thread, whose stack is 8 MiB; a test thread
/// has 2 MiB, and debug builds use more stack per call.
const STACK: usize = 8 << 20;

/// Far beyond what any input takes in a debug build: a hang fixed for good stays fixed.
const SLOW: Duration = Duration::from_secs(60);

/// `fuzz/regressions`, which the repository holds (a checkout without it is broken).
fn regressions() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    assert!(root.is_dir(), "{} is missing", root.display());
    root
}

#[test]
fn every_regression_input_passes_its_target() {
    let root = regressions();
    let mut ran = 0;
    let mut failed = Vec::new();
    for dir in sorted_entries(&root) {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let f = target(&name).unwrap_or_else(|| panic!("{}: no target {name:?}", dir.display()));
        for file in sorted_entries(&dir) {
            let data = std::fs::read(&file).expect("a regression input reads");
            let started = Instant::now();
            let shown = format!(
                "fuzz/regressions/{name}/{}",
                file.file_name().unwrap_or_default().display()
            );
            let passed = std::thread::Builder::new()
                .name(shown.clone())
                .stack_size(STACK)
                .spawn(move || f(&data))
                .expect("a thread starts")
                .join()
                .is_ok();
            let took = started.elapsed();
            if !passed {
                failed.push(format!("{shown}: the target panicked"));
            } else if took > SLOW {
                failed.push(format!("{shown}: took {took:?}"));
            }
            ran += 1;
        }
    }
    assert!(ran > 0, "no regression input under {}", root.display());
    assert!(
        failed.is_empty(),
        "{} of {ran} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

#[test]
fn every_target_has_a_regression_directory() {
    let root = regressions();
    for (name, _) in TARGETS {
        assert!(
            root.join(name).is_dir(),
            "fuzz/regressions/{name} is missing"
        );
    }
}

/// The paths in directory `dir`, sorted.
fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    paths.sort();
    paths
}
