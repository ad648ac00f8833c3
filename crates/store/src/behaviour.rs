//! The store's behaviour, the same on every backend: each test function takes a fresh
//! store ([`Fixture`]) and [`on_both!`] runs it on SQLite and on PostgreSQL. Tests of
//! one backend's own matters (SQLite's file, WAL, vacuum and old schemas; PostgreSQL's
//! URL, schema and server) live beside that backend. Batches have theirs in [`batches`].

mod agents;
mod batches;

use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use canvas_engine::RunState;
use serde_json::{Value, json};

use crate::checkpoint::MAX_DELTAS;
use crate::testkit::{
    Fixture, big_state, checkpoint_kinds, commit, full_run, lines, load, on_both, run, step,
};
use crate::{
    Checkpointer, EventChunk, PruneFilter, Result, RunRecord, RunStatus, RunWrite, Store,
    StoreError, TurnKind, blobs, chunk, unix_now, writer,
};

fn a_runs_options_are_kept_with_it(f: &Fixture) {
    let store = f.store();
    let mut rec = RunRecord::new("flow.json", "{}");
    rec.options = Some(json!({"mock_llm": "/abs/mock.yaml", "max_parallel": 4}));
    store.create_run(&rec).unwrap();
    let back = store.find_run(&rec.id).unwrap();
    assert_eq!(back.options, rec.options);
    let plain = run(store, "01PLAIN", 1.0);
    assert_eq!(store.find_run(&plain.id).unwrap().options, None);
}
fn create_and_find_by_id_prefix_and_latest(f: &Fixture) {
    let store = f.store();
    let a = run(store, "01J0AAAAAAAAAAAAAAAAAAAAAA", 100.0);
    let b = run(store, "01J0BBBBBBBBBBBBBBBBBBBBBB", 200.0);
    assert_eq!(store.find_run(&a.id).unwrap(), a);
    assert_eq!(
        store.find_run("01j0a").unwrap(),
        a,
        "prefixes are case-insensitive"
    );
    assert_eq!(store.find_run("01J0B").unwrap(), b);
    assert_eq!(store.find_run("latest").unwrap(), b);
    assert_eq!(store.find_run("LATEST").unwrap(), b);
}

fn find_reports_ambiguous_and_not_found(f: &Fixture) {
    let store = f.store();
    assert!(matches!(
        store.find_run("latest"),
        Err(StoreError::NotFound(_))
    ));
    run(store, "01J0AAAAAAAAAAAAAAAAAAAAAA", 100.0);
    run(store, "01J0ABBBBBBBBBBBBBBBBBBBBB", 200.0);
    match store.find_run("01j0a") {
        Err(StoreError::Ambiguous { prefix, matches }) => {
            assert_eq!(prefix, "01j0a");
            assert_eq!(
                matches,
                ["01J0ABBBBBBBBBBBBBBBBBBBBB", "01J0AAAAAAAAAAAAAAAAAAAAAA"]
            );
        }
        other => panic!("{other:?}"),
    }
    let e = store.find_run("01J0AC").unwrap_err();
    assert!(matches!(e, StoreError::NotFound(_)));
    assert_eq!(e.to_string(), "no run matches \"01J0AC\"");
    // LIKE wildcards in the input are literal.
    assert!(matches!(
        store.find_run("01J0_"),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(store.find_run("%"), Err(StoreError::NotFound(_))));
    assert!(matches!(store.find_run(""), Err(StoreError::NotFound(_))));
}

fn list_runs_newest_first_with_filter_and_limit(f: &Fixture) {
    let store = f.store();
    for (i, id) in ["01A", "01B", "01C", "01D"].iter().enumerate() {
        run(store, id, 10.0 * i as f64);
    }
    store
        .set_status("01B", RunStatus::Failed, Some("boom"), None)
        .unwrap();
    store
        .set_status("01D", RunStatus::Failed, None, None)
        .unwrap();
    let ids = |v: Vec<RunRecord>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.list_runs(None, 0).unwrap()),
        ["01D", "01C", "01B", "01A"]
    );
    assert_eq!(ids(store.list_runs(None, 2).unwrap()), ["01D", "01C"]);
    assert_eq!(store.count_runs(None).unwrap(), 4);
    assert_eq!(store.count_runs(Some(RunStatus::Failed)).unwrap(), 2);
    assert_eq!(store.count_runs(Some(RunStatus::Waiting)).unwrap(), 0);
    assert_eq!(
        ids(store.list_runs(Some(RunStatus::Failed), 10).unwrap()),
        ["01D", "01B"]
    );
    assert!(
        store
            .list_runs(Some(RunStatus::Waiting), 10)
            .unwrap()
            .is_empty()
    );
}

fn a_run_is_created_with_its_first_turn(f: &Fixture) {
    let store = f.store();
    let rec = RunRecord::new("flow.json", "{}");
    let inputs = json!({"name": {"value": "Ada"}});
    let n = store
        .create_run_with_turn(&rec, TurnKind::Start, "hi", &inputs)
        .unwrap();
    assert_eq!(n, 1);
    let got = store.find_run(&rec.id).unwrap();
    assert_eq!((got.turns, got.status), (1, RunStatus::Running));
    let t = store.last_turn(&rec.id).unwrap().unwrap();
    assert_eq!(
        (t.turn, t.kind, t.query.as_str(), t.inputs),
        (1, TurnKind::Start, "hi", inputs)
    );
    // The same id twice: nothing half-written.
    assert!(
        store
            .create_run_with_turn(&rec, TurnKind::Start, "x", &json!({}))
            .is_err()
    );
    assert_eq!(store.last_turn(&rec.id).unwrap().unwrap().query, "hi");
}

fn a_run_is_created_leased(f: &Fixture) {
    let store = f.store();
    let rec = RunRecord::new("flow.json", "{}");
    let ttl = Duration::from_secs(30);
    let inputs = json!({"name": "Ada"});
    let n = store
        .create_run_leased(&rec, (TurnKind::Start, "hi", &inputs), "pid-1", ttl)
        .unwrap();
    assert_eq!(n, 1);
    let got = store.find_run(&rec.id).unwrap();
    assert_eq!((got.turns, got.status), (1, RunStatus::Running));
    let t = store.last_turn(&rec.id).unwrap().unwrap();
    assert_eq!(
        (t.kind, t.query.as_str(), t.inputs),
        (TurnKind::Start, "hi", inputs)
    );
    assert_eq!(
        store.lease_owner(&rec.id).unwrap().as_deref(),
        Some("pid-1")
    );
    assert!(!store.acquire_lease(&rec.id, "pid-2", ttl).unwrap());
    store.release_lease(&rec.id, "pid-1").unwrap();
    // The same id twice: nothing half-written, the lease not taken over.
    assert!(store.acquire_lease(&rec.id, "pid-3", ttl).unwrap());
    assert!(
        store
            .create_run_leased(&rec, (TurnKind::Start, "x", &json!({})), "pid-4", ttl)
            .is_err()
    );
    assert_eq!(store.last_turn(&rec.id).unwrap().unwrap().query, "hi");
    assert_eq!(
        store.lease_owner(&rec.id).unwrap().as_deref(),
        Some("pid-3")
    );
}

fn end_turn_sets_the_status_with_the_checkpoint(f: &Fixture) {
    let store = f.store();
    run(store, "01R", 1.0);
    let turn = store
        .begin_turn("01R", TurnKind::Start, "q", &json!({}))
        .unwrap();
    let form = json!({"inputs": {"name": {"type": "line"}}, "tips": ""});
    let s = big_state(2);
    let mut w = RunWrite::new("01R", turn);
    let mut c = crate::EventChunk::new("m", 7);
    c.push("message", r#"{"content":1}"#);
    w.events.push(c);
    w.checkpoint = Checkpointer::new().plan(&s).unwrap();
    w.end = Some(crate::TurnEnd {
        status: RunStatus::Waiting,
        error: None,
        waiting: Some(form.clone()),
    });
    store.write_one(w).unwrap();
    let got = store.find_run("01R").unwrap();
    assert_eq!((got.status, got.waiting), (RunStatus::Waiting, Some(form)));
    assert_eq!(load(store, "01R"), Some(s));
    assert_eq!(store.events("01R").unwrap(), lines("01R", &[1]));
    let last = store.last_turn("01R").unwrap().unwrap();
    assert_eq!(last.status, Some(RunStatus::Waiting));
    assert!(last.ended_at.is_some());
}

fn a_dead_local_holder_loses_the_lease_at_once(f: &Fixture) {
    let store = f.store();
    run(store, "01R", 1.0);
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let me = crate::lease_holder();
    let host = me.split(':').next().unwrap();
    let dead = format!("{host}:{pid}:1");
    let ttl = Duration::from_secs(300);
    assert!(store.acquire_lease("01R", &dead, ttl).unwrap());
    if std::path::Path::new("/proc/self/stat").exists() {
        assert!(store.acquire_lease("01R", &me, ttl).unwrap());
        assert_eq!(store.lease_owner("01R").unwrap(), Some(me.clone()));
    }
    // A live holder keeps it.
    assert!(!store.acquire_lease("01R", "elsewhere:1:1", ttl).unwrap());
}

fn status_turns_and_waiting_form(f: &Fixture) {
    let store = f.store();
    let rec = run(store, "01R", 1.0);
    assert_eq!(store.last_turn("01R").unwrap(), None);
    let inputs = json!({"name": {"value": "Ada"}});
    assert_eq!(
        store
            .begin_turn("01R", TurnKind::Start, "hi", &inputs)
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .begin_turn("01R", TurnKind::Next, "more", &json!({}))
            .unwrap(),
        2
    );
    let last = store.last_turn("01R").unwrap().unwrap();
    assert_eq!(
        (last.turn, last.kind, last.query.as_str(), last.ended_at),
        (2, TurnKind::Next, "more", None)
    );
    assert_eq!(store.find_run("01R").unwrap().status, RunStatus::Running);
    let form = json!({"component_id": "UserFillUp:Ask", "inputs": {"name": {"type": "line"}}});
    store
        .set_status("01R", RunStatus::Waiting, None, Some(&form))
        .unwrap();
    let got = store.find_run("01R").unwrap();
    assert_eq!(got.status, RunStatus::Waiting);
    assert_eq!(got.waiting, Some(form));
    assert_eq!(got.turns, 2);
    assert!(got.updated_at > rec.updated_at);
    store
        .set_status(
            "01R",
            RunStatus::Failed,
            Some("component \"X\" failed"),
            None,
        )
        .unwrap();
    let got = store.find_run("01R").unwrap();
    assert_eq!(
        (got.status, got.error.as_deref(), got.waiting),
        (RunStatus::Failed, Some("component \"X\" failed"), None)
    );
    assert!(matches!(
        store.begin_turn("nope", TurnKind::Start, "", &json!({})),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.set_status("nope", RunStatus::Failed, None, None),
        Err(StoreError::NotFound(_))
    ));
}

fn commit_stores_events_in_order_and_the_state(f: &Fixture) {
    let store = f.store();
    run(store, "01R", 1.0);
    assert_eq!(load(store, "01R"), None);
    assert!(store.events("01R").unwrap().is_empty());
    let mut cp = Checkpointer::new();
    let mut s = big_state(3);
    commit(store, &mut cp, "01R", 1, &[1, 2], Some(&s)).unwrap();
    commit(store, &mut cp, "01R", 1, &[3], None).unwrap();
    step(&mut s, 1);
    commit(store, &mut cp, "01R", 2, &[4], Some(&s)).unwrap();
    assert_eq!(store.events("01R").unwrap(), lines("01R", &[1, 2, 3, 4]));
    assert_eq!(store.events_of_turn("01R", 1).unwrap().len(), 3);
    assert_eq!(store.events_of_turn("01R", 2).unwrap(), lines("01R", &[4]));
    assert!(store.events_of_turn("01R", 3).unwrap().is_empty());
    assert_eq!(load(store, "01R"), Some(s));
    assert_eq!(checkpoint_kinds(f, "01R"), ["full", "delta"]);
    assert!(matches!(
        commit(store, &mut Checkpointer::new(), "nope", 1, &[1], None),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(store.events("nope"), Err(StoreError::NotFound(_))));
    assert!(matches!(
        store.load_checkpoint("nope"),
        Err(StoreError::NotFound(_))
    ));
}

fn two_thousand_passes_write_what_changed(f: &Fixture) {
    let store = f.store();
    run(store, "01R", 1.0);
    let mut s = big_state(40);
    let full = serde_json::to_string(&s).unwrap().len() as u64;
    let mut cp = Checkpointer::new();
    commit(store, &mut cp, "01R", 1, &[], Some(&s)).unwrap();
    for i in 1..=2000 {
        step(&mut s, i);
        commit(store, &mut cp, "01R", 1, &[i], Some(&s)).unwrap();
    }
    let written = f.checkpoint_bytes_written();
    assert!(
        written < 2000 * full / 10,
        "wrote {written} bytes; one full state is {full}"
    );
    assert_eq!(load(store, "01R"), Some(s));
    // Snapshots replace what came before them: the table stays small too.
    let rows = checkpoint_kinds(f, "01R");
    assert_eq!(rows[0], "full");
    assert!(rows.len() < 200, "{} rows", rows.len());
    assert_eq!(store.events("01R").unwrap().len(), 2000);
}

fn many_deltas_are_capped_by_a_snapshot(f: &Fixture) {
    let store = f.store();
    run(store, "01R", 1.0);
    let mut s = big_state(400);
    let mut cp = Checkpointer::new();
    commit(store, &mut cp, "01R", 1, &[], Some(&s)).unwrap();
    for i in 1..=i64::from(MAX_DELTAS) {
        step(&mut s, i);
        commit(store, &mut cp, "01R", 1, &[], Some(&s)).unwrap();
    }
    assert_eq!(checkpoint_kinds(f, "01R").len(), 1 + MAX_DELTAS as usize);
    // The next one is a snapshot, which replaces the rows before it.
    step(&mut s, 0);
    commit(store, &mut cp, "01R", 1, &[], Some(&s)).unwrap();
    assert_eq!(checkpoint_kinds(f, "01R"), ["full"]);
    assert_eq!(load(store, "01R"), Some(s));
}

fn leases_exclude_other_owners_until_they_expire(f: &Fixture) {
    let store = f.store();
    run(store, "01R", 1.0);
    let ttl = Duration::from_secs(30);
    assert!(store.acquire_lease("01R", "pid-1", ttl).unwrap());
    assert!(
        store.acquire_lease("01R", "pid-1", ttl).unwrap(),
        "own lease"
    );
    assert!(!store.acquire_lease("01R", "pid-2", ttl).unwrap());
    assert_eq!(store.lease_owner("01R").unwrap().as_deref(), Some("pid-1"));
    store.renew_lease("01R", "pid-1", ttl).unwrap();
    match store.renew_lease("01R", "pid-2", ttl) {
        Err(StoreError::Leased { run_id, owner }) => {
            assert_eq!((run_id.as_str(), owner.as_str()), ("01R", "pid-1"))
        }
        other => panic!("{other:?}"),
    }
    store.release_lease("01R", "pid-2").unwrap();
    assert_eq!(
        store.lease_owner("01R").unwrap().as_deref(),
        Some("pid-1"),
        "not released by another"
    );
    store.release_lease("01R", "pid-1").unwrap();
    assert_eq!(store.lease_owner("01R").unwrap(), None);
    // An expired lease is free for the taking.
    assert!(store.acquire_lease("01R", "pid-1", Duration::ZERO).unwrap());
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(store.lease_owner("01R").unwrap(), None);
    assert!(store.acquire_lease("01R", "pid-2", ttl).unwrap());
    assert!(matches!(
        store.acquire_lease("nope", "pid-1", ttl),
        Err(StoreError::NotFound(_))
    ));
}

fn a_read_only_store_reads_and_never_writes(f: &Fixture) {
    run(f.store(), "01R", 1.0);
    commit(f.store(), &mut Checkpointer::new(), "01R", 1, &[1], None).unwrap();
    let ro = f.read_only().unwrap();
    assert_eq!(ro.find_run("01R").unwrap().id, "01R");
    assert_eq!(ro.events("01R").unwrap(), lines("01R", &[1]));
    assert!(ro.request_cancel("01R").is_err(), "a write went through");
    assert!(!f.store().cancel_requested("01R").unwrap());
}

fn commit_is_one_transaction(f: &Fixture) {
    let store = f.store();
    run(store, "01R", 1.0);
    let (refuse, allow) = if f.is_pg() {
        (
            "CREATE FUNCTION no_checkpoints() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN RAISE EXCEPTION 'disk full'; END $$;
             CREATE TRIGGER no_checkpoints BEFORE INSERT ON checkpoints
             FOR EACH ROW EXECUTE FUNCTION no_checkpoints();",
            "DROP TRIGGER no_checkpoints ON checkpoints",
        )
    } else {
        (
            "CREATE TRIGGER no_checkpoints BEFORE INSERT ON checkpoints
             BEGIN SELECT RAISE(ABORT, 'disk full'); END;",
            "DROP TRIGGER no_checkpoints",
        )
    };
    f.exec(refuse);
    let e = commit(
        store,
        &mut Checkpointer::new(),
        "01R",
        1,
        &[1],
        Some(&big_state(1)),
    )
    .unwrap_err();
    assert!(
        matches!(e, StoreError::Sqlite { .. } | StoreError::Postgres { .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("disk full"), "{e}");
    assert!(
        store.events("01R").unwrap().is_empty(),
        "the events were rolled back"
    );
    f.exec(allow);
    let s = big_state(2);
    commit(store, &mut Checkpointer::new(), "01R", 1, &[1], Some(&s)).unwrap();
    assert_eq!(store.events("01R").unwrap(), lines("01R", &[1]));
    assert_eq!(load(store, "01R"), Some(s));
}

fn deltas_survive_reopening_and_unchanged_states_write_nothing(f: &Fixture) {
    let mut s = big_state(5);
    {
        let store = f.store();
        run(store, "01R", 1.0);
        let mut cp = Checkpointer::new();
        commit(store, &mut cp, "01R", 1, &[], Some(&s)).unwrap();
        for i in 1..=10 {
            step(&mut s, i);
            commit(store, &mut cp, "01R", 1, &[], Some(&s)).unwrap();
        }
        let before = f.checkpoint_bytes_written();
        commit(store, &mut cp, "01R", 1, &[1], Some(&s)).unwrap();
        assert_eq!(
            f.checkpoint_bytes_written(),
            before,
            "same state, no checkpoint"
        );
        assert_eq!(checkpoint_kinds(f, "01R").len(), 11);
    }
    let store = f.reopen().unwrap();
    let mut cp = store.load_checkpoint("01R").unwrap();
    assert_eq!(cp.state(), Some(&s));
    assert_eq!(cp.seq(), 11);
    // After a load the next checkpoint continues with deltas.
    step(&mut s, 11);
    commit(&*store, &mut cp, "01R", 2, &[], Some(&s)).unwrap();
    assert_eq!(
        checkpoint_kinds(f, "01R").last().map(String::as_str),
        Some("delta")
    );
    assert_eq!(load(&*f.reopen().unwrap(), "01R"), Some(s));
}

fn a_checkpoint_by_another_writer_stops_this_one(f: &Fixture) {
    let (a, b) = (f.store(), f.reopen().unwrap());
    run(a, "01R", 1.0);
    let mut s = big_state(3);
    let mut cp_a = Checkpointer::new();
    commit(a, &mut cp_a, "01R", 1, &[], Some(&s)).unwrap();
    // Another process took the run over from that checkpoint.
    let mut cp_b = b.load_checkpoint("01R").unwrap();
    step(&mut s, 1);
    commit(&*b, &mut cp_b, "01R", 1, &[1], Some(&s)).unwrap();
    let mut mine = s.clone();
    step(&mut mine, 2);
    let e = commit(a, &mut cp_a, "01R", 1, &[2], Some(&mine)).unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::Conflict {
                found: 2,
                expected: 1,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(load(&*f.reopen().unwrap(), "01R"), Some(s));
    assert_eq!(
        a.events("01R").unwrap(),
        lines("01R", &[1]),
        "nothing of a's write"
    );
}

fn cancel_flag_is_set_seen_and_cleared(f: &Fixture) {
    let (runner, canceller) = (f.store(), f.reopen().unwrap());
    run(runner, "01R", 1.0);
    assert!(!runner.cancel_requested("01R").unwrap());
    canceller.request_cancel("01R").unwrap();
    assert!(runner.cancel_requested("01R").unwrap());
    runner.clear_cancel("01R").unwrap();
    assert!(!canceller.cancel_requested("01R").unwrap());
    assert!(matches!(
        canceller.request_cancel("nope"),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        runner.cancel_requested("nope"),
        Err(StoreError::NotFound(_))
    ));
}

fn a_canvas_is_kept_once_and_forgotten_with_its_last_run(f: &Fixture) {
    let store = f.store();
    let a = run(store, "01A", 1.0);
    let b = run(store, "01B", 2.0);
    assert_eq!(a.canvas_hash, b.canvas_hash);
    assert_eq!(f.number("SELECT COUNT(*) FROM canvases"), 1);
    assert_eq!(store.find_run("01B").unwrap().canvas, a.canvas);
    f.exec("DELETE FROM runs WHERE id = '01A'");
    assert_eq!(
        f.number("SELECT COUNT(*) FROM canvases"),
        1,
        "01B still uses it"
    );
    f.exec("DELETE FROM runs WHERE id = '01B'");
    assert_eq!(f.number("SELECT COUNT(*) FROM canvases"), 0);
}

fn a_large_value_is_stored_once_and_forgotten_with_its_last_run(f: &Fixture) {
    let store = f.store();
    let doc: String = (0..200_000)
        .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
        .collect();
    let doc_json = serde_json::to_string(&doc).unwrap();
    let mut states = Vec::new();
    for id in ["01A", "01B"] {
        run(store, id, 1.0);
        let mut cp = Checkpointer::new();
        let mut state = RunState::default();
        state.globals_mut().insert("sys.query".into(), json!(doc));
        for n in 0..3 {
            let node = format!("StringTransform:T{n}");
            state.set_output(&node, "result", json!(doc));
            let mut w = RunWrite::new(id, 1);
            let mut c = EventChunk::new("m", 7);
            c.push(
                "node_finished",
                &format!(r#"{{"component_id":"{node}","inputs":{doc_json},"outputs":{{"result":{doc_json}}}}}"#),
            );
            w.events.push(c);
            w.checkpoint = cp.plan(&state).unwrap();
            store.write_one(w).unwrap();
        }
        states.push(state);
    }
    assert_eq!(
        f.number("SELECT COUNT(*) FROM blobs"),
        1,
        "one value, stored once"
    );
    let kept = f.number("SELECT SUM(length(body)) FROM blobs")
        + f.number("SELECT SUM(length(body)) FROM event_chunks")
        + f.number("SELECT SUM(length(body)) FROM checkpoints");
    // Two runs of three nodes: 14 copies of the value as written, LZ4 inside each.
    let one = chunk::compress(&doc_json).len() as i64;
    assert!(kept < one + 4096, "{kept} bytes kept for a value of {one}");
    for (id, state) in ["01A", "01B"].iter().zip(&states) {
        let events = store.events(id).unwrap();
        assert_eq!(events.len(), 3);
        let e: Value = serde_json::from_str(&events[2]).unwrap();
        assert_eq!(e["data"]["outputs"]["result"], json!(doc));
        assert_eq!(e["data"]["inputs"], json!(doc));
        assert_eq!(load(store, id).as_ref(), Some(state));
    }
    assert!(
        store.run_bytes(&["01A".into()]).unwrap() < 4096,
        "01B still uses the value: deleting 01A does not free it"
    );
    assert!(store.run_bytes(&["01A".into(), "01B".into()]).unwrap() > one as u64);
    store.delete_runs(&["01A".into()]).unwrap();
    assert_eq!(
        f.number("SELECT COUNT(*) FROM blobs"),
        1,
        "01B still uses it"
    );
    assert_eq!(store.events("01B").unwrap().len(), 3);
    store.delete_runs(&["01B".into()]).unwrap();
    assert_eq!(f.number("SELECT COUNT(*) FROM blobs"), 0);
    assert_eq!(f.number("SELECT COUNT(*) FROM blob_refs"), 0);
}

fn a_missing_large_value_is_a_corrupt_store_not_a_panic(f: &Fixture) {
    let store = f.store();
    run(store, "01A", 1.0);
    let big = serde_json::to_string(&"x".repeat(blobs::MIN_LEN)).unwrap();
    let mut w = RunWrite::new("01A", 1);
    let mut c = EventChunk::new("m", 7);
    c.push("message", &format!(r#"{{"content":{big}}}"#));
    w.events.push(c);
    store.write_one(w).unwrap();
    // (PostgreSQL's foreign key keeps a referenced blob: its references go too.)
    f.exec(if f.is_pg() {
        "TRUNCATE blobs CASCADE"
    } else {
        "DELETE FROM blobs"
    });
    let e = store.events("01A").unwrap_err();
    assert!(matches!(e, StoreError::Corrupt(_)), "{e}");
    assert!(e.to_string().contains("run 01A"), "{e}");
}

fn eight_processes_share_one_store(f: &Fixture) {
    let start = Barrier::new(8);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..8)
            .map(|w| {
                let start = &start;
                s.spawn(move || -> Result<()> {
                    start.wait();
                    let store = f.reopen()?;
                    for i in 0..25 {
                        let rec = RunRecord::new("flow.json", format!("{{\"w\": {w}}}"));
                        store.create_run(&rec)?;
                        let turn = store.begin_turn(&rec.id, TurnKind::Start, "", &json!({}))?;
                        assert!(store.acquire_lease(
                            &rec.id,
                            &format!("w{w}"),
                            Duration::from_secs(30)
                        )?);
                        let mut st = big_state(5);
                        let mut cp = Checkpointer::new();
                        commit(&*store, &mut cp, &rec.id, turn, &[1], Some(&st))?;
                        step(&mut st, i);
                        commit(&*store, &mut cp, &rec.id, turn, &[2], Some(&st))?;
                        store.set_status(&rec.id, RunStatus::Succeeded, None, None)?;
                        store.release_lease(&rec.id, &format!("w{w}"))?;
                        assert_eq!(store.load_checkpoint(&rec.id)?.state(), Some(&st));
                        assert_eq!(store.events(&rec.id)?, lines(&rec.id, &[1, 2]));
                    }
                    Ok(())
                })
            })
            .collect();
        for w in workers {
            if let Err(e) = w.join().unwrap() {
                panic!("a worker failed: {e} ({e:?})");
            }
        }
    });
    let store = f.reopen().unwrap();
    let runs = store.list_runs(Some(RunStatus::Succeeded), 0).unwrap();
    assert_eq!(runs.len(), 200);
    assert!(runs.iter().all(|r| store.events(&r.id).unwrap().len() == 2));
}

fn one_of_many_racing_for_a_lease_gets_it(f: &Fixture) {
    run(f.store(), "01R", 1.0);
    let start = Barrier::new(6);
    let won: Vec<bool> = std::thread::scope(|s| {
        let racers: Vec<_> = (0..6)
            .map(|w| {
                let start = &start;
                s.spawn(move || {
                    let store = f.reopen().unwrap();
                    start.wait();
                    store
                        .acquire_lease("01R", &format!("elsewhere:{w}:1"), Duration::from_secs(60))
                        .unwrap()
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    let owner = f.store().lease_owner("01R").unwrap().unwrap();
    let winner = won.iter().position(|w| *w).unwrap();
    assert_eq!(owner, format!("elsewhere:{winner}:1"));
}

// ---- the writer thread ----

/// A new run stored with its first turn started, for the writer's tests to write to.
fn started_run(store: &dyn Store) -> RunRecord {
    let rec = RunRecord::new("f", "{}");
    store
        .create_run_with_turn(&rec, TurnKind::Start, "", &json!({}))
        .unwrap();
    rec
}

fn writes_of_many_runs_are_committed_in_order_and_acknowledged(f: &Fixture) {
    let store = f.store();
    let ids: Vec<String> = (0..4).map(|_| started_run(store).id).collect();
    let acked = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        let w = writer::spawn_scoped(s, store);
        for i in 0..50 {
            for id in &ids {
                let mut c = EventChunk::new("m", 1);
                c.push("message", &format!(r#"{{"content":"{i}"}}"#));
                let mut write = RunWrite::new(id.clone(), 1);
                write.events.push(c);
                let acked = Arc::clone(&acked);
                let key = (id.clone(), i);
                w.submit(
                    write,
                    Box::new(move |r| {
                        r.unwrap();
                        acked.lock().unwrap().push(key);
                    }),
                );
            }
        }
    });
    let acked = acked.lock().unwrap();
    assert_eq!(acked.len(), 200);
    for id in &ids {
        let order: Vec<i32> = acked.iter().filter(|(r, _)| r == id).map(|p| p.1).collect();
        assert_eq!(order, (0..50).collect::<Vec<_>>(), "acknowledged in order");
        let evs = store.events(id).unwrap();
        assert_eq!(evs.len(), 50);
        assert!(evs[49].contains(r#""content":"49""#), "{}", evs[49]);
    }
}

fn batches_refill_written_chunks_and_every_event_is_stored_as_emitted(f: &Fixture) {
    let store = f.store();
    let rec = started_run(store);
    // Each write fills several whole chunks; from the second on, a batch's chunks are
    // the buffers the writer gave back after the one before.
    let line = |w: usize, i: usize| format!(r#"{{"content":"w{w} e{i} {}"}}"#, "x".repeat(900));
    let mut first_buffers = Vec::new();
    let mut refilled = 0;
    std::thread::scope(|s| {
        let w = writer::spawn_scoped(s, store);
        for wi in 0..4 {
            let mut batch = w.batch();
            for i in 0..150 {
                batch.append("m", 1, "message", &line(wi, i));
            }
            let mut write = RunWrite::new(rec.id.clone(), 1);
            write.events = batch.take();
            let ptrs: Vec<*const u8> = write.events.iter().map(|c| c.text.as_ptr()).collect();
            if wi == 0 {
                first_buffers = ptrs;
            } else {
                refilled += ptrs.iter().filter(|p| first_buffers.contains(p)).count();
            }
            w.submit_and_wait(write).unwrap();
        }
    });
    assert!(
        refilled > 0,
        "later batches fill the buffers of written chunks"
    );
    let evs = store.events(&rec.id).unwrap();
    assert_eq!(evs.len(), 600);
    for (n, ev) in evs.iter().enumerate() {
        let want: Value = serde_json::from_str(&line(n / 150, n % 150)).unwrap();
        let got: Value = serde_json::from_str(ev).unwrap();
        assert_eq!(got["data"], want, "event {n}");
    }
}

fn one_failing_write_leaves_the_others_of_its_group_in(f: &Fixture) {
    let store = f.store();
    let rec = started_run(store);
    let mut good = RunWrite::new(rec.id.clone(), 1);
    let mut c = EventChunk::new("m", 1);
    c.push("message", "{}");
    good.events.push(c.clone());
    let mut bad = RunWrite::new("NO-SUCH-RUN", 1);
    bad.events.push(c.clone());
    // A write the database itself refuses (a checkpoint numbered twice) is rolled back
    // to its savepoint; the writes after it go in.
    let mut cp = Checkpointer::new();
    let mut first = RunWrite::new(rec.id.clone(), 1);
    first.checkpoint = cp.plan(&big_state(1)).unwrap();
    store.write_one(first.clone()).unwrap();
    let mut again = first;
    again.events.push(c);
    let mut after = good.clone();
    after.events[0].text = "message {\"after\":1}\n".into();
    let res = store.write(&[bad, good, again, after]).unwrap();
    assert!(matches!(res[0], Err(StoreError::NotFound(_))), "{res:?}");
    assert!(res[1].is_ok());
    assert!(
        matches!(res[2], Err(StoreError::Conflict { .. })),
        "{res:?}"
    );
    assert!(res[3].is_ok(), "{res:?}");
    let evs = store.events(&rec.id).unwrap();
    assert_eq!(evs.len(), 2, "{evs:?}");
    assert!(evs[1].contains("after"), "{evs:?}");
}

// ---- retention ----

const DAY: f64 = 86_400.0;

/// A run created and last updated `age_days` ago, with `status`.
fn run_aged(store: &dyn Store, id: &str, age_days: f64, status: RunStatus) -> RunRecord {
    let mut rec = RunRecord::new("flow.json", "{\"components\": {}}");
    rec.id = id.to_string();
    rec.status = status;
    rec.created_at = unix_now() - age_days * DAY;
    rec.updated_at = rec.created_at;
    store.create_run(&rec).unwrap();
    rec
}

fn select(store: &dyn Store, f: PruneFilter) -> Vec<String> {
    let runs = store.select_prunable(&f).unwrap();
    runs.into_iter().map(|r| r.id).collect()
}

/// Six runs, newest first: F (1 day old, running), E (2, failed), D (10, succeeded),
/// C (20, failed), B (40, waiting), A (60, succeeded).
fn six(store: &dyn Store) {
    for (id, age, st) in [
        ("01A", 60.0, RunStatus::Succeeded),
        ("01B", 40.0, RunStatus::Waiting),
        ("01C", 20.0, RunStatus::Failed),
        ("01D", 10.0, RunStatus::Succeeded),
        ("01E", 2.0, RunStatus::Failed),
        ("01F", 1.0, RunStatus::Running),
    ] {
        run_aged(store, id, age, st);
    }
}

fn days(n: u64) -> Option<Duration> {
    Some(Duration::from_secs(n * 86_400))
}

fn prune_filters_by_age_status_and_keep(f: &Fixture) {
    let store = f.store();
    six(store);
    let pf = |older_than, statuses: &[RunStatus], keep| PruneFilter {
        older_than,
        statuses: statuses.to_vec(),
        keep,
    };
    assert_eq!(
        select(store, pf(days(15), &[], None)),
        ["01C", "01B", "01A"]
    );
    assert_eq!(
        select(store, pf(None, &[RunStatus::Failed], None)),
        ["01E", "01C"]
    );
    let done = [RunStatus::Failed, RunStatus::Succeeded];
    assert_eq!(
        select(store, pf(days(5), &done, None)),
        ["01D", "01C", "01A"]
    );
    // --keep alone: everything but the N newest (whatever their status).
    assert_eq!(select(store, pf(None, &[], Some(4))), ["01B", "01A"]);
    assert_eq!(select(store, pf(None, &[], Some(0))).len(), 6);
    assert!(select(store, pf(None, &[], Some(10))).is_empty());
    // --keep counts all runs, not the selection: the 3 newest are F, E, D.
    assert_eq!(select(store, pf(None, &done, Some(3))), ["01C", "01A"]);
    assert_eq!(select(store, pf(days(15), &[], Some(5))), ["01A"]);
    // No criterion: nothing.
    assert!(select(store, PruneFilter::default()).is_empty());
    assert!(PruneFilter::default().is_empty());
}

fn a_run_a_live_process_holds_is_never_pruned(f: &Fixture) {
    let store = f.store();
    six(store);
    let ttl = Duration::from_secs(60);
    // F runs in this (live) process.
    assert!(
        store
            .acquire_lease("01F", &crate::lease_holder(), ttl)
            .unwrap()
    );
    // E was left running by a process that has died; D's lease has expired.
    store
        .set_status("01E", RunStatus::Running, None, None)
        .unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let me = crate::lease_holder();
    let host = me.split(':').next().unwrap();
    assert!(
        store
            .acquire_lease("01E", &format!("{host}:{pid}:1"), ttl)
            .unwrap()
    );
    assert!(
        store
            .acquire_lease("01D", "elsewhere:1:1", Duration::ZERO)
            .unwrap()
    );
    let all = PruneFilter {
        keep: Some(0),
        ..PruneFilter::default()
    };
    // G was stored just now by a process that has not taken its lease yet.
    run_aged(store, "01G", 0.0, RunStatus::Running);
    let chosen = select(store, all.clone());
    assert!(!chosen.contains(&"01F".to_string()), "{chosen:?}");
    assert!(!chosen.contains(&"01G".to_string()), "{chosen:?}");
    assert_eq!(store.delete_runs(&["01G".to_string()]).unwrap(), 0);
    assert!(chosen.contains(&"01D".to_string()), "{chosen:?}");
    if std::path::Path::new("/proc/self/stat").exists() {
        assert!(chosen.contains(&"01E".to_string()), "{chosen:?}");
    }
    // Asked to delete it anyway (it was taken after the selection): it stays.
    let n = store
        .delete_runs(&["01F".to_string(), "01A".to_string()])
        .unwrap();
    assert_eq!(n, 1);
    assert!(store.find_run("01F").is_ok());
    assert!(store.find_run("01A").is_err());
    // Once the process lets go, it can go.
    store.release_lease("01F", &crate::lease_holder()).unwrap();
    assert!(select(store, all).contains(&"01F".to_string()));
}

/// Rows referencing `run_id` in every table with a `run_id` column.
fn rows_of(f: &Fixture, run_id: &str) -> Vec<(String, i64)> {
    f.tables_with_run_id()
        .into_iter()
        .map(|t| {
            let n = f.number(&format!(
                "SELECT COUNT(*) FROM \"{t}\" WHERE run_id = '{run_id}'"
            ));
            (t, n)
        })
        .collect()
}

fn deleting_a_run_deletes_every_row_that_references_it(f: &Fixture) {
    let store = f.store();
    let gone = full_run(store, 50, 100);
    let kept = full_run(store, 50, 100);
    let before = rows_of(f, &gone);
    // (Events of older SQLite versions had a table of their own, empty here.)
    assert!(
        before.iter().filter(|(_, n)| *n > 0).count() >= 3,
        "{before:?}"
    );
    assert!(store.run_bytes(std::slice::from_ref(&gone)).unwrap() > 50 * 100);
    assert_eq!(store.delete_runs(std::slice::from_ref(&gone)).unwrap(), 1);
    let after = rows_of(f, &gone);
    assert!(after.iter().all(|(_, n)| *n == 0), "{after:?}");
    assert_eq!(rows_of(f, &kept), before, "the other run is untouched");
    assert_eq!(store.events(&kept).unwrap().len(), 50);
    assert!(store.load_checkpoint(&kept).unwrap().state().is_some());
    // Deleting what is not there deletes nothing.
    assert_eq!(store.delete_runs(&[gone, "nope".into()]).unwrap(), 0);
    assert_eq!(store.delete_runs(&[]).unwrap(), 0);
}

fn size_counts_runs_and_events(f: &Fixture) {
    let store = f.store();
    let empty = store.size().unwrap();
    assert_eq!((empty.runs, empty.events), (0, Some(0)));
    let ids: Vec<String> = (0..3).map(|_| full_run(store, 100, 200)).collect();
    let before = store.size().unwrap();
    assert_eq!((before.runs, before.events), (3, Some(300)));
    assert!(before.bytes > 3 * 100 * 200, "{before:?}");
    assert_eq!(store.delete_runs(&ids[..2]).unwrap(), 2);
    store.reclaim().unwrap();
    let after = store.size().unwrap();
    assert_eq!((after.runs, after.events), (1, Some(100)));
    assert_eq!(store.events(&ids[2]).unwrap().len(), 100);
}

on_both!(
    a_runs_options_are_kept_with_it,
    create_and_find_by_id_prefix_and_latest,
    find_reports_ambiguous_and_not_found,
    list_runs_newest_first_with_filter_and_limit,
    a_read_only_store_reads_and_never_writes,
    a_run_is_created_with_its_first_turn,
    a_run_is_created_leased,
    end_turn_sets_the_status_with_the_checkpoint,
    a_dead_local_holder_loses_the_lease_at_once,
    status_turns_and_waiting_form,
    commit_stores_events_in_order_and_the_state,
    commit_is_one_transaction,
    deltas_survive_reopening_and_unchanged_states_write_nothing,
    two_thousand_passes_write_what_changed,
    many_deltas_are_capped_by_a_snapshot,
    a_checkpoint_by_another_writer_stops_this_one,
    leases_exclude_other_owners_until_they_expire,
    one_of_many_racing_for_a_lease_gets_it,
    cancel_flag_is_set_seen_and_cleared,
    a_canvas_is_kept_once_and_forgotten_with_its_last_run,
    a_large_value_is_stored_once_and_forgotten_with_its_last_run,
    a_missing_large_value_is_a_corrupt_store_not_a_panic,
    eight_processes_share_one_store,
    writes_of_many_runs_are_committed_in_order_and_acknowledged,
    batches_refill_written_chunks_and_every_event_is_stored_as_emitted,
    one_failing_write_leaves_the_others_of_its_group_in,
    prune_filters_by_age_status_and_keep,
    a_run_a_live_process_holds_is_never_pruned,
    deleting_a_run_deletes_every_row_that_references_it,
    size_counts_runs_and_events,
);
