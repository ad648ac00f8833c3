//! The generated files kept in the repository (`completions/`, `man/`) match what the
//! binary generates now, and every `--help` fits one screen with an example.

use std::collections::BTreeMap;
use std::path::Path;

use crate::util::canvas;

/// Every file directly under `dir`, by name, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p
                .file_name()
                .expect("file name")
                .to_string_lossy()
                .into_owned();
            let bytes = std::fs::read(&p).expect("read");
            (name, bytes)
        })
        .collect()
}

/// Generate into a temporary directory with `canvas <cmd> --dir`, compare with the
/// repository's folder.
fn assert_fresh(cmd: &str, folder: &str) {
    let tmp = tempfile::tempdir().expect("temp dir");
    canvas()
        .args([cmd, "--dir"])
        .arg(tmp.path())
        .assert()
        .success();
    let fresh = files(tmp.path());
    let kept = files(&Path::new(env!("CARGO_MANIFEST_DIR")).join(folder));
    assert!(!fresh.is_empty(), "canvas {cmd} --dir wrote nothing");
    let stale: Vec<&String> = fresh
        .keys()
        .chain(kept.keys())
        .filter(|name| fresh.get(*name) != kept.get(*name))
        .collect();
    assert!(
        stale.is_empty(),
        "{folder}/ is stale ({stale:?}): run `cargo run -- {cmd} --dir {folder}` and commit"
    );
}

#[test]
fn completions_are_fresh() {
    assert_fresh("completions", "completions");
    let kept = files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("completions"));
    // One script per shell the issue names.
    for name in [
        "canvas.bash",
        "_canvas",
        "canvas.fish",
        "_canvas.ps1",
        "canvas.elv",
    ] {
        assert!(kept.contains_key(name), "completions/{name} is missing");
    }
}

#[test]
fn man_pages_are_fresh() {
    assert_fresh("man", "man");
}

#[test]
fn a_completion_script_knows_the_subcommands_and_their_flags() {
    let out = canvas()
        .args(["completions", "bash"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let script = String::from_utf8_lossy(&out.stdout);
    for word in [
        "resume",
        "validate",
        "--mock-llm",
        "--strict",
        "--max-parallel",
    ] {
        assert!(script.contains(word), "bash completion lacks {word}");
    }
}

/// The subcommand names `canvas --help` lists.
fn subcommands() -> Vec<String> {
    let out = canvas().arg("--help").output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn every_help_fits_one_screen_with_an_example() {
    let subs = subcommands();
    assert!(subs.len() >= 12, "subcommands: {subs:?}");
    let mut pages = vec![Vec::new()];
    pages.extend(subs.iter().map(|s| vec![s.as_str()]));
    // Subcommands of subcommands.
    pages.push(vec!["runs", "prune"]);
    for args in pages {
        let out = canvas()
            .args(&args)
            .arg("--help")
            .env("COLUMNS", "100")
            .output()
            .expect("run");
        assert!(out.status.success(), "canvas {args:?} --help failed");
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        // One screen: 40 rows of at most 100 columns.
        assert!(
            lines.len() <= 40,
            "canvas {args:?} --help has {} lines",
            lines.len()
        );
        let wide: Vec<&&str> = lines.iter().filter(|l| l.chars().count() > 100).collect();
        assert!(
            wide.is_empty(),
            "canvas {args:?} --help: wide lines {wide:?}"
        );
        assert!(
            text.contains("Example:") || text.contains("Examples:"),
            "canvas {args:?} --help has no example"
        );
        let example = lines
            .iter()
            .skip_while(|l| !l.starts_with("Example"))
            .nth(1)
            .unwrap_or_else(|| panic!("canvas {args:?} --help: nothing under Example"));
        assert!(
            example.trim_start().starts_with("canvas "),
            "canvas {args:?} --help: the example is not a command: {example:?}"
        );
    }
}
