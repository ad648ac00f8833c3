//! The local provider: `python3` / `node` as a child process in a fresh temporary
//! directory, with a scrubbed environment, resource limits (`setrlimit`), its own
//! process group (killed as a whole at the wall-clock limit), and no network (new user
//! and network namespaces, when the kernel allows them).

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;
use tokio::time::Instant;

use super::protocol::{self, ARGS_FILE};
use super::{
    Artifact, Execution, Job, Language, SandboxConfig, SandboxError, artifact_mime, bytes_text,
    safe_artifact_name, seconds_text,
};

/// The line the child writes on stderr when it could not leave the network (read back
/// and removed by the parent).
const NO_NETNS_NOTE: &str = "__CANVAS_SANDBOX_NO_NETNS__";

/// How long output is still read after the child exited.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Open files allowed to the code (RAGFlow's local provider: 64).
const MAX_OPEN_FILES: u64 = 64;

/// Variables passed through from the parent's environment when set.
const PASSED_VARS: &[&str] = &[
    "PATH",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "NODE_PATH",
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
];

/// Run `job` as a local child process.
pub(super) async fn run(cfg: &SandboxConfig, job: &Job) -> Result<Execution, SandboxError> {
    let dir = WorkDir::create().map_err(|e| local_err("cannot create a working directory", &e))?;
    let (program, file, bin) = match job.language {
        Language::Python => (
            protocol::python_program(&job.code),
            "main.py",
            cfg.python_bin.as_str(),
        ),
        Language::Nodejs => (
            protocol::javascript_program(&job.code),
            "main.js",
            cfg.node_bin.as_str(),
        ),
    };
    let args = serde_json::to_string(&job.arguments)
        .map_err(|e| SandboxError::Local(format!("cannot encode the arguments: {e}")))?;
    let write = |name: &str, text: &str| {
        std::fs::write(dir.path.join(name), text)
            .map_err(|e| local_err(&format!("cannot write {name}"), &e))
    };
    write(file, &program)?;
    write(ARGS_FILE, &args)?;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir.path.join("artifacts"))
        .map_err(|e| local_err("cannot create artifacts/", &e))?;

    let mut cmd = tokio::process::Command::new(bin);
    let memory = cfg.memory_mb.saturating_mul(1024 * 1024);
    let mut limits = Limits {
        cpu_secs: cfg.timeout.as_secs_f64().ceil() as u64 + 1,
        address_space: None,
        data: None,
        file_size: cfg.max_artifact_bytes,
        isolate: cfg.isolate_network,
    };
    match job.language {
        Language::Python => limits.address_space = Some(memory),
        Language::Nodejs => {
            // V8 reserves far more address space than it uses: limit the data segment
            // (which counts private writable mappings) and the JS heap instead.
            limits.data = Some(memory);
            cmd.arg(format!(
                "--max-old-space-size={}",
                (cfg.memory_mb * 3 / 4).max(16)
            ));
        }
    }
    cmd.arg(file)
        .current_dir(&dir.path)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    for k in PASSED_VARS {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    if std::env::var_os("PATH").is_none() {
        cmd.env("PATH", "/usr/local/bin:/usr/bin:/bin");
    }
    cmd.env("HOME", &dir.path)
        .env("TMPDIR", &dir.path)
        .env("LANG", "C.UTF-8")
        .env("PYTHONIOENCODING", "utf-8")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .env("MPLBACKEND", "Agg");
    // SAFETY: the closure only calls async-signal-safe libc functions (getrlimit,
    // setrlimit, unshare, write) on values prepared before the fork.
    unsafe {
        cmd.pre_exec(move || limits.apply());
    }

    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(missing(job.language, bin)),
        Err(e) => return Err(local_err(&format!("cannot start {bin}"), &e)),
    };
    let pgid = child.id().map(|p| p as i32).unwrap_or(0);
    let mut group = GroupGuard(pgid);
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(SandboxError::Local(
            "the child's output is not piped".into(),
        ));
    };
    let (exited_tx, exited) = watch::channel(None);
    let pipes = Pipes {
        total: AtomicUsize::new(0),
        overflow: AtomicBool::new(false),
        cap: cfg.max_output_bytes,
        pgid,
        exited,
    };
    let supervised = async {
        let status = async {
            let s = child.wait().await;
            // Whatever the code left running in its group goes with it; a process that
            // left the group may hold the pipes: stop reading a moment later.
            kill_group(pgid);
            let _ = exited_tx.send(Some(Instant::now() + EXIT_GRACE));
            s
        };
        tokio::join!(read_capped(out, &pipes), read_capped(err, &pipes), status)
    };
    let (out, err, status) = match tokio::time::timeout(cfg.timeout, supervised).await {
        Ok(r) => r,
        Err(_) => {
            kill_group(pgid);
            let _ = child.wait().await;
            return Err(SandboxError::Timeout(cfg.timeout_text()));
        }
    };
    // The group was killed once the child ended: nothing left for the guard.
    group.0 = 0;
    let status = status.map_err(|e| local_err("cannot wait for the code", &e))?;
    if pipes.overflow.load(Ordering::SeqCst) {
        return Err(SandboxError::OutputTooLarge(bytes_text(pipes.cap as u64)));
    }
    let stdout = String::from_utf8_lossy(&out).into_owned();
    let (stderr, notes) = take_notes(&String::from_utf8_lossy(&err));
    let isolated = cfg.isolate_network && notes.is_empty();
    if status.success() {
        let (stdout, result) = protocol::extract_result(&stdout);
        let artifacts = collect_artifacts(&dir.path.join("artifacts"), cfg);
        return Ok(Execution {
            stdout,
            stderr,
            result,
            artifacts,
            notes,
        });
    }
    classify_failure(cfg, job.language, bin, status, stderr, isolated, notes)
}

/// Turn a failed run into the error people need, or RAGFlow's executor answer for a
/// failed program (no stdout, its stderr).
fn classify_failure(
    cfg: &SandboxConfig,
    language: Language,
    bin: &str,
    status: ExitStatus,
    stderr: String,
    isolated: bool,
    notes: Vec<String>,
) -> Result<Execution, SandboxError> {
    if status.signal() == Some(libc::SIGXCPU) {
        return Err(SandboxError::CpuTime(seconds_text(cfg.timeout)));
    }
    if is_out_of_memory(&stderr) {
        return Err(SandboxError::OutOfMemory(cfg.memory_mb));
    }
    // A shim (pyenv) that has no such interpreter.
    if status.code() == Some(127) && stderr.contains("not found") {
        return Err(missing(language, bin));
    }
    if let Some(line) = network_failure(&stderr).filter(|_| isolated) {
        return Err(SandboxError::Network(line));
    }
    let stderr = if stderr.trim().is_empty() {
        match (status.code(), status.signal()) {
            (Some(c), _) => format!("the code exited with status {c}"),
            (None, Some(s)) => format!("the code was killed by signal {s}"),
            _ => "the code failed".to_string(),
        }
    } else {
        stderr
    };
    Ok(Execution {
        stderr,
        notes,
        ..Execution::default()
    })
}

fn missing(language: Language, bin: &str) -> SandboxError {
    SandboxError::MissingRuntime {
        bin: bin.to_string(),
        hint: match language {
            Language::Python => "install Python 3",
            Language::Nodejs => "install Node.js",
        },
    }
}

fn local_err(what: &str, e: &io::Error) -> SandboxError {
    SandboxError::Local(format!("{what}: {e}"))
}

/// Allocation failures as Python and Node.js report them.
fn is_out_of_memory(stderr: &str) -> bool {
    stderr.lines().any(|l| l.starts_with("MemoryError"))
        || [
            "JavaScript heap out of memory",
            "Array buffer allocation failed",
            "Cannot allocate memory",
            "std::bad_alloc",
        ]
        .iter()
        .any(|s| stderr.contains(s))
}

/// The stderr line saying the network was unreachable, if any.
fn network_failure(stderr: &str) -> Option<String> {
    const SIGNS: &[&str] = &[
        "Network is unreachable",
        "ENETUNREACH",
        "Temporary failure in name resolution",
        "EAI_AGAIN",
    ];
    stderr
        .lines()
        .rev()
        .find(|l| SIGNS.iter().any(|s| l.contains(s)))
        .map(|l| {
            let l = l.trim();
            match l.char_indices().nth(200) {
                Some((cut, _)) => format!("{}...", &l[..cut]),
                None => l.to_string(),
            }
        })
}

/// Remove the child's own notes from stderr.
fn take_notes(stderr: &str) -> (String, Vec<String>) {
    let mut notes = Vec::new();
    let mut kept = String::with_capacity(stderr.len());
    for line in stderr.split_inclusive('\n') {
        match line.trim_end().strip_prefix(NO_NETNS_NOTE) {
            Some(errno) => notes.push(format!(
                "network isolation is unavailable here (unshare:{errno}); the code ran with the host's network"
            )),
            None => kept.push_str(line),
        }
    }
    (kept, notes)
}

/// Output accounting shared by the two pipe readers.
struct Pipes {
    /// Bytes read from both pipes.
    total: AtomicUsize,
    /// The cap was passed (the group was killed).
    overflow: AtomicBool,
    /// The cap on stdout plus stderr.
    cap: usize,
    /// The child's process group.
    pgid: i32,
    /// When to stop reading, set once the child has exited.
    exited: watch::Receiver<Option<Instant>>,
}

/// Read a pipe to its end (or until a moment after the child exited), counting into
/// `total`; past the cap the whole group is killed.
async fn read_capped<R: AsyncRead + Unpin>(mut r: R, pipes: &Pipes) -> Vec<u8> {
    let mut exited = pipes.exited.clone();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let read = tokio::select! {
            read = r.read(&mut chunk) => read,
            _ = grace_over(&mut exited) => break,
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if pipes.total.fetch_add(n, Ordering::SeqCst) + n > pipes.cap {
                    pipes.overflow.store(true, Ordering::SeqCst);
                    kill_group(pipes.pgid);
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
    buf
}

/// Resolves at the deadline set when the child exited (never, before that).
async fn grace_over(exited: &mut watch::Receiver<Option<Instant>>) {
    let deadline = match exited.wait_for(Option::is_some).await {
        Ok(d) => *d,
        Err(_) => None,
    };
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Files left in `artifacts/`: regular files only (no symlinks), allowed extensions,
/// not empty, not over the size cap, sorted by name, at most `max_artifacts`.
fn collect_artifacts(dir: &Path, cfg: &SandboxConfig) -> Vec<Artifact> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for (name, path) in files {
        if out.len() >= cfg.max_artifacts {
            break;
        }
        let Some(mime) = artifact_mime(&name).filter(|_| safe_artifact_name(&name)) else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.file_type().is_file() || meta.len() == 0 || meta.len() > cfg.max_artifact_bytes {
            continue;
        }
        if let Ok(bytes) = std::fs::read(&path) {
            out.push(Artifact {
                name,
                mime_type: mime.to_string(),
                bytes,
            });
        }
    }
    out
}

/// Limits applied in the child between fork and exec.
#[derive(Debug, Clone, Copy)]
struct Limits {
    cpu_secs: u64,
    address_space: Option<u64>,
    data: Option<u64>,
    file_size: u64,
    isolate: bool,
}

impl Limits {
    /// Runs in the forked child: only async-signal-safe calls, no allocation.
    fn apply(&self) -> io::Result<()> {
        set_limit(libc::RLIMIT_CPU, self.cpu_secs)?;
        if let Some(v) = self.address_space {
            set_limit(libc::RLIMIT_AS, v)?;
        }
        if let Some(v) = self.data {
            set_limit(libc::RLIMIT_DATA, v)?;
        }
        set_limit(libc::RLIMIT_FSIZE, self.file_size)?;
        set_limit(libc::RLIMIT_NOFILE, MAX_OPEN_FILES)?;
        set_limit(libc::RLIMIT_CORE, 0)?;
        #[cfg(target_os = "linux")]
        if self.isolate {
            // SAFETY: unshare takes flags only; the child is single-threaded here.
            let rc = unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) };
            if rc != 0 {
                let err = io::Error::last_os_error();
                let name: &[u8] = match err.raw_os_error() {
                    Some(libc::EPERM) => b" EPERM\n",
                    Some(libc::EINVAL) => b" EINVAL\n",
                    Some(libc::ENOSPC) => b" ENOSPC\n",
                    Some(libc::EUSERS) => b" EUSERS\n",
                    Some(libc::ENOSYS) => b" ENOSYS\n",
                    _ => return Err(err),
                };
                // Tell the parent through stderr (already the pipe) and go on.
                // SAFETY: writing a static buffer to fd 2.
                unsafe {
                    libc::write(2, NO_NETNS_NOTE.as_ptr().cast(), NO_NETNS_NOTE.len());
                    libc::write(2, name.as_ptr().cast(), name.len());
                }
            }
        }
        Ok(())
    }
}

/// The type of `setrlimit`'s resource argument.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
/// The type of `setrlimit`'s resource argument.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type Resource = libc::c_int;

/// Lower one resource limit (never above the current hard limit).
fn set_limit(resource: Resource, value: u64) -> io::Result<()> {
    let mut cur = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `cur` is a valid rlimit to fill.
    if unsafe { libc::getrlimit(resource, &mut cur) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let v = if cur.rlim_max == libc::RLIM_INFINITY {
        value
    } else {
        value.min(cur.rlim_max)
    };
    let new = libc::rlimit {
        rlim_cur: v,
        rlim_max: v,
    };
    // SAFETY: `new` is a valid rlimit.
    if unsafe { libc::setrlimit(resource, &new) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// SIGKILL a process group (ignoring a group that is already gone).
fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: killpg takes plain integers.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// Kills the group when the run ends in any way (error, cancellation).
struct GroupGuard(i32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

/// A private temporary directory, removed on drop.
struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    fn create() -> io::Result<WorkDir> {
        let path = std::env::temp_dir().join(format!(
            "canvas-codeexec-{}",
            ulid::Ulid::new().to_string().to_ascii_lowercase()
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(WorkDir { path })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if std::fs::remove_dir_all(&self.path).is_err() {
            // The code may have taken permissions away from what it created.
            make_writable(&self.path);
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn make_writable(dir: &Path) {
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                make_writable(&e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn cfg() -> SandboxConfig {
        SandboxConfig {
            timeout: Duration::from_secs(20),
            ..SandboxConfig::default()
        }
    }

    fn job(language: Language, code: &str, args: serde_json::Value) -> Job {
        Job {
            language,
            code: code.into(),
            arguments: serde_json::from_value(args).unwrap(),
        }
    }

    #[tokio::test]
    async fn python_result_and_arguments() {
        let j = job(
            Language::Python,
            "def main(a, b=None):\n    print('log line')\n    return {'sum': a + 1, 'b': b}",
            json!({"a": 41, "b": null}),
        );
        let r = run(&cfg(), &j).await.unwrap();
        assert_eq!(r.result, Some(json!({"sum": 42, "b": null})));
        assert_eq!(r.stdout, "log line\n");
        assert_eq!(r.stderr, "");
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[tokio::test]
    async fn environment_is_scrubbed_and_home_is_the_work_dir() {
        // Cargo gives the test process CARGO* variables: none may reach the code.
        assert!(std::env::vars_os().any(|(k, _)| k.to_string_lossy().starts_with("CARGO")));
        let j = job(
            Language::Python,
            "import os\ndef main():\n    return [os.getcwd(), os.environ['HOME'], os.environ['LANG'], sorted(os.environ)]",
            json!({}),
        );
        let r = run(&cfg(), &j).await.unwrap();
        let v = r.result.unwrap();
        assert_eq!(v[0], v[1], "HOME is the working directory");
        assert!(v[0].as_str().unwrap().contains("canvas-codeexec-"), "{v}");
        assert_eq!(v[2], "C.UTF-8");
        let names = v[3].as_array().unwrap();
        assert!(
            !names
                .iter()
                .any(|n| n.as_str().unwrap().starts_with("CARGO")),
            "{names:?}"
        );
    }

    #[tokio::test]
    async fn failures_give_stderr_without_stdout() {
        let j = job(
            Language::Python,
            "def main():\n    print('partial')\n    raise ValueError('boom')",
            json!({}),
        );
        let r = run(&cfg(), &j).await.unwrap();
        assert_eq!(r.stdout, "");
        assert_eq!(r.result, None);
        assert!(r.stderr.contains("ValueError: boom"), "{}", r.stderr);
    }

    #[tokio::test]
    async fn output_cap_stops_the_code() {
        let c = SandboxConfig {
            max_output_bytes: 64 * 1024,
            ..cfg()
        };
        let j = job(
            Language::Python,
            "def main():\n    while True:\n        print('x' * 1000)",
            json!({}),
        );
        assert_eq!(
            run(&c, &j).await.unwrap_err(),
            SandboxError::OutputTooLarge("64 KB".into())
        );
    }

    #[tokio::test]
    async fn a_process_that_left_the_group_does_not_hold_the_run() {
        // It keeps stdout open for 5 s after main returned.
        let code = "import subprocess\ndef main():\n    subprocess.Popen(['sleep', '5'], start_new_session=True)\n    return 'done'";
        let started = std::time::Instant::now();
        let r = run(&cfg(), &job(Language::Python, code, json!({})))
            .await
            .unwrap();
        assert_eq!(r.result, Some(json!("done")));
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_missing_interpreter_is_named() {
        let c = SandboxConfig {
            python_bin: "no-such-python-here".into(),
            ..cfg()
        };
        let e = run(
            &c,
            &job(Language::Python, "def main(): return 1", json!({})),
        )
        .await
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "no-such-python-here not found: install Python 3 or set SANDBOX_EXECUTOR_MANAGER_URL"
        );
    }

    #[tokio::test]
    async fn artifacts_are_filtered() {
        let code = "import os\ndef main():\n    open('artifacts/b.csv','w').write('a,b\\n1,2\\n')\n    open('artifacts/a.json','w').write('[1]')\n    open('artifacts/run.sh','w').write('x')\n    open('artifacts/empty.png','w').close()\n    os.symlink('/etc/hostname', 'artifacts/link.csv')\n    return None";
        let r = run(&cfg(), &job(Language::Python, code, json!({})))
            .await
            .unwrap();
        assert_eq!(r.result, Some(serde_json::Value::Null));
        let names: Vec<&str> = r.artifacts.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["a.json", "b.csv"]);
        assert_eq!(r.artifacts[1].bytes, b"a,b\n1,2\n");
        assert_eq!(r.artifacts[1].mime_type, "text/csv");
    }

    #[test]
    fn notes_are_taken_out_of_stderr() {
        let (rest, notes) = take_notes(&format!("{NO_NETNS_NOTE} EPERM\nTraceback\n"));
        assert_eq!(rest, "Traceback\n");
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("EPERM"), "{notes:?}");
    }

    #[test]
    fn failure_signatures() {
        assert!(is_out_of_memory("Traceback...\nMemoryError\n"));
        assert!(is_out_of_memory(
            "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"
        ));
        assert!(!is_out_of_memory("ValueError: MemoryError is a name"));
        assert_eq!(
            network_failure("Traceback\nOSError: [Errno 101] Network is unreachable\n").as_deref(),
            Some("OSError: [Errno 101] Network is unreachable")
        );
        assert_eq!(network_failure("ValueError: x"), None);
    }
}
