//! Running CPython beside a comparison test.

#![allow(dead_code)] // each test file uses its part

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// Each of `cases` as a JSON line to `python3 -c script`, and each line it prints read
/// as JSON; `None` when there is no `python3` (a failure under `CI=true`, where it is
/// needed).
pub fn python_json(script: &str, cases: &[Value]) -> Option<Vec<Value>> {
    python_json_with(Path::new("python3"), script, cases)
}

/// [`python_json`] with the python of the virtual environment `scripts/test-python.sh`
/// makes (pinned packages); `None` without it, but under `CI=true`.
pub fn venv_json(script: &str, cases: &[Value]) -> Option<Vec<Value>> {
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/pyenv/bin/python");
    if !py.exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{} is missing: .ci/run runs scripts/test-python.sh first",
            py.display()
        );
        eprintln!(
            "note: no {} (scripts/test-python.sh makes it); the comparison is skipped",
            py.display()
        );
        return None;
    }
    python_json_with(&py, script, cases)
}

fn python_json_with(python: &Path, script: &str, cases: &[Value]) -> Option<Vec<Value>> {
    let mut input = String::new();
    for case in cases {
        input.push_str(&case.to_string());
        input.push('\n');
    }
    let text = run(python, script, input)?;
    Some(
        text.lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect(),
    )
}

/// The standard output of `python -c script` fed `input` on its standard input.
fn run(python: &Path, script: &str, input: String) -> Option<String> {
    let child = Command::new(python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{} is needed under CI: {e}",
                python.display()
            );
            eprintln!(
                "note: {} not found ({e}); the CPython comparison is skipped",
                python.display()
            );
            return None;
        }
    };
    // Write from a thread so a full stdout pipe cannot block us both.
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("python3 ran");
    writer
        .join()
        .expect("writer thread")
        .expect("input written");
    assert!(out.status.success(), "python3 failed: {out:?}");
    Some(String::from_utf8(out.stdout).expect("UTF-8 output"))
}
