//! Bad input: a one-line error naming the file (and component), the documented exit
//! code, never a panic.

use std::path::Path;

use crate::harness::CanvasCli;
use crate::util::canvas;

/// Run `canvas run FILE` and return (exit code, stderr).
fn run_file(name: &str, text: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join(name);
    std::fs::write(&f, text).unwrap();
    run_path(&f)
}

fn run_path(f: &Path) -> (Option<i32>, String) {
    let ran = CanvasCli::new()
        .args(["run", "--format", "jsonl"])
        .arg(f)
        .run();
    (ran.exit_code(), ran.stderr())
}

/// One `error:` line holding every needle (warnings about what the run meets only if it
/// gets there may come before it).
fn assert_one_line(stderr: &str, needles: &[&str]) {
    let lines: Vec<_> = stderr
        .lines()
        .filter(|l| !l.starts_with("hint:") && !l.starts_with("warning:"))
        .collect();
    assert_eq!(lines.len(), 1, "one error line expected: {stderr:?}");
    assert!(lines[0].starts_with("error: "), "{stderr:?}");
    for n in needles {
        assert!(lines[0].contains(n), "{n:?} missing from {stderr:?}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The `hint:` line after the error.
fn hint(stderr: &str) -> &str {
    let hints: Vec<&str> = stderr.lines().filter(|l| l.starts_with("hint: ")).collect();
    assert_eq!(hints.len(), 1, "one hint line expected: {stderr:?}");
    hints[0]
}

const MSG: &str = r#""Message:M": {"obj": {"component_name": "Message", "params": {"content": ["hi"]}}, "downstream": []}"#;

#[test]
fn malformed_json_names_file_and_line() {
    let (code, err) = run_file("bad.json", "{\n  \"components\": {,\n}");
    assert_eq!(code, Some(2));
    assert_one_line(&err, &["bad.json", "line 2"]);
    assert!(hint(&err).contains("RAGFlow canvas"), "{err}");
}

#[test]
fn malformed_yaml() {
    let (code, err) = run_file("bad.yaml", "components:\n  begin: [\n");
    assert_eq!(code, Some(2));
    assert_one_line(&err, &["bad.yaml", "YAML"]);
}

#[test]
fn missing_begin() {
    let (code, err) = run_file("nobegin.json", &format!(r#"{{"components": {{{MSG}}}}}"#));
    assert_eq!(code, Some(2));
    assert_one_line(&err, &["nobegin.json", "begin"]);
}

#[test]
fn begin_with_another_id() {
    let text = format!(
        r#"{{"components": {{"Begin:X": {{"obj": {{"component_name": "Begin", "params": {{}}}}, "downstream": ["Message:M"]}}, {MSG}}}}}"#
    );
    let (code, err) = run_file("otherbegin.json", &text);
    assert_eq!(code, Some(2));
    assert_one_line(&err, &["Begin:X"]);
}

#[test]
fn dangling_downstream() {
    let text = format!(
        r#"{{"components": {{"begin": {{"obj": {{"component_name": "Begin", "params": {{}}}}, "downstream": ["Message:Nope"]}}, {MSG}}}}}"#
    );
    let (code, err) = run_file("dangling.json", &text);
    assert_eq!(code, Some(2));
    // Refused with validate's finding: `FILE:LINE:COL: node: message`.
    assert_one_line(&err, &["dangling.json:1:", ": begin: ", "Message:Nope"]);
    assert!(hint(&err).contains("canvas validate"), "{err}");
}

#[test]
fn unknown_component() {
    let text = r#"{"components": {"begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Frobnicate:1"]},
        "Frobnicate:1": {"obj": {"component_name": "Frobnicate", "params": {}}, "downstream": []}}}"#;
    let (code, err) = run_file("unknown.json", text);
    assert_eq!(code, Some(2));
    assert_one_line(&err, &["unknown.json", "Frobnicate:1", "Frobnicate"]);
    assert!(hint(&err).contains("canvas components"), "{err}");
}

#[test]
fn unsupported_component_is_refused_or_stops_the_run_cleanly() {
    let text = r#"{"components": {"begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Browser:A"]},
        "Browser:A": {"obj": {"component_name": "Browser", "params": {}}, "downstream": []}}}"#;
    let (code, err) = run_file("docs.json", text);
    assert_eq!(code, Some(2));
    assert_one_line(&err, &["docs.json:2:", "Browser:A", "not supported"]);
    // With `--no-validate` the run goes as far as the component.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("docs.json");
    std::fs::write(&f, text).unwrap();
    let out = canvas()
        .args(["run", "--no-validate", "--format", "jsonl"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_one_line(&err, &["docs.json", "Browser:A", "not supported"]);
    // The events up to that point were emitted.
    let evs = crate::util::events(&out.stdout);
    assert_eq!(evs.last().unwrap()["event"], "node_started");
}

#[test]
fn unresolved_reference_is_a_clean_failure() {
    let text = r#"{"components": {"begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Message:M"]},
        "Message:M": {"obj": {"component_name": "Message", "params": {"content": ["x {env.nope} y"]}}, "downstream": []}}}"#;
    let (code, err) = run_file("ref.json", text);
    assert_eq!(code, Some(1));
    assert_one_line(&err, &["ref.json", "Message:M", "env.nope"]);
    // RAGFlow runs it up to there, so does the run; it warns first.
    assert!(
        err.starts_with("warning: ")
            && err.contains("ref.json:2:83: Message:M: reference `{env.nope}`")
            && err.contains("the run fails if it gets there"),
        "{err}"
    );
}

#[test]
fn missing_file_and_bad_inputs() {
    let (code, err) = run_path(Path::new("/nonexistent/flow.json"));
    assert_eq!(code, Some(2));
    assert_one_line(&err, &["/nonexistent/flow.json"]);
    let out = canvas()
        .args(["run", "-i", "novalue", "--format", "jsonl"])
        .arg(crate::util::canvases().join("hello.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_one_line(&String::from_utf8(out.stderr).unwrap(), &["KEY=VALUE"]);
}

#[test]
fn not_a_canvas_and_graph_only() {
    let (code, err) = run_file("list.json", "[1, 2]");
    assert_eq!(code, Some(2));
    assert_one_line(&err, &["not a canvas"]);
    let (code, err) = run_file(
        "graph.json",
        r#"{"graph": {"nodes": [], "edges": []}, "globals": {}}"#,
    );
    assert_eq!(code, Some(2));
    assert_one_line(&err, &["no graph nodes"]);
}

/// YAML nested 100,000 deep is refused at once, as JSON is (the YAML parser alone took
/// 20 s and more), with the line and column: a canvas, an inputs file, a mock script,
/// an `llm.yaml`.
#[test]
fn deeply_nested_yaml_is_refused_at_once() {
    let deep = |key: &str| format!("{key}: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let canvas_file = write("deep.yaml", &format!("components: {{}}\n{}", deep("x")));
    let inputs_file = write("in.yaml", &deep("a"));
    let mock_file = write("mock.yaml", &deep("rules"));
    let llm_file = write("llm.yaml", &deep("models"));
    let hello = crate::util::canvases().join("hello.json");
    let hello = hello.to_str().unwrap();
    let cases: [(&[&str], &str, usize); 5] = [
        (&["run", &canvas_file], "deep.yaml", 4 + 128),
        (&["validate", &canvas_file], "deep.yaml", 4 + 128),
        (
            &["run", hello, "--inputs", &inputs_file],
            "in.yaml",
            4 + 128,
        ),
        (
            &["run", hello, "--mock-llm", &mock_file],
            "mock.yaml",
            8 + 128,
        ),
        (
            &["run", hello, "--llm-config", &llm_file],
            "llm.yaml",
            9 + 128,
        ),
    ];
    for (args, file, column) in cases {
        let started = std::time::Instant::now();
        let ran = CanvasCli::new().args(args).run();
        let took = started.elapsed();
        // validate reports on stdout, the others on stderr.
        let (code, out, err) = ran.parts();
        let err = format!("{out}{err}");
        assert!(code == 2, "{args:?}: exit {code}\n{err}");
        let place = format!("nested deeper than 128 levels at line 2 column {column}");
        let place = if file == "deep.yaml" {
            place
        } else {
            place.replace("line 2", "line 1")
        };
        assert!(
            err.contains(file) && err.contains(&place),
            "{args:?}: {err}"
        );
        assert!(
            took < std::time::Duration::from_secs(5),
            "{args:?} took {took:?}"
        );
    }
}
