//! Tests' fixtures: a fresh store of either backend, raw SQL on it, and the helpers the
//! behavioural tests share. [`on_both!`] runs a test function on SQLite (a file in a
//! temporary directory) and on PostgreSQL (a schema of its own in `$CANVAS_TEST_PG`'s
//! database, dropped after). Without `CANVAS_TEST_PG` the PostgreSQL half is skipped with
//! a note, except under `CI=true`, where it fails.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use canvas_engine::RunState;
use serde_json::json;

use crate::postgres::ident;
use crate::{
    Checkpointer, EventChunk, PgStore, PgUrl, Result, RunRecord, RunWrite, SqliteStore, Store,
};

/// Define `mod sqlite` and `mod postgres`, each with one `#[test]` per named function
/// (`fn(&Fixture)`) of the enclosing module, run on that backend.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $name() {
                    super::$name(&$crate::testkit::Fixture::sqlite());
                }
            )*
        }
        mod postgres {
            $(
                #[test]
                fn $name() {
                    if let Some(f) = $crate::testkit::Fixture::postgres() {
                        super::$name(&f);
                    }
                }
            )*
        }
    };
}
pub(crate) use on_both;

/// A fresh store, and raw access to it.
pub(crate) struct Fixture {
    kind: Kind,
}

// One per test: its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Kind {
    Sqlite {
        store: SqliteStore,
        path: PathBuf,
        _dir: tempfile::TempDir,
    },
    Postgres {
        store: Option<PgStore>,
        url: PgUrl,
        admin: Mutex<postgres::Client>,
    },
}

/// `$CANVAS_TEST_PG`, or `None` (with a note) outside CI.
pub(crate) fn test_pg_url() -> Option<String> {
    match std::env::var("CANVAS_TEST_PG") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CANVAS_TEST_PG is not set: .ci/run starts PostgreSQL and sets it")
        }
        _ => {
            eprintln!(
                "skipping the PostgreSQL half: CANVAS_TEST_PG is not set \
                 (scripts/test-databases.sh start prints it)"
            );
            None
        }
    }
}

/// A schema name no other test (or test process) uses.
pub(crate) fn unique_schema() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "t_{}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        ulid::Ulid::new().to_string().to_lowercase()
    )
}

impl Fixture {
    /// A new SQLite store in a temporary directory.
    pub(crate) fn sqlite() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let store = SqliteStore::open(&path).unwrap();
        Fixture {
            kind: Kind::Sqlite {
                store,
                path,
                _dir: dir,
            },
        }
    }

    /// A new PostgreSQL store in a schema of its own; `None` when there is no server.
    pub(crate) fn postgres() -> Option<Fixture> {
        let url = PgUrl::parse(&test_pg_url()?).unwrap();
        let url = url.with_schema(&unique_schema());
        let mut admin = url.config.connect(postgres::NoTls).unwrap();
        // Raw SQL finds the store's tables; schemas and their tables go at the end.
        admin
            .batch_execute(&format!("SET search_path TO {}", ident(url.schema())))
            .unwrap();
        let store = PgStore::open(&url).unwrap();
        Some(Fixture {
            kind: Kind::Postgres {
                store: Some(store),
                url,
                admin: Mutex::new(admin),
            },
        })
    }

    /// The store.
    pub(crate) fn store(&self) -> &dyn Store {
        match &self.kind {
            Kind::Sqlite { store, .. } => store,
            Kind::Postgres { store, .. } => store.as_ref().unwrap(),
        }
    }

    /// The URL of a PostgreSQL store.
    pub(crate) fn store_url(&self) -> &PgUrl {
        match &self.kind {
            Kind::Postgres { url, .. } => url,
            Kind::Sqlite { .. } => panic!("a SQLite store has no URL"),
        }
    }

    /// True on PostgreSQL.
    pub(crate) fn is_pg(&self) -> bool {
        matches!(self.kind, Kind::Postgres { .. })
    }

    /// Another handle on the same store, as another process opens it.
    pub(crate) fn reopen(&self) -> Result<Box<dyn Store>> {
        Ok(match &self.kind {
            Kind::Sqlite { path, .. } => Box::new(SqliteStore::open(path)?),
            Kind::Postgres { url, .. } => Box::new(PgStore::open(url)?),
        })
    }

    /// The store opened read-only.
    pub(crate) fn read_only(&self) -> Option<Box<dyn Store>> {
        match &self.kind {
            Kind::Sqlite { path, .. } => SqliteStore::open_read_only(path)
                .unwrap()
                .map(|s| Box::new(s) as Box<dyn Store>),
            Kind::Postgres { url, .. } => PgStore::open_read_only(url)
                .unwrap()
                .map(|s| Box::new(s) as Box<dyn Store>),
        }
    }

    /// Checkpoint bytes the store has written.
    pub(crate) fn checkpoint_bytes_written(&self) -> u64 {
        match &self.kind {
            Kind::Sqlite { store, .. } => store.checkpoint_bytes_written(),
            Kind::Postgres { store, .. } => store.as_ref().unwrap().checkpoint_bytes_written(),
        }
    }

    /// Run SQL statements (the same text must suit the backend: callers pick).
    pub(crate) fn exec(&self, sql: &str) {
        match &self.kind {
            Kind::Sqlite { store, .. } => store.lock().conn.execute_batch(sql).unwrap(),
            Kind::Postgres { admin, .. } => admin.lock().unwrap().batch_execute(sql).unwrap(),
        }
    }

    /// The number a query of one row and one integer column gives.
    pub(crate) fn number(&self, sql: &str) -> i64 {
        match &self.kind {
            Kind::Sqlite { store, .. } => store
                .lock()
                .conn
                .query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
                .unwrap()
                .unwrap_or(0),
            Kind::Postgres { admin, .. } => {
                let q = format!("SELECT COALESCE(({sql})::bigint, 0)");
                admin.lock().unwrap().query_one(&q, &[]).unwrap().get(0)
            }
        }
    }

    /// The text column of every row of a query.
    pub(crate) fn texts(&self, sql: &str) -> Vec<String> {
        match &self.kind {
            Kind::Sqlite { store, .. } => {
                let g = store.lock();
                let mut st = g.conn.prepare(sql).unwrap();
                st.query_map([], |r| r.get(0))
                    .unwrap()
                    .collect::<rusqlite::Result<_>>()
                    .unwrap()
            }
            Kind::Postgres { admin, .. } => admin
                .lock()
                .unwrap()
                .query(sql, &[])
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect(),
        }
    }

    /// The store's tables that have a `run_id` column.
    pub(crate) fn tables_with_run_id(&self) -> Vec<String> {
        self.texts(if self.is_pg() {
            "SELECT table_name::text FROM information_schema.columns
             WHERE table_schema = current_schema() AND column_name = 'run_id'
             ORDER BY table_name"
        } else {
            "SELECT m.name FROM sqlite_master AS m, pragma_table_info(m.name) AS c
             WHERE m.type = 'table' AND c.name = 'run_id' ORDER BY m.name"
        })
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Kind::Postgres { store, url, admin } = &mut self.kind {
            // The store's connections go first; then its schema, whatever the test left.
            drop(store.take());
            let drop_schema = format!("DROP SCHEMA IF EXISTS {} CASCADE", ident(url.schema()));
            if let Ok(c) = admin.get_mut() {
                let _ = c.batch_execute(&drop_schema);
            }
        }
    }
}

/// A run created at `created_at` (its id `id`) in `store`.
pub(crate) fn run(store: &dyn Store, id: &str, created_at: f64) -> RunRecord {
    let mut rec = RunRecord::new("flow.json", "{\"components\": {}}");
    rec.id = id.to_string();
    rec.created_at = created_at;
    rec.updated_at = created_at;
    store.create_run(&rec).unwrap();
    rec
}

/// A state shaped like a real run: `nodes` components with a few outputs each.
pub(crate) fn big_state(nodes: usize) -> RunState {
    let mut s = RunState::default();
    s.globals
        .insert("sys.query".into(), json!("what is the weather in Paris?"));
    s.globals_mut().insert("sys.user_id".into(), json!("u1"));
    s.globals_mut().insert("env.counter".into(), json!(0));
    for i in 0..nodes {
        let id = format!("Message:Node{i}");
        s.path.push(id.as_str().into());
        s.set_output(
            &id,
            "content",
            json!("lorem ipsum dolor sit amet ".repeat(8)),
        );
        s.set_output(&id, "_created_time", json!(1_700_000_000.25 + i as f64));
        s.set_output(&id, "_elapsed_time", json!(0.0123));
        std::sync::Arc::make_mut(s.nodes.entry(id).or_default())
            .inputs
            .insert("text".into(), json!("{sys.query}"));
    }
    s
}

/// One pass of a loop: one counter and one small output change.
pub(crate) fn step(s: &mut RunState, i: i64) {
    s.counters.insert("LoopItem:L".into(), i);
    s.set_output("Switch:S", "_elapsed_time", json!(i as f64 / 1000.0));
}

/// What the CLI's reporter does: plan the checkpoint of `state` with `cp`, and write it
/// with events `message {"content": e}` for each `e`, in one write.
pub(crate) fn commit(
    store: &dyn Store,
    cp: &mut Checkpointer,
    run_id: &str,
    turn: u32,
    events: &[i64],
    state: Option<&RunState>,
) -> Result<()> {
    let mut w = RunWrite::new(run_id, turn);
    if !events.is_empty() {
        let mut c = EventChunk::new("m", 7);
        for e in events {
            c.push("message", &format!(r#"{{"content":{e}}}"#));
        }
        w.events.push(c);
    }
    w.checkpoint = state.map(|s| cp.plan(s)).transpose()?.flatten();
    store.write_one(w)
}

/// The JSON line event `e` of run `run_id` (as [`commit`] writes it) reads back as.
pub(crate) fn line(run_id: &str, e: i64) -> String {
    format!(
        r#"{{"event":"message","data":{{"content":{e}}},"message_id":"m","created_at":7,"task_id":"{run_id}"}}"#
    )
}

/// [`line`] of each event.
pub(crate) fn lines(run_id: &str, es: &[i64]) -> Vec<String> {
    es.iter().map(|e| line(run_id, *e)).collect()
}

/// The run's state as of its last checkpoint.
pub(crate) fn load(store: &dyn Store, run_id: &str) -> Option<RunState> {
    store.load_checkpoint(run_id).unwrap().state().cloned()
}

/// The kinds of the run's stored checkpoints, in order.
pub(crate) fn checkpoint_kinds(f: &Fixture, run_id: &str) -> Vec<String> {
    f.texts(&format!(
        "SELECT kind FROM checkpoints WHERE run_id = '{run_id}' ORDER BY seq"
    ))
}

/// A succeeded run with its first turn, `n` events of `len` bytes of noise (none
/// compresses away), checkpoints, and a second turn.
pub(crate) fn full_run(store: &dyn Store, n: usize, len: usize) -> String {
    let rec = RunRecord::new("flow.json", "{\"components\": {}}");
    let turn = store
        .create_run_with_turn(&rec, crate::TurnKind::Start, "q", &json!({}))
        .unwrap();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ len as u64;
    let mut body = || {
        let noise: String = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'a' + (x % 26) as u8)
            })
            .collect();
        format!("{{\"noise\":\"{noise}\"}}")
    };
    let mut state = RunState::default();
    let mut checkpoints = Checkpointer::new();
    for i in 0..n / 10 {
        state.globals_mut().insert("sys.i".into(), json!(i));
        let mut events = EventChunk::new("m", 0);
        for _ in 0..10 {
            events.push("node_finished", &body());
        }
        let mut w = RunWrite::new(rec.id.clone(), turn);
        w.events.push(events);
        w.checkpoint = checkpoints.plan(&state).unwrap();
        store.write_one(w).unwrap();
    }
    store
        .begin_turn(&rec.id, crate::TurnKind::Next, "more", &json!({}))
        .unwrap();
    // Finished (a lease-less running run this fresh would be left alone as starting).
    store
        .set_status(&rec.id, crate::RunStatus::Succeeded, None, None)
        .unwrap();
    rec.id
}
