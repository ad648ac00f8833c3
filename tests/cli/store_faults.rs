//! Faults of the run store, with the real binary: a full disk mid-run, a store that
//! cannot be written, a damaged file or another program's database, a store from a
//! newer `canvas`. Each is one `error:` line (and a hint) with the documented exit code,
//! and loses nothing: a refused file is left byte for byte as it was, and a run stopped
//! by a full disk keeps what it committed, so `canvas resume` finishes it.

#![cfg(unix)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::canvases::loop_canvas;
use crate::util::{TIMEOUT, canvases, events, final_content, status, stored_events, trace};

/// Loop passes of the run the disk fills under: its commits write several hundred KiB.
const PASSES: u64 = 1500;

/// `canvas ARGS --store STORE` in `dir` (its `HOME`), stdin empty, output in pipes.
fn canvas_in(dir: &Path, store: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_canvas"));
    c.args(args)
        .arg("--store")
        .arg(store)
        .current_dir(dir)
        .env("HOME", dir)
        .env("CANVAS_STORE", store)
        .env("NO_COLOR", "1")
        .env_remove("CI")
        .stdin(Stdio::null());
    c
}

/// Run `cmd` to its end (it must not hang: every command here is short).
fn output(mut cmd: Command, what: &str) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: canvas did not start: {e}"));
    let (tx, rx) = std::sync::mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(TIMEOUT) {
        Ok(out) => out.unwrap_or_else(|e| panic!("{what}: {e}")),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{what}: still running after {TIMEOUT:?}");
        }
    }
}

/// The process's stderr, as text.
fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// stderr is one `error:` line holding `needle` and any number of `hint:` lines, and
/// no panic; returns the error line.
#[track_caller]
fn one_error_line(out: &Output, needle: &str, what: &str) -> String {
    let err = stderr_of(out);
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{what}: {err}"
    );
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "{what}: one error line expected:\n{err}");
    assert!(
        err.lines()
            .all(|l| l.starts_with("error: ") || l.starts_with("hint: ")),
        "{what}: only the error and hints on stderr:\n{err}"
    );
    assert!(
        errors[0].contains(needle),
        "{what}: {needle:?} missing:\n{err}"
    );
    errors[0].to_string()
}

#[track_caller]
fn assert_code(out: &Output, code: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: exit status {}\nstderr: {}",
        out.status,
        stderr_of(out)
    );
}

/// The bytes of the store and of its side files (what is there of them).
fn snapshot(store: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    ["", "-wal", "-shm"]
        .iter()
        .map(|s| PathBuf::from(format!("{}{s}", store.display())))
        .filter(|p| p.exists())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, bytes)
        })
        .collect()
}

/// The main file is byte for byte what it was, and so is a `-wal` that was there (an
/// empty one SQLite makes beside a file it opens may come and go).
#[track_caller]
fn assert_untouched(before: &[(PathBuf, Vec<u8>)], what: &str) {
    for (path, bytes) in before {
        // The -shm is SQLite's shared-memory index, rebuilt by any reader.
        if path.to_string_lossy().ends_with("-shm") {
            continue;
        }
        let now = std::fs::read(path).unwrap_or_else(|e| panic!("{what}: {}: {e}", path.display()));
        assert!(
            now == *bytes,
            "{what}: {} was changed ({} bytes, was {})",
            path.display(),
            now.len(),
            bytes.len()
        );
    }
}

/// A store at `store` with `n` finished runs of the hello canvas.
fn store_with_runs(dir: &Path, store: &Path, n: usize) {
    let hello = canvases().join("hello.json");
    for i in 0..n {
        let q = format!("hello {i}");
        let out = output(
            canvas_in(dir, store, &["run", hello.to_str().unwrap(), "-q", &q]),
            "a run to fill the store",
        );
        assert_code(&out, 0, "a run to fill the store");
    }
}

/// Fold the store's `-wal` into its main file and remove the side files, as a store
/// copied or left behind by a finished program is.
fn fold_wal(store: &Path) {
    let c = rusqlite::Connection::open(store).unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(c);
    for s in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{s}", store.display()));
    }
}

/// `PRAGMA integrity_check` of the store.
fn integrity(store: &Path) -> String {
    let c = rusqlite::Connection::open(store).unwrap();
    c.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

/// The store's runs, as `canvas runs --format json` lists them.
fn listed_runs(dir: &Path, store: &Path) -> Vec<Value> {
    let out = output(
        canvas_in(dir, store, &["runs", "--format", "json", "--limit", "0"]),
        "canvas runs",
    );
    assert_code(&out, 0, "canvas runs");
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
}

/// Every command that opens a store, given `store`: each refuses it with one error line
/// holding `needle` (exit 2) and leaves the file as it was.
fn every_command_refuses(dir: &Path, store: &Path, needle: &str, what: &str) {
    let hello = canvases().join("hello.json");
    let hello = hello.to_str().unwrap();
    let commands: [&[&str]; 8] = [
        &["run", hello, "-q", "hi"],
        &["chat", hello],
        &["resume", "latest", "-q", "again"],
        &["runs"],
        &["show", "latest"],
        &["events", "latest"],
        &["cancel", "latest"],
        &["runs", "prune", "--keep", "0", "--yes"],
    ];
    let before = snapshot(store);
    for args in commands {
        let label = format!("{what}: canvas {}", args.join(" "));
        let out = output(canvas_in(dir, store, args), &label);
        assert_code(&out, 2, &label);
        one_error_line(&out, needle, &label);
        assert!(out.stdout.is_empty(), "{label}: stdout {:?}", out.stdout);
        assert_untouched(&before, &label);
    }
}

// ---------------------------------------------------------------------------------
// A full disk.

/// `cmd` with its files limited to `bytes` (`RLIMIT_FSIZE`), as a full disk limits
/// them: a write past the limit fails (`EFBIG`; SIGXFSZ is ignored, so it is not killed).
fn with_file_size_limit(cmd: &mut Command, bytes: u64) {
    // SAFETY: between fork and exec only async-signal-safe calls are made (setrlimit,
    // signal), on values owned by the closure.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::signal(libc::SIGXFSZ, libc::SIG_IGN) == libc::SIG_ERR {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The stored stream of an uninterrupted run of the loop canvas.
fn reference_trace(flow: &Path) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ref.db");
    let out = output(
        canvas_in(dir.path(), &store, &["run", flow.to_str().unwrap()]),
        "the reference run",
    );
    assert_code(&out, 0, "the reference run");
    let evs = events(&out.stdout);
    let id = evs[0]["task_id"].as_str().unwrap().to_string();
    trace(&stored_events(&store, &id))
}

#[test]
fn a_full_disk_stops_the_run_and_resume_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("loop.json");
    std::fs::write(&flow, loop_canvas(PASSES).to_string()).unwrap();
    let store = dir.path().join("s.db");
    store_with_runs(dir.path(), &store, 1);
    // Room for the run to be stored and to begin, not for all its commits: the store's
    // files may grow by 256 KiB (the write-ahead log takes 1 MiB before it is folded
    // into the file, and the run commits far more than that).
    let largest = snapshot(&store)
        .iter()
        .map(|(_, b)| b.len() as u64)
        .max()
        .unwrap_or(0);
    let mut cmd = canvas_in(
        dir.path(),
        &store,
        &["run", flow.to_str().unwrap(), "--format", "jsonl"],
    );
    with_file_size_limit(&mut cmd, largest + 256 * 1024);
    let out = output(cmd, "the run on a full disk");
    assert_code(&out, 1, "the run on a full disk");
    let line = one_error_line(
        &out,
        "cannot write to the run store",
        "the run on a full disk",
    );
    let printed = events(&out.stdout);
    let run_id = printed
        .first()
        .and_then(|e| e["task_id"].as_str())
        .unwrap_or_else(|| panic!("the run printed no event before the disk filled: {line}"))
        .to_string();
    assert!(line.contains(&run_id), "{line}");
    let err = stderr_of(&out);
    assert!(
        err.contains("hint: is the disk full?") && err.contains(&format!("canvas resume {run_id}")),
        "{err}"
    );
    // What was committed stays: the file is sound, the run is there, part-way through,
    // and every node shown finished is stored.
    assert_eq!(integrity(&store), "ok");
    let stored = stored_events(&store, &run_id);
    let shown = printed
        .iter()
        .filter(|e| e["event"] == "node_finished")
        .count();
    let kept = stored
        .iter()
        .filter(|e| e["event"] == "node_finished")
        .count();
    assert!(
        shown > 0 && kept >= shown,
        "{shown} nodes shown finished, {kept} stored"
    );
    assert!(
        !stored.iter().any(|e| e["event"] == "workflow_finished"),
        "the run finished despite the full disk: the limit did not bite"
    );
    // Space again: the resume finishes it, every node finished exactly once.
    let out = output(
        canvas_in(
            dir.path(),
            &store,
            &["resume", &run_id, "--format", "jsonl"],
        ),
        "the resume",
    );
    assert_code(&out, 0, "the resume");
    assert_eq!(status(&store, &run_id), "succeeded");
    let stored = stored_events(&store, &run_id);
    assert_eq!(
        final_content(&stored).as_deref(),
        Some(format!("i={PASSES}").as_str())
    );
    assert_eq!(trace(&stored), reference_trace(&flow));
    assert_eq!(integrity(&store), "ok");
}

// ---------------------------------------------------------------------------------
// A store that cannot be written.

/// How the test makes the store unwritable for the child: as root, permissions do not
/// stop writes, so the child runs as another user, or the files are made immutable.
enum Denial {
    /// The files' permissions (the test does not run as root).
    Permissions,
    /// The child runs as this user (the test runs as root; the files are root's).
    OtherUser(u32),
    /// `chattr +i` on the files and their directory (root, when no other user can run
    /// the binary).
    Immutable,
}

impl Denial {
    fn apply(&self, cmd: &mut Command) {
        if let Denial::OtherUser(uid) = self {
            cmd.uid(*uid).gid(*uid);
        }
    }
}

/// Make `dir` and the store's files in it read-only for the child, in the way that
/// holds for the user the tests run as.
fn deny_writes(dir: &Path, store: &Path) -> Denial {
    use std::os::unix::fs::PermissionsExt;
    let files: Vec<PathBuf> = snapshot(store).into_iter().map(|(p, _)| p).collect();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        for f in &files {
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o444)).unwrap();
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        return Denial::Permissions;
    }
    // Others may read (so that they can use the store read-only) but not write.
    for f in &files {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let nobody = 65534;
    let mut probe = Command::new(env!("CARGO_BIN_EXE_canvas"));
    probe
        .arg("--version")
        .uid(nobody)
        .gid(nobody)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if probe.status().is_ok_and(|s| s.success()) {
        return Denial::OtherUser(nobody);
    }
    let mut targets = files.clone();
    targets.push(dir.to_path_buf());
    let ok = Command::new("chattr")
        .arg("+i")
        .args(&targets)
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "running as root, the test needs another user able to run {} or `chattr +i` on {} \
         to make the store read-only: neither works here",
        env!("CARGO_BIN_EXE_canvas"),
        dir.display()
    );
    Denial::Immutable
}

/// Give the test's files back (the temporary directory is removed after the test).
fn allow_writes(dir: &Path, denial: &Denial) {
    use std::os::unix::fs::PermissionsExt;
    if let Denial::Immutable = denial {
        let mut args = vec![dir.to_path_buf()];
        if let Ok(rd) = std::fs::read_dir(dir) {
            args.extend(rd.filter_map(|e| e.ok()).map(|e| e.path()));
        }
        let _ = Command::new("chattr").arg("-i").args(&args).status();
    }
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
}

#[test]
fn a_read_only_store_is_refused_and_left_as_it_is() {
    use std::os::unix::fs::PermissionsExt;
    let top = tempfile::tempdir().unwrap();
    // Another user runs in it (as root: see `deny_writes`), and may not write it.
    std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // The store's directory apart from the test's files, so that only it is denied.
    let dir = top.path().join("store");
    std::fs::create_dir(&dir).unwrap();
    let store = dir.join("s.db");
    store_with_runs(top.path(), &store, 2);
    let hello = canvases().join("hello.json");
    let hello = hello.to_str().unwrap();
    let runs_before = listed_runs(top.path(), &store);
    let denial = deny_writes(&dir, &store);
    let before = snapshot(&store);
    let writes: [&[&str]; 4] = [
        &["run", hello, "-q", "hi"],
        &["chat", hello],
        &["resume", "latest", "-q", "again"],
        &["runs", "prune", "--keep", "0", "--yes"],
    ];
    let mut refused = Vec::new();
    for args in writes {
        let label = format!("canvas {}", args.join(" "));
        let mut cmd = canvas_in(top.path(), &store, args);
        // HOME must be the child's to use: the test's directory is open to it.
        cmd.env("HOME", &dir);
        denial.apply(&mut cmd);
        refused.push((label, output(cmd, "a write to a read-only store")));
    }
    // Reading still works.
    let mut cmd = canvas_in(top.path(), &store, &["runs", "--format", "json"]);
    denial.apply(&mut cmd);
    let read = output(cmd, "canvas runs on a read-only store");
    allow_writes(&dir, &denial);
    for (label, out) in &refused {
        assert_code(out, 2, label);
        let line = one_error_line(out, "the run store cannot be written", label);
        assert!(line.contains(store.to_str().unwrap()), "{label}: {line}");
    }
    assert_untouched(&before, "a read-only store");
    assert_code(&read, 0, "canvas runs on a read-only store");
    let listed: Vec<Value> = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!(listed.len(), runs_before.len());
    assert_eq!(listed_runs(top.path(), &store), runs_before);
}

// ---------------------------------------------------------------------------------
// Damaged files, and other programs' databases.

#[test]
fn garbage_bytes_are_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    // Not random: the same bytes every run.
    let bytes: Vec<u8> = (0u32..20_000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&store, &bytes).unwrap();
    every_command_refuses(
        dir.path(),
        &store,
        "not a canvas run store, or a damaged one",
        "garbage",
    );
}

#[test]
fn a_truncated_store_is_refused_and_left_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    store_with_runs(dir.path(), &store, 4);
    fold_wal(&store);
    let whole = std::fs::read(&store).unwrap();
    assert!(whole.len() > 4 * 4096, "{} bytes", whole.len());
    std::fs::write(&store, &whole[..whole.len() / 2]).unwrap();
    every_command_refuses(
        dir.path(),
        &store,
        "not a canvas run store, or a damaged one",
        "truncated",
    );
}

#[test]
fn another_programs_database_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let c = rusqlite::Connection::open(&store).unwrap();
    c.execute_batch(
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);
         INSERT INTO notes (text) VALUES ('keep me');",
    )
    .unwrap();
    drop(c);
    every_command_refuses(
        dir.path(),
        &store,
        "not a canvas run store: an SQLite database with schema version 0 and tables notes",
        "a notes database",
    );
    // Also when its version happens to be one a run store has.
    let c = rusqlite::Connection::open(&store).unwrap();
    c.execute_batch("PRAGMA user_version = 2").unwrap();
    drop(c);
    every_command_refuses(
        dir.path(),
        &store,
        "not a canvas run store: an SQLite database with schema version 2 and tables notes",
        "a notes database at version 2",
    );
    let c = rusqlite::Connection::open(&store).unwrap();
    let text: String = c
        .query_row("SELECT text FROM notes", [], |r| r.get(0))
        .unwrap();
    assert_eq!(text, "keep me");
}

#[test]
fn a_store_from_a_newer_canvas_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    store_with_runs(dir.path(), &store, 1);
    fold_wal(&store);
    let c = rusqlite::Connection::open(&store).unwrap();
    let ours: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert!(ours > 0, "a store made by canvas has a schema version");
    let newer = ours + 1;
    // Left in the write-ahead log, as a newer canvas that stores like this one leaves
    // its last commits: neither the file nor the log may change.
    c.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )
    .unwrap();
    c.execute_batch(&format!("PRAGMA user_version = {newer}"))
        .unwrap();
    drop(c);
    let wal = std::fs::metadata(format!("{}-wal", store.display())).map_or(0, |m| m.len());
    assert!(wal > 0, "the new version is in the write-ahead log");
    every_command_refuses(
        dir.path(),
        &store,
        &format!("the store's schema version {newer} is newer than this canvas supports ({ours})"),
        "a newer store",
    );
}
