//! Crash safety: a run whose process is killed (SIGKILL) at a random moment and then
//! continued with `canvas resume latest` ends up exactly like a run that was never
//! interrupted, and what the processes printed gives a pipeline every event once.
//!
//! Four canvases are used: a chain of VariableAssigners and a Loop of many passes (from
//! [`crate::canvases`]), and, generated here, an Iteration over a list split from the
//! query and a chain with a UserFillUp form in the middle. For each, an uninterrupted
//! reference run gives the expected stored event stream. Then, attempt after attempt
//! (one store file per attempt), the run is started as a child process with its stdout
//! in a file, killed once it has printed a pseudo-random share of the reference's
//! output (a deterministic xorshift), and resumed until it succeeds; some attempts kill
//! the first resume too. Each killed run must end `succeeded` with a stored stream equal
//! to the reference's, event by event, once timestamps, elapsed times and ids are
//! ignored: a finished node run twice would add a `node_finished`, a lost or repeated
//! event would show too. And the processes' stdout, kept as docs/resume.md tells a
//! pipeline to keep it, must be that same stream. A kill point is (canvas, events stored
//! when the process died); every canvas must contribute at least [`MIN_KILL_POINTS`]
//! distinct ones, so the four tests together cover at least 52.

use std::collections::BTreeSet;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::canvases::{begin, chain_canvas, loop_canvas, with_globals};
use crate::util::{
    cli, events, expect_code, final_content, runs, show, status, stored_events, trace,
};

/// The form answer, given exactly as the reference run gave it.
const ANSWER: &str = "name=x";
/// Distinct kill points each canvas must contribute.
const MIN_KILL_POINTS: usize = 13;
/// Distinct kill points after which a canvas stops trying.
const TARGET_KILL_POINTS: usize = 16;
/// Attempts per canvas at most.
const MAX_ATTEMPTS: usize = 40;
/// Time per canvas at most (attempts stop once it is spent).
const BUDGET: Duration = Duration::from_secs(40);

// ---------------------------------------------------------------------------------
// Canvases.

/// One canvas under test.
struct Case {
    /// Label (and file name).
    name: &'static str,
    /// The canvas DSL.
    dsl: Value,
    /// `sys.query` of the run.
    query: String,
    /// Whether the canvas stops at a form (answered with [`ANSWER`]).
    form: bool,
    /// The final Message content of a correct run.
    expected: String,
    /// Seed of the kill delays.
    seed: u64,
}

/// `begin → StringTransform:Split (sys.query on ",") → Iteration:Each → Message:Done`;
/// each item goes `IterationItem:Start → StringTransform:Wrap → VariableAssigner:Count
/// (env.count += 1)`, and the Iteration collects the wrapped items (the shape of the
/// conformance case `06_iteration`).
fn iteration_canvas() -> Value {
    let mut comps = Map::new();
    let mut add = |id: &str, v: Value| {
        comps.insert(id.into(), v);
    };
    add(
        "begin",
        json!({"obj": {"component_name": "Begin",
                       "params": {"mode": "conversational", "prologue": "Hi!", "inputs": {}}},
               "downstream": ["StringTransform:Split"], "upstream": []}),
    );
    add(
        "StringTransform:Split",
        json!({"obj": {"component_name": "StringTransform",
                       "params": {"method": "split", "split_ref": "sys.query",
                                  "delimiters": [","], "script": ""}},
               "downstream": ["Iteration:Each"], "upstream": ["begin"]}),
    );
    add(
        "Iteration:Each",
        json!({"obj": {"component_name": "Iteration",
                       "params": {"items_ref": "StringTransform:Split@result",
                                  "outputs": {"wrapped": {"ref": "StringTransform:Wrap@result",
                                                          "type": "Array<string>"}}}},
               "downstream": ["Message:Done"], "upstream": ["StringTransform:Split"]}),
    );
    add(
        "IterationItem:Start",
        json!({"obj": {"component_name": "IterationItem", "params": {}},
               "downstream": ["StringTransform:Wrap"], "upstream": [],
               "parent_id": "Iteration:Each"}),
    );
    add(
        "StringTransform:Wrap",
        json!({"obj": {"component_name": "StringTransform",
                       "params": {"method": "merge",
                                  "script": "<{IterationItem:Start@index}:{IterationItem:Start@item}>",
                                  "delimiters": [","]}},
               "downstream": ["VariableAssigner:Count"], "upstream": ["IterationItem:Start"],
               "parent_id": "Iteration:Each"}),
    );
    add(
        "VariableAssigner:Count",
        json!({"obj": {"component_name": "VariableAssigner",
                       "params": {"variables": [
                           {"variable": "env.count", "operator": "+=", "parameter": 1}]}},
               "downstream": [], "upstream": ["StringTransform:Wrap"],
               "parent_id": "Iteration:Each"}),
    );
    add(
        "Message:Done",
        json!({"obj": {"component_name": "Message",
                       "params": {"content": ["count={env.count};wrapped={Iteration:Each@wrapped}"]}},
               "downstream": [], "upstream": ["Iteration:Each"]}),
    );
    with_globals(comps)
}

/// `begin → VariableAssigner:A1 … :A<before> → UserFillUp:Ask (name) →
/// VariableAssigner:B1 … :B<after> → Message:End` (every assigner `env.count += 1`).
fn form_canvas(before: usize, after: usize) -> Value {
    let mut ids: Vec<String> = (1..=before)
        .map(|i| format!("VariableAssigner:A{i}"))
        .collect();
    ids.push("UserFillUp:Ask".into());
    ids.extend((1..=after).map(|i| format!("VariableAssigner:B{i}")));
    ids.push("Message:End".into());
    let mut comps = Map::new();
    comps.insert("begin".into(), begin(&ids[0]));
    for (k, id) in ids.iter().enumerate() {
        let up = if k == 0 { "begin" } else { ids[k - 1].as_str() };
        let down: Vec<&str> = ids.get(k + 1).map(String::as_str).into_iter().collect();
        let obj = if id.starts_with("VariableAssigner:") {
            json!({"component_name": "VariableAssigner",
                   "params": {"variables": [
                       {"variable": "env.count", "operator": "+=", "parameter": 1}]}})
        } else if id == "UserFillUp:Ask" {
            json!({"component_name": "UserFillUp",
                   "params": {"enable_tips": true, "tips": "Count is {env.count}. Name?",
                              "inputs": {"name": {"name": "Name", "type": "line",
                                                  "optional": false}}}})
        } else {
            json!({"component_name": "Message",
                   "params": {"content": ["name={UserFillUp:Ask@name};count={env.count}"]}})
        };
        comps.insert(
            id.clone(),
            json!({"obj": obj, "downstream": down, "upstream": [up]}),
        );
    }
    with_globals(comps)
}

// ---------------------------------------------------------------------------------
// Talking to the binary.

/// A deterministic pseudo-random generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What must be equal between two runs' streams: event names, component ids, node
/// outputs and errors, message pieces, forms, final outputs. Timestamps, elapsed times
/// and ids are left out.
fn normalize(ev: &Value) -> Value {
    let name = ev["event"].as_str().unwrap_or("?");
    let data = &ev["data"];
    let mut n = json!({"event": name, "component_id": data["component_id"]});
    match name {
        "node_finished" => {
            n["outputs"] = strip_times(&data["outputs"]);
            n["error"] = data["error"].clone();
        }
        "message" => n["content"] = data["content"].clone(),
        "user_inputs" => n["form"] = data.clone(),
        "workflow_finished" => n["outputs"] = strip_times(&data["outputs"]),
        _ => {}
    }
    n
}

/// `v` without `_created_time` / `_elapsed_time` keys, at any depth.
fn strip_times(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "_created_time" && *k != "_elapsed_time")
                .map(|(k, v)| (k.clone(), strip_times(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_times).collect()),
        other => other.clone(),
    }
}

fn normalize_all(evs: &[Value]) -> Vec<Value> {
    evs.iter().map(normalize).collect()
}

/// Panic with the first difference unless `got` equals `want` (or, with `prefix`, is
/// a prefix of it).
fn assert_stream(got: &[Value], want: &[Value], prefix: bool, what: &str) {
    let (g, w) = (normalize_all(got), normalize_all(want));
    let same_len = if prefix {
        g.len() <= w.len()
    } else {
        g.len() == w.len()
    };
    let first_diff = g.iter().zip(&w).position(|(a, b)| a != b);
    if same_len && first_diff.is_none() {
        return;
    }
    let at = first_diff.unwrap_or(g.len().min(w.len()));
    let window = |evs: &[Value]| -> Vec<String> {
        let lo = at.saturating_sub(3);
        let hi = (at + 4).min(evs.len());
        trace(&evs[lo..hi])
    };
    panic!(
        "{what}: the stored stream ({} events) differs from the reference ({} events){} \
         at event #{at}:\n  got:  {}\n  want: {}\n  got around it:  {:?}\n  want around it: {:?}",
        g.len(),
        w.len(),
        if prefix { " as a prefix" } else { "" },
        g.get(at).map_or("(end)".to_string(), Value::to_string),
        w.get(at).map_or("(end)".to_string(), Value::to_string),
        window(got),
        window(want),
    );
}

/// What a pipeline keeps of the processes' outputs under the documented rule
/// (docs/resume.md): from each output, the turns that end there (`workflow_finished`
/// or `user_inputs`), each turn (its `message_id`) once. A turn a process did not end
/// is printed again from its start by the resume that continues it.
fn kept_turns(outputs: &[Vec<Value>]) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    let mut kept = Vec::new();
    for printed in outputs {
        for turn in printed.chunk_by(|a, b| a["message_id"] == b["message_id"]) {
            let ended = turn
                .last()
                .is_some_and(|e| e["event"] == "workflow_finished" || e["event"] == "user_inputs");
            let id = turn[0]["message_id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if ended && seen.insert(id) {
                kept.extend(turn.iter().cloned());
            }
        }
    }
    kept
}

/// How a killed child ended.
enum Kill {
    /// It finished by itself before the signal.
    Exited(ExitStatus),
    /// Killed before any run was stored.
    NoRun,
    /// Killed with the run stored: its id and the number of events stored by then.
    Killed { run_id: String, stored: usize },
}

/// Start `canvas ARGS --store STORE` (stdin and stderr null, stdout into a file, as a
/// pipeline's consumer would keep it), SIGKILL it once it has printed `bytes` bytes
/// and `jitter` more (the kill lands wherever the process has got to by then: printed
/// output is stored first, and it may be further on), and look at what it left in the store. Returns
/// that and the events the child printed.
fn kill_after(args: &[&str], store: &Path, bytes: u64, jitter: Duration) -> (Kill, Vec<Value>) {
    let home = store.parent().expect("store in a folder");
    let out_path = store.with_extension(format!("out-{}", COUNTER.fetch_add(1, SeqCst)));
    let out_file = std::fs::File::create(&out_path).expect("stdout file");
    let mut child = Command::new(env!("CARGO_BIN_EXE_canvas"))
        .args(args)
        .arg("--store")
        .arg(store)
        .env("NO_COLOR", "1")
        .env("HOME", home)
        .env("CANVAS_STORE", store)
        .stdin(Stdio::null())
        .stdout(out_file)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn canvas");
    let deadline = Instant::now() + crate::util::TIMEOUT;
    while Instant::now() < deadline
        && matches!(child.try_wait(), Ok(None))
        && std::fs::metadata(&out_path).map_or(0, |m| m.len()) < bytes
    {
        std::thread::sleep(Duration::from_micros(200));
    }
    // Output comes in bursts (flushed every few milliseconds): a kill somewhere after
    // the burst that crossed `bytes` rather than always right at its end.
    std::thread::sleep(jitter);
    // SIGKILL; if the child already exited (not yet reaped), this is harmless and the
    // exit status below tells.
    let _ = child.kill();
    let st = child.wait().expect("wait for the killed child");
    let mut bytes = std::fs::read(&out_path).expect("the child's stdout");
    // A line the kill cut short has no newline: a reader leaves it out.
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(whole);
    let printed = events(&bytes);
    (kill_status(st, store), printed)
}

/// Numbers the stdout files of [`kill_after`].
static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// What a child that ended with `st` left in `store`.
fn kill_status(st: ExitStatus, store: &Path) -> Kill {
    if st.signal() != Some(9) {
        return Kill::Exited(st);
    }
    if !store.exists() {
        return Kill::NoRun;
    }
    let all = runs(store);
    assert!(all.len() <= 1, "one run per store file, found {all:?}");
    let Some(rec) = all.first() else {
        return Kill::NoRun;
    };
    let run_id = rec["id"]
        .as_str()
        .unwrap_or_else(|| panic!("canvas runs: a run without id: {rec}"))
        .to_string();
    let st = status(store, &run_id);
    assert!(
        ["running", "waiting", "succeeded"].contains(&st.as_str()),
        "a run killed by SIGKILL is {st}; expected running (or waiting/succeeded if the \
         turn had ended)"
    );
    let stored = stored_events(store, &run_id).len();
    Kill::Killed { run_id, stored }
}

/// Resume the run until it succeeds: `canvas resume latest` while it is unfinished,
/// with `-i name=x` while it waits on the form. Returns the events each resume printed.
fn finish(store: &Path, run_id: &str, form: bool) -> Vec<Vec<Value>> {
    let mut printed = Vec::new();
    for _ in 0..8 {
        let st = status(store, run_id);
        let out = match st.as_str() {
            "succeeded" => return printed,
            "waiting" => {
                assert!(form, "run {run_id} waits, but its canvas has no form");
                cli(
                    &["resume", "latest", "-i", ANSWER, "--format", "jsonl"],
                    store,
                )
            }
            "running" | "interrupted" | "cancelled" => {
                cli(&["resume", "latest", "--format", "jsonl"], store)
            }
            other => panic!("run {run_id} is {other}: {}", show(store, run_id)),
        };
        let after = status(store, run_id);
        match out.status.code() {
            Some(0) => assert_eq!(after, "succeeded", "resume exited 0"),
            Some(3) if form => assert_eq!(after, "waiting", "resume exited 3"),
            _ => panic!(
                "canvas resume latest (run {run_id} was {st}): exit status {}\nstderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
        }
        printed.push(events(&out.stdout));
    }
    panic!("run {run_id} still not finished after 8 resumes");
}

/// An uninterrupted run.
struct Reference {
    /// Its stored event stream.
    stream: Vec<Value>,
    /// Bytes `canvas run` printed (to the form, for a form canvas).
    run_bytes: u64,
    /// Bytes `canvas resume -i` printed answering the form.
    answer_bytes: u64,
    /// Wall time of `canvas run` (to the form, for a form canvas).
    run: Duration,
    /// Wall time of `canvas resume -i` answering the form.
    answer: Duration,
}

/// Run the case without interruption; check the stored stream against the printed one.
fn reference(case: &Case, flow: &Path, store: &Path) -> Reference {
    let flow_s = flow.to_str().unwrap();
    let t = Instant::now();
    let out = cli(
        &["run", flow_s, "-q", &case.query, "--format", "jsonl"],
        store,
    );
    let run = t.elapsed();
    let run_bytes = out.stdout.len() as u64;
    let mut answer_bytes = 0;
    expect_code(&out, if case.form { 3 } else { 0 }, "the reference run");
    let mut printed = events(&out.stdout);
    let mut answer = Duration::ZERO;
    if case.form {
        assert_eq!(
            printed.last().map(|e| e["event"].clone()),
            Some(json!("user_inputs"))
        );
        let t = Instant::now();
        let out = cli(
            &["resume", "latest", "-i", ANSWER, "--format", "jsonl"],
            store,
        );
        answer = t.elapsed();
        answer_bytes = out.stdout.len() as u64;
        expect_code(&out, 0, "answering the reference's form");
        printed.extend(events(&out.stdout));
    }
    let run_id = printed[0]["task_id"]
        .as_str()
        .expect("events carry the run id")
        .to_string();
    assert_eq!(status(store, &run_id), "succeeded");
    let stream = stored_events(store, &run_id);
    assert_stream(
        &stream,
        &printed,
        false,
        &format!("{}: the reference's canvas events vs its output", case.name),
    );
    assert_eq!(
        final_content(&stream).as_deref(),
        Some(case.expected.as_str()),
        "{}: the reference's final message",
        case.name
    );
    Reference {
        stream,
        run_bytes,
        answer_bytes,
        run,
        answer,
    }
}

/// Up to 5 ms more before a kill (a few of the output's flush intervals).
fn jitter(rng: &mut Rng) -> Duration {
    Duration::from_micros((rng.unit() * 5000.0) as u64)
}

/// Bytes of the run's stored event lines (what a resume replays at most).
fn stored_bytes(store: &Path, run_id: &str) -> u64 {
    let out = cli(&["events", run_id, "--format", "jsonl"], store);
    expect_code(&out, 0, "canvas events");
    out.stdout.len() as u64
}

/// Check a killed-then-resumed run against the reference.
fn verify(case: &Case, store: &Path, run_id: &str, reference: &Reference, what: &str) {
    assert_eq!(status(store, run_id), "succeeded", "{what}");
    let all = runs(store);
    assert_eq!(all.len(), 1, "{what}: resuming made no new run: {all:?}");
    let stream = stored_events(store, run_id);
    assert!(
        stream.iter().all(|e| e["task_id"] == run_id),
        "{what}: every stored event carries the run id {run_id}"
    );
    assert_stream(&stream, &reference.stream, false, what);
    assert_eq!(
        final_content(&stream).as_deref(),
        Some(case.expected.as_str()),
        "{what}: final message"
    );
}

/// Kill runs of `case` at many points; resume each; compare with the reference.
fn crash_and_resume(case: Case) {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let flow: PathBuf = dir.path().join(format!("{}.json", case.name));
    std::fs::write(&flow, serde_json::to_vec(&case.dsl).unwrap()).unwrap();
    let flow_s = flow.to_str().unwrap();
    let reference = reference(&case, &flow, &dir.path().join("reference.db"));
    let ref_events = reference.stream.len();

    let mut rng = Rng(case.seed);
    // Kill points: events stored when a process died; for a form canvas, split by
    // phase (0: `run` to the form, 1: `resume -i` after it).
    let mut points: [BTreeSet<usize>; 2] = [BTreeSet::new(), BTreeSet::new()];
    let (mut attempts, mut killed, mut exited, mut early, mut second_kills) = (0, 0, 0, 0, 0);
    let distinct = |p: &[BTreeSet<usize>; 2]| p[0].union(&p[1]).count();
    let enough = |p: &[BTreeSet<usize>; 2]| {
        distinct(p) >= TARGET_KILL_POINTS && (!case.form || p.iter().all(|s| s.len() >= 4))
    };
    while !enough(&points) && attempts < MAX_ATTEMPTS && started.elapsed() < BUDGET {
        attempts += 1;
        let store = dir.path().join(format!("attempt-{attempts}.db"));
        let what = format!("{} attempt {attempts}", case.name);
        // A form canvas alternates: kill `run` (phase 0) or the answering `resume` (1).
        let phase = usize::from(case.form && attempts % 2 == 0);
        // The stdout of every process of the attempt, in order.
        let mut outputs: Vec<Vec<Value>> = Vec::new();
        let (args, span): (Vec<&str>, u64) = if phase == 0 {
            (
                vec!["run", flow_s, "-q", &case.query, "--format", "jsonl"],
                reference.run_bytes,
            )
        } else {
            let out = cli(
                &["run", flow_s, "-q", &case.query, "--format", "jsonl"],
                &store,
            );
            expect_code(&out, 3, &format!("{what}: the run to the form"));
            outputs.push(events(&out.stdout));
            (
                vec!["resume", "latest", "-i", ANSWER, "--format", "jsonl"],
                reference.answer_bytes,
            )
        };
        // Up to the whole output: a kill after the last byte lands in the exit.
        let at = (span as f64 * rng.unit() * 1.02) as u64;
        let (kill, printed) = kill_after(&args, &store, at, jitter(&mut rng));
        outputs.push(printed);
        let (run_id, stored) = match kill {
            Kill::Exited(st) => {
                let want = if case.form && phase == 0 { 3 } else { 0 };
                assert_eq!(st.code(), Some(want), "{what}: a child that was not killed");
                exited += 1;
                continue;
            }
            Kill::NoRun => {
                assert_eq!(phase, 0, "{what}: the run vanished");
                early += 1;
                continue;
            }
            Kill::Killed { run_id, stored } => (run_id, stored),
        };
        killed += 1;
        points[phase].insert(stored);
        assert_stream(
            &stored_events(&store, &run_id),
            &reference.stream,
            true,
            &format!("{what}: killed after {stored} events"),
        );
        // Every third attempt kills the first resume too (if there is one to kill).
        if attempts % 3 == 0 && status(&store, &run_id) == "running" {
            // The resume prints the turn's stored events first: kill past them.
            let at = stored_bytes(&store, &run_id) + (span as f64 * rng.unit()) as u64;
            let (kill, printed) = kill_after(
                &["resume", "latest", "--format", "jsonl"],
                &store,
                at,
                jitter(&mut rng),
            );
            outputs.push(printed);
            match kill {
                Kill::Exited(st) => {
                    let want = if case.form && phase == 0 { 3 } else { 0 };
                    assert_eq!(st.code(), Some(want), "{what}: the resume (not killed)");
                }
                Kill::NoRun => panic!("{what}: the run vanished"),
                Kill::Killed { stored, .. } => {
                    second_kills += 1;
                    points[phase].insert(stored);
                }
            }
        }
        outputs.extend(finish(&store, &run_id, case.form));
        // The stdout guarantee: what the processes printed, as a pipeline keeps it, is
        // the reference's stream exactly (nothing lost, nothing twice).
        let kept = kept_turns(&outputs);
        assert_stream(
            &kept,
            &reference.stream,
            false,
            &format!("{what}: the processes' stdout, unfinished turns dropped"),
        );
        verify(
            &case,
            &store,
            &run_id,
            &reference,
            &format!("{what} (killed after {stored} of {ref_events} events)"),
        );
    }
    let all: BTreeSet<usize> = points[0].union(&points[1]).copied().collect();
    println!(
        "crash {}: reference {} events in {:?}+{:?}; {attempts} attempts, {killed} killed \
         (+{second_kills} resumes killed), {exited} finished first, {early} before any run; \
         {} distinct kill points {:?}; {:?}",
        case.name,
        ref_events,
        reference.run,
        reference.answer,
        all.len(),
        all,
        started.elapsed()
    );
    assert!(
        all.len() >= MIN_KILL_POINTS,
        "{}: only {} distinct kill points ({all:?}) in {attempts} attempts \
         ({exited} finished before the kill, {early} before any run)",
        case.name,
        all.len()
    );
    if case.form {
        assert!(
            points.iter().all(|p| p.len() >= 3),
            "{}: kill points before the form {:?} and after it {:?}",
            case.name,
            points[0],
            points[1]
        );
    }
}

#[test]
fn killed_chain_resumes_like_an_uninterrupted_run() {
    crash_and_resume(Case {
        name: "chain",
        dsl: chain_canvas(250),
        query: "go".into(),
        form: false,
        expected: "count=250".into(),
        seed: 0x9E37_79B9_7F4A_7C15,
    });
}

#[test]
fn killed_loop_resumes_like_an_uninterrupted_run() {
    crash_and_resume(Case {
        name: "loop",
        dsl: loop_canvas(250),
        query: "go".into(),
        form: false,
        expected: "i=250".into(),
        seed: 0xD1B5_4A32_D192_ED03,
    });
}

#[test]
fn killed_iteration_resumes_like_an_uninterrupted_run() {
    let n = 100;
    let words: Vec<String> = (0..n).map(|i| format!("w{i}")).collect();
    let wrapped: Vec<String> = (0..n).map(|i| format!("\"<{i}:w{i}>\"")).collect();
    crash_and_resume(Case {
        name: "iteration",
        dsl: iteration_canvas(),
        query: words.join(","),
        form: false,
        expected: format!("count={n};wrapped=[{}]", wrapped.join(", ")),
        seed: 0x94D0_49BB_1331_11EB,
    });
}

#[test]
fn killed_form_run_resumes_like_an_uninterrupted_run() {
    crash_and_resume(Case {
        name: "form",
        dsl: form_canvas(400, 400),
        query: "go".into(),
        form: true,
        expected: "name=x;count=800".into(),
        seed: 0xBF58_476D_1CE4_E5B9,
    });
}
