//! `canvas validate`: findings with codes, levels and file positions; formats; exit codes.

use std::path::Path;

use serde_json::Value;

use crate::harness::{CanvasCli, run_in};
use crate::util::shared_dir;

const CLEAN: &str = r#"{
  "components": {
    "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Message:Hi"], "upstream": []},
    "Message:Hi": {"obj": {"component_name": "Message", "params": {"content": ["Hi {sys.query}"]}}, "downstream": [], "upstream": ["begin"]}
  },
  "path": [], "history": [], "retrieval": [], "globals": {"sys.query": ""}
}
"#;

/// `canvas validate ARGS` in `dir`: (exit code, stdout, stderr).
fn validate(dir: &Path, args: &[&str]) -> (i32, String, String) {
    run_in(dir, &[&["validate"], args].concat())
}

/// `canvas components --format json` (which must succeed): the listed components.
fn components() -> Vec<Value> {
    let ran = CanvasCli::new()
        .args(["components", "--format", "json"])
        .run()
        .code(0);
    match ran.json() {
        Value::Array(list) => list,
        other => panic!("canvas components --format json: not an array: {other}"),
    }
}

/// The entry of `name` in `canvas components --format json`.
fn component<'a>(list: &'a [Value], name: &str) -> Option<&'a Value> {
    list.iter().find(|e| e["name"] == name)
}

fn findings(json: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(json).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["findings"].as_array().unwrap().clone())
        .collect()
}

#[test]
fn ragflow_fixtures_findings_are_pinned() {
    let Some(shared) = shared_dir() else { return };
    let dir = shared.join("fixtures/ragflow");
    let (code, out, err) = validate(&dir, &["go-testdata", "test-dsl"]);
    assert_eq!(code, 1, "the fixtures hold real defects: {err}");
    let files = out
        .lines()
        .filter(|l| l.starts_with("go-testdata/") || l.starts_with("test-dsl/"));
    assert_eq!(files.count(), 13, "{out}");
    insta::assert_snapshot!("ragflow_fixtures", out);
}

#[test]
fn all_json_defects_are_errors_at_their_lines() {
    let Some(shared) = shared_dir() else { return };
    let dir = shared.join("fixtures/ragflow/go-testdata");
    let (code, out, _) = validate(&dir, &["all.json", "--format", "json"]);
    assert_eq!(code, 1);
    let fs = findings(&out);
    let find = |code: &str| {
        fs.iter()
            .find(|f| f["code"] == code)
            .unwrap_or_else(|| panic!("no {code} in {fs:#?}"))
    };
    // The Switch routes case 5 to a component that does not exist (all.json line 779).
    let c013 = find("C013");
    assert_eq!(c013["level"], "error");
    assert_eq!(c013["component"], "Switch:Route");
    assert_eq!(
        c013["pointer"],
        "/components/Switch:Route/obj/params/conditions/4/to/1"
    );
    assert_eq!(
        (c013["line"].as_u64(), c013["column"].as_u64()),
        (Some(779), Some(17))
    );
    assert!(
        c013["message"]
            .as_str()
            .unwrap()
            .contains("CodeExec:FunnyBroomsShare")
    );
    // The Loop's variable has no name (the object opens at line 235).
    let c045 = find("C045");
    assert_eq!(c045["level"], "error");
    assert_eq!(c045["component"], "Loop:InputUntil1");
    assert_eq!(
        (c045["line"].as_u64(), c045["column"].as_u64()),
        (Some(235), Some(13))
    );

    let (_, gh, _) = validate(&dir, &["all.json", "--format", "github"]);
    assert!(
        gh.lines()
            .any(|l| l
                .starts_with("::error file=all.json,line=779,col=17,title=C013::Switch:Route: ")),
        "{gh}"
    );
}

#[test]
fn exit_codes_follow_the_worst_level() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("clean.json"), CLEAN).unwrap();
    let (code, out, _) = validate(p, &["clean.json"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "clean.json: ok\n1 file checked: 0 errors, 0 warnings, 0 notes\n"
    );

    // An unreachable Message is a warning: exit 0, or 1 with --strict.
    let warn = CLEAN.replace(
        r#""Message:Hi": {"#,
        r#""Message:Lost": {"obj": {"component_name": "Message", "params": {"content": ["x"]}}, "downstream": [], "upstream": []},
    "Message:Hi": {"#,
    );
    std::fs::write(p.join("warn.json"), warn).unwrap();
    let (code, out, _) = validate(p, &["warn.json"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("warning[C020]  Message:Lost: "), "{out}");
    assert!(
        out.contains("      4:21  warning[C020]"),
        "line and column of the component: {out}"
    );
    let (code, _, _) = validate(p, &["warn.json", "--strict"]);
    assert_eq!(code, 1);

    // A dangling downstream is an error.
    let bad = CLEAN.replace(
        r#""downstream": ["Message:Hi"]"#,
        r#""downstream": ["Message:Hi", "Message:Nope"]"#,
    );
    std::fs::write(p.join("bad.json"), bad).unwrap();
    let (code, out, _) = validate(p, &["bad.json", "--format", "json"]);
    assert_eq!(code, 1);
    let f = findings(&out);
    assert_eq!(f[0]["code"], "C010");
    assert_eq!(f[0]["pointer"], "/components/begin/downstream/1");
    assert_eq!(f[0]["line"], 3);

    // Invalid JSON: exit 2, with the parser's position.
    std::fs::write(p.join("broken.json"), "{\n  \"components\": ,\n}").unwrap();
    let (code, out, _) = validate(p, &["broken.json", "--format", "json"]);
    assert_eq!(code, 2);
    let f = findings(&out);
    assert_eq!(
        (f[0]["code"].as_str(), f[0]["line"].as_u64()),
        (Some("C002"), Some(2))
    );

    // A path that does not exist: one error line, exit 2.
    let (code, _, err) = validate(p, &["nope.json"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("error: nope.json: no such file or directory\n"),
        "{err}"
    );
}

#[test]
fn directories_are_searched_for_canvas_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join("flows/sub")).unwrap();
    std::fs::create_dir_all(p.join("flows/.hidden")).unwrap();
    std::fs::write(p.join("flows/a.json"), CLEAN).unwrap();
    let yaml = "components:\n  begin:\n    obj: {component_name: Begin, params: {}}\n    downstream: [M]\n  M:\n    obj: {component_name: Message, params: {content: ['{SYS.query}']}}\n    downstream: []\n    upstream: [begin]\n";
    std::fs::write(p.join("flows/sub/b.yaml"), yaml).unwrap();
    std::fs::write(p.join("flows/notes.txt"), "not a canvas").unwrap();
    // A mock script next to its canvas is not a canvas: skipped when found in a directory.
    std::fs::write(p.join("flows/m.mock.yaml"), "default: echo\n").unwrap();
    std::fs::write(p.join("flows/.hidden/c.json"), "{").unwrap();
    let (code, out, _) = validate(p, &["flows", "--format", "json"]);
    assert_eq!(code, 1, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let files: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["flows/a.json", "flows/sub/b.yaml"]);
    // The wrong-case reference in the YAML file (no line numbers for YAML).
    let f = &v[1]["findings"][0];
    assert_eq!(
        (f["code"].as_str(), f["component"].as_str()),
        (Some("C033"), Some("M"))
    );
    assert!(f.get("line").is_none());
    let (_, text, _) = validate(p, &["flows"]);
    assert!(text.ends_with("2 files checked: 1 error, 0 warnings, 0 notes (flows/m.mock.yaml skipped: not a canvas)\n"), "{text}");
    // Named explicitly, it is checked: not a canvas, an invalid input (exit 2).
    let (code, out, _) = validate(p, &["flows/m.mock.yaml"]);
    assert_eq!(code, 2);
    assert!(out.contains("error[C002]"), "{out}");
}

#[test]
fn graph_only_exports_are_checked_after_deriving_their_components() {
    let Some(shared) = shared_dir() else { return };
    let dir = shared.join("fixtures/ragflow/go-testdata");
    let (_, out, _) = validate(&dir, &["subaget.json", "--format", "json"]);
    let fs = findings(&out);
    // The legacy form is a note; the sub-agent's MCP server, known by its RAGFlow id
    // only, is a note too, and it points into the graph node's form, where the file
    // has it.
    assert!(
        fs.iter()
            .any(|f| f["code"] == "C070" && f["level"] == "info"),
        "{fs:#?}"
    );
    let mcp = fs
        .iter()
        .find(|f| f["code"] == "C048")
        .unwrap_or_else(|| panic!("{fs:#?}"));
    assert_eq!(mcp["component"], "Agent:GentleCrabsWrite");
    let text = std::fs::read_to_string(dir.join("subaget.json")).unwrap();
    let line = mcp["line"].as_u64().unwrap() as usize;
    // The first MCP server's object, just under `"mcp": [` in the sub-agent's form.
    assert!(
        text.lines().nth(line - 2).unwrap().contains("\"mcp\": ["),
        "line {line}"
    );
}

/// The hints of C004/C005 point at `canvas components`: it lists what runs and what not.
#[test]
fn components_lists_what_this_build_runs() {
    let list = components();
    let status =
        |name: &str| component(&list, name).map(|e| e["status"].as_str().unwrap().to_string());
    assert_eq!(status("Begin").as_deref(), Some("runs"));
    assert_eq!(status("Categorize").as_deref(), Some("runs"));
    assert_eq!(status("CodeExec").as_deref(), Some("runs"));
    assert_eq!(status("Retrieval").as_deref(), Some("runs"));
    assert_eq!(status("DocGenerator").as_deref(), Some("runs"));
    assert_eq!(status("ExcelProcessor").as_deref(), Some("runs"));
    assert_eq!(status("YahooFinance").as_deref(), Some("runs"));
    assert_eq!(status("Browser").as_deref(), Some("not_yet"));
    assert_eq!(status("TuShare").as_deref(), Some("legacy"));
    let text = CanvasCli::new().arg("components").run().stdout();
    assert!(text.starts_with("Runs in this build:\n  Begin\n"), "{text}");
}

/// Every tool of RAGFlow's Agent tool menu (`llm-and-tools.md` §7.2) is listed; the ones
/// this build runs come with their function schema, parameters and environment.
#[test]
fn components_lists_ragflows_agent_tool_menu() {
    let list = components();
    let menu = [
        "TavilySearch",
        "TavilyExtract",
        "QueritContents",
        "QueritSearch",
        "Google",
        "DuckDuckGo",
        "Wikipedia",
        "SearXNG",
        "KeenableSearch",
        "YahooFinance",
        "PubMed",
        "BGPT",
        "GoogleScholar",
        "ArXiv",
        "WenCai",
        "Email",
        "GitHub",
        "ExeSQL",
        "CodeExec",
        "Retrieval",
    ];
    for name in menu {
        let e = component(&list, name).unwrap_or_else(|| panic!("{name} is not listed"));
        if e["status"] == "runs" {
            let f = &e["tool"]["function"];
            assert!(
                f["name"].as_str().is_some_and(|n| !n.is_empty()),
                "{name}: {e}"
            );
            assert_eq!(f["parameters"]["type"], "object", "{name}: {e}");
            assert!(e["tool"]["parameters"].is_array(), "{name}: {e}");
            assert!(e["tool"]["env"].is_array(), "{name}: {e}");
        } else {
            assert_eq!(e["status"], "not_yet", "{name}: {e}");
        }
    }
    let retrieval = component(&list, "Retrieval").expect("Retrieval is listed");
    assert_eq!(retrieval["tool"]["function"]["name"], "search_my_dateset");
    assert_eq!(retrieval["tool"]["parameters"][0]["name"], "query");
    assert_eq!(
        retrieval["tool"]["env"],
        serde_json::json!(["RAGFLOW_BASE_URL", "RAGFLOW_API_KEY"])
    );
}
