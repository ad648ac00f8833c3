//! SQLite (our extension: `db_type: "sqlite"`, `database` = the file path). rusqlite is
//! synchronous, so each statement runs on a blocking thread; dropping the call (timeout,
//! stop) interrupts the statement.

use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, InterruptHandle, OpenFlags};

use super::{Cell, Outcome, ResultSet, Session};

/// Open an existing database file (a missing file is an error, not a new database).
pub async fn connect(path: &str, writes: bool) -> Result<Box<dyn Session>, String> {
    let path = path.to_string();
    let conn = tokio::task::spawn_blocking(move || {
        Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| format!("{e} ({path})"))
    })
    .await
    .map_err(|e| e.to_string())??;
    let interrupt = Arc::new(conn.get_interrupt_handle());
    Ok(Box::new(SqliteSession {
        conn: Some(conn),
        interrupt,
        writes,
    }))
}

struct SqliteSession {
    /// `None` only while a statement runs on its blocking thread.
    conn: Option<Connection>,
    interrupt: Arc<InterruptHandle>,
    writes: bool,
}

/// Interrupts the running statement unless disarmed (the call was dropped).
struct InterruptOnDrop(Option<Arc<InterruptHandle>>);

impl Drop for InterruptOnDrop {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            h.interrupt();
        }
    }
}

impl SqliteSession {
    async fn with_conn<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&Connection) -> T + Send + 'static,
    ) -> Result<T, String> {
        let conn = self.conn.take().ok_or("the SQLite connection was lost")?;
        let mut guard = InterruptOnDrop(Some(self.interrupt.clone()));
        let (conn, out) = tokio::task::spawn_blocking(move || {
            let out = f(&conn);
            (conn, out)
        })
        .await
        .map_err(|e| e.to_string())?;
        guard.0 = None;
        self.conn = Some(conn);
        Ok(out)
    }
}

fn cell(v: ValueRef<'_>) -> Cell {
    match v {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(i) => Cell::Int(i128::from(i)),
        ValueRef::Real(f) => Cell::Float(f),
        ValueRef::Text(t) | ValueRef::Blob(t) => {
            Cell::Text(String::from_utf8_lossy(t).into_owned())
        }
    }
}

fn run(conn: &Connection, sql: &str, max_rows: usize, writes: bool) -> Result<Outcome, String> {
    let err = |e: rusqlite::Error| e.to_string();
    if !writes && conn.is_autocommit() {
        conn.execute_batch("BEGIN").map_err(err)?;
    }
    let before = conn.total_changes();
    let mut stmt = conn.prepare(sql).map_err(err)?;
    let ncols = stmt.column_count();
    if ncols == 0 {
        stmt.raw_execute().map_err(err)?;
        return Ok(Outcome::NoResult(Some(
            conn.total_changes().saturating_sub(before),
        )));
    }
    let columns: Vec<String> = (0..ncols)
        .map(|i| stmt.column_name(i).map(str::to_string).unwrap_or_default())
        .collect();
    let mut rows = Vec::new();
    let mut it = stmt.raw_query();
    while rows.len() < max_rows {
        let Some(row) = it.next().map_err(err)? else {
            break;
        };
        let mut r = Vec::with_capacity(ncols);
        for i in 0..ncols {
            r.push(row.get_ref(i).map(cell).map_err(err)?);
        }
        rows.push(r);
    }
    Ok(Outcome::Rows(ResultSet { columns, rows }))
}

fn rollback(conn: &Connection) {
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
}

#[async_trait]
impl Session for SqliteSession {
    async fn execute(&mut self, sql: &str, max_rows: usize) -> Result<Outcome, String> {
        let sql = sql.to_string();
        let writes = self.writes;
        self.with_conn(move |c| run(c, &sql, max_rows, writes))
            .await?
    }

    async fn rollback(&mut self) {
        let _ = self.with_conn(rollback).await;
    }

    async fn close(mut self: Box<Self>) {
        let _ = self.with_conn(rollback).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db").to_string_lossy().into_owned();
        let c = Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE t(a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x'), (2, NULL), (3, 'z');")
            .unwrap();
        (dir, path)
    }

    #[tokio::test]
    async fn rows_are_capped_and_writes_roll_back_without_permission() {
        let (_dir, path) = db();
        let mut s = connect(&path, false).await.unwrap();
        let Outcome::Rows(rs) = s.execute("SELECT a, b FROM t ORDER BY a", 2).await.unwrap() else {
            panic!("expected rows")
        };
        assert_eq!(rs.columns, vec!["a", "b"]);
        assert_eq!(
            rs.rows,
            vec![
                vec![Cell::Int(1), Cell::Text("x".into())],
                vec![Cell::Int(2), Cell::Null]
            ]
        );
        assert_eq!(
            s.execute("DELETE FROM t WHERE a > 1", 10).await.unwrap(),
            Outcome::NoResult(Some(2))
        );
        assert_eq!(
            s.execute("CREATE TABLE u(x)", 10).await.unwrap(),
            Outcome::NoResult(Some(0))
        );
        s.close().await;
        // Nothing was committed.
        let c = Connection::open(&path).unwrap();
        let n: i64 = c
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 3);
        assert!(c.prepare("SELECT * FROM u").is_err());
    }

    #[tokio::test]
    async fn writes_commit_when_allowed_and_missing_files_fail() {
        let (dir, path) = db();
        let mut s = connect(&path, true).await.unwrap();
        assert_eq!(
            s.execute("UPDATE t SET b = 'y' WHERE a = 2", 10)
                .await
                .unwrap(),
            Outcome::NoResult(Some(1))
        );
        s.close().await;
        let c = Connection::open(&path).unwrap();
        let b: String = c
            .query_row("SELECT b FROM t WHERE a = 2", [], |r| r.get(0))
            .unwrap();
        assert_eq!(b, "y");
        let missing = dir.path().join("nope.db").to_string_lossy().into_owned();
        assert!(connect(&missing, false).await.is_err());
        assert!(!dir.path().join("nope.db").exists());
    }
}
