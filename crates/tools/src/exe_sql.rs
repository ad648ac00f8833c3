//! ExeSQL (`agent/tools/exesql.py`): run the statements of one SQL text against MySQL,
//! MariaDB, OceanBase, PostgreSQL or (our extension) a SQLite file, and give each result
//! as records (`json`) and as a markdown table (`formalized_content`), as RAGFlow does
//! with pandas. Drivers live in `tools/sql`.
//!
//! Differences from RAGFlow: INSERT/UPDATE/DELETE may be allowed (`--allow-sql-writes`
//! or the `allow_writes` parameter), and then commit; a statement without a result set
//! whose row count is not 0 (rows changed, PostgreSQL DDL) reports `N row(s) affected.`
//! or `Statement executed (no result set).` where RAGFlow's pandas step fails with
//! "SQL Execution Failed"; a piece that is only an `[ID:n]` marker is skipped; MSSQL,
//! IBM DB2 and Trino are not supported in this build.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use regex::Regex;
use serde_json::{Value, json};

use super::sql::{self, Engine, Outcome, Target, frame};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::template::string_format;
use canvas_engine::{BuildError, CResult, ComponentError};
use canvas_pyrt::{Object, py_json, py_str, py_strip, truthy};

/// RAGFlow's `COMPONENT_EXEC_TIMEOUT` default, for the whole call.
const TIMEOUT: Duration = Duration::from_secs(60);

/// `db_type` values RAGFlow accepts, and ours.
const DB_TYPES: [&str; 8] = [
    "mysql",
    "postgres",
    "mariadb",
    "mssql",
    "IBM DB2",
    "trino",
    "oceanbase",
    "sqlite",
];

const NO_RECORD: &str = "No record in the database!";

/// RAGFlow's refusal, with how to lift it here.
const WRITE_REFUSAL: &str = "For security reasons, INSERT, UPDATE, and DELETE statements are not supported. \
(canvas: run with --allow-sql-writes, or set `allow_writes: true` in the ExeSQL parameters, to allow them.)";

static ID_MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[ID:[0-9]+\]").expect("valid regex"));
static WRITE_STMT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^(insert|update|delete)\b").expect("valid regex"));

/// The checked connection parameters.
#[derive(Debug, Clone)]
struct Config {
    db_type: String,
    target: Target,
    port: i64,
    max_records: usize,
}

/// The ExeSQL tool.
pub struct ExeSql {
    meta: ToolMeta,
    config: Config,
}

/// A string parameter (`default` when absent); other values by their Python `str()`.
fn text_param(params: &Object, name: &str, default: &str) -> String {
    match params.get(name) {
        None => default.to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => py_str(v),
    }
}

/// `check_positive_integer`: a JSON integer above zero (`3306.0` and `"3306"` fail too).
fn positive_int(params: &Object, name: &str, default: i64, descr: &str) -> Result<i64, BuildError> {
    let Some(v) = params.get(name) else {
        return Ok(default);
    };
    let n = match v {
        Value::Number(n) if !n.is_f64() => n.as_i64().or(n.as_u64().map(|_| i64::MAX)),
        _ => None,
    };
    match n {
        Some(i) if i > 0 => Ok(i),
        _ => Err(BuildError::Params(format!(
            "{descr} {} not supported, should be positive integer",
            py_str(v)
        ))),
    }
}

fn check_empty(params: &Object, name: &str, descr: &str) -> Result<(), BuildError> {
    if params.get(name).is_some_and(truthy) {
        Ok(())
    } else {
        Err(BuildError::Params(format!(
            "{descr} does not support empty value."
        )))
    }
}

/// Build from DSL parameters, with RAGFlow's `check()`.
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    Ok(Box::new(ExeSql::new(params)?))
}

impl ExeSql {
    fn new(params: &Object) -> Result<ExeSql, BuildError> {
        let db_type_v = params
            .get("db_type")
            .cloned()
            .unwrap_or_else(|| json!("mysql"));
        let db_type = match db_type_v.as_str() {
            Some(s) if DB_TYPES.contains(&s) => s.to_string(),
            _ => {
                let list: Vec<Value> = DB_TYPES.iter().map(|s| json!(s)).collect();
                return Err(BuildError::Params(format!(
                    "Choose DB type {} is not supported, it should be in {}",
                    py_str(&db_type_v),
                    py_str(&Value::Array(list))
                )));
            }
        };
        let sqlite = db_type == "sqlite";
        check_empty(params, "database", "Database name")?;
        let mut port = 3306;
        if !sqlite {
            check_empty(params, "username", "database username")?;
            check_empty(params, "host", "IP Address")?;
            port = positive_int(params, "port", 3306, "IP Port")?;
            if db_type != "trino" {
                check_empty(params, "password", "Database password")?;
            }
        }
        let max_records = positive_int(params, "max_records", 1024, "Maximum number of records")?;
        let target = Target {
            database: text_param(params, "database", ""),
            username: text_param(params, "username", ""),
            password: text_param(params, "password", ""),
            host: text_param(params, "host", ""),
        };
        if target.database == "rag_flow"
            && (target.host == "ragflow-mysql" || target.password == "infini_rag_flow")
        {
            return Err(BuildError::Params(
                "For the security reason, it does not support database named rag_flow.".into(),
            ));
        }
        Ok(ExeSql {
            meta: ToolMeta {
                name: "execute_sql",
                description: "This is a tool that can execute SQL.",
                parameters: vec![Param::string(
                    "sql",
                    "The SQL needs to be executed.",
                    "{sys.query}",
                )],
            },
            config: Config {
                db_type,
                target,
                port,
                max_records: usize::try_from(max_records).unwrap_or(usize::MAX),
            },
        })
    }
}

fn failed(msg: impl Into<String>) -> ComponentError {
    ComponentError::Failed(msg.into())
}

impl ExeSql {
    /// `{ref}`s of the SQL replaced by their values (JSON for non-strings), each
    /// recorded as an input.
    fn substitute(&self, call: &Call<'_>, sql: &str) -> CResult<String> {
        let mut kv = Vec::new();
        for e in call.cx.collect_refs(sql) {
            // RAGFlow's pattern only knows `cpn@var` and globals, not Iteration aliases.
            if e.raw != e.exp {
                continue;
            }
            let v = call.cx.resolve(&e.exp)?;
            let s = match v {
                Value::String(s) => s,
                other => py_json(&other),
            };
            call.set_input(&e.exp, Value::String(s.clone()));
            kv.push((e.raw, Value::String(s)));
        }
        Ok(string_format(sql, &kv))
    }

    /// Connect and run every statement; the outputs' values.
    async fn execute(&self, call: &Call<'_>, sql: &str) -> CResult<(Vec<Value>, Vec<String>)> {
        let c = &self.config;
        let engine = match c.db_type.as_str() {
            "mysql" | "mariadb" | "oceanbase" => Engine::MySql,
            "postgres" => Engine::Postgres,
            "sqlite" => Engine::Sqlite,
            other => {
                return Err(failed(format!(
                    "ExeSQL: db_type '{other}' is not supported in this build (supported: mysql, mariadb, oceanbase, postgres, sqlite)."
                )));
            }
        };
        let addr =
            if engine == Engine::Sqlite {
                None
            } else {
                let host = &c.target.host;
                let port = u16::try_from(c.port).map_err(|_| {
                    failed(format!(
                        "Database Connection Failed! \nport {} is out of range 1-65535",
                        c.port
                    ))
                })?;
                let addr =
                    call.env().net.resolve(host, port).await.map_err(|e| {
                        failed(format!("Database host '{host}' is not allowed: {e}"))
                    })?;
                Some(addr)
            };
        let writes = call.env().sql_writes || call.param_bool("allow_writes", false);
        let mut session = sql::connect(engine, &c.target, addr, writes)
            .await
            .map_err(|e| failed(format!("Database Connection Failed! \n{e}")))?;

        let mut json_out = Vec::new();
        let mut content = Vec::new();
        for piece in sql.split(';') {
            let piece = piece.replace("```", "");
            let stmt = py_strip(&piece);
            if stmt.is_empty() {
                continue;
            }
            let stmt = ID_MARKER.replace_all(stmt, "").into_owned();
            // Only a citation marker (`SELECT 1; [ID:3]`): RAGFlow sends an empty query
            // and reports the driver's error; there is nothing to run.
            if py_strip(&stmt).is_empty() {
                continue;
            }
            if !writes && WRITE_STMT.is_match(&stmt) {
                json_out.push(json!({"content": WRITE_REFUSAL}));
                content.push(WRITE_REFUSAL.to_string());
                continue;
            }
            match session.execute(&stmt, c.max_records).await {
                Ok(Outcome::Rows(rs)) if !rs.rows.is_empty() => {
                    json_out.push(frame::records(&rs));
                    content.push(frame::markdown(&rs));
                }
                // RAGFlow's `rowcount == 0`: no rows, nothing changed, or MySQL DDL.
                Ok(Outcome::Rows(_)) | Ok(Outcome::NoResult(Some(0))) => {
                    json_out.push(json!({"content": NO_RECORD}));
                    break;
                }
                // No result set where RAGFlow's pandas step would fail: say what happened.
                Ok(Outcome::NoResult(n)) => {
                    let msg = match n {
                        Some(n) => format!("{n} row(s) affected."),
                        None => "Statement executed (no result set).".to_string(),
                    };
                    json_out.push(json!({"content": msg}));
                    content.push(msg);
                }
                Err(e) => {
                    session.rollback().await;
                    let msg = format!("SQL Execution Failed: {stmt}\n{e}");
                    json_out.push(json!({"content": msg}));
                    content.push(msg);
                }
            }
        }
        session.close().await;
        Ok((json_out, content))
    }

    /// The call, bounded by `limit`.
    async fn run_within(
        &self,
        call: &Call<'_>,
        args: &Object,
        limit: Duration,
    ) -> CResult<Option<Value>> {
        let sql_v = args.get("sql").cloned().unwrap_or(Value::Null);
        if !truthy(&sql_v) {
            return Err(failed("SQL for `ExeSQL` MUST not be empty."));
        }
        let sql = match sql_v {
            Value::String(s) => s,
            other => py_str(&other),
        };
        let sql = self.substitute(call, &sql)?;
        let (json_out, content) = tokio::time::timeout(limit, self.execute(call, &sql))
            .await
            .map_err(|_| {
                failed(format!(
                    "ExeSQL timed out after {} seconds.",
                    limit.as_secs_f64()
                ))
            })??;
        let formalized = content.join("\n\n");
        call.set_output("json", Value::Array(json_out));
        call.set_output("formalized_content", Value::String(formalized.clone()));
        Ok(Some(Value::String(formalized)))
    }
}

#[async_trait]
impl Tool for ExeSql {
    fn class(&self) -> &'static str {
        "ExeSQL"
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn thoughts(&self, _args: &Object) -> String {
        "Query sent—waiting for the data.".into()
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        self.run_within(call, args, TIMEOUT).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::testkit::{Harness, OneClass};

    fn obj(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    fn build_err(v: Value) -> String {
        match build(&obj(v)) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("expected a check() failure"),
        }
    }

    #[test]
    fn check_mirrors_ragflow() {
        let ok = json!({"database": "d", "username": "u", "host": "h", "password": "p"});
        assert!(build(&obj(ok.clone())).is_ok());
        assert_eq!(
            build_err(json!({"db_type": "oracle"})),
            "Choose DB type oracle is not supported, it should be in ['mysql', 'postgres', 'mariadb', 'mssql', 'IBM DB2', 'trino', 'oceanbase', 'sqlite']"
        );
        assert_eq!(
            build_err(json!({"username": "u"})),
            "Database name does not support empty value."
        );
        assert_eq!(
            build_err(
                json!({"database": "d", "username": "u", "host": "h", "password": "p", "port": "5432"})
            ),
            "IP Port 5432 not supported, should be positive integer"
        );
        assert_eq!(
            build_err(json!({"database": "d", "username": "u", "host": "h"})),
            "Database password does not support empty value."
        );
        assert!(
            build(&obj(
                json!({"db_type": "trino", "database": "c", "username": "u", "host": "h"})
            ))
            .is_ok()
        );
        assert_eq!(
            build_err(
                json!({"database": "d", "username": "u", "host": "h", "password": "p", "max_records": 0})
            ),
            "Maximum number of records 0 not supported, should be positive integer"
        );
        assert_eq!(
            build_err(
                json!({"database": "rag_flow", "username": "root", "host": "mysql", "password": "infini_rag_flow"})
            ),
            "For the security reason, it does not support database named rag_flow."
        );
        // SQLite needs only the file.
        assert!(build(&obj(json!({"db_type": "sqlite", "database": "/tmp/x.db"}))).is_ok());
    }

    fn harness(params: Value) -> Harness {
        let mut p = params;
        p["sql"] = json!("{sys.query}");
        let registry = OneClass("ExeSQL", |p| crate::node::ToolNode::build(build, p));
        Harness::single(
            &registry,
            "ExeSQL:0",
            "ExeSQL",
            p,
            json!({"sys.query": "unused"}),
        )
    }

    fn call_with(
        h: &Harness,
        params: Value,
        args: Value,
        limit: Duration,
    ) -> CResult<Option<Value>> {
        let tool = ExeSql::new(&obj(params)).unwrap();
        h.with_cx("ExeSQL:0", |cx| {
            let call = Call::node(cx);
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(tool.run_within(&call, &obj(args), limit))
        })
    }

    #[test]
    fn private_hosts_are_refused_without_the_flag() {
        let params = json!({"db_type": "postgres", "database": "d", "username": "u", "host": "127.0.0.1", "password": "p", "port": 5432});
        let h = harness(params.clone());
        let err = call_with(&h, params, json!({"sql": "SELECT 1"}), TIMEOUT).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("Database host '127.0.0.1' is not allowed: "),
            "{msg}"
        );
        assert!(msg.contains("a loopback address"), "{msg}");
        assert!(msg.contains("--allow-private-network"), "{msg}");
    }

    #[test]
    fn unsupported_engines_and_empty_sql_fail_cleanly() {
        let params = json!({"db_type": "mssql", "database": "d", "username": "u", "host": "db.example", "password": "p"});
        let h = harness(params.clone());
        let err = call_with(&h, params.clone(), json!({"sql": "SELECT 1"}), TIMEOUT).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ExeSQL: db_type 'mssql' is not supported in this build (supported: mysql, mariadb, oceanbase, postgres, sqlite)."
        );
        let err = call_with(&h, params, json!({"sql": ""}), TIMEOUT).unwrap_err();
        assert_eq!(err.to_string(), "SQL for `ExeSQL` MUST not be empty.");
    }

    #[test]
    fn a_slow_statement_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE t(x)")
            .unwrap();
        let params = json!({"db_type": "sqlite", "database": path.to_string_lossy()});
        let h = harness(params.clone());
        let forever = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
        let started = std::time::Instant::now();
        let err = call_with(
            &h,
            params,
            json!({"sql": forever}),
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "ExeSQL timed out after 0.3 seconds.");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn references_in_the_sql_are_substituted_and_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TABLE t(id INTEGER, tag TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b');",
            )
            .unwrap();
        let params = json!({"db_type": "sqlite", "database": path.to_string_lossy()});
        let h = harness(params.clone());
        h.set_output("begin", "id", json!(2));
        let out = call_with(
            &h,
            params,
            json!({"sql": "SELECT tag FROM t WHERE id = {begin@id}"}),
            TIMEOUT,
        )
        .unwrap();
        assert_eq!(out, Some(json!("| tag   |\n|:------|\n| b     |")));
        assert_eq!(h.input("ExeSQL:0", "begin@id"), json!("2"));
        assert_eq!(h.output("ExeSQL:0", "json"), json!([[{"tag": "b"}]]));
    }
}
