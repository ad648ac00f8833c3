//! Answers given on the command line (`-i`, `--inputs`) are checked against the fields
//! the canvas declares before anything runs: a bad one is one line naming the field and
//! what it takes, exit 2, nothing stored; on `resume`, the run keeps waiting.

use std::path::Path;

use crate::util::{canvases, cli, events, expect_code, runs, status, stderr};

/// `canvas run canvases/trip.yaml ARGS --mock-llm trip.mock.yaml --store STORE`.
fn trip(args: &[&str], store: &Path) -> std::process::Output {
    let flow = canvases().join("trip.yaml");
    let mock = canvases().join("trip.mock.yaml");
    let mut line = vec!["run", flow.to_str().unwrap()];
    line.extend_from_slice(args);
    line.extend(["--mock-llm", mock.to_str().unwrap(), "--format", "jsonl"]);
    cli(&line, store)
}

/// The error lines of stderr (hints and warnings aside); there must be exactly one.
fn one_error(err: &str) -> String {
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(lines.len(), 1, "one error line expected: {err:?}");
    assert!(!err.contains("panicked"), "{err}");
    lines[0].to_string()
}

/// Nothing was stored: no store file, or one without runs.
fn nothing_stored(store: &Path) {
    if store.exists() {
        assert!(runs(store).is_empty(), "a refused run was stored");
    }
}

#[test]
fn inputs_an_option_not_listed_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = trip(&["-i", "destination=Lisbon", "-i", "pace=frantic"], &store);
    expect_code(&out, 2, "an option that is not listed");
    let line = one_error(&stderr(&out));
    assert_eq!(
        line,
        r#"error: input "pace" expects one of "relaxed", "packed"; got "frantic""#
    );
    assert!(
        stderr(&out).contains("hint: -i pace=relaxed"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty(), "nothing ran");
    nothing_stored(&store);
}

#[test]
fn inputs_an_option_is_matched_ignoring_case() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = trip(
        &[
            "-i",
            "destination=Lisbon",
            "-i",
            "days=2",
            "-i",
            "pace=Packed",
        ],
        &store,
    );
    expect_code(&out, 0, "a case slip in an option");
    let evs = events(&out.stdout);
    let content = evs.last().unwrap()["data"]["outputs"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        content.starts_with("Lisbon: 2 days, packed pace."),
        "{content}"
    );
}

#[test]
fn inputs_file_values_are_checked_as_i_values_are() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    for (name, text, needle) in [
        (
            "in.yaml",
            "destination: Lisbon\ndays: many\n",
            r#"input "days" expects an integer; got "many""#,
        ),
        (
            "in.json",
            r#"{"destination": "Lisbon", "days": 3.5}"#,
            r#"input "days" expects an integer; got "3.5""#,
        ),
        (
            "opts.yaml",
            "destination: Lisbon\ndays: 3\npace: frantic\n",
            r#"input "pace" expects one of "relaxed", "packed"; got "frantic""#,
        ),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let out = trip(&["--inputs", file.to_str().unwrap()], &store);
        expect_code(&out, 2, name);
        let line = one_error(&stderr(&out));
        assert!(line.contains(name), "{line}");
        assert!(line.contains(needle), "{line}");
        nothing_stored(&store);
    }
    // Values of the right type, and text that parses as one, are taken.
    let file = dir.path().join("good.yaml");
    std::fs::write(&file, "destination: Lisbon\ndays: \"4\"\npace: relaxed\n").unwrap();
    let out = trip(&["--inputs", file.to_str().unwrap()], &store);
    expect_code(&out, 0, "good values");
}

#[test]
fn inputs_unknown_keys_are_warned_about_with_the_closest_field() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = trip(
        &[
            "-i",
            "destination=Lisbon",
            "-i",
            "dayz=3",
            "-i",
            "pace=packed",
        ],
        &store,
    );
    // The form still lacks `days`: it waits for it.
    expect_code(&out, 3, "a mistyped form field");
    let err = stderr(&out);
    assert!(
        err.contains(r#"warning: "#)
            && err.contains(r#"trip.yaml has no field "dayz" (did you mean "days"?)"#),
        "{err}"
    );
    assert!(err.contains("-i days=…"), "{err}");
}

#[test]
fn inputs_a_bad_answer_on_resume_leaves_the_run_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = trip(&["-i", "destination=Lisbon"], &store);
    expect_code(&out, 3, "run to the form");
    let id = events(&out.stdout)[0]["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = cli(
        &[
            "resume",
            &id,
            "-i",
            "days=2",
            "-i",
            "pace=frantic",
            "--format",
            "jsonl",
        ],
        &store,
    );
    expect_code(&out, 2, "a bad answer to the waiting form");
    let line = one_error(&stderr(&out));
    assert!(
        line.contains(r#"input "pace" expects one of "relaxed", "packed""#),
        "{line}"
    );
    assert!(out.stdout.is_empty(), "nothing ran");
    assert_eq!(status(&store, &id), "waiting");
    let out = cli(
        &[
            "resume",
            &id,
            "-i",
            "days=2",
            "-i",
            "pace=relaxed",
            "--format",
            "jsonl",
        ],
        &store,
    );
    expect_code(&out, 0, "the right answer");
    assert_eq!(status(&store, &id), "succeeded");
}

/// An entry in RAGFlow's API shape is a request as RAGFlow's API takes it: passed on
/// unchecked (RAGFlow does not check it either), with a warning when it does not fit.
#[test]
fn inputs_api_shaped_entries_are_passed_on_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = trip(&["-i", "destination=Lisbon"], &store);
    expect_code(&out, 3, "run to the form");
    let file = dir.path().join("answers.json");
    std::fs::write(
        &file,
        r#"{"days": {"type": "integer", "value": 2}, "pace": {"type": "options", "value": "frantic"}}"#,
    )
    .unwrap();
    let out = cli(
        &[
            "resume",
            "latest",
            "--inputs",
            file.to_str().unwrap(),
            "--format",
            "jsonl",
        ],
        &store,
    );
    expect_code(&out, 0, "an API-shaped answer");
    let err = stderr(&out);
    assert!(
        err.contains(r#"warning: "#)
            && err.contains(r#"input "pace" expects one of "relaxed", "packed"; got "frantic""#)
            && err.contains("passed on as given"),
        "{err}"
    );
    let evs = events(&out.stdout);
    let content = evs.last().unwrap()["data"]["outputs"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        content.starts_with("Lisbon: 2 days, frantic pace."),
        "{content}"
    );
}

#[test]
fn inputs_a_missing_begin_input_is_named_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = trip(&[], &store);
    expect_code(&out, 2, "no destination");
    let err = stderr(&out);
    let line = one_error(&err);
    assert!(
        line.ends_with(
            r#"trip.yaml: Begin input "destination" (Destination) is required and not given"#
        ),
        "{line}"
    );
    assert!(
        err.contains("hint: give it with -i destination=… (or --inputs FILE)"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing ran");
    nothing_stored(&store);

    // A mistyped key is pointed at.
    let out = trip(&["-i", "destinaton=Lisbon"], &store);
    expect_code(&out, 2, "a mistyped destination");
    let err = stderr(&out);
    assert!(
        err.contains(r#"hint: did you mean "destination" for "destinaton"?"#),
        "{err}"
    );
    nothing_stored(&store);

    // Only the required ones are named.
    let router = canvases().join("router.yaml");
    let out = cli(
        &[
            "run",
            router.to_str().unwrap(),
            "-q",
            "down",
            "-i",
            "priority=low",
        ],
        &store,
    );
    expect_code(&out, 2, "router without affected");
    let line = one_error(&stderr(&out));
    assert!(line.contains(r#"Begin input "affected""#), "{line}");
    assert!(!line.contains("priority"), "{line}");
    nothing_stored(&store);
}

/// Begin gives a lone declared field the query when no inputs are given (RAGFlow's
/// Begin does): that field is not missing.
#[test]
fn inputs_a_lone_begin_input_takes_the_query() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = trip(&["-q", "Lisbon"], &store);
    expect_code(&out, 3, "the query as the destination");
    let evs = events(&out.stdout);
    let begin = evs
        .iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "begin")
        .unwrap();
    assert_eq!(begin["data"]["outputs"]["destination"], "Lisbon");
}

/// The text `hello.json` answers for a query: `You said "QUERY".`.
fn said(out: &std::process::Output) -> String {
    let evs = events(&out.stdout);
    let content = evs.last().unwrap()["data"]["outputs"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    content
        .strip_prefix("You said \"")
        .and_then(|c| c.strip_suffix("\"."))
        .unwrap_or_else(|| panic!("not hello's answer: {content:.200}"))
        .to_string()
}

/// A query longer than one argument may be (128 KiB on Linux) comes from a file with
/// `-q @FILE`, or from stdin with `-q @-`; `@@` starts a query with a literal `@`.
#[test]
fn inputs_a_query_too_long_for_argv_comes_from_a_file_or_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let hello = canvases().join("hello.json");
    let hello = hello.to_str().unwrap();
    let long = "word ".repeat(40_000);
    let file = dir.path().join("query.txt");
    std::fs::write(&file, format!("{long}\n")).unwrap();
    let at = format!("@{}", file.display());
    let out = cli(&["run", hello, "-q", &at, "--format", "jsonl"], &store);
    expect_code(&out, 0, "-q @FILE");
    assert_eq!(said(&out), long, "the file's text, less its last newline");

    let out = crate::harness::CanvasCli::new()
        .args(["run", hello, "-q", "@-", "--format", "jsonl", "--store"])
        .arg(&store)
        .stdin("from a pipe\n")
        .run()
        .code(0)
        .into_output();
    assert_eq!(said(&out), "from a pipe");

    let out = cli(
        &["run", hello, "-q", "@@handle", "--format", "jsonl"],
        &store,
    );
    expect_code(&out, 0, "-q @@");
    assert_eq!(said(&out), "@handle");

    let out = cli(&["run", hello, "-q", "@/nonexistent/q.txt"], &store);
    expect_code(&out, 2, "-q @missing");
    assert!(
        stderr(&out).contains("cannot read /nonexistent/q.txt"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn inputs_a_value_comes_from_a_file_with_at() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let file = dir.path().join("dest.txt");
    std::fs::write(&file, "Lisbon\n").unwrap();
    let out = trip(&["-i", &format!("destination=@{}", file.display())], &store);
    expect_code(&out, 3, "-i KEY=@FILE");
    let evs = events(&out.stdout);
    let begin = evs
        .iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "begin")
        .unwrap();
    assert_eq!(begin["data"]["outputs"]["destination"], "Lisbon");

    // stdin cannot carry both the canvas and a value.
    let out = crate::harness::CanvasCli::new()
        .args(["run", "-", "-i", "destination=@-", "--store"])
        .arg(&store)
        .stdin(std::fs::read(canvases().join("trip.yaml")).unwrap())
        .run()
        .code(2)
        .into_output();
    let line = one_error(&stderr(&out));
    assert!(
        line.contains("stdin can carry the canvas (-) or a value (@-), not both"),
        "{line}"
    );
}
