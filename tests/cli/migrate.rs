//! `canvas migrate`: every RAGFlow fixture migrates idempotently, graph-only exports run
//! after migration, and the diff, `--write`, `--check` and `--format json` modes.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::{CanvasCli, run_in};
use crate::util::{shared_dir, trace};

/// `canvas migrate ARGS` in `dir`: (exit code, stdout, stderr).
fn migrate(dir: &Path, args: &[&str]) -> (i32, String, String) {
    run_in(dir, &[&["migrate"], args].concat())
}

fn fixtures() -> Option<Vec<PathBuf>> {
    let shared = shared_dir()?;
    let mut files = Vec::new();
    for sub in ["go-testdata", "test-dsl"] {
        for e in std::fs::read_dir(shared.join("fixtures/ragflow").join(sub))
            .unwrap()
            .flatten()
        {
            files.push(e.path());
        }
    }
    files.sort();
    assert_eq!(files.len(), 13);
    Some(files)
}

#[test]
fn every_fixture_migrates_and_migrating_twice_gives_the_same_bytes() {
    let Some(files) = fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let once = dir.path().join(format!("once-{name}"));
        let twice = dir.path().join(format!("twice-{name}"));
        let (code, _, err) = migrate(
            dir.path(),
            &[f.to_str().unwrap(), "-o", once.to_str().unwrap()],
        );
        assert_eq!(code, 0, "{name}: {err}");
        let (code, _, err) = migrate(
            dir.path(),
            &[once.to_str().unwrap(), "-o", twice.to_str().unwrap()],
        );
        assert_eq!(code, 0, "{name}: {err}");
        let a = std::fs::read(&once).unwrap();
        assert_eq!(
            a,
            std::fs::read(&twice).unwrap(),
            "{name}: a second migration changed it"
        );
        let (code, out, _) = migrate(dir.path(), &[once.to_str().unwrap(), "--check"]);
        assert_eq!(
            (code, out.as_str()),
            (0, ""),
            "{name}: still needs migrating"
        );
        // Nothing is lost: every top-level key of the original is still there.
        let orig: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        let new: Value = serde_json::from_slice(&a).unwrap();
        for k in orig.as_object().unwrap().keys() {
            assert!(new.get(k).is_some(), "{name}: lost key {k}");
        }
        assert!(new["components"].is_object(), "{name}");
    }
}

#[test]
fn graph_only_fixtures_run_after_migration() {
    let Some(shared) = shared_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mock = dir.path().join("echo.yaml");
    std::fs::write(&mock, "default: echo\n").unwrap();
    let run_with = |file: &Path, q: &str, extra: &[&str]| {
        let ran = CanvasCli::new()
            .args(["run", "--format", "jsonl", "--non-interactive", "-q", q])
            .args(extra)
            .arg(file)
            .arg("--mock-llm")
            .arg(&mock)
            .run();
        (ran.exit_code(), ran.events(), ran.stderr())
    };
    let run = |file: &Path, q: &str| run_with(file, q, &[]);
    // The runs that go past a component this build refuses (an attachment format).
    let run_anyway = |file: &Path, q: &str| run_with(file, q, &["--no-validate"]);
    let go = shared.join("fixtures/ragflow/go-testdata");
    for (name, q, expect) in [
        ("questions_category.json", "hello", "hello"),
        ("subaget.json", "weather in Paris?", "weather in Paris?"),
    ] {
        let migrated = dir.path().join(name);
        let (code, _, err) = migrate(
            dir.path(),
            &[
                go.join(name).to_str().unwrap(),
                "-o",
                migrated.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 0, "{err}");
        // The migrated file and the export itself (normalized on load) run the same.
        for file in [migrated.clone(), go.join(name)] {
            let (code, evs, err) = run(&file, q);
            assert_eq!(code, Some(0), "{name}: {err}");
            let content = evs.last().unwrap()["data"]["outputs"]["content"]
                .as_str()
                .unwrap_or("")
                .to_string();
            assert!(
                content.contains(expect),
                "{name} {q:?}: {content:?}\n{:?}",
                trace(&evs)
            );
        }
    }
    // switch.json routes by the query; its Messages ask for an HTML attachment, which
    // this build cannot produce yet: a run is refused before it starts, and with
    // `--no-validate` it stops at the Message with that error.
    let (code, evs, err) = run(&go.join("switch.json"), "北京");
    assert_eq!(code, Some(2), "{err}");
    assert!(evs.is_empty());
    assert!(
        err.contains("Message:RedHousesStart: Message output_format \"html\""),
        "{err}"
    );
    for (q, target) in [
        ("北京", "Message:RedHousesStart"),
        ("广州", "Message:WeakPlumsMove"),
    ] {
        let (code, evs, err) = run_anyway(&go.join("switch.json"), q);
        assert_eq!(code, Some(1), "{err}");
        let t = trace(&evs);
        assert!(
            t.contains(&"node_finished Switch:EmptySquidsJudge".to_string()),
            "{t:?}"
        );
        assert_eq!(
            t.iter()
                .filter(|e| e.starts_with("node_started Message:"))
                .collect::<Vec<_>>(),
            [&format!("node_started {target}")]
        );
        assert!(err.contains("output_format \"html\""), "{err}");
    }
    // dfx_picture_parser runs its CodeExec node, whose script installs a package from
    // the network: the sandbox has none, and the error says so. (Its last Message asks
    // for a markdown attachment, so only `--no-validate` gets that far.)
    let (code, _, err) = run(&go.join("dfx_picture_parser.json"), "x");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("output_format \"md\""), "{err}");
    let (code, evs, err) = run_anyway(&go.join("dfx_picture_parser.json"), "x");
    assert_eq!(code, Some(1), "{err}");
    assert!(
        trace(&evs).contains(&"node_started CodeExec:VioletMemesJoin".to_string()),
        "{:?}",
        trace(&evs)
    );
    let code_exec = evs
        .iter()
        .find(|e| {
            e["event"] == "node_finished" && e["data"]["component_id"] == "CodeExec:VioletMemesJoin"
        })
        .unwrap_or_else(|| panic!("{:?}", trace(&evs)));
    let error = code_exec["data"]["error"].as_str().unwrap_or("");
    assert!(!error.is_empty(), "{code_exec}");
    assert!(err.contains("CodeExec:VioletMemesJoin"), "{err}");
}

const LEGACY: &str = r#"{
  "id": 1,
  "title": {"en": "Old"},
  "dsl": {
    "components": {
      "begin": {"obj": {"component_name": "Begin", "params": {"prologue": "Hi"}}, "downstream": ["answer:0"], "upstream": []},
      "answer:0": {"obj": {"component_name": "Answer", "params": {}}, "downstream": ["generate:0"], "upstream": ["begin", "generate:0"]},
      "generate:0": {"obj": {"component_name": "Generate", "params": {"llm_id": "m", "prompt": "Be brief."}}, "downstream": ["answer:0"], "upstream": ["answer:0"], "my_note": "kept"}
    },
    "history": [], "path": [], "messages": [], "reference": [], "answer": []
  }
}
"#;

#[test]
fn diff_write_check_and_json_modes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("old.json"), LEGACY).unwrap();

    let (code, out, _) = migrate(p, &["old.json", "--check"]);
    assert_eq!(code, 1);
    assert_eq!(out, "old.json: needs migrating (legacy_names)\n");

    let (code, diff, _) = migrate(p, &["old.json"]);
    assert_eq!(code, 0);
    assert!(
        diff.starts_with("--- a/old.json\n+++ b/old.json\n@@ "),
        "{diff}"
    );
    assert!(
        diff.contains("\n-          \"component_name\": \"Generate\",\n"),
        "{diff}"
    );
    assert!(
        diff.contains("\n+          \"component_name\": \"LLM\",\n"),
        "{diff}"
    );
    assert_eq!(
        std::fs::read_to_string(p.join("old.json")).unwrap(),
        LEGACY,
        "the diff writes nothing"
    );

    let (code, json, _) = migrate(p, &["old.json", "--format", "json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["changed"], true);
    let applied = v[0]["applied"].as_array().unwrap();
    assert!(
        applied.iter().any(|a| a["rule"] == "legacy_names"
            && a["pointer"] == "/dsl/components/generate:0/obj/component_name"
            && a["detail"] == "Generate → LLM"),
        "{applied:#?}"
    );

    let (code, _, err) = migrate(p, &["old.json", "--write"]);
    assert_eq!(code, 0, "{err}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("old.json")).unwrap()).unwrap();
    assert_eq!(
        written["title"]["en"], "Old",
        "the template wrapper is kept"
    );
    let g = &written["dsl"]["components"]["generate:0"];
    assert_eq!(g["obj"]["component_name"], "LLM");
    assert_eq!(g["obj"]["params"]["sys_prompt"], "Be brief.");
    assert_eq!(g["my_note"], "kept", "unknown keys are kept");
    assert_eq!(
        written["dsl"]["components"]["answer:0"]["obj"]["component_name"],
        "UserFillUp"
    );
    let (code, out, _) = migrate(p, &["old.json", "--check"]);
    assert_eq!((code, out.as_str()), (0, ""));
    let (code, diff, err) = migrate(p, &["old.json"]);
    assert_eq!((code, diff.as_str()), (0, ""));
    assert!(err.contains("nothing to migrate"), "{err}");
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("broken.json"), "{\"components\": [").unwrap();
    let (code, _, err) = migrate(p, &["broken.json"]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: broken.json: invalid JSON at line 1"),
        "{err}"
    );
    std::fs::write(p.join("a.json"), "{}").unwrap();
    let (code, _, err) = migrate(p, &["a.json", "broken.json", "-o", "x.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("exactly one input file"), "{err}");
}
