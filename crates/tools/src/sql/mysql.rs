//! MySQL, MariaDB and OceanBase through mysql_async (no TLS), connected by IP to the
//! checked address. Queries use the text protocol, as pymysql does; values are
//! converted by column type the way pymysql's converters do (ints, floats, decimals,
//! datetimes, `TIME` → timedelta; text and the rest as strings).

use std::net::SocketAddr;

use async_trait::async_trait;
use mysql_async::consts::ColumnType;
use mysql_async::prelude::Queryable;
use mysql_async::{Column, Conn, OptsBuilder, Value};

use super::{Cell, Outcome, ResultSet, Session, Target, datetime_cell};
use canvas_pyrt::py_repr_str;

/// A driver error as pymysql prints it: `(1146, "Table 'x.y' doesn't exist")` for server
/// errors, the driver's own message otherwise.
fn message(e: &mysql_async::Error) -> String {
    match e {
        mysql_async::Error::Server(s) => format!("({}, {})", s.code, py_repr_str(&s.message)),
        other => other.to_string(),
    }
}

/// Connect to `addr` as `target` says.
pub async fn connect(
    target: &Target,
    addr: SocketAddr,
    writes: bool,
) -> Result<Box<dyn Session>, String> {
    let opts = OptsBuilder::default()
        .ip_or_hostname(addr.ip().to_string())
        .tcp_port(addr.port())
        .prefer_socket(false)
        // pymysql's rowcount counts matched rows, not only changed ones.
        .client_found_rows(true)
        .user(Some(target.username.clone()))
        .pass(Some(target.password.clone()))
        .db_name(Some(target.database.clone()));
    let mut conn = Conn::new(opts).await.map_err(|e| message(&e))?;
    // pymysql connects with autocommit off and never commits.
    let autocommit = if writes {
        "SET autocommit=1"
    } else {
        "SET autocommit=0"
    };
    conn.query_drop(autocommit).await.map_err(|e| message(&e))?;
    Ok(Box::new(MySession { conn: Some(conn) }))
}

struct MySession {
    /// `None` once closed.
    conn: Option<Conn>,
}

#[async_trait]
impl Session for MySession {
    async fn execute(&mut self, sql: &str, max_rows: usize) -> Result<Outcome, String> {
        let conn = self.conn.as_mut().ok_or("connection closed")?;
        let mut result = conn.query_iter(sql).await.map_err(|e| message(&e))?;
        let columns = result.columns().filter(|c| !c.is_empty());
        let Some(columns) = columns else {
            let n = result.affected_rows();
            result.drop_result().await.map_err(|e| message(&e))?;
            return Ok(Outcome::NoResult(Some(n)));
        };
        let mut rows = Vec::new();
        while rows.len() < max_rows {
            let Some(row) = result.next().await.map_err(|e| message(&e))? else {
                break;
            };
            let values = row.unwrap();
            rows.push(
                columns
                    .iter()
                    .zip(values)
                    .map(|(col, v)| convert(col, v))
                    .collect(),
            );
        }
        result.drop_result().await.map_err(|e| message(&e))?;
        Ok(Outcome::Rows(ResultSet {
            columns: columns.iter().map(|c| c.name_str().into_owned()).collect(),
            rows,
        }))
    }

    async fn rollback(&mut self) {
        if let Some(conn) = self.conn.as_mut() {
            let _ = conn.query_drop("ROLLBACK").await;
        }
    }

    async fn close(mut self: Box<Self>) {
        if let Some(mut conn) = self.conn.take() {
            let _ = conn.query_drop("ROLLBACK").await;
            let _ = conn.disconnect().await;
        }
    }
}

fn convert(col: &Column, v: Value) -> Cell {
    match v {
        Value::NULL => Cell::Null,
        Value::Bytes(b) => {
            let text = String::from_utf8_lossy(&b).into_owned();
            convert_text(col.column_type(), text, &b)
        }
        Value::Int(i) => Cell::Int(i128::from(i)),
        Value::UInt(u) => Cell::Int(i128::from(u)),
        Value::Float(f) => Cell::Float(f64::from(f)),
        Value::Double(f) => Cell::Float(f),
        Value::Date(y, mo, d, h, mi, s, us) => {
            let day = format!("{y:04}-{mo:02}-{d:02}");
            if col.column_type() == ColumnType::MYSQL_TYPE_DATE {
                return Cell::Text(day);
            }
            let mut text = format!("{day} {h:02}:{mi:02}:{s:02}");
            if us != 0 {
                text.push_str(&format!(".{us:06}"));
            }
            Cell::DateTime { day, text }
        }
        Value::Time(neg, d, h, m, s, us) => {
            let secs =
                i64::from(d) * 86_400 + i64::from(h) * 3600 + i64::from(m) * 60 + i64::from(s);
            let micros = secs * 1_000_000 + i64::from(us);
            Cell::Timedelta(if neg { -micros } else { micros })
        }
    }
}

/// A text-protocol value by column type.
fn convert_text(ty: ColumnType, text: String, raw: &[u8]) -> Cell {
    use ColumnType::*;
    match ty {
        MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_LONG | MYSQL_TYPE_LONGLONG
        | MYSQL_TYPE_INT24 | MYSQL_TYPE_YEAR => {
            text.parse().map(Cell::Int).unwrap_or(Cell::Text(text))
        }
        MYSQL_TYPE_FLOAT | MYSQL_TYPE_DOUBLE => {
            text.parse().map(Cell::Float).unwrap_or(Cell::Text(text))
        }
        MYSQL_TYPE_DECIMAL | MYSQL_TYPE_NEWDECIMAL => match text.parse() {
            Ok(f) => Cell::Decimal(f, text),
            Err(_) => Cell::Text(text),
        },
        MYSQL_TYPE_DATETIME
        | MYSQL_TYPE_TIMESTAMP
        | MYSQL_TYPE_DATETIME2
        | MYSQL_TYPE_TIMESTAMP2 => datetime_cell(&text).unwrap_or(Cell::Text(text)),
        MYSQL_TYPE_TIME | MYSQL_TYPE_TIME2 => parse_time(&text)
            .map(Cell::Timedelta)
            .unwrap_or(Cell::Text(text)),
        // pymysql gives bytes for BIT; an integer is what they mean.
        MYSQL_TYPE_BIT if raw.len() <= 8 => {
            Cell::Int(raw.iter().fold(0i128, |acc, b| (acc << 8) | i128::from(*b)))
        }
        _ => Cell::Text(text),
    }
}

/// `[-]HHH:MM:SS[.ffffff]` → microseconds (pymysql's `convert_timedelta`).
fn parse_time(text: &str) -> Option<i64> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let (hms, frac) = body.split_once('.').unwrap_or((body, ""));
    let mut parts = hms.split(':');
    let h: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let s: i64 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || frac.len() > 6 || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let us: i64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<6}").parse().ok()?
    };
    let total = ((h * 60 + m) * 60 + s) * 1_000_000 + us;
    Some(if neg { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_values_convert_by_column_type() {
        use ColumnType::*;
        let t = |ty, s: &str| convert_text(ty, s.to_string(), s.as_bytes());
        assert_eq!(
            t(MYSQL_TYPE_LONGLONG, "18446744073709551615"),
            Cell::Int(18446744073709551615)
        );
        assert_eq!(t(MYSQL_TYPE_DOUBLE, "0.25"), Cell::Float(0.25));
        assert_eq!(
            t(MYSQL_TYPE_NEWDECIMAL, "3.10"),
            Cell::Decimal(3.1, "3.10".into())
        );
        assert_eq!(
            t(MYSQL_TYPE_DATE, "2024-01-31"),
            Cell::Text("2024-01-31".into())
        );
        assert_eq!(
            t(MYSQL_TYPE_DATETIME, "2024-01-31 08:00:00"),
            Cell::DateTime {
                day: "2024-01-31".into(),
                text: "2024-01-31 08:00:00".into()
            }
        );
        assert_eq!(
            t(MYSQL_TYPE_DATETIME, "0000-00-00 00:00:00"),
            Cell::Text("0000-00-00 00:00:00".into())
        );
        assert_eq!(
            t(MYSQL_TYPE_TIME, "-01:30:00.5"),
            Cell::Timedelta(-5_400_500_000)
        );
        assert_eq!(
            convert_text(MYSQL_TYPE_BIT, String::new(), &[1, 2]),
            Cell::Int(258)
        );
        assert_eq!(
            t(MYSQL_TYPE_VAR_STRING, "héllo"),
            Cell::Text("héllo".into())
        );
    }
}
