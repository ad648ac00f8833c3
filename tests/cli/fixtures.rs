//! Every canvas RAGFlow exported (`../shared/fixtures/ragflow`) either runs (its models
//! answered by the mock LLM), or stops with a one-line error saying what is not
//! supported yet, or is refused before it starts for what RAGFlow itself refuses or this
//! build cannot run, each problem on a line with its place — never a panic.

use crate::util::{canvas, shared_dir};

/// The fixtures a run refuses before it starts, and why: RAGFlow's own check (ExeSQL on
/// RAGFlow's database) or a Message attachment this build cannot make.
const REFUSED: &[(&str, &str)] = &[
    (
        "go-testdata/switch.json",
        ": Message:RedHousesStart: Message output_format \"html\" (a file attachment) is not supported yet",
    ),
    (
        "go-testdata/dfx_picture_parser.json",
        ": Message:WackyWeeksTravel: Message output_format \"md\"",
    ),
    (
        "test-dsl/exesql.json",
        ": exesql:0: For the security reason, it does not support database named rag_flow.",
    ),
];

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
        let refused = REFUSED.iter().find(|(name, _)| f.ends_with(name));
        if let Some((_, why)) = refused {
            assert_eq!(
                code,
                Some(2),
                "{}: refused before it starts: {err}",
                f.display()
            );
            assert!(out.stdout.is_empty(), "{}: no run, no events", f.display());
            // Each problem on its own line, at its line and column in the file.
            let at = format!("error: {}:", f.display());
            let errors: Vec<&str> = err.lines().filter(|l| !l.starts_with("hint:")).collect();
            assert!(
                !errors.is_empty() && errors.iter().all(|l| l.starts_with(&at)),
                "{}: {err}",
                f.display()
            );
            assert!(
                errors.iter().any(|l| l.contains(why)),
                "{}: {err}",
                f.display()
            );
            assert!(err.contains("canvas validate"), "{}: {err}", f.display());
            continue;
        }
        match code {
            Some(0) => {}
            // Waiting at a form: non-interactive runs stop there and say how to resume.
            Some(3) => assert!(
                err.contains("waiting for input: canvas resume"),
                "{}: {err}",
                f.display()
            ),
            Some(1 | 2) => {
                let lines: Vec<_> = err
                    .lines()
                    .filter(|l| !l.starts_with("hint:") && !l.starts_with("warning:"))
                    .collect();
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
