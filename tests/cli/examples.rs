//! The example canvases of `canvases/`: each passes `validate --strict`, and every
//! `canvas` command of `canvases/README.md` runs as written (no terminal, a temporary
//! store and working directory) and does what the README says it does.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::harness::CanvasCli;
use crate::util::{TIMEOUT, canvases, events, final_content, stderr};

/// The canvas files of `canvases/` (JSON or YAML, mock scripts left out), by file name.
fn canvas_files() -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(canvases()).expect("canvases/ is readable") {
        let name = entry
            .expect("a directory entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if is_data(&name) && !is_mock(&name) {
            out.push(name);
        }
    }
    out.sort();
    out
}

fn is_data(name: &str) -> bool {
    [".json", ".yaml", ".yml"].iter().any(|e| name.ends_with(e))
}

/// `NAME.mock.yaml` (or `.json`, `.yml`): the mock script of `NAME.yaml`.
fn is_mock(name: &str) -> bool {
    [".mock.json", ".mock.yaml", ".mock.yml"]
        .iter()
        .any(|e| name.ends_with(e))
}

#[test]
fn every_example_passes_strict_validation() {
    let files = canvas_files();
    assert!(
        (6..=10).contains(&files.len()),
        "canvases/ should hold 6 to 10 example canvases, not {}: {files:?}",
        files.len()
    );
    for name in &files {
        let out = CanvasCli::new()
            .args(["validate", "--strict", "--format", "json"])
            .arg(canvases().join(name))
            .run()
            .into_output();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{name}: validate --format json is not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        let findings = &report[0]["findings"];
        assert_eq!(
            findings.as_array().map(Vec::len),
            Some(0),
            "{name}: findings {findings}"
        );
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
    }
}

#[test]
fn every_file_in_canvases_is_a_canvas_its_mock_or_the_readme() {
    let files = canvas_files();
    for entry in std::fs::read_dir(canvases()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name == "README.md" || files.contains(&name) {
            continue;
        }
        // A dataset for `canvas batch` (NAME.cases.jsonl) goes with its canvas, and reads.
        if let Some(stem) = name.strip_suffix(".cases.jsonl") {
            assert!(
                files
                    .iter()
                    .any(|f| f.rsplit_once('.').map(|(s, _)| s) == Some(stem)),
                "{name}: a dataset without its canvas"
            );
            let path = canvases().join(&name);
            canvas_batch::dataset::read(&path, &name)
                .unwrap_or_else(|e| panic!("{name}: not a dataset: {e}"));
            continue;
        }
        assert!(
            is_mock(&name),
            "{name}: neither a canvas, a mock script nor a dataset"
        );
        let stem = name.split(".mock.").next().unwrap_or_default();
        assert!(
            files
                .iter()
                .any(|f| f.rsplit_once('.').map(|(s, _)| s) == Some(stem)),
            "{name}: a mock script without its canvas"
        );
    }
}

/// One README command and how it ran.
struct Ran {
    /// The line as written (comment included).
    line: String,
    /// The canvas file it runs; for `resume`, the one of the run it continues.
    canvas: Option<String>,
    out: Output,
}

impl Ran {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    /// The final Message of a finished JSON-lines run.
    fn content(&self) -> String {
        let evs = events(&self.out.stdout);
        final_content(&evs).unwrap_or_else(|| {
            panic!(
                "{}: no workflow_finished with content; events: {:?}",
                self.line,
                crate::util::trace(&evs)
            )
        })
    }
}

/// The `canvas` lines of the README's ```sh blocks, in order.
fn readme_commands(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_sh = !in_sh && t == "```sh";
            continue;
        }
        if in_sh && t.starts_with("canvas ") {
            out.push(t.to_string());
        }
    }
    out
}

/// The comment of a shell line: what follows the first `#` that starts a word outside
/// quotes.
fn comment(line: &str) -> Option<&str> {
    let (mut quote, mut prev) = (None, ' ');
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if prev.is_whitespace() => return Some(&line[i + 1..]),
            _ => {}
        }
        prev = c;
    }
    None
}

/// The exit code a line expects: `# exit N …` in its comment, else 0.
fn expected_exit(line: &str) -> i32 {
    comment(line)
        .and_then(|c| c.trim().strip_prefix("exit "))
        .and_then(|rest| rest.split_whitespace().next())
        .map(|n| {
            n.parse()
                .unwrap_or_else(|_| panic!("{line}: `# exit N` wants a number"))
        })
        .unwrap_or(0)
}

/// The `canvases/…` file a line names.
fn named_canvas(line: &str) -> Option<String> {
    line.split_whitespace()
        .filter_map(|w| w.trim_matches(['"', '\'']).strip_prefix("canvases/"))
        .find(|f| is_data(f) && !is_mock(f))
        .map(str::to_string)
}

/// Run every README command through `sh`, in a temporary directory holding a
/// `canvases` link, with `canvas` (the binary under test) first on `PATH`, a fresh
/// store and no terminal.
fn run_readme(work: &Path) -> Vec<Ran> {
    let readme = std::fs::read_to_string(canvases().join("README.md")).unwrap();
    let commands = readme_commands(&readme);
    assert!(
        !commands.is_empty(),
        "no `canvas` lines in canvases/README.md"
    );
    symlink_dir(&canvases(), &work.join("canvases"));
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_canvas"));
    let bin_dir = bin.parent().expect("the binary's directory");
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut ran: Vec<Ran> = Vec::new();
    for line in commands {
        let out = assert_cmd::Command::new("sh")
            .arg("-c")
            // Stdin is /dev/null, as in a script: no terminal to ask on.
            .arg(format!("exec </dev/null\n{line}"))
            .current_dir(work)
            .env("PATH", &path)
            .env("CANVAS_STORE", work.join("store.db"))
            .env("HOME", work)
            .env("NO_COLOR", "1")
            .env_remove("CANVAS_LLM_CONFIG")
            .env_remove("SANDBOX_EXECUTOR_MANAGER_URL")
            .timeout(TIMEOUT)
            .output()
            .unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(
            out.status.code(),
            Some(expected_exit(&line)),
            "{line}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
        let canvas = if line.starts_with("canvas resume ") {
            // `resume latest` continues the last run, which waited.
            ran.iter()
                .rev()
                .find(|r| r.line.starts_with("canvas run "))
                .and_then(|r| r.canvas.clone())
        } else {
            named_canvas(&line)
        };
        ran.push(Ran { line, canvas, out });
    }
    ran
}

#[cfg(unix)]
fn symlink_dir(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

#[cfg(not(unix))]
fn symlink_dir(target: &Path, link: &Path) {
    std::os::windows::fs::symlink_dir(target, link).unwrap();
}

/// The README command that runs (or resumes) `file`, whose line contains `needle`.
fn find<'a>(ran: &'a [Ran], file: &str, needle: &str) -> &'a Ran {
    ran.iter()
        .find(|r| r.canvas.as_deref() == Some(file) && r.line.contains(needle))
        .unwrap_or_else(|| {
            panic!("canvases/README.md has no command for {file} containing {needle:?}")
        })
}

fn assert_contains(r: &Ran, text: &str, wants: &[&str]) {
    for w in wants {
        assert!(text.contains(w), "{}: {w:?} not in {text:?}", r.line);
    }
}

#[test]
fn the_readme_commands_run_and_do_what_it_says() {
    let work = tempfile::tempdir().unwrap();
    let ran = run_readme(work.path());

    // Every canvas is run by some command, and every run or resume finishes (or, marked
    // `# exit 3`, stops at its form).
    for file in canvas_files() {
        assert!(
            ran.iter()
                .any(|r| r.canvas.as_deref() == Some(file.as_str())
                    && r.line.starts_with("canvas run ")),
            "canvases/README.md never runs canvases/{file}"
        );
    }
    for r in &ran {
        let json_events = (r.line.starts_with("canvas run ")
            || r.line.starts_with("canvas resume "))
            && !r.line.contains("--format text")
            && !r.line.contains("--format sse");
        if !json_events {
            continue;
        }
        let evs = events(&r.out.stdout);
        let last = evs
            .last()
            .unwrap_or_else(|| panic!("{}: no events", r.line));
        let want = match expected_exit(&r.line) {
            0 => "workflow_finished",
            3 => "user_inputs",
            n => panic!("{}: unexpected `# exit {n}`", r.line),
        };
        assert_eq!(last["event"], want, "{}: {}", r.line, r.stdout());
        if want == "workflow_finished" {
            assert!(
                last["data"]["error"].is_null(),
                "{}: finished with an error: {last}",
                r.line
            );
        }
    }

    // What the commands answered: (canvas, a word of the command line, the content).
    let answers = [
        // hello.json: `hello` takes the Switch case, anything else the else branch (which
        // echoes the query; a streamed Message drops the spaces around a reference).
        (
            "hello.json",
            "\"hello\"",
            "Hello to you too! This is turn #1.",
        ),
        ("hello.json", "what time", "You said \"what time is it?\"."),
        // router.yaml: one branch per case, in case order; the else branch last.
        (
            "router.yaml",
            "priority=urgent",
            "URGENT: paging the on-call engineer about \"checkout page is down\".",
        ),
        (
            "router.yaml",
            "affected=250",
            "Incident opened: \"export is slow\" affects 250 customers. Status page updated.",
        ),
        (
            "router.yaml",
            "invoice",
            "Sent to the billing team: \"Wrong VAT on my invoice\". They answer within one working day.",
        ),
        (
            "router.yaml",
            "avatar",
            "Queued with low priority: \"how do I change my avatar?\". We answer within three working days.",
        ),
        // word-stats.yaml: three words shouted by the Iteration; the Loop stops at n ≥ 3.
        (
            "word-stats.yaml",
            "red,green,blue",
            "words: [\"RED!\", \"GREEN!\", \"BLUE!\"] (loop ran 3 times)",
        ),
        // booking.yaml: the resume answers the four fields (checked below); 4 guests is
        // not more than 8, so the confirmation, with the terrace branch.
        (
            "booking.yaml",
            "canvas resume ",
            "Booked: a table for 4 at 20:00, under the name Ada, on the terrace. See you soon!",
        ),
        // Every field given up front: the form is answered in the same command; 12 > 8.
        (
            "booking.yaml",
            "name=Bo",
            "Thank you, Bo! For 12 guests we set a menu with you: please call us on +1 555 0100.",
        ),
        // support.yaml: the mock classifies "broken" as a complaint (the apology, its
        // <think> part kept as text in the final content) and "how" as a product question.
        (
            "support.yaml",
            "broken",
            "The customer is upset.I am sorry about that. A replacement is on its way.",
        ),
        (
            "support.yaml",
            "reset",
            "See the manual: https://example.com/docs (product)",
        ),
    ];
    for (file, needle, want) in answers {
        assert_eq!(find(&ran, file, needle).content(), want, "{file}: {needle}");
    }

    // booking.yaml: the run waits for the four fields.
    // The batch of support.yaml: every row finishes, one check fails as the README says.
    let batch = ran
        .iter()
        .find(|r| r.line.starts_with("canvas batch "))
        .expect("canvases/README.md runs a batch");
    assert_contains(
        batch,
        &batch.stdout(),
        &[
            "5 rows · 5 succeeded",
            "1 checks failed",
            "row return: Categorize:Triage@category_name equals \"complaint\" (got \"product\")",
        ],
    );
    let r = find(&ran, "booking.yaml", "# exit 3");
    let evs = events(&r.out.stdout);
    let asked = &evs.last().unwrap()["data"]["inputs"];
    let mut keys: Vec<&str> = asked
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    keys.sort_unstable();
    assert_eq!(keys, ["guests", "name", "terrace", "time"], "{asked}");

    // analyst.yaml: the script in analyst.mock.yaml sums 120+95+143+170+88+132 = 748,
    // averages 748/6 = 124.67 and finds April (170) best; the mock says so only when the
    // tool's result holds exactly those values, so the answer proves python ran.
    let r = find(&ran, "analyst.yaml", "canvas run ");
    let content = r.content();
    assert_contains(
        r,
        &content,
        &[
            "Running the execute_code_0 tool...",
            "Sales totalled 748 units, 124.67 a month on average. April was the best month with 170 units.",
        ],
    );

    // report.yaml: a DOCX in --output-dir (relative to the working directory), named
    // by the Message and listed in message_end.downloads, with the mocked report in it
    // (its title is the query).
    let r = find(&ran, "report.yaml", "--output-dir reports");
    let file = work.path().join("reports").join("team-report.docx");
    let bytes =
        std::fs::read(&file).unwrap_or_else(|e| panic!("{}: no {}: {e}", r.line, file.display()));
    let content = r.content();
    assert!(
        content.starts_with(&format!(
            "Your report is ready: team-report.docx ({} bytes).",
            bytes.len()
        )),
        "{content:?}"
    );
    let evs = events(&r.out.stdout);
    let end = evs.iter().find(|e| e["event"] == "message_end").unwrap();
    let dl = &end["data"]["downloads"][0];
    assert_eq!(dl["filename"], "team-report.docx", "{end}");
    assert_eq!(
        std::fs::canonicalize(dl["path"].as_str().unwrap_or_default()).ok(),
        std::fs::canonicalize(&file).ok()
    );
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a DOCX (zip)");
    let mut xml = String::new();
    std::io::Read::read_to_string(&mut zip.by_name("word/document.xml").unwrap(), &mut xml)
        .unwrap();
    assert_contains(
        r,
        &xml,
        &[
            "Support team, week 42",
            "Highlights",
            "Median first reply: 4 hours (was 6)",
            "Review the ten oldest open tickets",
        ],
    );

    // trip.yaml: the three LLM nodes ran in one batch (all started before any
    // finished), the form asked `days` and `pace`, and the answer has all of it.
    let r = find(&ran, "trip.yaml", "destination=Lisbon");
    let evs = events(&r.out.stdout);
    let llm = |e: &Value| {
        e["data"]["component_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("LLM:"))
    };
    let started: Vec<usize> = (0..evs.len())
        .filter(|&i| evs[i]["event"] == "node_started" && llm(&evs[i]))
        .collect();
    let finished: Vec<usize> = (0..evs.len())
        .filter(|&i| evs[i]["event"] == "node_finished" && llm(&evs[i]))
        .collect();
    assert_eq!((started.len(), finished.len()), (3, 3), "{}", r.stdout());
    assert!(started[2] < finished[0], "not one batch: {}", r.stdout());
    let form = &evs.last().unwrap()["data"];
    assert_eq!(form["inputs"]["days"]["type"], "integer", "{form}");
    assert_eq!(form["inputs"]["pace"]["options"][1], "packed", "{form}");
    assert!(
        form["tips"]
            .as_str()
            .is_some_and(|t| t.contains("for Lisbon are ready")),
        "{form}"
    );
    let r = find(&ran, "trip.yaml", "canvas resume ");
    let content = r.content();
    assert_contains(
        r,
        &content,
        &[
            "Lisbon: 3 days, relaxed pace.",
            "Weather: Expect mild days in Lisbon, around 22°C, and cool evenings: pack layers and a light jacket.",
            "Food: In Lisbon, eat where the market traders eat, and order the dish of the day with a local dessert.",
            "Sights: In Lisbon, walk the old town, give the main museum a morning, and end the day at the best viewpoint.",
        ],
    );
    // The form's answers up front: it is still asked (a user_inputs event), and
    // answered by the same command.
    let r = find(&ran, "trip.yaml", "destination=Kyoto");
    let names: Vec<String> = events(&r.out.stdout)
        .iter()
        .filter_map(|e| e["event"].as_str().map(str::to_string))
        .filter(|e| e.starts_with("user_inputs") || e.starts_with("workflow_"))
        .collect();
    assert_eq!(
        names,
        ["workflow_started", "user_inputs", "workflow_finished"],
        "{}",
        r.stdout()
    );
    let content = r.content();
    assert_contains(
        r,
        &content,
        &[
            "Kyoto: 5 days, packed pace.",
            "Weather: Expect mild days in Kyoto,",
            "Food: In Kyoto,",
            "Sights: In Kyoto,",
        ],
    );
}

/// `canvas run` with `-i` values for only some of a form's fields: the form waits for
/// all of them (nothing is answered half), and says how to answer.
#[test]
fn run_answers_a_form_only_when_every_field_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let booking = canvases().join("booking.yaml");
    let booking = booking.to_str().unwrap();
    let out = crate::util::cli(
        &["run", booking, "-i", "name=Ada", "-i", "guests=4"],
        &store,
    );
    crate::util::expect_code(&out, 3, "partial answers");
    let evs = events(&out.stdout);
    assert_eq!(evs.last().unwrap()["event"], "user_inputs");
    assert!(
        stderr(&out).contains("-i time=… -i terrace=…"),
        "{}",
        stderr(&out)
    );
    // A value the field's type refuses: a usage error before the run (the forms' fields
    // are checked up front), so nothing more is stored.
    let out = crate::util::cli(
        &[
            "run",
            booking,
            "-i",
            "name=Ada",
            "-i",
            "guests=four",
            "-i",
            "time=18:30",
            "-i",
            "terrace=no",
        ],
        &store,
    );
    crate::util::expect_code(&out, 2, "a badly typed answer");
    assert!(
        stderr(&out).contains("input \"guests\" expects an integer; got \"four\""),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty(), "the run did not start");
    assert_eq!(
        crate::util::runs(&store).len(),
        1,
        "only the first run is stored"
    );
}

#[test]
fn shell_comments_and_expected_exit_codes_are_read() {
    assert_eq!(expected_exit("canvas run a.yaml"), 0);
    assert_eq!(
        expected_exit("canvas run a.yaml   # exit 3 without a terminal"),
        3
    );
    assert_eq!(expected_exit("canvas run a.yaml -q \"a # exit 3\""), 0);
    assert_eq!(comment("canvas run a#b # note"), Some(" note"));
    assert_eq!(
        named_canvas("canvas run canvases/x.yaml --mock-llm canvases/x.mock.yaml"),
        Some("x.yaml".to_string())
    );
    assert_eq!(
        readme_commands("```sh\ncanvas a\nollama b\n```\ncanvas c\n```\ncanvas d\n```"),
        ["canvas a"]
    );
}
