//! Engine throughput benchmark: time per node execution, to compare with RAGFlow's
//! Python engine (0.4–1.0 ms per node on the canvases of `../shared/bench`).
//!
//! Two canvases are generated in code (`tests/cli/canvases.rs`, shared with the CLI
//! tests), equivalent to `perf_a_chain1000` and `perf_c_loop2000`:
//!
//! - `chain1000`: `begin → 1000 VariableAssigner (env.count += 1) → Message`;
//! - `loop2000`: a Loop of 2000 passes (LoopItem → VariableAssigner `i += 1`, until
//!   `i ≥ 2000`) → Message.
//!
//! Each canvas is compiled once; each run is one turn (`fresh_state` + `run_turn`) on a
//! current-thread tokio runtime, measured with four sinks: `VecSink` (events kept in
//! memory), a sink that serialises each event to JSON into a reused buffer (the store
//! off), the store on as the CLI uses it (events and checkpoint deltas committed to an
//! SQLite file; instant components' checkpoints grouped over 2 ms), and the store with a
//! commit after every single node. The difference between the store on and off is the
//! store's cost per node. Every run is checked (it must finish with the expected Message content), so
//! a broken run panics instead of being measured. Node executions are counted from the
//! `node_finished` events. The report gives the median wall time per run, the median
//! µs per node execution, and the ratio against RAGFlow's timings from
//! `../shared/bench/README.md`.
//!
//! Run it with `cargo bench --bench engine` (release profile); add a substring to run
//! only some cases, e.g. `cargo bench --bench engine -- loop`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use canvas_components::Registry;
use canvas_dsl::load::from_value;
use canvas_engine::events::wire;
use canvas_engine::{
    Canvas, Event, EventKind, EventSink, Outcome, RunConfig, RunState, VecSink, run_turn,
};
use canvas_store::{Checkpointer, EventChunk, RunRecord, RunWrite, SqliteStore, Store};
use serde_json::Value;

// The canvas generators are shared with the CLI tests. The file also holds `FORM`, which
// only the tests use: in this target of its own it would be dead code.
#[allow(dead_code)]
#[path = "../tests/cli/canvases.rs"]
mod canvases;
use canvases::{chain_canvas, loop_canvas};

/// Runs thrown away before measuring.
const WARMUP: usize = 3;
/// Runs measured.
const RUNS: usize = 10;

/// What the CLI does with an event: serialise it to one JSON line. The buffer is reused;
/// only counts are kept.
#[derive(Default)]
struct JsonSink {
    buf: Vec<u8>,
    events: usize,
    nodes: usize,
    bytes: usize,
}

impl EventSink for JsonSink {
    fn emit(&mut self, ev: &Event) -> std::io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, ev)?;
        self.buf.push(b'\n');
        self.bytes += black_box(&self.buf).len();
        self.events += 1;
        if matches!(ev.kind, EventKind::NodeFinished(_)) {
            self.nodes += 1;
        }
        Ok(())
    }
}

/// What the CLI hands the store with it on: each event's payload serialised once into
/// the pending chunk, then at a checkpoint the chunk and the state's delta in one SQLite
/// transaction (WAL, `synchronous = NORMAL`, a real file). Here the write is made on the
/// running thread (the CLI gives it to a writer thread), so the figure is the store's
/// whole cost.
struct StoreSink<'s> {
    store: &'s SqliteStore,
    run_id: String,
    checkpoints: Checkpointer,
    pending: Option<EventChunk>,
    data: String,
    events: usize,
    nodes: usize,
}

impl EventSink for StoreSink<'_> {
    fn emit(&mut self, ev: &Event) -> std::io::Result<()> {
        self.data.clear();
        wire::write_data(&ev.kind, &mut self.data)?;
        self.pending
            .get_or_insert_with(|| EventChunk::new(ev.message_id.clone(), ev.created_at))
            .push(ev.kind.name(), &self.data);
        self.events += 1;
        if matches!(ev.kind, EventKind::NodeFinished(_)) {
            self.nodes += 1;
        }
        Ok(())
    }

    fn checkpoint(&mut self, state: &RunState) -> std::io::Result<()> {
        let mut w = RunWrite::new(self.run_id.clone(), 1);
        w.events.extend(self.pending.take());
        w.checkpoint = self
            .checkpoints
            .plan(state)
            .map_err(std::io::Error::other)?;
        self.store.write_one(w).map_err(std::io::Error::other)
    }
}

/// Which sink a case uses.
#[derive(Clone, Copy)]
enum SinkKind {
    Vec,
    Json,
    /// The CLI's store: instant components' checkpoints grouped (2 ms).
    Store,
    /// The store with a commit after every single node.
    StoreEveryNode,
}

impl SinkKind {
    fn label(self) -> &'static str {
        match self {
            SinkKind::Vec => "VecSink",
            SinkKind::Json => "JSON",
            SinkKind::Store => "store on",
            SinkKind::StoreEveryNode => "store/node",
        }
    }
}

/// One measured run: wall time, node executions and events it produced.
struct Run {
    wall: Duration,
    nodes: usize,
    events: usize,
}

/// Run one turn, check it, and time it (compilation excluded).
fn run_once(
    store: &SqliteStore,
    rt: &tokio::runtime::Runtime,
    name: &str,
    canvas: &Canvas,
    sink_kind: SinkKind,
    expected: &str,
) -> Run {
    let cfg = RunConfig {
        run_id: "bench".into(),
        query: "go".into(),
        ..Default::default()
    };
    let (outcome, wall, nodes, events) = match sink_kind {
        SinkKind::Vec => {
            let mut sink = VecSink::default();
            let t = Instant::now();
            let (state, outcome) =
                rt.block_on(run_turn(canvas, canvas.fresh_state(), &cfg, &mut sink));
            let wall = t.elapsed();
            drop(black_box(state));
            let nodes = sink
                .0
                .iter()
                .filter(|e| matches!(e.kind, EventKind::NodeFinished(_)))
                .count();
            (outcome, wall, nodes, sink.0.len())
        }
        SinkKind::Json => {
            let mut sink = JsonSink::default();
            let t = Instant::now();
            let (state, outcome) =
                rt.block_on(run_turn(canvas, canvas.fresh_state(), &cfg, &mut sink));
            let wall = t.elapsed();
            drop(black_box(state));
            assert!(sink.bytes > 0, "{name}: the JSON sink wrote nothing");
            (outcome, wall, sink.nodes, sink.events)
        }
        SinkKind::Store | SinkKind::StoreEveryNode => {
            let rec = RunRecord::new(name, "{}");
            store.create_run(&rec).expect("create the run");
            let mut sink = StoreSink {
                store,
                run_id: rec.id.clone(),
                checkpoints: Checkpointer::new(),
                pending: None,
                data: String::new(),
                events: 0,
                nodes: 0,
            };
            let group = match sink_kind {
                SinkKind::StoreEveryNode => Duration::ZERO,
                _ => cfg.checkpoint_group,
            };
            let cfg = RunConfig {
                run_id: rec.id.clone(),
                checkpoint_group: group,
                ..cfg.clone()
            };
            let t = Instant::now();
            let (state, outcome) =
                rt.block_on(run_turn(canvas, canvas.fresh_state(), &cfg, &mut sink));
            // The final commit, as the CLI makes when a turn ends.
            sink.checkpoint(&state).expect("final commit");
            let wall = t.elapsed();
            let stored = store.events(&rec.id).expect("read the events").len();
            assert_eq!(stored, sink.events, "{name}: events not all stored");
            (outcome, wall, sink.nodes, sink.events)
        }
    };
    match outcome {
        Ok(Outcome::Finished { outputs }) => {
            let content = outputs.get("content");
            if content.and_then(Value::as_str) != Some(expected) {
                panic!(
                    "{name}: the run finished with content {content:?}, expected {expected:?} \
                     (outputs: {outputs})"
                );
            }
        }
        Ok(other) => panic!("{name}: the run did not finish: {other:?}"),
        Err(e) => panic!("{name}: the run stopped with an error: {e}"),
    }
    Run {
        wall,
        nodes,
        events,
    }
}

/// Median of a non-empty list.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Warm up, measure, and print one report line; returns the median µs per node.
fn bench(
    store: &SqliteStore,
    rt: &tokio::runtime::Runtime,
    name: &str,
    canvas: &Canvas,
    sink_kind: SinkKind,
    expected: &str,
    ragflow_ms_per_node: f64,
) -> f64 {
    let label = format!("{name} {}", sink_kind.label());
    for _ in 0..WARMUP {
        run_once(store, rt, &label, canvas, sink_kind, expected);
    }
    let runs: Vec<Run> = (0..RUNS)
        .map(|_| run_once(store, rt, &label, canvas, sink_kind, expected))
        .collect();
    let nodes = runs[0].nodes;
    let events = runs[0].events;
    if let Some(r) = runs.iter().find(|r| r.nodes != nodes || r.events != events) {
        panic!(
            "{label}: runs differ ({nodes} nodes, {events} events vs {} nodes, {} events)",
            r.nodes, r.events
        );
    }
    assert!(nodes > 0, "{label}: no node_finished events");
    let wall_ms = median(runs.iter().map(|r| r.wall.as_secs_f64() * 1e3).collect());
    let us_per_node = median(
        runs.iter()
            .map(|r| r.wall.as_secs_f64() * 1e6 / r.nodes as f64)
            .collect(),
    );
    let speedup = ragflow_ms_per_node * 1e3 / us_per_node;
    println!(
        "{label:<17} {nodes:>5} nodes  {events:>5} events   median {wall_ms:>7.2} ms   \
         {us_per_node:>6.2} µs/node   {speedup:>5.0}x faster than RAGFlow \
         ({ragflow_ms_per_node} ms/node)"
    );
    us_per_node
}

/// One benchmarked canvas.
struct Case {
    /// Report name.
    name: &'static str,
    /// Builds the canvas JSON.
    make: fn() -> Value,
    /// The final Message content a correct run produces.
    expected: &'static str,
    /// RAGFlow's time per node execution on the equivalent canvas.
    ragflow_ms_per_node: f64,
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters cases by name.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f));

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path().join("bench.db")).expect("open the store");
    let registry = Registry;
    let compile = |name: &str, v: Value| -> Canvas {
        let dsl = from_value(v).unwrap_or_else(|e| panic!("{name}: bad DSL: {e}"));
        Canvas::compile(dsl, &registry).unwrap_or_else(|e| panic!("{name}: cannot compile: {e}"))
    };

    println!("engine bench: {WARMUP} warm-up + {RUNS} measured runs per line, one turn per run");
    // RAGFlow figures: ../shared/bench/README.md (perf_a 0.86 ms/node, perf_c 0.52 ms/node).
    let cases = [
        Case {
            name: "chain1000",
            make: || chain_canvas(1000),
            expected: "count=1000",
            ragflow_ms_per_node: 0.86,
        },
        Case {
            name: "loop2000",
            make: || loop_canvas(2000),
            expected: "i=2000",
            ragflow_ms_per_node: 0.52,
        },
    ];
    for case in cases {
        if !wanted(case.name) {
            continue;
        }
        let canvas = compile(case.name, (case.make)());
        let mut per_node = Vec::new();
        for sink in [
            SinkKind::Vec,
            SinkKind::Json,
            SinkKind::Store,
            SinkKind::StoreEveryNode,
        ] {
            per_node.push(bench(
                &store,
                &rt,
                case.name,
                &canvas,
                sink,
                case.expected,
                case.ragflow_ms_per_node,
            ));
        }
        println!(
            "{:<17} store cost {:.2} µs/node (store on {:.2} − store off, JSON, {:.2}); \
             {:.2} µs/node with a commit after every node",
            case.name,
            per_node[2] - per_node[1],
            per_node[2],
            per_node[1],
            per_node[3] - per_node[1]
        );
    }
    if wanted("stream5000") {
        stream_bench(&rt, &compile);
    }
}

/// Chunks in the streaming benchmark.
const CHUNKS: usize = 5000;

/// Streaming overhead: a mock answer of 5000 word chunks streamed from an LLM through a
/// Message (think splitting, `message` events serialised as JSON lines), against the
/// mock's stream drained bare. The difference per chunk is what the engine adds.
fn stream_bench(rt: &tokio::runtime::Runtime, compile: &dyn Fn(&str, Value) -> Canvas) {
    use canvas_llm::{ChatModel, ChatRequest, MockModel, MockScript, OneModel};
    use futures::StreamExt;
    use std::sync::Arc;

    // Distinct words: a chunk that repeats the text so far is dropped, as in RAGFlow
    // (`think.rs`), so "tok tok tok …" would stream two chunks.
    let answer: String = (0..CHUNKS).map(|i| format!("w{i} ")).collect();
    let script = MockScript::parse(
        &serde_json::json!({"default": answer.trim_end(), "chunk": "word"}).to_string(),
        "bench.json",
    )
    .expect("mock script");
    let model = Arc::new(MockModel::new(script));
    let canvas = compile(
        "stream5000",
        serde_json::json!({"components": {
            "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["LLM:G"], "upstream": []},
            "LLM:G": {"obj": {"component_name": "LLM", "params": {"llm_id": "mock", "cite": false,
                "prompts": [{"role": "user", "content": "{sys.query}"}]}}, "downstream": ["Message:M"], "upstream": ["begin"]},
            "Message:M": {"obj": {"component_name": "Message", "params": {"content": ["{LLM:G@content}"]}},
                "downstream": [], "upstream": ["LLM:G"]}}}),
    );
    let cfg = RunConfig {
        run_id: "bench".into(),
        query: "go".into(),
        models: Arc::new(OneModel(model.clone())),
        ..Default::default()
    };
    let through_engine = || {
        let mut sink = JsonSink::default();
        let t = Instant::now();
        let (_, outcome) = rt.block_on(run_turn(&canvas, canvas.fresh_state(), &cfg, &mut sink));
        let wall = t.elapsed();
        match outcome {
            Ok(Outcome::Finished { outputs }) => {
                let got = outputs.get("content").and_then(Value::as_str).unwrap_or("");
                assert_eq!(got, answer.trim_end(), "stream5000: wrong content");
            }
            other => panic!("stream5000: the run did not finish: {other:?}"),
        }
        let messages = sink.events - sink.nodes;
        assert!(
            messages >= CHUNKS,
            "stream5000: only {messages} events besides node_finished"
        );
        wall.as_secs_f64() * 1e6 / CHUNKS as f64
    };
    let bare = || {
        let req = ChatRequest::default();
        let t = Instant::now();
        let n = rt.block_on(async {
            let mut s = model.chat(&req).await.expect("mock answers");
            let mut n = 0usize;
            while let Some(d) = s.next().await {
                black_box(d.expect("mock delta"));
                n += 1;
            }
            n
        });
        assert!(n >= CHUNKS, "stream5000: the mock streamed {n} deltas");
        t.elapsed().as_secs_f64() * 1e6 / CHUNKS as f64
    };
    for _ in 0..WARMUP {
        through_engine();
        bare();
    }
    let engine = median((0..RUNS).map(|_| through_engine()).collect());
    let mock = median((0..RUNS).map(|_| bare()).collect());
    println!(
        "stream5000        {CHUNKS} chunks LLM → Message, JSON lines: {engine:.2} µs/chunk; \
         the mock's stream alone {mock:.2} µs/chunk; streaming overhead {:.2} µs/chunk",
        engine - mock
    );
}
