//! Every command in README.md runs, in order, as a new user would run it: a clean
//! environment (a new `HOME`, no store, no configuration, no keys), the repository's
//! `canvases/` and stdin not a terminal.
//!
//! Each ```sh block of the README is a part of one bash script; each command in it must
//! exit 0, or N when its comment says `exit N`. Three things stand in for the outside
//! world, and nothing else is changed:
//! - the first block's `cargo build --release && ./target/release/canvas`, and
//!   `cargo run --`, are the binary under test (already built), and `cargo test` is
//!   this very test, so it is skipped;
//! - a local Ollama: `OLLAMA_HOST` points at a fake OpenAI-compatible server on
//!   127.0.0.1 (the README tells users to set it when Ollama is elsewhere);
//! - `localhost:8000` (the README's vLLM server) is another fake server's address.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use regex::Regex;

use crate::peer::{FakeServer, Reply};

/// One command of the README: its line, its text (continuations and here-documents
/// included), and the exit code it must give.
#[derive(Debug)]
struct Step {
    line: usize,
    text: String,
    expect: i32,
}

/// The commands of README's ```sh blocks, in order.
fn steps(readme: &str) -> Vec<Step> {
    let exit_note = Regex::new(r"#.*\bexit (\d+)").unwrap();
    let mut out = Vec::new();
    let mut in_sh = false;
    let heredoc = Regex::new(r"<<-?'?([A-Z]+)'?").unwrap();
    let mut pending: Option<Step> = None;
    // The word that ends the here-document the pending command opened.
    let mut until: Option<String> = None;
    for (i, raw) in readme.lines().enumerate() {
        let line = i + 1;
        if !in_sh {
            in_sh = raw.trim_start() == "```sh";
            continue;
        }
        if raw.trim_start().starts_with("```") {
            in_sh = false;
            assert!(
                pending.is_none(),
                "README.md:{line}: block ends inside a command"
            );
            continue;
        }
        if let Some(step) = &mut pending {
            step.text.push('\n');
            step.text.push_str(raw);
            let done = match &until {
                Some(word) => raw == word,
                None => !raw.trim_end().ends_with('\\'),
            };
            if done {
                until = None;
                out.push(pending.take().unwrap());
            }
            continue;
        }
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let expect = exit_note
            .captures(raw)
            .map(|c| c[1].parse().unwrap())
            .unwrap_or(0);
        let step = Step {
            line,
            text: raw.to_string(),
            expect,
        };
        if let Some(c) = heredoc.captures(raw) {
            until = Some(c[1].to_string());
            pending = Some(step);
        } else if raw.trim_end().ends_with('\\') {
            pending = Some(step);
        } else {
            out.push(step);
        }
    }
    out
}

/// The script: every step followed by a check of its exit code.
fn script(steps: &[Step], vllm: &str) -> String {
    let mut s = String::from("cd \"$WORK\"\n");
    for step in steps {
        let mut text = step.text.replace("localhost:8000", vllm);
        if text.trim() == "cargo test" {
            continue;
        }
        // The binary under test stands for the release build and for `cargo run`.
        if let Some(rest) = text.strip_prefix("cargo build --release && ") {
            text = rest.replace("./target/release/canvas", "canvas");
        }
        if let Some(rest) = text.strip_prefix("cargo run -- ") {
            text = format!("canvas {rest}");
        }
        assert!(
            !text.contains("cargo "),
            "README.md:{}: a cargo command the test cannot stand in for: {text}",
            step.line
        );
        s.push_str(&format!(
            "echo \"\\$ README.md:{line}\" >&2\n{text}\nrc=$?\n\
             if [ \"$rc\" != \"{expect}\" ]; then echo \"README.md:{line}: exit $rc, expected {expect}\" >&2; exit 97; fi\n",
            line = step.line,
            expect = step.expect,
        ));
    }
    s
}

/// A fake OpenAI-compatible server: every chat call gets a short streamed answer that
/// names a support category (so the support canvas routes) and says where it came from.
fn fake_llm(name: &'static str) -> FakeServer {
    FakeServer::with(move |_, _| Reply::sse(&["complaint ", "from ", name]))
}

fn bin_dir() -> PathBuf {
    assert_cmd::cargo::cargo_bin("canvas")
        .parent()
        .expect("binary dir")
        .to_path_buf()
}

#[test]
fn every_readme_command_runs_in_a_clean_environment() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let steps = steps(&readme);
    // The two commands first, then the tour: run, a form, resume, runs, validate,
    // migrate, chat, the mock, a real provider.
    assert_eq!(
        steps[0].text,
        "cargo build --release && ./target/release/canvas run canvases/hello.json -q \"hello\""
    );
    assert_eq!(steps[1].text, "cargo test");
    for needle in [
        "canvas run ",
        "canvas resume ",
        "canvas runs",
        "canvas show ",
        "canvas events ",
        "canvas validate ",
        "canvas migrate ",
        "canvas chat ",
        "--mock-llm",
        "--replay",
        "--llm-config",
    ] {
        assert!(
            steps.iter().any(|s| s.text.contains(needle)),
            "the README's tour has no `{needle}` command"
        );
    }

    let ollama = fake_llm("ollama");
    let vllm = fake_llm("vllm");
    let vllm_addr = vllm.base_url().trim_start_matches("http://").to_string();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::os::unix::fs::symlink(root.join("canvases"), work.join("canvases")).unwrap();
    let script_path = tmp.path().join("readme.sh");
    std::fs::write(&script_path, script(&steps, &vllm_addr)).unwrap();

    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin_dir().display());
    let out = Command::new("bash")
        .arg(&script_path)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &home)
        .env("WORK", &work)
        .env("LANG", "C.UTF-8")
        .env("TERM", "dumb")
        .env("OLLAMA_HOST", ollama.base_url())
        .stdin(Stdio::null())
        .output()
        .expect("bash runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "a README command failed:\n--- stderr ---\n{stderr}\n--- stdout ---\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Runs went to the default store under the new HOME.
    assert!(home.join(".local/share/canvas/canvas.db").is_file());
    // The provider commands reached the stand-ins: Ollama (no --mock-llm) and the
    // OpenAI-compatible server llm.yaml redirects the examples' model to.
    assert!(
        !ollama.seen().is_empty(),
        "nothing reached the Ollama stand-in"
    );
    let to_vllm = vllm.seen();
    assert!(!to_vllm.is_empty(), "nothing reached the vLLM stand-in");
    assert!(
        to_vllm
            .iter()
            .all(|s| s.json()["model"] == "Qwen/Qwen2.5-7B-Instruct"),
        "llm.yaml's `name` is the model sent"
    );
    // The generators wrote what the repository keeps.
    for (dir, file) in [("completions", "canvas.bash"), ("man", "canvas-run.1")] {
        assert_eq!(
            std::fs::read(work.join(dir).join(file)).unwrap(),
            std::fs::read(root.join(dir).join(file)).unwrap(),
            "{dir}/{file}"
        );
    }
    // The migrate commands changed the file they were given.
    let migrated = std::fs::read_to_string(work.join("old.json")).unwrap();
    assert!(
        migrated.contains("\"component_name\": \"LLM\""),
        "{migrated}"
    );
}

#[test]
fn the_readme_parser_reads_exit_notes_and_continuations() {
    let md = "text\n```sh\n# a comment\ncanvas run a.json   # exit 3 without a terminal\n\
              canvas x \\\n  --y\ncat > f <<'EOF'\n# not a comment\ncanvas z\nEOF\n```\n\
              ```yaml\nnot: run\n```\n";
    let s = steps(md);
    assert_eq!(s.len(), 3);
    assert_eq!((s[0].line, s[0].expect), (4, 3));
    assert_eq!(s[1].text, "canvas x \\\n  --y");
    assert_eq!(s[1].expect, 0);
    assert_eq!(s[2].text, "cat > f <<'EOF'\n# not a comment\ncanvas z\nEOF");
}
