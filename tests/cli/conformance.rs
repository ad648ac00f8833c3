//! RAGFlow's recorded event streams (`../shared/conformance`), compared event by event by
//! its `run.py`. Cases not passing yet are listed in
//! `tests/conformance-expected-failures.txt`; that list only shrinks.

use std::process::Command;

use crate::util::shared_dir;

#[test]
fn conformance_suite() {
    let Some(shared) = shared_dir() else { return };
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("python3")
        .arg(shared.join("conformance/run.py"))
        .args(["--bin", env!("CARGO_BIN_EXE_canvas"), "--expect-fail"])
        .arg(format!("{root}/tests/conformance-expected-failures.txt"))
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "conformance failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
