//! `CanvasCli`: the `canvas` binary under test, set up and checked fluently.
//!
//! ```ignore
//! let ran = CanvasCli::new()
//!     .json("flow.json", &flow)
//!     .mock_llm(&json!({"rules": [], "default": "hi"}))
//!     .args(["run", "flow.json", "--format", "jsonl"])
//!     .run()
//!     .code(0);
//! let evs = ran.events();
//! ```
//!
//! Each `CanvasCli` owns a fresh temporary directory: it is `HOME`, the working
//! directory and the home of the run store (`CANVAS_STORE`), so no test sees another's
//! runs or the user's.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::rc::Rc;

use assert_cmd::Command;
use serde_json::Value;

use crate::util::{TIMEOUT, events};

/// `canvas` with the environment every test needs: the store under `home`, `HOME` set to
/// `home`, no colors.
pub fn command(home: &Path) -> Command {
    let mut c = Command::cargo_bin("canvas").expect("the canvas binary is built by cargo test");
    c.env("CANVAS_STORE", home.join("canvas.db"))
        .env("NO_COLOR", "1")
        .env("HOME", home);
    c
}

/// `canvas ARGS` run in `dir`: (exit code, stdout, stderr).
pub fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    CanvasCli::new().current_dir(dir).args(args).run().parts()
}

/// One `canvas` command line about to run, in a directory of its own.
pub struct CanvasCli {
    dir: Rc<tempfile::TempDir>,
    cmd: Command,
    line: Vec<OsString>,
    /// Arguments that go after all others (`--mock-llm FILE`), so that they follow the
    /// subcommand whatever the order of the builder calls.
    tail: Vec<OsString>,
}

impl CanvasCli {
    /// `canvas` in a fresh temporary directory (its `HOME`, working directory and store).
    pub fn new() -> CanvasCli {
        let dir = tempfile::tempdir().expect("a temporary directory for the test");
        CanvasCli::within(Rc::new(dir))
    }

    fn within(dir: Rc<tempfile::TempDir>) -> CanvasCli {
        let mut cmd = command(dir.path());
        cmd.current_dir(dir.path()).timeout(TIMEOUT);
        CanvasCli {
            dir,
            cmd,
            line: Vec::new(),
            tail: Vec::new(),
        }
    }

    /// `name` in the test's directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `name` in the test's directory, as text (for argument lists).
    pub fn path_str(&self, name: &str) -> String {
        self.path(name).to_string_lossy().into_owned()
    }

    /// Write `contents` to `name` in the test's directory.
    pub fn file(self, name: &str, contents: impl AsRef<[u8]>) -> CanvasCli {
        let path = self.path(name);
        std::fs::write(&path, contents)
            .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        self
    }

    /// Write `value` as compact JSON to `name` in the test's directory.
    pub fn json(self, name: &str, value: &Value) -> CanvasCli {
        self.file(name, value.to_string())
    }

    /// Write `script` as `mock.json` and pass `--mock-llm` with its path after the other
    /// arguments.
    pub fn mock_llm(self, script: &Value) -> CanvasCli {
        let mut cli = self.json("mock.json", script);
        let path = cli.path_str("mock.json");
        cli.tail.extend(["--mock-llm".into(), path.into()]);
        cli
    }

    /// One more argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> CanvasCli {
        self.line.push(arg.as_ref().to_owned());
        self
    }

    /// More arguments.
    pub fn args<I, S>(self, args: I) -> CanvasCli
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        args.into_iter().fold(self, CanvasCli::arg)
    }

    /// Set an environment variable.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> CanvasCli {
        self.cmd.env(key, value);
        self
    }

    /// Set environment variables.
    pub fn envs<I, K, V>(self, vars: I) -> CanvasCli
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        vars.into_iter().fold(self, |c, (k, v)| c.env(k, v))
    }

    /// Unset an environment variable the test process may have.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> CanvasCli {
        self.cmd.env_remove(key);
        self
    }

    /// Run in `dir` instead of the test's directory.
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> CanvasCli {
        self.cmd.current_dir(dir);
        self
    }

    /// Feed `input` on stdin (otherwise stdin is empty).
    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> CanvasCli {
        self.cmd.write_stdin(input);
        self
    }

    /// Run to completion (within [`TIMEOUT`]). A panic of the binary fails the test.
    pub fn run(mut self) -> Ran {
        self.line.append(&mut self.tail);
        let output = self
            .cmd
            .args(&self.line)
            .output()
            .unwrap_or_else(|e| panic!("canvas {:?} did not run: {e}", self.line));
        let ran = Ran {
            output,
            line: self.line,
            dir: self.dir,
        };
        let err = ran.stderr();
        assert!(
            !err.contains("panicked"),
            "canvas {:?} panicked:\n{err}",
            ran.line
        );
        ran
    }
}

/// What one `canvas` command did; it keeps the test's directory alive.
pub struct Ran {
    output: Output,
    line: Vec<OsString>,
    dir: Rc<tempfile::TempDir>,
}

impl Ran {
    /// Panic (showing stderr) unless the command exited with `code`.
    #[track_caller]
    pub fn code(self, code: i32) -> Ran {
        assert_eq!(
            self.output.status.code(),
            Some(code),
            "canvas {:?}: exit status {}\nstderr: {}",
            self.line,
            self.output.status,
            self.stderr()
        );
        self
    }

    /// Panic unless stderr contains `needle`.
    #[track_caller]
    pub fn stderr_contains(self, needle: &str) -> Ran {
        let err = self.stderr();
        assert!(err.contains(needle), "stderr lacks {needle:?}:\n{err}");
        self
    }

    /// The exit code (`None` when killed by a signal).
    pub fn exit_code(&self) -> Option<i32> {
        self.output.status.code()
    }

    /// stdout, as text (it must be UTF-8).
    pub fn stdout(&self) -> String {
        String::from_utf8(self.output.stdout.clone())
            .unwrap_or_else(|e| panic!("canvas {:?}: stdout is not UTF-8: {e}", self.line))
    }

    /// stderr, as text (it must be UTF-8).
    pub fn stderr(&self) -> String {
        String::from_utf8(self.output.stderr.clone())
            .unwrap_or_else(|e| panic!("canvas {:?}: stderr is not UTF-8: {e}", self.line))
    }

    /// (exit code, or -1 when killed; stdout; stderr).
    pub fn parts(&self) -> (i32, String, String) {
        (self.exit_code().unwrap_or(-1), self.stdout(), self.stderr())
    }

    /// stdout as JSON lines; every line must be JSON.
    pub fn events(&self) -> Vec<Value> {
        events(&self.output.stdout)
    }

    /// stdout as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.output.stdout).unwrap_or_else(|e| {
            panic!(
                "canvas {:?}: stdout is not JSON: {e}\n{}",
                self.line,
                self.stdout()
            )
        })
    }

    /// The process output (the test's directory is removed).
    pub fn into_output(self) -> Output {
        self.output
    }

    /// The test's directory (files the run wrote are there).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Another command line in the same directory and store (for `resume`, `show`...).
    pub fn fresh(&self) -> CanvasCli {
        CanvasCli::within(Rc::clone(&self.dir))
    }
}
