//! PostgreSQL through tokio-postgres, without TLS, over a socket we connect ourselves to
//! the checked address (DNS pinning).
//!
//! Values: each statement is first prepared, which gives its column names and types
//! without running it; it then runs through the simple query protocol, which returns
//! every value as text in PostgreSQL's own output format (DateStyle ISO, as psycopg2
//! sets it). The text is converted by column type the way psycopg2 would (ints, floats,
//! `numeric` → decimal, bools, `json`/`jsonb` parsed, arrays of simple types → lists,
//! timestamps → datetimes); every other type (uuid, inet, money, interval, enums, ...)
//! keeps its text form. No binary decoder per type is needed, so no type can fail to
//! decode.

use std::error::Error as _;
use std::net::SocketAddr;

use async_trait::async_trait;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

use super::{Cell, Outcome, ResultSet, Session, Target, datetime_cell};

/// A driver error as text: the server's message (with detail and hint) when it has one.
fn message(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.to_string();
    }
    match e.source() {
        Some(src) => format!("{e}: {src}"),
        None => e.to_string(),
    }
}

/// Connect to `addr` as `target` says.
pub async fn connect(
    target: &Target,
    addr: SocketAddr,
    writes: bool,
) -> Result<Box<dyn Session>, String> {
    let mut cfg = tokio_postgres::Config::new();
    cfg.user(&target.username)
        .password(target.password.as_bytes())
        .dbname(&target.database)
        .application_name("canvas")
        // ISO dates as psycopg2 sets them; all float digits on servers older than 12.
        .options("-c DateStyle=ISO,YMD -c extra_float_digits=3");
    let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    let (client, connection) = cfg
        .connect_raw(stream, NoTls)
        .await
        .map_err(|e| message(&e))?;
    let task = tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(Box::new(PgSession {
        client,
        task,
        writes,
        in_tx: false,
    }))
}

struct PgSession {
    client: Client,
    task: tokio::task::JoinHandle<()>,
    writes: bool,
    /// A transaction we opened is in progress.
    in_tx: bool,
}

impl Drop for PgSession {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[async_trait]
impl Session for PgSession {
    async fn execute(&mut self, sql: &str, max_rows: usize) -> Result<Outcome, String> {
        if !self.writes && !self.in_tx {
            self.client
                .simple_query("BEGIN")
                .await
                .map_err(|e| message(&e))?;
            self.in_tx = true;
        }
        let stmt = self.client.prepare(sql).await.map_err(|e| message(&e))?;
        let names: Vec<String> = stmt
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
        let msgs = self
            .client
            .simple_query(sql)
            .await
            .map_err(|e| message(&e))?;
        if types.is_empty() {
            let n = msgs
                .iter()
                .filter_map(|m| match m {
                    SimpleQueryMessage::CommandComplete(n) => Some(*n),
                    _ => None,
                })
                .last()
                .unwrap_or(0);
            return Ok(Outcome::NoResult(reports_count(sql).then_some(n)));
        }
        let rows = msgs
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(r),
                _ => None,
            })
            .take(max_rows)
            .map(|r| {
                types
                    .iter()
                    .enumerate()
                    .map(|(i, ty)| match r.try_get(i) {
                        Ok(Some(text)) => convert(ty, text),
                        _ => Cell::Null,
                    })
                    .collect()
            })
            .collect();
        Ok(Outcome::Rows(ResultSet {
            columns: names,
            rows,
        }))
    }

    async fn rollback(&mut self) {
        let _ = self.client.simple_query("ROLLBACK").await;
        self.in_tx = false;
    }

    async fn close(mut self: Box<Self>) {
        if self.in_tx {
            self.rollback().await;
        }
    }
}

/// Whether the command's completion tag carries a row count (libpq's `PQcmdTuples`);
/// psycopg2's `rowcount` is -1 for the others (DDL, SET, ...). tokio-postgres reports 0
/// for both, so the statement's first keyword decides.
fn reports_count(sql: &str) -> bool {
    let mut s = sql.trim_start();
    loop {
        if let Some(rest) = s.strip_prefix("--") {
            s = rest
                .split_once('\n')
                .map(|(_, r)| r)
                .unwrap_or("")
                .trim_start();
        } else if let Some(rest) = s.strip_prefix("/*") {
            s = rest
                .split_once("*/")
                .map(|(_, r)| r)
                .unwrap_or("")
                .trim_start();
        } else {
            break;
        }
    }
    let word: String = s
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect::<String>()
        .to_ascii_uppercase();
    matches!(
        word.as_str(),
        "INSERT" | "UPDATE" | "DELETE" | "MERGE" | "SELECT" | "WITH" | "MOVE" | "FETCH" | "COPY"
    )
}

/// One value's text → what psycopg2 returns for its type.
pub fn convert(ty: &Type, text: &str) -> Cell {
    let t = text.to_string();
    match *ty {
        Type::INT2 | Type::INT4 | Type::INT8 | Type::OID => {
            text.parse().map(Cell::Int).unwrap_or(Cell::Text(t))
        }
        Type::FLOAT4 | Type::FLOAT8 => parse_float(text).map(Cell::Float).unwrap_or(Cell::Text(t)),
        Type::NUMERIC => match parse_float(text) {
            Some(f) => Cell::Decimal(f, t),
            None => Cell::Text(t),
        },
        Type::BOOL => match text {
            "t" => Cell::Bool(true),
            "f" => Cell::Bool(false),
            _ => Cell::Text(t),
        },
        Type::JSON | Type::JSONB => match serde_json::from_str::<Value>(text) {
            Ok(v) => json_cell(v),
            Err(_) => Cell::Text(t),
        },
        Type::TIMESTAMP | Type::TIMESTAMPTZ => datetime_cell(text).unwrap_or(Cell::Text(t)),
        _ => match array_element(ty) {
            Some(elem) => parse_array(text, &elem)
                .map(Cell::Json)
                .unwrap_or(Cell::Text(t)),
            None => Cell::Text(t),
        },
    }
}

/// PostgreSQL's float output (`NaN`, `Infinity`, `-Infinity` included).
fn parse_float(text: &str) -> Option<f64> {
    match text {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => text.parse().ok(),
    }
}

/// A JSON document as psycopg2 loads it: scalars are plain Python values.
fn json_cell(v: Value) -> Cell {
    match v {
        Value::Null => Cell::Null,
        Value::Bool(b) => Cell::Bool(b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Cell::Int(i128::from(i)),
            None => match n.as_u64() {
                Some(u) => Cell::Int(i128::from(u)),
                None => Cell::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
        },
        Value::String(s) => Cell::Text(s),
        other => Cell::Json(other),
    }
}

/// Element kinds of the array types converted to lists.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Elem {
    Int,
    Float,
    Bool,
    Text,
}

fn array_element(ty: &Type) -> Option<Elem> {
    Some(match *ty {
        Type::INT2_ARRAY | Type::INT4_ARRAY | Type::INT8_ARRAY | Type::OID_ARRAY => Elem::Int,
        Type::FLOAT4_ARRAY | Type::FLOAT8_ARRAY => Elem::Float,
        Type::BOOL_ARRAY => Elem::Bool,
        Type::TEXT_ARRAY | Type::VARCHAR_ARRAY | Type::BPCHAR_ARRAY | Type::NAME_ARRAY => {
            Elem::Text
        }
        _ => return None,
    })
}

/// An array literal (`{1,2,NULL}`, `{"a b",c}`, `{{1,2},{3,4}}`) → a JSON list.
fn parse_array(text: &str, elem: &Elem) -> Option<Value> {
    // A leading dimension decoration (`[0:1]={...}`) is not worth converting.
    let chars: Vec<char> = text.chars().collect();
    let mut pos = 0;
    let v = parse_list(&chars, &mut pos, elem)?;
    (pos == chars.len()).then_some(v)
}

fn parse_list(c: &[char], pos: &mut usize, elem: &Elem) -> Option<Value> {
    if c.get(*pos) != Some(&'{') {
        return None;
    }
    *pos += 1;
    let mut out = Vec::new();
    if c.get(*pos) == Some(&'}') {
        *pos += 1;
        return Some(Value::Array(out));
    }
    loop {
        match c.get(*pos)? {
            '{' => out.push(parse_list(c, pos, elem)?),
            '"' => {
                *pos += 1;
                let mut s = String::new();
                loop {
                    match c.get(*pos)? {
                        '\\' => {
                            s.push(*c.get(*pos + 1)?);
                            *pos += 2;
                        }
                        '"' => {
                            *pos += 1;
                            break;
                        }
                        ch => {
                            s.push(*ch);
                            *pos += 1;
                        }
                    }
                }
                out.push(element(&s, elem, true)?);
            }
            _ => {
                let start = *pos;
                while !matches!(c.get(*pos)?, ',' | '}') {
                    *pos += 1;
                }
                let s: String = c[start..*pos].iter().collect();
                out.push(element(s.trim(), elem, false)?);
            }
        }
        match c.get(*pos)? {
            ',' => *pos += 1,
            '}' => {
                *pos += 1;
                return Some(Value::Array(out));
            }
            _ => return None,
        }
    }
}

fn element(s: &str, elem: &Elem, quoted: bool) -> Option<Value> {
    if !quoted && s.eq_ignore_ascii_case("NULL") {
        return Some(Value::Null);
    }
    Some(match elem {
        Elem::Int => Value::from(s.parse::<i64>().ok()?),
        Elem::Float => match parse_float(s)? {
            f if f.is_finite() => Value::from(f),
            _ => Value::Null,
        },
        Elem::Bool => Value::Bool(match s {
            "t" => true,
            "f" => false,
            _ => return None,
        }),
        Elem::Text => Value::String(s.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_values_convert_by_type() {
        assert_eq!(convert(&Type::INT8, "-42"), Cell::Int(-42));
        assert_eq!(convert(&Type::FLOAT8, "2.5"), Cell::Float(2.5));
        assert!(matches!(convert(&Type::FLOAT4, "NaN"), Cell::Float(f) if f.is_nan()));
        assert_eq!(
            convert(&Type::NUMERIC, "10.50"),
            Cell::Decimal(10.5, "10.50".into())
        );
        assert_eq!(convert(&Type::BOOL, "f"), Cell::Bool(false));
        assert_eq!(
            convert(&Type::JSONB, "{\"a\": [1]}"),
            Cell::Json(json!({"a": [1]}))
        );
        assert_eq!(convert(&Type::JSONB, "3"), Cell::Int(3));
        assert_eq!(
            convert(&Type::DATE, "2024-02-29"),
            Cell::Text("2024-02-29".into())
        );
        assert_eq!(
            convert(&Type::TIMESTAMPTZ, "2024-02-29 23:00:00+00"),
            Cell::DateTime {
                day: "2024-02-29".into(),
                text: "2024-02-29 23:00:00+00".into()
            }
        );
        assert_eq!(
            convert(&Type::UUID, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
            Cell::Text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11".into())
        );
    }

    #[test]
    fn only_counting_commands_have_a_row_count() {
        assert!(reports_count("  -- note\n/* c */ update t set a = 1"));
        assert!(reports_count("WITH x AS (SELECT 1) DELETE FROM t"));
        assert!(!reports_count("CREATE TABLE t(a int)"));
        assert!(!reports_count("SET search_path = public"));
    }

    #[test]
    fn arrays_become_lists() {
        assert_eq!(
            convert(&Type::INT4_ARRAY, "{1,NULL,3}"),
            Cell::Json(json!([1, null, 3]))
        );
        assert_eq!(
            convert(&Type::TEXT_ARRAY, r#"{"a b","q\"x",NULL,"NULL",c}"#),
            Cell::Json(json!(["a b", "q\"x", null, "NULL", "c"]))
        );
        assert_eq!(
            convert(&Type::INT4_ARRAY, "{{1,2},{3,4}}"),
            Cell::Json(json!([[1, 2], [3, 4]]))
        );
        assert_eq!(convert(&Type::BOOL_ARRAY, "{}"), Cell::Json(json!([])));
        assert_eq!(
            convert(&Type::INT4_ARRAY, "[0:1]={1,2}"),
            Cell::Text("[0:1]={1,2}".into())
        );
    }
}
