//! Every canvas RAGFlow exported (`../shared/fixtures/ragflow`) either runs (its models
//! answered by the mock LLM) or stops with a one-line error saying what is not
//! supported yet — never a panic.

use crate::util::{canvas, shared_dir};

#[test]
fn every_fixture_runs_or_fails_cleanly() {
    let Some(shared) = shared_dir() else { return };
    let mut files: Vec<_> = walk(&shared.join("fixtures/ragflow"));
    files.sort();
    assert!(
        files.len() >= 13,
        "expected the RAGFlow fixtures, found {}",
        files.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let mock = dir.path().join("echo.yaml");
    std::fs::write(&mock, "default: echo\n").unwrap();
    for f in files {
        let out = canvas()
            .args([
                "run",
                "--format",
                "jsonl",
                "--non-interactive",
                "-q",
                "hello",
            ])
            .arg(&f)
            .arg("--mock-llm")
            .arg(&mock)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code();
        assert!(!err.contains("panicked"), "{}: panic: {err}", f.display());
        match code {
            Some(0) => {}
            // Waiting at a form: non-interactive runs stop there and say how to resume.
            Some(3) => assert!(
                err.contains("waiting for input: canvas resume"),
                "{}: {err}",
                f.display()
            ),
            Some(1 | 2) => {
                let lines: Vec<_> = err.lines().filter(|l| !l.starts_with("hint:")).collect();
                assert_eq!(
                    lines.len(),
                    1,
                    "{}: one error line expected, got {err:?}",
                    f.display()
                );
                // What is not supported yet, or (the mock's answers being what they
                // are) the component that failed and why.
                assert!(
                    lines[0].contains("not supported")
                        || lines[0].contains("legacy")
                        || lines[0].contains("component \""),
                    "{}: the error must say what is not supported or which component failed: {err:?}",
                    f.display()
                );
            }
            other => panic!("{}: unexpected exit {other:?}: {err}", f.display()),
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    out
}
