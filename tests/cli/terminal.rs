//! A form asked on a real (pseudo-)terminal: `canvas run` reaches a UserFillUp, asks
//! each field on the terminal, re-asks a bad answer, and finishes the run in the same
//! process. A python `pty` driver plays the user; every wait has a timeout.

#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{canvases, events};

const FORM: &str = r#"{"components": {
  "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["UserFillUp:Ask"]},
  "UserFillUp:Ask": {"obj": {"component_name": "UserFillUp", "params": {"enable_tips": true,
      "tips": "Booking for {sys.query}.", "inputs": {
        "dest": {"name": "Destination", "type": "line", "optional": false},
        "guests": {"name": "Guests", "type": "integer", "optional": false},
        "breakfast": {"name": "Breakfast", "type": "boolean", "optional": false},
        "room": {"name": "Room", "type": "options", "options": ["Single", "Suite", "Family"], "optional": false}}}},
    "downstream": ["Message:Done"]},
  "Message:Done": {"obj": {"component_name": "Message", "params": {"content": [
    "Booked dest={UserFillUp:Ask@dest} guests={UserFillUp:Ask@guests} breakfast={UserFillUp:Ask@breakfast} room={UserFillUp:Ask@room}"]}},
    "downstream": []}}}"#;

/// What the answers must produce in the final message (RAGFlow drops the spaces around
/// references; the same answers given with `canvas resume -i` produce the same text).
const ANSWERED: [&str; 4] = ["dest=Rome", "guests=3", "breakfast=true", "room=Suite"];

/// Runs argv[1] (a JSON argv) on a pty. argv[2] is a JSON list of [expected text, keys
/// to type or null]: each expected text must appear (after the previous one) within
/// 20 s, then the keys are typed one at a time. argv[3], when not empty, is a file that
/// receives the program's stdout instead of the pty. Prints everything the terminal
/// showed and exits with the program's status; 124 and a reason on stderr on a timeout.
const DRIVER: &str = r##"
import json, os, pty, select, signal, sys, time, fcntl, struct, termios

argv = json.loads(sys.argv[1])
steps = json.loads(sys.argv[2])
stdout_file = sys.argv[3]
TIMEOUT = 20.0

pid, fd = pty.fork()
if pid == 0:
    try:
        if stdout_file:
            out_fd = os.open(stdout_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(out_fd, 1)
            os.close(out_fd)
        os.execv(argv[0], argv)
    finally:
        os._exit(127)

# A real size: prompts lay themselves out by the terminal's width.
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
out = bytearray()
eof = False

def pump(timeout):
    global eof
    if eof:
        return
    ready, _, _ = select.select([fd], [], [], timeout)
    if ready:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the program closed the terminal
            data = b""
        if data:
            out.extend(data)
        else:
            eof = True

def fail(msg):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    sys.stdout.buffer.write(bytes(out))
    sys.stdout.flush()
    sys.stderr.write("pty driver: " + msg + "\n")
    sys.exit(124)

pos = 0
for expect, keys in steps:
    deadline = time.monotonic() + TIMEOUT
    while True:
        found = out.decode("utf-8", "replace").find(expect, pos)
        if found >= 0:
            pos = found + len(expect)
            break
        if eof:
            fail("the program ended before showing %r" % expect)
        if time.monotonic() > deadline:
            fail("timed out after %d s waiting for %r" % (TIMEOUT, expect))
        pump(0.1)
    if keys is not None:
        # Typed like a person: the prompt reads keys in raw mode one at a time.
        time.sleep(0.2)
        for key in keys:
            os.write(fd, key.encode())
            time.sleep(0.05)

deadline = time.monotonic() + TIMEOUT
while not eof:
    if time.monotonic() > deadline:
        fail("timed out after %d s waiting for the program to end" % TIMEOUT)
    pump(0.1)
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(bytes(out))
sys.stdout.flush()
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"##;

/// The user's side: each prompt, then what is typed. "abc" for the integer must be
/// refused and the same question asked again; `j` moves the menu to "Suite".
fn steps() -> Value {
    json!([
        ["Destination: ", "Rome\r"],
        ["Guests (whole number): ", "abc\r"],
        ["is not a whole number", null],
        ["Guests (whole number): ", "3\r"],
        ["Breakfast [y/n]", "y\r"],
        ["Room:", "j\r"]
    ])
}

struct Session {
    code: Option<i32>,
    /// Everything the terminal showed.
    terminal: String,
    /// The driver's complaint, if any.
    driver: String,
}

/// `python3` is needed; missing is a failure under `CI=true`, a skip elsewhere.
fn have_python() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("python3 is missing: CI must provide it for the terminal tests");
        }
        eprintln!("skipping: python3 is missing");
    }
    ok
}

/// `canvas run FORM -q book --format jsonl` on a pty, answered by [`steps`]; stdout
/// goes to `stdout_file` when given.
fn run_on_pty(dir: &Path, stdout_file: Option<&Path>) -> Session {
    run_form_on_pty(dir, &steps(), stdout_file)
}

/// `canvas run FORM -q book --format jsonl` on a pty, answered by `steps`.
fn run_form_on_pty(dir: &Path, steps: &Value, stdout_file: Option<&Path>) -> Session {
    let flow = dir.join("form.json");
    std::fs::write(&flow, FORM).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("canvas");
    let argv = json!([
        bin,
        "run",
        flow,
        "-q",
        "book",
        "--format",
        "jsonl",
        "--store",
        dir.join("s.db")
    ]);
    pty(dir, &argv, steps, stdout_file, &[("NO_COLOR", "1")])
}

/// Run `argv` on a pty played by [`DRIVER`] with `steps`, in a clean environment
/// (`HOME` and the store in `dir`) plus `env`.
fn pty(
    dir: &Path,
    argv: &Value,
    steps: &Value,
    stdout_file: Option<&Path>,
    env: &[(&str, &str)],
) -> Session {
    let out_path = dir.join("driver.out");
    let err_path = dir.join("driver.err");
    let mut cmd = Command::new("python3");
    cmd.arg("-c")
        .arg(DRIVER)
        .arg(argv.to_string())
        .arg(steps.to_string())
        .arg(stdout_file.map(|p| p.as_os_str()).unwrap_or_default())
        // CI=true disables prompting; the test is about prompting.
        .env_remove("CI")
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .env("HOME", dir)
        .env("CANVAS_STORE", dir.join("s.db"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("python3 starts");
    // The driver times out every wait itself; this is the backstop if python hangs.
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the pty driver itself hung; terminal so far:\n{}",
                String::from_utf8_lossy(&std::fs::read(&out_path).unwrap_or_default())
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Session {
        code: status.code(),
        terminal: String::from_utf8_lossy(&std::fs::read(&out_path).unwrap()).into_owned(),
        driver: std::fs::read_to_string(&err_path).unwrap(),
    }
}

/// Panic with everything needed to see why the form was not answered on the terminal.
fn check_session(s: &Session) {
    assert!(
        s.code != Some(124),
        "`canvas run` did not ask the form on the terminal as expected \
         (interactive forms: src/cli/session.rs calling ui::prompt::ask_form).\n\
         {}\n--- the terminal showed ---\n{}",
        s.driver.trim(),
        s.terminal
    );
    assert_eq!(
        s.code,
        Some(0),
        "the run did not finish after the form was answered\n{}\n--- the terminal showed ---\n{}",
        s.driver.trim(),
        s.terminal
    );
}

/// The final message's text.
fn finished_content(evs: &[Value]) -> String {
    let fin = evs
        .iter()
        .rfind(|e| e["event"] == "workflow_finished")
        .unwrap_or_else(|| panic!("no workflow_finished in {evs:#?}"));
    fin["data"]["outputs"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn form_is_asked_on_the_terminal_and_the_run_finishes() {
    if !have_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = run_on_pty(dir.path(), None);
    check_session(&s);
    // The tips come once, on a line of their own (the user_inputs JSON line also
    // contains them, quoted).
    let tips = s
        .terminal
        .lines()
        .filter(|l| l.trim_end_matches('\r') == "Booking for book.")
        .count();
    assert_eq!(tips, 1, "tips shown {tips} times:\n{}", s.terminal);
    // stdout shares the terminal here: pick the JSON lines out of it.
    let evs: Vec<Value> = s
        .terminal
        .lines()
        .filter_map(|l| l.find("{\"event\"").map(|i| l[i..].trim_end_matches('\r')))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let content = finished_content(&evs);
    for part in ANSWERED {
        assert!(
            content.contains(part),
            "{part:?} missing from {content:?}\n{}",
            s.terminal
        );
    }
}

#[test]
fn prompts_stay_off_stdout() {
    if !have_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let stdout = dir.path().join("stdout.jsonl");
    let s = run_on_pty(dir.path(), Some(&stdout));
    check_session(&s);
    // Every stdout line is an event; the prompts went to the terminal (stderr).
    let evs = events(&std::fs::read(&stdout).unwrap());
    let content = finished_content(&evs);
    for part in ANSWERED {
        assert!(content.contains(part), "{part:?} missing from {content:?}");
    }
    assert!(
        s.terminal.contains("Destination: Rome"),
        "the prompt was not on the terminal:\n{}",
        s.terminal
    );
    assert!(!s.terminal.contains("{\"event\""), "{}", s.terminal);
}

#[test]
fn a_yes_no_question_asks_again_for_a_word_that_is_not_yes_or_no() {
    if !have_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // `maybe` has a y in it: it is neither yes nor no, so the question comes again.
    let steps = json!([
        ["Destination: ", "Rome\r"],
        ["Guests (whole number): ", "3\r"],
        ["Breakfast [y/n]", "maybe\r"],
        ["is not yes or no", null],
        ["Breakfast [y/n]", "no\r"],
        ["Room:", "j\r"]
    ]);
    let s = run_form_on_pty(dir.path(), &steps, None);
    check_session(&s);
    let evs: Vec<Value> = s
        .terminal
        .lines()
        .filter_map(|l| l.find("{\"event\"").map(|i| l[i..].trim_end_matches('\r')))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let content = finished_content(&evs);
    assert!(
        content.contains("breakfast=false"),
        "{content}\n{}",
        s.terminal
    );
}

/// The trip example: three model nodes in parallel, then a form (days, pace), then
/// the answer. `extra` are more arguments.
fn trip_argv(dir: &Path, extra: &[&str]) -> Value {
    let bin = assert_cmd::cargo::cargo_bin("canvas");
    let mut argv = vec![
        json!(bin),
        json!("run"),
        json!(canvases().join("trip.yaml")),
        json!("-i"),
        json!("destination=Lisbon"),
        json!("--mock-llm"),
        json!(canvases().join("trip.mock.yaml")),
        json!("--store"),
        json!(dir.join("s.db")),
    ];
    argv.extend(extra.iter().map(|a| json!(a)));
    Value::Array(argv)
}

/// The terminal's text without escape sequences, as lines (redraws included).
fn screen_lines(terminal: &str) -> Vec<String> {
    let csi = regex::Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").unwrap();
    csi.replace_all(terminal, "")
        .split(['\n', '\r'])
        .map(|l| l.trim_end().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Color (SGR) sequences in the terminal's output.
fn colors(terminal: &str) -> usize {
    regex::Regex::new(r"\x1b\[[0-9;]*m")
        .unwrap()
        .find_iter(terminal)
        .count()
}

/// The most spinner lines of running model nodes drawn together, one under the other.
fn most_spinners_at_once(lines: &[String]) -> usize {
    let spinner = regex::Regex::new(r"^[⠁⠂⠄⡀⢀⠠⠐⠈⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] LLM:\S+ \(LLM\)").unwrap();
    let (mut best, mut run) = (0, 0);
    for l in lines {
        if spinner.is_match(l) {
            run += 1;
            best = best.max(run);
        } else {
            run = 0;
        }
    }
    best
}

#[test]
fn text_output_shows_parallel_spinners_then_asks_the_form() {
    if !have_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The second option of Pace is "packed": the menu moves down once.
    let steps = json!([["Days", "3\r"], ["Pace", "j\r"]]);
    let s = pty(dir.path(), &trip_argv(dir.path(), &[]), &steps, None, &[]);
    check_session(&s);
    let lines = screen_lines(&s.terminal);
    let shown = lines.join("\n");
    assert!(
        most_spinners_at_once(&lines) >= 3,
        "three parallel nodes never had their spinners on screen at once:\n{shown}"
    );
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("✓ LLM:") {
            assert!(l.contains("tokens"), "line {i}: {l}");
        }
    }
    let finished: Vec<&String> = lines.iter().filter(|l| l.starts_with("✓ LLM:")).collect();
    assert_eq!(finished.len(), 3, "{shown}");
    let answer = lines
        .iter()
        .find(|l| l.contains("days=3") || l.contains("3 days"))
        .unwrap_or_else(|| panic!("the answer does not use the form's days:\n{shown}"));
    assert!(answer.contains("packed"), "{answer}");
    let summary = lines.last().unwrap();
    assert!(
        summary.starts_with("✓ finished · ") && summary.contains(" · run "),
        "{shown}"
    );
    assert!(colors(&s.terminal) > 0, "no colors on a color terminal");
    // The prompt asked the form; the renderer did not also print it.
    assert!(!shown.contains("waiting for input"), "{shown}");
}

#[test]
fn no_color_quiet_and_verbose_on_a_terminal() {
    if !have_python() {
        return;
    }
    let answers = ["-i", "days=2", "-i", "pace=relaxed"];
    let none = json!([]);

    let dir = tempfile::tempdir().unwrap();
    let s = pty(
        dir.path(),
        &trip_argv(dir.path(), &answers),
        &none,
        None,
        &[("NO_COLOR", "1")],
    );
    check_session(&s);
    assert_eq!(
        colors(&s.terminal),
        0,
        "colors despite NO_COLOR:\n{}",
        s.terminal
    );
    assert!(
        screen_lines(&s.terminal)
            .iter()
            .any(|l| l.starts_with("✓ finished"))
    );

    let dir = tempfile::tempdir().unwrap();
    let mut quiet = answers.to_vec();
    quiet.push("--quiet");
    let s = pty(dir.path(), &trip_argv(dir.path(), &quiet), &none, None, &[]);
    check_session(&s);
    let lines = screen_lines(&s.terminal);
    assert!(
        lines
            .iter()
            .all(|l| !l.starts_with('✓') && most_spinners_at_once(std::slice::from_ref(l)) == 0),
        "--quiet shows more than the answer:\n{}",
        lines.join("\n")
    );
    assert!(
        lines.iter().any(|l| l.contains("relaxed")),
        "{}",
        lines.join("\n")
    );

    let dir = tempfile::tempdir().unwrap();
    let mut verbose = answers.to_vec();
    verbose.push("-v");
    let s = pty(
        dir.path(),
        &trip_argv(dir.path(), &verbose),
        &none,
        None,
        &[],
    );
    check_session(&s);
    let starts = screen_lines(&s.terminal)
        .iter()
        .filter(|l| l.starts_with("▸ LLM:"))
        .count();
    assert_eq!(starts, 3, "-v shows each node's start:\n{}", s.terminal);
}

#[test]
fn resume_with_some_answers_asks_only_the_rest_on_the_terminal() {
    if !have_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let none = json!([]);
    let s = pty(
        dir.path(),
        &trip_argv(dir.path(), &["--non-interactive"]),
        &none,
        None,
        &[],
    );
    assert_eq!(s.code, Some(3), "{}\n{}", s.driver, s.terminal);
    let bin = assert_cmd::cargo::cargo_bin("canvas");
    let argv = json!([
        bin,
        "resume",
        "latest",
        "-i",
        "days=6",
        "--store",
        dir.path().join("s.db")
    ]);
    // Only Pace is asked; Enter takes the first option.
    let steps = json!([["Pace", "\r"]]);
    let s = pty(dir.path(), &argv, &steps, None, &[("NO_COLOR", "1")]);
    check_session(&s);
    let shown = screen_lines(&s.terminal).join("\n");
    assert!(!shown.contains("Days"), "Days was asked again:\n{shown}");
    assert!(shown.contains("6 days, relaxed pace."), "{shown}");
}

#[test]
fn a_missing_begin_input_is_asked_on_the_terminal() {
    if !have_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("canvas");
    let argv = json!([
        bin,
        "run",
        canvases().join("trip.yaml"),
        "--mock-llm",
        canvases().join("trip.mock.yaml"),
        "--store",
        dir.path().join("s.db")
    ]);
    let steps = json!([["Destination", "Lisbon\r"], ["Days", "3\r"], ["Pace", "\r"]]);
    let s = pty(dir.path(), &argv, &steps, None, &[("NO_COLOR", "1")]);
    check_session(&s);
    let shown = screen_lines(&s.terminal).join("\n");
    assert!(shown.contains("Lisbon: 3 days, relaxed pace."), "{shown}");
}

/// Ctrl-D at the chat's prompt ends the chat, as the prompt says: exit 0, and the run
/// stays stored with the turns it had.
#[test]
fn ctrl_d_ends_a_chat() {
    if !have_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("echo.json");
    std::fs::write(&flow, crate::chat::ECHO).unwrap();
    let store = dir.path().join("s.db");
    let bin = assert_cmd::cargo::cargo_bin("canvas");
    let argv = json!([bin, "chat", flow, "--store", store]);
    let steps = json!([
        ["Ctrl-D ends the chat", null],
        ["you: ", "hello\r"],
        ["turn1:hello", null],
        ["you: ", "\u{4}"]
    ]);
    let s = pty(dir.path(), &argv, &steps, None, &[("NO_COLOR", "1")]);
    check_session(&s);
    let runs = crate::util::runs(&store);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["turns"], 1);
    assert_eq!(runs[0]["status"], "succeeded");
}

/// A model answer and a query carrying escape sequences: on the terminal their control
/// characters are shown (`^[`), never obeyed; the run's own colors stay.
#[test]
fn control_characters_from_queries_and_models_are_shown_not_obeyed() {
    if !have_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("echo.json");
    let canvas = json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["LLM:A"]},
        "LLM:A": {"obj": {"component_name": "LLM", "params": {"llm_id": "mock@Mock",
            "sys_prompt": "s", "prompts": [{"role": "user", "content": "{sys.query}"}]}},
            "downstream": ["Message:M"]},
        "Message:M": {"obj": {"component_name": "Message", "params": {"content": [
            "model: {LLM:A@content} query: {sys.query} end"]}}, "downstream": []}}});
    std::fs::write(&flow, canvas.to_string()).unwrap();
    let mock = dir.path().join("mock.json");
    let answer = "clear\u{1b}[2J\u{1b}[H";
    std::fs::write(&mock, json!({"rules": [], "default": answer}).to_string()).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("canvas");
    let query = "title\u{1b}]0;owned\u{7}\rfake";
    let argv = json!([
        bin,
        "run",
        flow,
        "-q",
        query,
        "--mock-llm",
        mock,
        "--store",
        dir.path().join("s.db")
    ]);
    let s = pty(dir.path(), &argv, &json!([]), None, &[]);
    check_session(&s);
    for raw in ["\u{1b}[2J", "\u{1b}[H", "\u{1b}]0;", "\u{7}", "\rfake"] {
        assert!(
            !s.terminal.contains(raw),
            "{raw:?} reached the terminal:\n{:?}",
            s.terminal
        );
    }
    let shown = screen_lines(&s.terminal).join("\n");
    // (A streamed Message drops the spaces around references, as RAGFlow's does.)
    assert!(
        shown.contains("model:clear^[[2J^[[Hquery:title^[]0;owned^G^Mfakeend"),
        "{shown}"
    );
    assert!(colors(&s.terminal) > 0, "the run's own colors are gone");
    // JSON lines carry the text exactly (JSON escapes it); the text replay shows it.
    let store = dir.path().join("s.db");
    let evs = crate::util::stored_events(&store, "latest");
    let content = crate::util::final_content(&evs).unwrap();
    assert!(
        content.contains(answer) && content.contains(query),
        "{content:?}"
    );
    let out = crate::util::cli(&["events", "latest", "--format", "text"], &store);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains('\u{1b}') && text.contains("clear^[[2J"),
        "{text:?}"
    );
}

/// What a terminal shows once `raw` is written to it: the lines of the screen, for the
/// sequences the text output uses (cursor up and down, carriage return, erase in line
/// and below, colors and modes ignored).
fn screen(raw: &str) -> Vec<String> {
    let mut lines: Vec<Vec<char>> = vec![Vec::new()];
    let (mut row, mut col) = (0usize, 0usize);
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' if chars.peek() == Some(&'[') => {
                chars.next();
                let mut params = String::new();
                let mut op = ' ';
                for p in chars.by_ref() {
                    if ('@'..='~').contains(&p) {
                        op = p;
                        break;
                    }
                    params.push(p);
                }
                let n = params.trim_start_matches('?').parse::<usize>().ok();
                match op {
                    'A' => row = row.saturating_sub(n.unwrap_or(1)),
                    'B' => row += n.unwrap_or(1),
                    'G' => col = n.unwrap_or(1).saturating_sub(1),
                    'K' | 'J' => {
                        while lines.len() <= row {
                            lines.push(Vec::new());
                        }
                        match n.unwrap_or(0) {
                            2 => lines[row].clear(),
                            _ => lines[row].truncate(col),
                        }
                        if op == 'J' {
                            lines.truncate(row + 1);
                        }
                    }
                    _ => {}
                }
            }
            '\r' => col = 0,
            '\n' => row += 1,
            c => {
                while lines.len() <= row {
                    lines.push(Vec::new());
                }
                let line = &mut lines[row];
                while line.len() < col {
                    line.push(' ');
                }
                if col < line.len() {
                    line[col] = c;
                } else {
                    line.push(c);
                }
                col += 1;
            }
        }
    }
    lines
        .into_iter()
        .map(|l| l.into_iter().collect::<String>().trim_end().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// A second Ctrl-C stops at once: the spinners are erased, one line says how to go
/// on, exit 130; the run keeps its last checkpoint and `resume` finishes it without
/// running a finished node again.
#[test]
fn a_second_ctrl_c_stops_at_once_and_leaves_a_clean_terminal() {
    if !have_python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Two model calls of 1.5 s each, their answers used by a transform: the spinner of
    // the second is on the screen when the user presses Ctrl-C twice.
    let flow = dir.path().join("slow.json");
    let canvas = json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["LLM:A"]},
        "LLM:A": {"obj": {"component_name": "LLM", "params": {"llm_id": "mock@Mock",
            "sys_prompt": "s", "prompts": [{"role": "user", "content": "first {sys.query}"}]}},
            "downstream": ["LLM:B"]},
        "LLM:B": {"obj": {"component_name": "LLM", "params": {"llm_id": "mock@Mock",
            "sys_prompt": "s", "prompts": [{"role": "user", "content": "second {LLM:A@content}"}]}},
            "downstream": ["StringTransform:S"]},
        "StringTransform:S": {"obj": {"component_name": "StringTransform", "params": {
            "method": "merge", "script": "<<{LLM:B@content}>>", "delimiters": [","]}},
            "downstream": ["Message:M"]},
        "Message:M": {"obj": {"component_name": "Message", "params": {
            "content": ["{StringTransform:S@result}"]}}, "downstream": []}}});
    std::fs::write(&flow, canvas.to_string()).unwrap();
    let mock = dir.path().join("mock.json");
    std::fs::write(
        &mock,
        json!({"rules": [], "default": "ok", "delay_ms": 1500}).to_string(),
    )
    .unwrap();
    let store = dir.path().join("s.db");
    let bin = assert_cmd::cargo::cargo_bin("canvas");
    let argv = json!([
        bin,
        "run",
        flow,
        "-q",
        "hi",
        "--mock-llm",
        mock,
        "--store",
        store
    ]);
    let steps = json!([
        ["✓ LLM:A", null],
        ["LLM:B (LLM)", "\u{3}"],
        ["Ctrl-C again stops at once", "\u{3}"]
    ]);
    let s = pty(dir.path(), &argv, &steps, None, &[("NO_COLOR", "1")]);
    assert_eq!(s.code, Some(130), "{}\n{}", s.driver, s.terminal);
    let shown = screen(&s.terminal);
    let last = shown.last().cloned().unwrap_or_default();
    let run_id = regex::Regex::new(
        r"^error: interrupted again: stopped at once; run (\S+) keeps its last checkpoint — canvas resume (\S+)$",
    )
    .unwrap()
    .captures(&last)
    .filter(|c| c[1] == c[2])
    .map(|c| c[1].to_string())
    .unwrap_or_else(|| panic!("the last line is {last:?}:\n{}", shown.join("\n")));
    // No spinner is left on the screen, and the cursor is shown.
    let spinner = regex::Regex::new(r"^[⠁⠂⠄⡀⢀⠠⠐⠈⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] ").unwrap();
    assert!(
        !shown.iter().any(|l| spinner.is_match(l)),
        "a spinner is left on the screen:\n{}",
        shown.join("\n")
    );
    assert!(
        s.terminal.ends_with(&format!("{last}\r\n")),
        "{:?}",
        s.terminal
    );
    assert!(
        s.terminal.contains("\u{1b}[?25h"),
        "the cursor is not shown again"
    );
    assert_eq!(crate::util::status(&store, &run_id), "running");
    // Resumable, from its last checkpoint: LLM:A is not run again.
    let out = crate::util::cli(&["resume", &run_id, "--format", "jsonl"], &store);
    crate::util::expect_code(&out, 0, "canvas resume");
    let stored = crate::util::stored_events(&store, &run_id);
    for id in ["begin", "LLM:A", "LLM:B", "StringTransform:S", "Message:M"] {
        for ev in ["node_started", "node_finished"] {
            let n = stored
                .iter()
                .filter(|e| e["event"] == ev && e["data"]["component_id"] == id)
                .count();
            assert_eq!(n, 1, "{ev} of {id}: {n} times");
        }
    }
    assert_eq!(
        crate::util::final_content(&stored).as_deref(),
        Some("<<ok>>")
    );
}
