//! Shared flag groups: environment twins behave like their flags, `-v` logs on stderr
//! only, and mistyped names get a "did you mean" hint.

use crate::util::{TIMEOUT, canvas, canvases, events, expect_code, stderr};

/// `CANVAS_STORE` is `--store`'s twin: a run stored through it is listed through it.
#[test]
fn canvas_store_env_is_the_store_flag() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("env.db");
    let hello = canvases().join("hello.json");
    let out = canvas()
        .env("CANVAS_STORE", &db)
        .args(["run", "-q", "hi", "--format", "jsonl"])
        .arg(&hello)
        .timeout(TIMEOUT)
        .output()
        .expect("run");
    expect_code(&out, 0, "run");
    assert!(
        db.exists(),
        "the store named by CANVAS_STORE was not created"
    );
    let listed = canvas()
        .args(["runs", "--format", "json", "--store"])
        .arg(&db)
        .timeout(TIMEOUT)
        .output()
        .expect("runs");
    expect_code(&listed, 0, "runs");
    let runs: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("json");
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
}

/// `-v` logs what the CLI does on stderr; stdout stays one JSON event per line.
#[test]
fn verbose_logs_go_to_stderr_only() {
    let hello = canvases().join("hello.json");
    let out = canvas()
        .args(["run", "-q", "hi", "--format", "jsonl", "-v"])
        .arg(&hello)
        .timeout(TIMEOUT)
        .output()
        .expect("run");
    expect_code(&out, 0, "run -v");
    let err = stderr(&out);
    for what in ["run store opened", "run created", "turn ended"] {
        assert!(err.contains(what), "{what} missing from stderr: {err}");
    }
    // Every stdout line is an event.
    assert!(!events(&out.stdout).is_empty());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("run store opened"), "{text}");
}

/// An unknown component class suggests the closest known one.
#[test]
fn unknown_class_suggests_a_known_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("typo.json");
    std::fs::write(
        &file,
        r#"{"components":{"begin":{"obj":{"component_name":"Begin","params":{}},"downstream":["Mesage:A"],"upstream":[]},
            "Mesage:A":{"obj":{"component_name":"Mesage","params":{}},"downstream":[],"upstream":["begin"]}}}"#,
    )
    .expect("write");
    let out = canvas()
        .arg("run")
        .arg(&file)
        .timeout(TIMEOUT)
        .output()
        .expect("run");
    expect_code(&out, 2, "run typo.json");
    assert!(
        stderr(&out).contains("hint: did you mean \"Message\"?"),
        "{}",
        stderr(&out)
    );
}
