//! ExeSQL against real databases: SQLite always (a file built here); PostgreSQL and
//! MariaDB when `CANVAS_TEST_PG` / `CANVAS_TEST_MYSQL` name them (`scripts/test-databases.sh
//! start` prints both). Without them the server tests print why they skip, except under
//! `CI=true`, where a missing variable fails.
//!
//! Expected tables follow tabulate's "pipe" rules, worked out by hand: a column is as wide
//! as its widest cell or its header plus two; numbers are right-aligned on the decimal
//! point, floats with 6 decimals (a frame of numbers only hands tabulate numpy values, so
//! even its ints print as floats), text is left-aligned; NULL is an empty cell, or `nan`
//! in a float column.

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::{CanvasCli, Ran};

const REFUSAL_START: &str =
    "For security reasons, INSERT, UPDATE, and DELETE statements are not supported.";

/// begin → ExeSQL:Q (its `sql` left to the `{sys.query}` default) → Message:Out.
fn canvas_json(params: Value) -> Value {
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["ExeSQL:Q"]},
        "ExeSQL:Q": {"obj": {"component_name": "ExeSQL", "params": params},
            "downstream": ["Message:Out"], "upstream": ["begin"]},
        "Message:Out": {"obj": {"component_name": "Message",
            "params": {"content": ["{ExeSQL:Q@formalized_content}"]}},
            "downstream": [], "upstream": ["ExeSQL:Q"]},
    }})
}

/// Run the canvas with `sql` as the query.
fn run(params: Value, sql: &str, flags: &[&str]) -> Ran {
    let cli = CanvasCli::new().json("exesql.json", &canvas_json(params));
    let file = cli.path("exesql.json");
    cli.arg("run")
        .arg(file)
        .args(["--format", "jsonl", "-q", sql])
        .args(flags)
        .run()
}

/// ExeSQL's `node_finished` data.
fn finished(out: &Ran) -> Value {
    out.events()
        .into_iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "ExeSQL:Q")
        .map(|e| e["data"].clone())
        .unwrap_or_else(|| panic!("no node_finished for ExeSQL:Q\nstderr: {}", out.stderr()))
}

/// Run and return ExeSQL's (`json`, `formalized_content`), requiring success.
fn outputs(params: Value, sql: &str, flags: &[&str]) -> (Value, String) {
    let out = run(params, sql, flags).code(0);
    let data = finished(&out);
    assert_eq!(data["error"], Value::Null, "{data}");
    let o = &data["outputs"];
    let content = o["formalized_content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (o["json"].clone(), content)
}

fn sqlite_db(dir: &Path) -> String {
    let path = dir.join("shop.db");
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "CREATE TABLE items(id INTEGER, name TEXT, price REAL, added TEXT);
         INSERT INTO items VALUES (1, 'apple', 1.5, '2024-01-05'),
                                  (2, 'pear', NULL, '2024-02-10'),
                                  (3, NULL, 10.0, NULL);",
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

fn sqlite_params(path: &str) -> Value {
    json!({"db_type": "sqlite", "database": path})
}

fn count_items(path: &str) -> i64 {
    let c = rusqlite::Connection::open(path).unwrap();
    c.query_row("SELECT count(*) FROM items", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn sqlite_select_gives_records_and_a_markdown_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_db(dir.path());
    let (j, md) = outputs(
        sqlite_params(&db),
        "SELECT id, name, price, added FROM items ORDER BY id",
        &[],
    );
    // price has a NULL: a float column (nan in the table, null in JSON).
    assert_eq!(
        j,
        json!([[
            {"id": 1, "name": "apple", "price": 1.5, "added": "2024-01-05"},
            {"id": 2, "name": "pear", "price": null, "added": "2024-02-10"},
            {"id": 3, "name": null, "price": 10.0, "added": null}
        ]])
    );
    assert_eq!(
        md,
        "\
|   id | name   |      price | added      |
|-----:|:-------|-----------:|:-----------|
|    1 | apple  |   1.500000 | 2024-01-05 |
|    2 | pear   | nan        | 2024-02-10 |
|    3 |        |  10.000000 |            |"
    );
}

#[test]
fn sqlite_statements_run_in_order_until_one_finds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_db(dir.path());
    let sql = "SELECT name FROM items WHERE id = 1; DELETE FROM items; SELECT nope FROM items; \
               SELECT count(*) AS n FROM items; SELECT name FROM items WHERE id = 99; \
               SELECT 'never' AS x";
    let (j, md) = outputs(sqlite_params(&db), sql, &[]);
    let j = j.as_array().unwrap().clone();
    assert_eq!(j.len(), 5, "{j:?}");
    assert_eq!(j[0], json!([{"name": "apple"}]));
    let refusal = j[1]["content"].as_str().unwrap();
    assert!(refusal.starts_with(REFUSAL_START), "{refusal}");
    assert!(refusal.contains("--allow-sql-writes"), "{refusal}");
    let failure = j[2]["content"].as_str().unwrap();
    assert!(
        failure.starts_with("SQL Execution Failed: SELECT nope FROM items\n"),
        "{failure}"
    );
    assert!(failure.contains("no such column: nope"), "{failure}");
    // The DELETE was refused: all three rows are still there.
    assert_eq!(j[3], json!([{"n": 3}]));
    assert_eq!(j[4], json!({"content": "No record in the database!"}));
    // "No record" is not part of the text; nothing after it ran.
    let parts: Vec<&str> = md.split("\n\n").collect();
    assert_eq!(parts.len(), 4, "{md}");
    assert_eq!(parts[0], "| name   |\n|:-------|\n| apple  |");
    assert_eq!(parts[1], refusal);
    assert_eq!(parts[2], failure);
    assert_eq!(parts[3], "|        n |\n|---------:|\n| 3.000000 |");
    assert_eq!(count_items(&db), 3);
}

#[test]
fn sqlite_writes_need_the_flag_or_the_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_db(dir.path());
    // Without permission, statements run in a transaction that is rolled back (RAGFlow
    // never commits): a DDL statement finds no record and leaves nothing behind.
    let (j, _) = outputs(sqlite_params(&db), "CREATE TABLE z(a); SELECT 1", &[]);
    assert_eq!(j, json!([{"content": "No record in the database!"}]));
    let c = rusqlite::Connection::open(&db).unwrap();
    assert!(c.prepare("SELECT * FROM z").is_err());

    let sql = "INSERT INTO items VALUES (4, 'plum', 3.0, '2024-04-01'); \
               update items set price = 2.0 where price is null; \
               DELETE FROM items WHERE id = 3; SELECT count(*) AS n FROM items";
    let (j, md) = outputs(sqlite_params(&db), sql, &["--allow-sql-writes"]);
    assert_eq!(
        j,
        json!([
            {"content": "1 row(s) affected."},
            {"content": "1 row(s) affected."},
            {"content": "1 row(s) affected."},
            [{"n": 3}]
        ])
    );
    assert!(
        md.starts_with("1 row(s) affected.\n\n1 row(s) affected.\n\n"),
        "{md}"
    );
    let price: f64 = c
        .query_row("SELECT price FROM items WHERE id = 2", [], |r| r.get(0))
        .unwrap();
    assert_eq!(price, 2.0);

    let mut params = sqlite_params(&db);
    params["allow_writes"] = json!(true);
    let (j, _) = outputs(params, "DELETE FROM items WHERE id = 4", &[]);
    assert_eq!(j, json!([{"content": "1 row(s) affected."}]));
    assert_eq!(count_items(&db), 2);
}

#[test]
fn sqlite_max_records_fences_and_id_markers() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_db(dir.path());
    let mut params = sqlite_params(&db);
    params["max_records"] = json!(2);
    let (j, md) = outputs(
        params,
        "```\nSELECT id FROM items ORDER BY id [ID:12]\n```; [ID:13]",
        &[],
    );
    assert_eq!(j, json!([[{"id": 1}, {"id": 2}]]));
    assert_eq!(md, "|       id |\n|---------:|\n| 1.000000 |\n| 2.000000 |");
}

#[test]
fn sqlite_check_and_empty_sql_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_db(dir.path());
    // An empty query: the `{sys.query}` default is empty.
    let out = run(sqlite_params(&db), "", &[]);
    assert_ne!(out.exit_code(), Some(0));
    assert_eq!(
        finished(&out)["error"],
        "SQL for `ExeSQL` MUST not be empty."
    );
    // RAGFlow's check() refuses its own database.
    let out = run(
        json!({"database": "rag_flow", "username": "root", "host": "ragflow-mysql", "password": "x"}),
        "SELECT 1",
        &[],
    );
    assert_ne!(out.exit_code(), Some(0));
    assert!(
        out.stderr()
            .contains("For the security reason, it does not support database named rag_flow."),
        "{}",
        out.stderr()
    );
}

// ---- PostgreSQL and MariaDB ----

/// A server URL from the environment, or `None` (skip) outside CI.
fn server_url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Some(v),
        _ if std::env::var("CI").as_deref() == Ok("true") => panic!(
            "{var} is not set: CI must start the test databases (scripts/test-databases.sh start)"
        ),
        _ => {
            eprintln!(
                "skipping: {var} is not set (run scripts/test-databases.sh start and export its output)"
            );
            None
        }
    }
}

/// `scheme://user:password@host:port/database` → ExeSQL parameters.
fn server_params(db_type: &str, url: &str) -> Value {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let (auth, rest) = rest.split_once('@').expect("user:password@ in the URL");
    let (user, password) = auth.split_once(':').expect("user:password");
    let (hostport, database) = rest.split_once('/').expect("/database");
    let (host, port) = hostport.rsplit_once(':').expect("host:port");
    json!({
        "db_type": db_type, "database": database, "username": user, "password": password,
        "host": host, "port": port.parse::<u16>().expect("a port"),
    })
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// A table name no other test run shares.
fn table(tag: &str) -> String {
    format!("exesql_{tag}_{}", std::process::id())
}

fn pg_setup(url: &str, sql: &str) {
    block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect to CANVAS_TEST_PG");
        let task = tokio::spawn(conn);
        client.batch_execute(sql).await.expect("PostgreSQL setup");
        drop(client);
        let _ = task.await;
    });
}

fn my_setup(url: &str, sql: &str) {
    use mysql_async::prelude::Queryable;
    block_on(async {
        let opts = mysql_async::Opts::from_url(url).expect("CANVAS_TEST_MYSQL is a URL");
        let mut conn = mysql_async::Conn::new(opts)
            .await
            .expect("connect to CANVAS_TEST_MYSQL");
        conn.query_drop(sql).await.expect("MariaDB setup");
        let _ = conn.disconnect().await;
    });
}

const ITEMS_ROWS: &str = "(1, 'apple', 1.50, 0.5, '2024-01-05', '2024-01-05 10:30:00'),
    (2, 'pear', NULL, 2.25, '2024-02-10', NULL),
    (3, NULL, 10.00, NULL, NULL, '2024-03-01 23:59:59')";

/// The same rows through a server: decimals, a float column with a NULL, a DATE and a
/// timestamp (pandas formats datetimes as `%Y-%m-%d`).
fn expect_items(params: &Value, t: &str) {
    let (j, md) = outputs(
        params.clone(),
        &format!("SELECT id, name, price, ratio, added, seen FROM {t} ORDER BY id"),
        &["--allow-private-network"],
    );
    assert_eq!(
        j,
        json!([[
            {"id": 1, "name": "apple", "price": 1.5, "ratio": 0.5, "added": "2024-01-05", "seen": "2024-01-05"},
            {"id": 2, "name": "pear", "price": null, "ratio": 2.25, "added": "2024-02-10", "seen": null},
            {"id": 3, "name": null, "price": 10.0, "ratio": null, "added": null, "seen": "2024-03-01"}
        ]])
    );
    assert_eq!(
        md,
        "\
|   id | name   |     price |      ratio | added      | seen       |
|-----:|:-------|----------:|-----------:|:-----------|:-----------|
|    1 | apple  |  1.500000 |   0.500000 | 2024-01-05 | 2024-01-05 |
|    2 | pear   |           |   2.250000 | 2024-02-10 |            |
|    3 |        | 10.000000 | nan        |            | 2024-03-01 |"
    );
}

/// What both servers must do beyond the SELECT: statements in order, the write refusal,
/// writes with the flag, a failing statement followed by a good one, max_records.
fn expect_statements(params: &Value, t: &str, count: impl Fn() -> i64) {
    let private = ["--allow-private-network"];
    let sql = format!(
        "SELECT nope FROM {t}; SELECT name FROM {t} WHERE id = 1; DELETE FROM {t}; \
         SELECT id FROM {t} WHERE id > 99; SELECT 'never' AS x"
    );
    let (j, md) = outputs(params.clone(), &sql, &private);
    let j = j.as_array().unwrap().clone();
    assert_eq!(j.len(), 4, "{j:?}");
    let failure = j[0]["content"].as_str().unwrap();
    assert!(
        failure.starts_with(&format!("SQL Execution Failed: SELECT nope FROM {t}\n")),
        "{failure}"
    );
    assert!(failure.contains("nope"), "{failure}");
    // After the failure (and its rollback) the next statement still runs.
    assert_eq!(j[1], json!([{"name": "apple"}]));
    assert!(j[2]["content"].as_str().unwrap().starts_with(REFUSAL_START));
    assert_eq!(j[3], json!({"content": "No record in the database!"}));
    assert_eq!(md.split("\n\n").count(), 3, "{md}");
    assert_eq!(count(), 3);

    let sql = format!(
        "UPDATE {t} SET name = 'fig' WHERE id = 3; DELETE FROM {t} WHERE id = 2; \
         SELECT name FROM {t} ORDER BY id"
    );
    let (j, md) = outputs(
        params.clone(),
        &sql,
        &["--allow-private-network", "--allow-sql-writes"],
    );
    assert_eq!(
        j,
        json!([
            {"content": "1 row(s) affected."},
            {"content": "1 row(s) affected."},
            [{"name": "apple"}, {"name": "fig"}]
        ])
    );
    assert!(
        md.ends_with("| name   |\n|:-------|\n| apple  |\n| fig    |"),
        "{md}"
    );
    assert_eq!(count(), 2);

    let mut capped = params.clone();
    capped["max_records"] = json!(1);
    let (j, _) = outputs(capped, &format!("SELECT id FROM {t} ORDER BY id"), &private);
    assert_eq!(j, json!([[{"id": 1}]]));
}

/// Without `--allow-private-network` the loopback host is refused before connecting.
fn expect_private_refusal(params: &Value) {
    let out = run(params.clone(), "SELECT 1", &[]);
    assert_ne!(out.exit_code(), Some(0));
    let err = finished(&out)["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let host = params["host"].as_str().unwrap();
    assert!(
        err.starts_with(&format!("Database host '{host}' is not allowed: ")),
        "{err}"
    );
}

#[test]
fn postgres_queries_statements_and_writes() {
    let Some(url) = server_url("CANVAS_TEST_PG") else {
        return;
    };
    let params = server_params("postgres", &url);
    let t = table("pg");
    pg_setup(
        &url,
        &format!(
            "DROP TABLE IF EXISTS {t};
             CREATE TABLE {t}(id int, name text, price numeric(6,2), ratio float8, added date, seen timestamp);
             INSERT INTO {t} VALUES {ITEMS_ROWS};"
        ),
    );
    expect_items(&params, &t);
    let count = || {
        block_on(async {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            let task = tokio::spawn(conn);
            let n: i64 = client
                .query_one(&format!("SELECT count(*) FROM {t}"), &[])
                .await
                .unwrap()
                .get(0);
            drop(client);
            let _ = task.await;
            n
        })
    };
    expect_statements(&params, &t, count);

    // PostgreSQL-only: json, arrays, booleans; DDL has no row count there (psycopg2's
    // -1), so the statements after it run, and without writes it is rolled back.
    let (j, _) = outputs(
        params.clone(),
        &format!(
            "CREATE TABLE {t}_tmp(a int); SELECT '{{\"k\": [1, 2]}}'::jsonb AS doc, ARRAY[1, 2] AS arr, true AS ok"
        ),
        &["--allow-private-network"],
    );
    assert_eq!(
        j,
        json!([
            {"content": "Statement executed (no result set)."},
            [{"doc": {"k": [1, 2]}, "arr": [1, 2], "ok": true}]
        ])
    );
    let (j, _) = outputs(
        params.clone(),
        &format!("SELECT count(*) AS n FROM pg_tables WHERE tablename = '{t}_tmp'"),
        &["--allow-private-network"],
    );
    assert_eq!(j, json!([[{"n": 0}]]));

    expect_private_refusal(&params);
    pg_setup(&url, &format!("DROP TABLE IF EXISTS {t}"));
}

#[test]
fn mariadb_queries_statements_and_writes() {
    let Some(url) = server_url("CANVAS_TEST_MYSQL") else {
        return;
    };
    let params = server_params("mariadb", &url);
    let t = table("my");
    my_setup(
        &url,
        &format!(
            "DROP TABLE IF EXISTS {t};
             CREATE TABLE {t}(id INT, name VARCHAR(20), price DECIMAL(6,2), ratio DOUBLE, added DATE, seen DATETIME);
             INSERT INTO {t} VALUES {ITEMS_ROWS};"
        ),
    );
    expect_items(&params, &t);
    let count = || {
        use mysql_async::prelude::Queryable;
        block_on(async {
            let mut conn = mysql_async::Conn::new(mysql_async::Opts::from_url(&url).unwrap())
                .await
                .unwrap();
            let n: Option<i64> = conn
                .query_first(format!("SELECT count(*) FROM {t}"))
                .await
                .unwrap();
            let _ = conn.disconnect().await;
            n.unwrap_or(-1)
        })
    };
    expect_statements(&params, &t, count);

    // MySQL-only: DDL's rowcount is 0, so it ends the statements; TIME is a timedelta.
    let (j, _) = outputs(
        params.clone(),
        "CREATE TEMPORARY TABLE tmp_x(a INT); SELECT 1",
        &["--allow-private-network"],
    );
    assert_eq!(j, json!([{"content": "No record in the database!"}]));
    let (j, md) = outputs(
        params.clone(),
        "SELECT TIME('12:30:00') AS t, 'x' AS s",
        &["--allow-private-network"],
    );
    assert_eq!(j, json!([[{"t": "0 days 12:30:00", "s": "x"}]]));
    assert_eq!(
        md,
        "| t               | s   |\n|:----------------|:----|\n| 0 days 12:30:00 | x   |"
    );

    // OceanBase speaks MySQL: the same driver.
    let mut ob = params.clone();
    ob["db_type"] = json!("oceanbase");
    let (j, _) = outputs(ob, "SELECT 7 AS n", &["--allow-private-network"]);
    assert_eq!(j, json!([[{"n": 7}]]));

    expect_private_refusal(&params);
    my_setup(&url, &format!("DROP TABLE IF EXISTS {t}"));
}
