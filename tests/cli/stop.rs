//! Stopping a run and picking it up again: Ctrl-C (SIGINT), `canvas cancel` from
//! another process, a SIGKILLed run whose lease holder is dead, the refusal to let two
//! processes run one run, and a form that cannot be asked (no terminal).
//!
//! The long run is [`gated_loop_canvas`] with [`PASSES`] passes: every pass calls a
//! [`Gate`] on 127.0.0.1, which holds the call of pass [`GATE_AT`] until the test lets
//! it go, so each stop lands mid-loop however fast the engine is (a race against the
//! clock failed once the engine got fast enough). It is started as a child process with
//! its output in files, and every stop waits until the run is at the gate and the store
//! shows it running with events stored. Each stopped run is resumed and must end
//! exactly like an uninterrupted reference run of the same canvas: one
//! `workflow_started`, one `workflow_finished`, the same node events in the same order,
//! and the final message `i=PASSES`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::canvases::{FORM, gated_loop_canvas};
use crate::peer::Gate;
use crate::util::{
    TIMEOUT, canvases, cli, events, expect_code, final_content, status, stderr, stored_events,
    trace,
};

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(20);
/// Loop passes of the long run.
const PASSES: u64 = 40;
/// The pass whose call the gate holds.
const GATE_AT: usize = 10;
/// How long a test waits after asking a held run to stop before it lets the held call
/// go: the run looks for a cancel request every 200 ms, and a signal handler may run a
/// little after `kill` returns.
const SETTLE: Duration = Duration::from_secs(1);

/// The final message of a correct run of [`gated_loop_canvas`].
fn expected_content() -> String {
    format!("i={PASSES}")
}

// ---------------------------------------------------------------------------------
// Talking to the binary.

/// How many events are named `name`.
fn count(evs: &[Value], name: &str) -> usize {
    evs.iter().filter(|e| e["event"] == name).count()
}

/// A `canvas` child process with stdin null and its output in files (a long jsonl
/// stream would fill a pipe nobody reads). Killed and reaped if the test panics.
struct Running {
    child: Child,
    out: PathBuf,
    err: PathBuf,
    what: String,
}

/// How a [`Running`] child ended.
struct Ended {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
}

impl Running {
    /// Start `canvas ARGS --store STORE`.
    fn start(args: &[&str], store: &Path, what: &str) -> Running {
        let dir = store.parent().expect("store in a folder");
        let stem = store.file_stem().unwrap().to_string_lossy().into_owned();
        let out = dir.join(format!("{stem}.{}.stdout", what.replace(' ', "-")));
        let err = dir.join(format!("{stem}.{}.stderr", what.replace(' ', "-")));
        let child = Command::new(env!("CARGO_BIN_EXE_canvas"))
            .args(args)
            .arg("--store")
            .arg(store)
            .env("NO_COLOR", "1")
            .env("HOME", dir)
            .env("CANVAS_STORE", store)
            // The gate is on 127.0.0.1.
            .env("CANVAS_ALLOW_PRIVATE", "1")
            .stdin(Stdio::null())
            .stdout(File::create(&out).expect("stdout file"))
            .stderr(File::create(&err).expect("stderr file"))
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: spawn canvas {args:?}: {e}"));
        Running {
            child,
            out,
            err,
            what: what.to_string(),
        }
    }

    fn stderr_now(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// The exit status if the child has ended.
    fn ended(&mut self) -> Option<ExitStatus> {
        self.child
            .try_wait()
            .unwrap_or_else(|e| panic!("{}: try_wait: {e}", self.what))
    }

    /// Wait (at most [`TIMEOUT`]) for the child to end.
    fn wait(&mut self) -> Ended {
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(st) = self.ended() {
                break st;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "{}: still running after {TIMEOUT:?}\nstderr: {}",
                    self.what,
                    self.stderr_now()
                );
            }
            std::thread::sleep(POLL);
        };
        Ended {
            status,
            stdout: std::fs::read(&self.out).unwrap_or_default(),
            stderr: self.stderr_now(),
        }
    }

    /// Wait (at most [`TIMEOUT`]) until the store shows the child's run `running` with
    /// events stored; returns the run id.
    fn wait_running(&mut self, store: &Path) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(st) = self.ended() {
                panic!(
                    "{}: ended ({st}) before the store showed it running\nstderr: {}",
                    self.what,
                    self.stderr_now()
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "{}: no running run with events in the store after {TIMEOUT:?}",
                    self.what
                );
            }
            if store.exists() {
                let out = cli(&["events", "latest", "--format", "jsonl"], store);
                if out.status.success() {
                    let evs = events(&out.stdout);
                    if let Some(id) = evs.first().and_then(|e| e["task_id"].as_str()) {
                        if status(store, id) == "running" {
                            return id.to_string();
                        }
                    }
                }
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A reaped child is not signalled again (std keeps its status).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Send SIGINT to `child` with `kill -INT`.
fn sigint(child: &Running) {
    let st = Command::new("kill")
        .args(["-INT", &child.child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(st.success(), "kill -INT {}: {st}", child.child.id());
}

// ---------------------------------------------------------------------------------
// The reference and the checks.

/// An uninterrupted run of [`gated_loop_canvas`] (through an open gate).
struct Reference {
    /// Its stored stream, as `event component_id` names.
    trace: Vec<String>,
    /// Its `node_finished` events.
    node_finished: usize,
}

/// The reference, run once for all the tests of this file.
fn reference() -> &'static Reference {
    static REF: OnceLock<Reference> = OnceLock::new();
    REF.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let gate = Gate::open();
        let (flow, store) = setup(&dir, &gate);
        let out = cli(
            &["run", &flow, "--format", "jsonl", "--allow-private-network"],
            &store,
        );
        expect_code(&out, 0, "the reference run");
        let printed = events(&out.stdout);
        let run_id = printed[0]["task_id"]
            .as_str()
            .expect("a task_id")
            .to_string();
        let stored = stored_events(&store, &run_id);
        assert_eq!(
            trace(&stored),
            trace(&printed),
            "reference: stored vs printed"
        );
        assert_eq!(
            final_content(&stored).as_deref(),
            Some(expected_content().as_str())
        );
        // One node_started/node_finished pair for begin, Loop:L and Message:Done, and
        // for LoopItem:Start, VariableAssigner:Inc and Invoke:Gate on every pass.
        let node_finished = count(&stored, "node_finished");
        assert!(
            node_finished as u64 >= 3 * PASSES,
            "reference: {node_finished} node_finished for {PASSES} passes"
        );
        Reference {
            trace: trace(&stored),
            node_finished,
        }
    })
}

/// The gated loop canvas (calling `gate`) written into `dir`, and the store path there.
fn setup(dir: &tempfile::TempDir, gate: &Gate) -> (String, PathBuf) {
    let flow = dir.path().join("loop.json");
    let canvas = gated_loop_canvas(PASSES, &gate.url());
    std::fs::write(&flow, serde_json::to_vec(&canvas).unwrap()).unwrap();
    (flow.to_str().unwrap().to_string(), dir.path().join("s.db"))
}

/// The stored stream of a run that was stopped: the turn began and did not finish, and
/// fewer nodes finished than in the reference.
fn assert_stopped_midway(store: &Path, run_id: &str, what: &str) {
    let evs = stored_events(store, run_id);
    assert_eq!(
        count(&evs, "workflow_started"),
        1,
        "{what}: workflow_started"
    );
    assert_eq!(
        count(&evs, "workflow_finished"),
        0,
        "{what}: a stopped run has no workflow_finished"
    );
    let done = count(&evs, "node_finished");
    assert!(
        done > 0 && done < reference().node_finished,
        "{what}: stopped after {done} of {} node_finished",
        reference().node_finished
    );
}

/// The run succeeded and its stored stream is the reference's.
fn assert_like_reference(store: &Path, run_id: &str, what: &str) {
    assert_eq!(status(store, run_id), "succeeded", "{what}: status");
    let evs = stored_events(store, run_id);
    assert!(
        evs.iter().all(|e| e["task_id"] == run_id),
        "{what}: every stored event carries the run id {run_id}"
    );
    assert_eq!(
        count(&evs, "workflow_started"),
        1,
        "{what}: workflow_started"
    );
    assert_eq!(
        count(&evs, "workflow_finished"),
        1,
        "{what}: workflow_finished"
    );
    assert_eq!(
        final_content(&evs).as_deref(),
        Some(expected_content().as_str()),
        "{what}: final message"
    );
    let reference = reference();
    assert_eq!(
        count(&evs, "node_finished"),
        reference.node_finished,
        "{what}: node_finished events vs the uninterrupted run"
    );
    let got = trace(&evs);
    if let Some(at) = got.iter().zip(&reference.trace).position(|(a, b)| a != b) {
        panic!(
            "{what}: stored event #{at} is {:?}, the uninterrupted run's is {:?}",
            got[at], reference.trace[at]
        );
    }
    assert_eq!(got.len(), reference.trace.len(), "{what}: stored events");
}

/// `canvas resume RUN_ID`: exit 0, it prints the whole turn (what was stored, then the
/// rest: docs/resume.md), and the run ends like the reference.
fn resume_to_the_end(store: &Path, run_id: &str, what: &str) {
    let out = cli(
        &[
            "resume",
            run_id,
            "--format",
            "jsonl",
            "--allow-private-network",
        ],
        store,
    );
    expect_code(&out, 0, &format!("{what}: canvas resume"));
    let printed = events(&out.stdout);
    assert_eq!(
        count(&printed, "workflow_started"),
        1,
        "{what}: the resume continues the turn (shown from its start), it does not start \
         another"
    );
    assert_eq!(
        trace(&printed),
        trace(&stored_events(store, run_id)),
        "{what}: the resume printed the turn as stored"
    );
    assert_eq!(
        final_content(&printed).as_deref(),
        Some(expected_content().as_str()),
        "{what}: what the resume printed last"
    );
    assert_like_reference(store, run_id, what);
}

// ---------------------------------------------------------------------------------
// Tests.

#[test]
fn ctrl_c_interrupts_and_resume_finishes_the_run() {
    reference();
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::holding(GATE_AT);
    let (flow, store) = setup(&dir, &gate);
    let mut run = Running::start(&["run", &flow, "--format", "jsonl"], &store, "run");
    gate.wait_held();
    let run_id = run.wait_running(&store);
    sigint(&run);
    std::thread::sleep(SETTLE);
    gate.release();
    let ended = run.wait();
    assert_eq!(
        ended.status.code(),
        Some(130),
        "Ctrl-C: exit status {}\nstderr: {}",
        ended.status,
        ended.stderr
    );
    assert!(ended.stderr.contains("interrupted"), "{}", ended.stderr);
    assert!(
        ended.stderr.contains(&format!("canvas resume {run_id}")),
        "{}",
        ended.stderr
    );
    // What it printed is what it stored.
    assert_eq!(
        trace(&events(&ended.stdout)),
        trace(&stored_events(&store, &run_id)),
        "printed vs stored when interrupted"
    );
    assert_eq!(status(&store, &run_id), "interrupted");
    assert_stopped_midway(&store, &run_id, "interrupted");
    resume_to_the_end(&store, &run_id, "resumed after Ctrl-C");
    assert_eq!(gate.calls(), PASSES as usize, "a pass ran twice");
}

#[test]
fn cancel_from_another_process_stops_at_a_node_boundary() {
    reference();
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::holding(GATE_AT);
    let (flow, store) = setup(&dir, &gate);
    let mut run = Running::start(&["run", &flow, "--format", "jsonl"], &store, "run");
    gate.wait_held();
    let run_id = run.wait_running(&store);
    let out = cli(&["cancel", &run_id], &store);
    expect_code(&out, 0, "canvas cancel of a running run");
    assert!(
        stderr(&out).contains("next node boundary"),
        "{}",
        stderr(&out)
    );
    std::thread::sleep(SETTLE);
    gate.release();
    let ended = run.wait();
    assert_eq!(
        ended.status.code(),
        Some(1),
        "the cancelled run: exit status {}\nstderr: {}",
        ended.status,
        ended.stderr
    );
    assert!(ended.stderr.contains("cancelled"), "{}", ended.stderr);
    assert_eq!(status(&store, &run_id), "cancelled");
    assert_stopped_midway(&store, &run_id, "cancelled");
    resume_to_the_end(&store, &run_id, "resumed after cancel");
    assert_eq!(gate.calls(), PASSES as usize, "a pass ran twice");
}

#[test]
fn cancel_refuses_a_run_that_is_not_running() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let hello = canvases().join("hello.json");
    let out = cli(
        &[
            "run",
            hello.to_str().unwrap(),
            "-q",
            "hi",
            "--format",
            "jsonl",
        ],
        &store,
    );
    expect_code(&out, 0, "canvas run hello.json");
    let run_id = events(&out.stdout)[0]["task_id"]
        .as_str()
        .expect("a task_id")
        .to_string();

    let out = cli(&["cancel", &run_id], &store);
    expect_code(&out, 2, "canvas cancel of a succeeded run");
    let err = stderr(&out);
    assert!(err.contains(&run_id) && err.contains("succeeded"), "{err}");
    assert_eq!(
        status(&store, &run_id),
        "succeeded",
        "the refusal changed nothing"
    );

    let out = cli(&["cancel", "nope"], &store);
    expect_code(&out, 2, "canvas cancel nope");
    assert!(stderr(&out).contains("nope"), "{}", stderr(&out));
}

#[test]
fn a_running_run_is_not_resumed_by_a_second_process() {
    reference();
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::holding(GATE_AT);
    let (flow, store) = setup(&dir, &gate);
    let mut run = Running::start(&["run", &flow, "--format", "jsonl"], &store, "run");
    gate.wait_held();
    let run_id = run.wait_running(&store);
    let out = cli(&["resume", &run_id, "--format", "jsonl"], &store);
    expect_code(&out, 2, "canvas resume of a run another process runs");
    assert!(
        stderr(&out).contains("being run by another process"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty(), "the refused resume printed events");
    gate.release();
    let ended = run.wait();
    assert_eq!(
        ended.status.code(),
        Some(0),
        "the first run: exit status {}\nstderr: {}",
        ended.status,
        ended.stderr
    );
    assert_like_reference(&store, &run_id, "the first run");
}

#[test]
fn cancel_of_a_killed_run_marks_it_cancelled_and_resume_finishes_it() {
    reference();
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::holding(GATE_AT);
    let (flow, store) = setup(&dir, &gate);
    let mut run = Running::start(&["run", &flow, "--format", "jsonl"], &store, "run");
    gate.wait_held();
    let run_id = run.wait_running(&store);
    run.child.kill().expect("SIGKILL the run");
    let st = run.wait().status;
    // The resume calls the gate again.
    gate.release();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&st),
        Some(9),
        "{st}"
    );
    assert_eq!(
        status(&store, &run_id),
        "running",
        "a SIGKILLed run is left running"
    );

    let out = cli(&["cancel", &run_id], &store);
    expect_code(&out, 0, "canvas cancel of a killed run");
    assert!(
        stderr(&out).contains("was not being run"),
        "{}",
        stderr(&out)
    );
    assert_eq!(status(&store, &run_id), "cancelled");
    assert_stopped_midway(&store, &run_id, "killed then cancelled");
    resume_to_the_end(&store, &run_id, "resumed after kill and cancel");
    // The pass killed in its call makes that call again; no other pass runs twice.
    assert_eq!(gate.calls(), PASSES as usize + 1);
}

#[test]
fn a_form_without_a_terminal_waits_for_resume() {
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("form.json");
    std::fs::write(&flow, FORM).unwrap();
    let flow = flow.to_str().unwrap();
    // With --non-interactive, and without it (stdin is not a terminal either way).
    for (n, extra) in [(1, Some("--non-interactive")), (2, None)] {
        let what = format!("form run {n} ({extra:?})");
        let store = dir.path().join(format!("s{n}.db"));
        let mut args = vec!["run", flow, "-q", "book", "--format", "jsonl"];
        args.extend(extra);
        // stdin is null: `Running` spawns it so, with the same time limit.
        let ended = Running::start(&args, &store, &format!("form{n}")).wait();
        assert_eq!(
            ended.status.code(),
            Some(3),
            "{what}: exit status {}\nstderr: {}",
            ended.status,
            ended.stderr
        );
        let evs = events(&ended.stdout);
        let last = evs.last().unwrap_or_else(|| panic!("{what}: no events"));
        assert_eq!(last["event"], "user_inputs", "{what}");
        let run_id = last["task_id"].as_str().expect("a task_id");
        assert!(
            ended.stderr.contains(&format!(
                "waiting for input: canvas resume {run_id} -i name=…"
            )),
            "{what}: {}",
            ended.stderr
        );
        assert_eq!(status(&store, run_id), "waiting", "{what}");
    }
}

/// `begin → Loop:L (3 passes) → Message:Done`, each pass a model call of 700 ms
/// (`LoopItem:Start → LLM:Think → VariableAssigner:Inc`): the Loop is under way for the
/// whole run. Its mock script is the second value.
fn slow_loop() -> (Value, Value) {
    let canvas = serde_json::json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Loop:L"], "upstream": []},
        "Loop:L": {"obj": {"component_name": "Loop", "params": {
            "loop_variables": [{"variable": "i", "input_mode": "constant", "type": "number", "value": 0}],
            "loop_termination_condition": [{"variable": "Loop:L@i", "operator": "≥",
                "input_mode": "constant", "value": 3}],
            "logical_operator": "and", "maximum_loop_count": 10}},
            "downstream": ["Message:Done"], "upstream": ["begin"]},
        "LoopItem:Start": {"obj": {"component_name": "LoopItem", "params": {}},
            "downstream": ["LLM:Think"], "upstream": [], "parent_id": "Loop:L"},
        "LLM:Think": {"obj": {"component_name": "LLM", "params": {"llm_id": "mock@Mock",
            "sys_prompt": "Think.", "prompts": [{"role": "user", "content": "pass {Loop:L@i}"}]}},
            "downstream": ["VariableAssigner:Inc"], "upstream": ["LoopItem:Start"], "parent_id": "Loop:L"},
        "VariableAssigner:Inc": {"obj": {"component_name": "VariableAssigner", "params": {"variables": [
            {"variable": "Loop:L@i", "operator": "+=", "parameter": 1}]}},
            "downstream": [], "upstream": ["LLM:Think"], "parent_id": "Loop:L"},
        "Message:Done": {"obj": {"component_name": "Message", "params": {"content": ["i={Loop:L@i}"]}},
            "downstream": [], "upstream": ["Loop:L"]}
    }});
    let mock = serde_json::json!({"rules": [], "default": "thought", "delay_ms": 700});
    (canvas, mock)
}

/// Seconds from a duration as the text output shows it (`4 µs`, `2.6 ms`, `1.25 s`,
/// `1m 05s`).
fn shown_seconds(s: &str) -> f64 {
    let s = s.trim();
    let num = |t: &str| {
        t.trim()
            .parse::<f64>()
            .unwrap_or_else(|e| panic!("{t:?} in {s:?}: {e}"))
    };
    if let Some(v) = s.strip_suffix(" µs") {
        num(v) / 1e6
    } else if let Some(v) = s.strip_suffix(" ms") {
        num(v) / 1e3
    } else if let Some(v) = s.strip_suffix(" s") {
        num(v)
    } else if let Some((m, sec)) = s.split_once("m ") {
        num(m) * 60.0 + num(sec.trim_end_matches('s'))
    } else {
        panic!("not a duration: {s:?}")
    }
}

/// A run stopped by Ctrl-C, left alone, then resumed: the times of what was under way
/// when it stopped (the Loop, the turn) count the time it ran, not the time it sat
/// stopped; so do the text output's node lines and summary.
#[test]
fn times_after_a_resume_leave_out_the_time_the_run_was_stopped() {
    const STOPPED: Duration = Duration::from_secs(3);
    let dir = tempfile::tempdir().unwrap();
    let (canvas, mock) = slow_loop();
    let flow = dir.path().join("slow.json");
    std::fs::write(&flow, canvas.to_string()).unwrap();
    let script = dir.path().join("mock.json");
    std::fs::write(&script, mock.to_string()).unwrap();
    let store = dir.path().join("s.db");
    let started = Instant::now();
    let mut run = Running::start(
        &[
            "run",
            flow.to_str().unwrap(),
            "--format",
            "jsonl",
            "--mock-llm",
            script.to_str().unwrap(),
        ],
        &store,
        "slow run",
    );
    let run_id = run.wait_running(&store);
    // Stopped in the Loop's second pass, after a model call finished.
    let deadline = Instant::now() + TIMEOUT;
    while !stored_events(&store, &run_id)
        .iter()
        .any(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "LLM:Think")
    {
        assert!(Instant::now() < deadline, "no model call finished");
        std::thread::sleep(POLL);
    }
    sigint(&run);
    let ended = run.wait();
    let ran = started.elapsed();
    assert_eq!(ended.status.code(), Some(130), "{}", ended.stderr);
    std::thread::sleep(STOPPED);

    let started = Instant::now();
    let out = cli(&["resume", &run_id, "--format", "text"], &store);
    let resumed = started.elapsed();
    expect_code(&out, 0, "canvas resume");
    // Nothing of this run took longer than the two processes together lived; the
    // stop alone lasted longer than the resume did.
    let bound = (ran + resumed).as_secs_f64();
    assert!(
        resumed < STOPPED,
        "the resume took {resumed:?}: the bound proves nothing"
    );
    let evs = stored_events(&store, &run_id);
    let loop_done = evs
        .iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "Loop:L")
        .expect("Loop:L finished");
    let turn = evs
        .iter()
        .find(|e| e["event"] == "workflow_finished")
        .expect("workflow_finished");
    for (what, e) in [("Loop:L", loop_done), ("the turn", turn)] {
        let t = e["data"]["elapsed_time"].as_f64().expect("elapsed_time");
        assert!(
            t > 0.0 && t <= bound,
            "{what}: elapsed_time {t} s, but the run ran {ran:?} and the resume {resumed:?}"
        );
    }
    // Start + elapsed is still the Loop's end: after the resume began.
    let end = loop_done["data"]["created_at"].as_f64().unwrap()
        + loop_done["data"]["elapsed_time"].as_f64().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        end <= now && end >= now - resumed.as_secs_f64() - 1.0,
        "the Loop's start + elapsed {end} is not its end (now {now})"
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let loop_line = text
        .lines()
        .find(|l| l.starts_with("✓ Loop:L (Loop) "))
        .unwrap_or_else(|| panic!("no Loop:L line:\n{text}"));
    let shown = shown_seconds(loop_line.trim_start_matches("✓ Loop:L (Loop) "));
    assert!(shown <= bound, "{loop_line} (bound {bound} s)\n{text}");
    let summary = text
        .lines()
        .find(|l| l.starts_with("✓ finished · "))
        .unwrap_or_else(|| panic!("no summary:\n{text}"));
    let span = summary
        .split(" · ")
        .nth(2)
        .unwrap_or_else(|| panic!("no time in {summary:?}"));
    assert!(shown_seconds(span) <= bound, "{summary} (bound {bound} s)");
}
