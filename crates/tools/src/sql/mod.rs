//! ExeSQL's database drivers: one [`Session`] per call, statements run one at a time.
//! Drivers turn column values into [`Cell`]s, the Python values RAGFlow's drivers
//! (pymysql, psycopg2) would return, so [`frame`] can reproduce what pandas makes of them.
//!
//! Transactions mirror RAGFlow, whose connections never commit: unless writes are
//! allowed, statements run in a transaction rolled back at the end (and after a failing
//! statement); with writes allowed, each statement commits on its own.

pub mod frame;
#[cfg(feature = "sql")]
pub mod mysql;
#[cfg(feature = "sql")]
pub mod postgres;
#[cfg(feature = "sql")]
pub mod sqlite;

use async_trait::async_trait;
use serde_json::Value;

/// A column value, typed as RAGFlow's Python driver would give it.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// `None`.
    Null,
    /// `bool`.
    Bool(bool),
    /// `int` (unsigned BIGINT included).
    Int(i128),
    /// `float`.
    Float(f64),
    /// `decimal.Decimal`: its value as a float and its text.
    Decimal(f64, String),
    /// `str`; dates, times and every type without a better mapping by their text.
    Text(String),
    /// `datetime.datetime`: its `%Y-%m-%d` day and its `str()`.
    DateTime {
        /// `YYYY-MM-DD`.
        day: String,
        /// `YYYY-MM-DD HH:MM:SS[.ffffff]` (with its offset when it has one).
        text: String,
    },
    /// `datetime.timedelta` (MySQL `TIME`), in microseconds.
    Timedelta(i64),
    /// A parsed JSON document (PostgreSQL `json`/`jsonb` objects and arrays).
    Json(Value),
}

/// Rows a statement returned (at most the `max_records` asked for).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResultSet {
    /// Column names in order.
    pub columns: Vec<String>,
    /// Rows, each with one cell per column.
    pub rows: Vec<Vec<Cell>>,
}

/// What one statement did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It has a result set (possibly without rows).
    Rows(ResultSet),
    /// It has none: the driver's row count (rows changed; 0 for MySQL and SQLite DDL),
    /// `None` where psycopg2's `rowcount` is -1 (PostgreSQL commands without a count).
    NoResult(Option<u64>),
}

/// An open connection.
#[async_trait]
pub trait Session: Send {
    /// Run one statement, keeping at most `max_rows` rows. `Err` is the driver's message.
    async fn execute(&mut self, sql: &str, max_rows: usize) -> Result<Outcome, String>;
    /// Undo the open transaction, if any (errors ignored, as RAGFlow does).
    async fn rollback(&mut self);
    /// Roll back what is uncommitted and close.
    async fn close(self: Box<Self>);
}

/// The database engines this build speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// MySQL, MariaDB and OceanBase (the MySQL protocol).
    MySql,
    /// PostgreSQL.
    Postgres,
    /// A local SQLite file.
    Sqlite,
}

/// Where and as whom to connect.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The database name (SQLite: the file path).
    pub database: String,
    /// The user.
    pub username: String,
    /// The password.
    pub password: String,
    /// The host as written (PostgreSQL sends it for TLS-less identification only).
    pub host: String,
}

#[cfg(feature = "sql")]
/// Open a session. `addr` is the checked address to connect to (none for SQLite);
/// `writes` lets statements commit.
pub async fn connect(
    engine: Engine,
    target: &Target,
    addr: Option<std::net::SocketAddr>,
    writes: bool,
) -> Result<Box<dyn Session>, String> {
    match (engine, addr) {
        (Engine::Sqlite, _) => sqlite::connect(&target.database, writes).await,
        (Engine::MySql, Some(addr)) => mysql::connect(target, addr, writes).await,
        (Engine::Postgres, Some(addr)) => postgres::connect(target, addr, writes).await,
        (_, None) => Err("no address to connect to".into()),
    }
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` (or with a `T`) → a `DateTime` cell; `None` when the
/// text is not a date and time.
pub fn datetime_cell(text: &str) -> Option<Cell> {
    let b = text.as_bytes();
    let date_ok = b.len() >= 19
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[7] == b'-'
        && (b[10] == b' ' || b[10] == b'T')
        && b[13] == b':'
        && b[16] == b':';
    if !date_ok || text.starts_with("0000-00-00") {
        return None;
    }
    Some(Cell::DateTime {
        day: text[..10].to_string(),
        text: text.replacen('T', " ", 1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_keep_their_day() {
        assert_eq!(
            datetime_cell("2024-03-09 23:59:59.5+02"),
            Some(Cell::DateTime {
                day: "2024-03-09".into(),
                text: "2024-03-09 23:59:59.5+02".into()
            })
        );
        assert_eq!(datetime_cell("0000-00-00 00:00:00"), None);
        assert_eq!(datetime_cell("2024-03-09"), None);
    }
}
