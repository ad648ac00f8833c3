//! The bad-input catalogue: one table of what users get wrong (command lines, canvas
//! files, answers, run ids and stores, providers, tools), each with the exit code and
//! the words of its one-line error. For every case the test checks that stderr is one
//! `error:` line (and `hint:` lines, nothing else), that nothing panicked, that the
//! exit code is the documented one, and that the store is intact afterwards: a sound
//! store passes `PRAGMA integrity_check` and holds as many runs as before (plus the one
//! a run that fails while running leaves, where the case says so), and a store the
//! command refused is byte for byte what it was. `docs/errors.md` documents each case:
//! a row of it holds the case's words and its exit code.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::harness::CanvasCli;
use crate::peer::{FakeServer, Reply};
use crate::util::canvases;

/// The store a case starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Store {
    /// No store file.
    None,
    /// A finished run of `hello.json` (`{done}`) and a run of `trip.yaml` waiting at its
    /// form (`{waiting}`).
    Runs,
    /// Garbage bytes.
    Garbage,
    /// A store cut in half.
    Truncated,
    /// Another program's SQLite database.
    Foreign,
    /// A store of a newer schema version (this build's, plus one).
    Newer,
}

/// The model server a case talks to (its `llm.yaml` points there).
#[derive(Clone, Copy, Debug)]
enum Peer {
    None,
    /// Answers every request with this status and an OpenAI-style error.
    Status(u16, &'static str),
    /// Answers 200 with a body that is not JSON.
    Malformed,
    /// Nobody listens on the port.
    Closed,
}

/// One kind of bad input.
struct Case {
    /// What is wrong.
    what: &'static str,
    /// Files the case's directory holds (see [`fixture`]).
    files: &'static [&'static str],
    store: Store,
    /// The command line after `canvas`; `{canvases}`, `{done}` and `{waiting}` are
    /// replaced (the repository's canvases, the store's run ids).
    args: &'static [&'static str],
    /// Environment variables set, then removed.
    env: &'static [(&'static str, &'static str)],
    unset: &'static [&'static str],
    stdin: Option<&'static str>,
    peer: Peer,
    /// The exit code.
    code: i32,
    /// Words of the `error:` line.
    says: &'static str,
    /// Runs the command leaves in the store (a run that fails while running is stored).
    runs_added: usize,
}

const NO_FILES: &[&str] = &[];
const NO_ENV: &[(&str, &str)] = &[];

/// A case with the defaults: no files, no store, no environment, no peer, no run added.
const fn case(
    what: &'static str,
    args: &'static [&'static str],
    code: i32,
    says: &'static str,
) -> Case {
    Case {
        what,
        files: NO_FILES,
        store: Store::None,
        args,
        env: NO_ENV,
        unset: &[],
        stdin: None,
        peer: Peer::None,
        code,
        says,
        runs_added: 0,
    }
}

impl Case {
    const fn files(mut self, files: &'static [&'static str]) -> Case {
        self.files = files;
        self
    }
    const fn store(mut self, store: Store) -> Case {
        self.store = store;
        self
    }
    const fn stdin(mut self, text: &'static str) -> Case {
        self.stdin = Some(text);
        self
    }
    const fn peer(mut self, peer: Peer) -> Case {
        self.peer = peer;
        self
    }
    const fn unset(mut self, vars: &'static [&'static str]) -> Case {
        self.unset = vars;
        self
    }
    const fn env(mut self, vars: &'static [(&'static str, &'static str)]) -> Case {
        self.env = vars;
        self
    }
    /// The command stores the run it starts, which then fails.
    const fn stores_a_failed_run(mut self) -> Case {
        self.runs_added = 1;
        self
    }
}

const CASES: &[Case] = &[
    // The command line.
    case("an unknown flag", &["run", "{canvases}/hello.json", "--bogus"], 2,
        "unexpected argument '--bogus' found"),
    case("a missing argument", &["run"], 2,
        "the following required arguments were not provided: <FILE>"),
    case("a value a flag does not take", &["run", "{canvases}/hello.json", "--format", "xml"], 2,
        "invalid value 'xml' for '--format <FORMAT>'"),
    case("a number out of range", &["run", "{canvases}/hello.json", "--max-parallel", "0"], 2,
        "invalid value '0' for '--max-parallel <N>': 0 is not in 1..=65535"),
    case("a number that is not one", &["run", "{canvases}/hello.json", "--timeout", "soon"], 2,
        "invalid value 'soon' for '--timeout <SECS>'"),
    case("a flag without its value", &["run", "{canvases}/hello.json", "-q"], 2,
        "a value is required for '--query <TEXT>' but none was supplied"),
    case("flags that exclude each other", &["run", "{canvases}/hello.json", "--mock-llm", "m.yaml", "--replay", "r.json"], 2,
        "the argument '--mock-llm <FILE>' cannot be used with '--replay <FILE>'"),
    case("-v with --quiet", &["run", "{canvases}/hello.json", "-v", "--quiet"], 2,
        "the argument '--verbose' cannot be used with '--quiet'"),
    case("an unknown command", &["runz"], 2, "unrecognized subcommand 'runz'"),
    case("an unknown status", &["runs", "--status", "sleeping"], 2,
        "invalid value 'sleeping' for '--status <S>'"),
    case("a duration without a unit", &["runs", "prune", "--older-than", "30"], 2,
        "\"30\" is not a duration: give a number and a unit"),
    case("turn 0", &["events", "latest", "--turn", "0"], 2,
        "invalid value '0' for '--turn <N>'"),
    case("an unknown shell", &["completions", "tcsh"], 2, "invalid value 'tcsh' for '[SHELL]'"),
    case("--canvas-changed other than ok", &["resume", "latest", "--canvas-changed=yes"], 2,
        "invalid value 'yes' for '--canvas-changed <ok>'"),
    // Canvas files.
    case("a canvas file that does not exist", &["run", "nope.json"], 2,
        "nope.json: cannot read the file: No such file or directory"),
    case("a directory for a canvas", &["run", "sub"], 2, "sub: cannot read the file: Is a directory"),
    case("an empty file", &["run", "empty.json"], 2,
        "empty.json: invalid JSON at line 1, column 0: EOF while parsing a value").files(&["empty.json"]),
    case("a file that is not text", &["run", "binary.json"], 2,
        "binary.json: cannot read the file: stream did not contain valid UTF-8").files(&["binary.json"]),
    case("malformed JSON", &["run", "bad.json"], 2, "bad.json: invalid JSON at line 2, column 18")
        .files(&["bad.json"]),
    case("malformed YAML", &["run", "bad.yaml"], 2, "bad.yaml: invalid YAML: did not find expected node content")
        .files(&["bad.yaml"]),
    case("malformed JSON on stdin", &["run", "-"], 2, "-: invalid JSON at line 2").stdin("{\n"),
    case("JSON that is not a canvas", &["run", "list.json"], 2,
        "list.json: not a canvas: the top level is an array, not an object").files(&["list.json"]),
    case("a graph export without nodes", &["run", "graph.json"], 2,
        "graph.json: not a canvas: it has no `components` object and no graph nodes")
        .files(&["graph.json"]),
    case("no Begin", &["run", "nobegin.json"], 2, "no component with id `begin`")
        .files(&["nobegin.json"]),
    case("a Begin with another id", &["run", "otherbegin.json"], 2,
        "no component with id `begin`: the Begin component has id `Begin:X`")
        .files(&["otherbegin.json"]),
    case("a downstream id that is not a component", &["run", "dangling.json"], 2,
        "begin: `downstream` lists unknown component `Message:Nope`").files(&["dangling.json"]),
    case("an unknown component class", &["run", "unknown.json"], 2,
        "Frobnicate:1: unknown component class `Frobnicate`").files(&["unknown.json"]),
    case("a component this build does not run", &["run", "browser.json"], 2,
        "Browser:A: Browser (a headless web browser) is not supported").files(&["browser.json"]),
    case("Switch conditions that are not a list", &["run", "switch.json"], 2,
        "[Switch] conditions must be a list of cases, not a string").files(&["switch.json"]),
    case("a downstream that is not a list", &["run", "downstream.json"], 2,
        "`downstream` must be a list of component ids, not a string").files(&["downstream.json"]),
    case("a Message content that is a number", &["run", "content.json"], 2,
        "[Message] content must be a list of texts, not a number (42)").files(&["content.json"]),
    case("an unknown Switch operator", &["run", "operator.json"], 2,
        "[Switch] case 1 has an unknown operator 'resembles'").files(&["operator.json"]),
    case("a Message attachment format", &["run", "attach.json"], 2,
        "Message output_format \"html\" (a file attachment) is not supported yet")
        .files(&["attach.json"]),
    case("a parameter value RAGFlow refuses", &["run", "oracle.json"], 2,
        "Choose DB type oracle is not supported").files(&["oracle.json"]),
    case("a required parameter left empty", &["run", "nourl.json"], 2,
        "End point URL does not support empty value.").files(&["nourl.json"]),
    case("JSON nested too deep", &["run", "deep.json"], 2,
        "deep.json: invalid JSON at line 1, column 128: recursion limit exceeded")
        .files(&["deep.json"]),
    case("YAML nested too deep", &["run", "deep.yaml"], 2,
        "deep.yaml: invalid YAML: nested deeper than 128 levels").files(&["deep.yaml"]),
    case("validate: a file that does not exist", &["validate", "nope.json"], 2,
        "nope.json: no such file or directory"),
    case("migrate: a file that does not exist", &["migrate", "nope.json"], 2,
        "nope.json: no such file or directory"),
    case("graph: a file that is not a canvas", &["graph", "list.json"], 2,
        "list.json: not a canvas").files(&["list.json"]),
    // Answers.
    case("-i without =", &["run", "{canvases}/hello.json", "-i", "novalue"], 2,
        "input \"novalue\" is not KEY=VALUE"),
    case("a value of the wrong type", &["run", "{canvases}/trip.yaml", "-i", "destination=Oslo", "-i", "days=many"], 2,
        "input \"days\" expects an integer; got \"many\""),
    case("a value that is not an option", &["run", "{canvases}/trip.yaml", "-i", "destination=Oslo", "-i", "pace=frantic"], 2,
        "input \"pace\" expects one of \"relaxed\", \"packed\"; got \"frantic\""),
    case("an inputs file that is not YAML", &["run", "{canvases}/trip.yaml", "--inputs", "in.yaml"], 2,
        "in.yaml: invalid YAML").files(&["in.yaml"]),
    case("an inputs file that is not a map", &["run", "{canvases}/trip.yaml", "--inputs", "list.yaml"], 2,
        "list.yaml: the inputs file must map field keys to values").files(&["list.yaml"]),
    case("a bad value in an inputs file", &["run", "{canvases}/trip.yaml", "--inputs", "days.yaml"], 2,
        "days.yaml: input \"days\" expects an integer; got \"many\"").files(&["days.yaml"]),
    case("an inputs file that does not exist", &["run", "{canvases}/trip.yaml", "--inputs", "nope.yaml"], 2,
        "nope.yaml: cannot read the inputs file"),
    case("-q @FILE that cannot be read", &["run", "{canvases}/hello.json", "-q", "@q.txt"], 2,
        "invalid value '@q.txt' for '--query <TEXT>': cannot read q.txt"),
    case("-i KEY=@FILE that cannot be read", &["run", "{canvases}/hello.json", "-i", "notes=@notes.txt"], 2,
        "input \"notes\": cannot read notes.txt"),
    case("@ without a file name", &["run", "{canvases}/hello.json", "-i", "k=@"], 2,
        "input \"k\": `@` needs a file name"),
    case("stdin for the canvas and a value", &["run", "-", "-i", "k=@-"], 2,
        "stdin can carry the canvas (-) or a value (@-), not both").stdin("{}"),
    case("a required Begin input not given", &["run", "{canvases}/trip.yaml"], 2,
        "Begin input \"destination\" (Destination) is required and not given"),
    case("several required Begin inputs not given", &["run", "{canvases}/router.yaml"], 2,
        "Begin inputs \"priority\" (Priority), \"affected\" (Customers affected) are required and not given"),
    case("a bad answer to a waiting form", &["resume", "{waiting}", "-i", "days=many", "-i", "pace=relaxed"], 2,
        "input \"days\" expects an integer; got \"many\"").store(Store::Runs),
    case("an answer that is not an option", &["resume", "{waiting}", "-i", "days=3", "-i", "pace=frantic"], 2,
        "input \"pace\" expects one of \"relaxed\", \"packed\"; got \"frantic\"").store(Store::Runs),
    // Runs and stores.
    case("a run id that matches none", &["show", "nope"], 2, "no run matches \"nope\"").store(Store::Runs),
    case("a prefix that matches several runs", &["show", "0"], 2, "run id prefix \"0\" matches 2 runs")
        .store(Store::Runs),
    case("show without a store", &["show", "latest"], 2, "there is no run store at"),
    case("events without a store", &["events", "latest"], 2, "there is no run store at"),
    case("a turn the run does not have", &["events", "{done}", "--turn", "9"], 2,
        "has 1 turn; there is no turn 9").store(Store::Runs),
    case("cancel of a run that is not running", &["cancel", "{done}"], 2,
        "is not running (it is succeeded)").store(Store::Runs),
    case("cancel without a store", &["cancel", "latest"], 2, "no run store at"),
    case("resume of a finished run", &["resume", "{done}"], 2,
        "already finished (succeeded): there is nothing to resume").store(Store::Runs),
    case("resume of a run that does not exist", &["resume", "nope"], 2, "no run matches \"nope\"")
        .store(Store::Runs),
    case("resume after the canvas file changed", &["resume", "{changed}", "-q", "again"], 2,
        "the canvas changed since run").files(&["flow.json"]),
    case("prune without a selector", &["runs", "prune"], 2, "canvas runs prune: say which runs to delete")
        .store(Store::Runs),
    case("a store that is garbage", &["runs"], 2,
        "not a canvas run store, or a damaged one (file is not a database)").store(Store::Garbage),
    case("a run into a store that is garbage", &["run", "{canvases}/hello.json"], 2,
        "not a canvas run store, or a damaged one (file is not a database)").store(Store::Garbage),
    case("a store cut short", &["show", "latest"], 2,
        "not a canvas run store, or a damaged one (database disk image is malformed)")
        .store(Store::Truncated),
    case("another program's database", &["run", "{canvases}/hello.json"], 2,
        "not a canvas run store: an SQLite database with schema version 0 and tables notes")
        .store(Store::Foreign),
    case("a store of a newer canvas", &["run", "{canvases}/hello.json"], 2,
        "is newer than this canvas supports").store(Store::Newer),
    case("reading a store of a newer canvas", &["runs"], 2, "is newer than this canvas supports")
        .store(Store::Newer),
    case("a directory for a store", &["run", "{canvases}/hello.json", "--store", "sub"], 2,
        "sub: cannot open the run store: it is a directory, not a store file"),
    case("a store under a file", &["run", "{canvases}/hello.json", "--store", "empty.json/canvas.db"], 2,
        "cannot open the run store: empty.json is not a directory").files(&["empty.json"]),
    // Providers.
    case("a provider key not set", &["run", "openai.json", "-q", "hi"], 2,
        "model \"gpt-4o@OpenAI\" needs an API key").files(&["openai.json"]).unset(&["OPENAI_API_KEY"]),
    case("an unknown factory", &["run", "factory.json", "-q", "hi"], 2,
        "model \"x@NoSuchFactory\": unknown factory \"NoSuchFactory\"").files(&["factory.json"]),
    case("a server without its URL", &["run", "plain.json", "-q", "hi"], 2,
        "model \"fake@OpenAI-API-Compatible\" needs a base URL").files(&["plain.json"]),
    case("an llm.yaml that is not valid", &["run", "plain.json", "--llm-config", "bad-llm.yaml"], 2,
        "bad-llm.yaml: not a valid LLM configuration").files(&["plain.json", "bad-llm.yaml"]),
    case("an llm.yaml that does not exist", &["run", "plain.json", "--llm-config", "nope.yaml"], 2,
        "nope.yaml: cannot read the LLM configuration").files(&["plain.json"]),
    case("a mock script with an unknown key", &["run", "{canvases}/hello.json", "--mock-llm", "key-mock.yaml"], 2,
        "key-mock.yaml: not a mock script: unknown field `rulez`").files(&["key-mock.yaml"]),
    case("a mock rule whose pattern is not a regex", &["run", "{canvases}/hello.json", "--mock-llm", "rx-mock.yaml"], 2,
        "rx-mock.yaml: rule 1: bad match regex").files(&["rx-mock.yaml"]),
    case("a mock script that does not exist", &["run", "{canvases}/hello.json", "--mock-llm", "nope.yaml"], 2,
        "nope.yaml: cannot read the mock script"),
    case("a recording that does not exist", &["run", "plain.json", "--replay", "nope.json"], 2,
        "nope.json: cannot read the recording").files(&["plain.json"]),
    case("a recording that is not one", &["run", "plain.json", "--replay", "list.json"], 2,
        "list.json: not a recording of model calls").files(&["plain.json", "list.json"]),
    case("a provider that refuses the key", &["run", "plain.json", "-q", "hi", "--llm-config", "llm.yaml"], 1,
        "component \"LLM:A\" (LLM) failed: **ERROR**: MAX_RETRIES_EXCEEDED - HTTP 401 Unauthorized")
        .files(&["plain.json", "llm.yaml"]).peer(Peer::Status(401, "bad key")).stores_a_failed_run(),
    case("a provider that fails", &["run", "plain.json", "-q", "hi", "--llm-config", "llm.yaml"], 1,
        "component \"LLM:A\" (LLM) failed: **ERROR**: MAX_RETRIES_EXCEEDED - HTTP 500 Internal Server Error")
        .files(&["plain.json", "llm.yaml"]).peer(Peer::Status(500, "boom")).stores_a_failed_run(),
    case("a provider that answers nonsense", &["run", "plain.json", "-q", "hi", "--llm-config", "llm.yaml"], 1,
        "component \"LLM:A\" (LLM) failed: **ERROR**: MAX_RETRIES_EXCEEDED - malformed answer from")
        .files(&["plain.json", "llm.yaml"]).peer(Peer::Malformed).stores_a_failed_run(),
    case("a provider nobody runs", &["run", "plain.json", "-q", "hi", "--llm-config", "llm.yaml"], 1,
        "component \"LLM:A\" (LLM) failed: **ERROR**: MAX_RETRIES_EXCEEDED - cannot connect to")
        .files(&["plain.json", "llm.yaml"]).peer(Peer::Closed).stores_a_failed_run(),
    // Tools.
    case("an MCP configuration that does not exist", &["run", "{canvases}/hello.json", "--mcp-config", "mcp.yaml"], 2,
        "MCP config mcp.yaml: No such file or directory"),
    case("an MCP configuration that is not valid", &["run", "{canvases}/hello.json", "--mcp-config", "bad-mcp.yaml"], 2,
        "MCP config bad-mcp.yaml: servers: invalid type: sequence, expected a map").files(&["bad-mcp.yaml"]),
    case("a private address without --allow-private-network", &["run", "invoke.json", "-q", "hi"], 1,
        "component \"T:1\" (Invoke) failed: URL not valid: refused to connect to 127.0.0.1 (a loopback address)")
        .files(&["invoke.json"]).unset(&["CANVAS_ALLOW_PRIVATE"]).stores_a_failed_run(),
    case("a web service nobody runs", &["run", "invoke.json", "-q", "hi", "--allow-private-network"], 1,
        "component \"T:1\" (Invoke) failed: error sending request for url")
        .files(&["invoke.json"]).stores_a_failed_run(),
    case("a database that cannot be opened", &["run", "sql.json", "-q", "hi"], 1,
        "component \"T:1\" (ExeSQL) failed: Database Connection Failed!")
        .files(&["sql.json"]).stores_a_failed_run(),
    case("datasets without a RAGFlow server", &["run", "retrieval.json", "-q", "hi"], 1,
        "component \"T:1\" (Retrieval) failed: Retrieval needs a RAGFlow server")
        .files(&["retrieval.json"]).unset(&["RAGFLOW_BASE_URL", "RAGFLOW_API_KEY"]).stores_a_failed_run(),
    case("CANVAS_STORE naming a directory", &["runs"], 2,
        "sub: cannot open the run store: it is a directory, not a store file")
        .env(&[("CANVAS_STORE", "sub")]),
];

/// `begin → T:1 → Message:Out`: `T:1` a `class` component with `params`, whose
/// `output` the Message shows.
fn one_node(class: &str, params: Value, output: &str) -> String {
    crate::canvases::node_canvas(class, "T:1", params, output).to_string()
}

/// `begin → Switch:S → Message:A` (the query holds "x") or `Message:B`: a sound canvas
/// that cases break in one place.
fn switch_canvas() -> Value {
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Switch:S"], "upstream": []},
        "Switch:S": {"obj": {"component_name": "Switch", "params": {
            "conditions": [{"logical_operator": "and", "to": ["Message:A"],
                "items": [{"cpn_id": "sys.query", "operator": "contains", "value": "x"}]}],
            "end_cpn_ids": ["Message:B"]}}, "downstream": ["Message:A", "Message:B"], "upstream": ["begin"]},
        "Message:A": {"obj": {"component_name": "Message", "params": {"content": ["yes"]}}, "downstream": [], "upstream": ["Switch:S"]},
        "Message:B": {"obj": {"component_name": "Message", "params": {"content": ["no"]}}, "downstream": [], "upstream": ["Switch:S"]}
    }})
}

/// `begin → LLM:A (llm_id, no retries) → StringTransform:S → Message:M`: the model's
/// answer is not streamed, so a failed call fails the run.
fn plain_llm(llm_id: &str) -> String {
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["LLM:A"]},
        "LLM:A": {"obj": {"component_name": "LLM", "params": {"llm_id": llm_id, "sys_prompt": "s",
            "prompts": [{"role": "user", "content": "{sys.query}"}], "max_retries": 0,
            "delay_after_error": 0.01}}, "downstream": ["StringTransform:S"]},
        "StringTransform:S": {"obj": {"component_name": "StringTransform", "params": {
            "method": "merge", "script": "<<{LLM:A@content}>>", "delimiters": [","]}},
            "downstream": ["Message:M"]},
        "Message:M": {"obj": {"component_name": "Message", "params": {"content": ["{StringTransform:S@result}"]}},
            "downstream": []}}})
    .to_string()
}

/// The contents of a file cases name; `peer` is the model server's base URL.
fn fixture(name: &str, peer: &str) -> Vec<u8> {
    let message = r#""Message:M": {"obj": {"component_name": "Message", "params": {"content": ["hi"]}}, "downstream": []}"#;
    let begin_to = |to: &str| {
        format!(
            r#""begin": {{"obj": {{"component_name": "Begin", "params": {{}}}}, "downstream": ["{to}"]}}"#
        )
    };
    let patched = |pointer: &str, v: Value| {
        let mut doc = switch_canvas();
        *doc.pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer}")) = v;
        serde_json::to_string_pretty(&doc).unwrap()
    };
    let text = match name {
        "empty.json" => String::new(),
        "binary.json" => return vec![0xff, 0xfe, 0x00, b'{', 0x80],
        "bad.json" => "{\n  \"components\": {,\n}".into(),
        "bad.yaml" | "in.yaml" => "components:\n  begin: [\n".into(),
        "list.json" => "[1, 2]".into(),
        "list.yaml" => "- 1\n- 2\n".into(),
        "days.yaml" => "destination: Oslo\ndays: many\n".into(),
        "graph.json" => r#"{"graph": {"nodes": [], "edges": []}, "globals": {}}"#.into(),
        "nobegin.json" => format!("{{\"components\": {{{message}}}}}"),
        "otherbegin.json" => format!(
            r#"{{"components": {{"Begin:X": {{"obj": {{"component_name": "Begin", "params": {{}}}}, "downstream": ["Message:M"]}}, {message}}}}}"#
        ),
        "dangling.json" => format!(
            "{{\"components\": {{{}, {message}}}}}",
            begin_to("Message:Nope")
        ),
        "unknown.json" => format!(
            r#"{{"components": {{{}, "Frobnicate:1": {{"obj": {{"component_name": "Frobnicate", "params": {{}}}}, "downstream": []}}}}}}"#,
            begin_to("Frobnicate:1")
        ),
        "browser.json" => format!(
            r#"{{"components": {{{}, "Browser:A": {{"obj": {{"component_name": "Browser", "params": {{}}}}, "downstream": []}}}}}}"#,
            begin_to("Browser:A")
        ),
        "switch.json" => patched("/components/Switch:S/obj/params/conditions", json!("oops")),
        "downstream.json" => patched("/components/begin/downstream", json!("Switch:S")),
        "content.json" => patched("/components/Message:A/obj/params/content", json!(42)),
        "operator.json" => patched(
            "/components/Switch:S/obj/params/conditions/0/items/0/operator",
            json!("resembles"),
        ),
        "attach.json" => {
            let mut doc = switch_canvas();
            doc["components"]["Message:A"]["obj"]["params"]["output_format"] = json!("html");
            serde_json::to_string_pretty(&doc).unwrap()
        }
        "oracle.json" => one_node(
            "ExeSQL",
            json!({"db_type": "oracle", "database": "x", "sql": "SELECT 1"}),
            "json",
        ),
        "nourl.json" => one_node("Invoke", json!({"url": "", "method": "get"}), "result"),
        "deep.json" => format!("{}{}", "[".repeat(200), "]".repeat(200)),
        "deep.yaml" => format!(
            "components: {{}}\nx: {}{}\n",
            "[".repeat(200),
            "]".repeat(200)
        ),
        "flow.json" => std::fs::read_to_string(canvases().join("hello.json")).unwrap(),
        "openai.json" => plain_llm("gpt-4o@OpenAI"),
        "factory.json" => plain_llm("x@NoSuchFactory"),
        "plain.json" => plain_llm("fake@OpenAI-API-Compatible"),
        "llm.yaml" => {
            format!("models:\n  \"fake@OpenAI-API-Compatible\":\n    base_url: \"{peer}\"\n")
        }
        "bad-llm.yaml" => "models: [\n".into(),
        "key-mock.yaml" => "rulez: []\n".into(),
        "rx-mock.yaml" => "rules:\n  - match: \"(\"\n    answer: x\n".into(),
        "bad-mcp.yaml" => "servers: [\n".into(),
        "invoke.json" => one_node(
            "Invoke",
            json!({"url": "http://127.0.0.1:9/x", "method": "get"}),
            "result",
        ),
        "sql.json" => one_node(
            "ExeSQL",
            json!({"db_type": "sqlite", "database": "missing/dir/none.db", "sql": "SELECT 1"}),
            "json",
        ),
        "retrieval.json" => one_node(
            "Retrieval",
            json!({"query": "{sys.query}", "kb_ids": ["handbook"], "retrieval_from": "dataset"}),
            "formalized_content",
        ),
        other => panic!("no fixture {other:?}"),
    };
    text.into_bytes()
}

/// The store of [`Store::Runs`], made once: its files and its runs' ids.
struct Template {
    dir: tempfile::TempDir,
    done: String,
    waiting: String,
}

fn template() -> &'static Template {
    static T: OnceLock<Template> = OnceLock::new();
    T.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("canvas.db");
        let hello = canvases().join("hello.json");
        let out = crate::util::cli(&["run", hello.to_str().unwrap(), "-q", "hi"], &store);
        crate::util::expect_code(&out, 0, "the finished run");
        let trip = canvases().join("trip.yaml");
        let mock = canvases().join("trip.mock.yaml");
        let out = crate::util::cli(
            &[
                "run",
                trip.to_str().unwrap(),
                "-i",
                "destination=Oslo",
                "--mock-llm",
                mock.to_str().unwrap(),
            ],
            &store,
        );
        crate::util::expect_code(&out, 3, "the waiting run");
        let runs = crate::util::runs(&store);
        let id = |status: &str| {
            runs.iter()
                .find(|r| r["status"] == status)
                .and_then(|r| r["id"].as_str())
                .unwrap_or_else(|| panic!("no {status} run in {runs:?}"))
                .to_string()
        };
        Template {
            done: id("succeeded"),
            waiting: id("waiting"),
            dir,
        }
    })
}

/// The store's files (`canvas.db`, and its `-wal` when there is one).
fn store_files(store: &Path) -> Vec<PathBuf> {
    ["", "-wal"]
        .iter()
        .map(|s| PathBuf::from(format!("{}{s}", store.display())))
        .filter(|p| p.exists())
        .collect()
}

/// Put the case's store at `store`.
fn make_store(kind: Store, store: &Path) {
    match kind {
        Store::None => {}
        Store::Runs => {
            for f in store_files(&template().dir.path().join("canvas.db")) {
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                std::fs::copy(&f, store.with_file_name(name)).unwrap();
            }
        }
        Store::Garbage => {
            let bytes: Vec<u8> = (0u32..8192)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
                .collect();
            std::fs::write(store, bytes).unwrap();
        }
        Store::Truncated | Store::Newer => {
            make_store(Store::Runs, store);
            let c = rusqlite::Connection::open(store).unwrap();
            if kind == Store::Newer {
                let v: i64 = c
                    .query_row("PRAGMA user_version", [], |r| r.get(0))
                    .unwrap();
                c.execute_batch(&format!("PRAGMA user_version = {}", v + 1))
                    .unwrap();
            }
            // Folded into the file, which is then all there is.
            c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .unwrap();
            drop(c);
            for s in ["-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{s}", store.display()));
            }
            if kind == Store::Truncated {
                let whole = std::fs::read(store).unwrap();
                std::fs::write(store, &whole[..whole.len() / 2]).unwrap();
            }
        }
        Store::Foreign => {
            let c = rusqlite::Connection::open(store).unwrap();
            c.execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('x');")
                .unwrap();
        }
    }
}

/// How many runs a sound store holds, after checking it is sound.
fn sound_runs(store: &Path, what: &str) -> usize {
    let c = rusqlite::Connection::open(store).unwrap();
    let check: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{what}: integrity_check: {e}"));
    assert_eq!(check, "ok", "{what}: the store is damaged");
    let n: i64 = c
        .query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{what}: counting runs: {e}"));
    usize::try_from(n).unwrap()
}

/// A run whose canvas file changed since it started (for `{changed}`); its id.
fn run_then_change(cli: &CanvasCli) -> String {
    let store = cli.path("canvas.db");
    let flow = cli.path("flow.json");
    let out = crate::util::cli(&["run", flow.to_str().unwrap(), "-q", "hi"], &store);
    crate::util::expect_code(&out, 0, "the run whose canvas changes");
    std::fs::write(&flow, "{\"components\": {}}").unwrap();
    crate::util::runs(&store)[0]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Run one case; `Err` says what went wrong.
fn check(c: &Case) -> Result<(), String> {
    let server = match c.peer {
        Peer::Status(code, msg) => Some(FakeServer::start(vec![Reply::status(code, msg)])),
        Peer::Malformed => Some(FakeServer::start(vec![Reply::text(
            200,
            "application/json",
            "not json",
        )])),
        Peer::None | Peer::Closed => None,
    };
    let peer = match (&server, c.peer) {
        (Some(s), _) => s.base_url(),
        (None, Peer::Closed) => {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            format!("http://127.0.0.1:{port}/v1")
        }
        _ => "http://127.0.0.1:9/v1".to_string(),
    };
    let mut cli = crate::models::bare();
    for v in [
        "OPENAI_API_KEY",
        "RAGFLOW_BASE_URL",
        "RAGFLOW_API_KEY",
        "CANVAS_ALLOW_PRIVATE",
        "CANVAS_MCP_CONFIG",
        "CI",
    ] {
        cli = cli.env_remove(v);
    }
    for f in c.files {
        cli = cli.file(f, fixture(f, &peer));
    }
    std::fs::create_dir_all(cli.path("sub")).unwrap();
    let store = cli.path("canvas.db");
    make_store(c.store, &store);
    let changed = if c.args.contains(&"{changed}") {
        run_then_change(&cli)
    } else {
        String::new()
    };
    let damaged = matches!(
        c.store,
        Store::Garbage | Store::Truncated | Store::Foreign | Store::Newer
    );
    let bytes_before: Vec<(PathBuf, Vec<u8>)> = store_files(&store)
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    let runs_before = if store.exists() && !damaged {
        sound_runs(&store, c.what)
    } else {
        0
    };
    let canvases_dir = canvases().to_string_lossy().into_owned();
    let (done, waiting) = if c.store == Store::Runs {
        (template().done.clone(), template().waiting.clone())
    } else {
        (String::new(), String::new())
    };
    let args: Vec<String> = c
        .args
        .iter()
        .map(|a| {
            a.replace("{canvases}", &canvases_dir)
                .replace("{done}", &done)
                .replace("{waiting}", &waiting)
                .replace("{changed}", &changed)
        })
        .collect();
    cli = cli.envs(c.env.iter().copied()).args(&args);
    for v in c.unset {
        cli = cli.env_remove(v);
    }
    if let Some(input) = c.stdin {
        cli = cli.stdin(input);
    }
    let ran = cli.run();
    drop(server);
    let (code, _, err) = ran.parts();
    let fail = |why: String| {
        Err(format!(
            "{why}\n  canvas {}\n  stderr: {err:?}",
            args.join(" ")
        ))
    };
    if err.contains("panicked") || err.contains("RUST_BACKTRACE") || err.contains("stack backtrace")
    {
        return fail("it panicked".into());
    }
    if code != c.code {
        return fail(format!("exit {code}, documented {}", c.code));
    }
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    if errors.len() != 1 {
        return fail(format!("{} error lines", errors.len()));
    }
    if let Some(l) = err
        .lines()
        .find(|l| !l.starts_with("error: ") && !l.starts_with("hint: "))
    {
        return fail(format!(
            "a line that is neither the error nor a hint: {l:?}"
        ));
    }
    if !errors[0].contains(c.says) {
        return fail(format!("the error does not say {:?}", c.says));
    }
    if damaged {
        for (p, b) in &bytes_before {
            if std::fs::read(p).ok().as_ref() != Some(b) {
                return fail(format!("{} was changed", p.display()));
            }
        }
    } else if store.exists() {
        let now = sound_runs(&store, c.what);
        if now != runs_before + c.runs_added {
            return fail(format!(
                "the store holds {now} runs, {runs_before} before (+{} documented)",
                c.runs_added
            ));
        }
    }
    Ok(())
}

#[test]
fn every_bad_input_is_one_line_with_its_exit_code_and_the_store_intact() {
    assert!(CASES.len() >= 60, "{} cases", CASES.len());
    let failures: Vec<String> = CASES
        .iter()
        .filter_map(|c| check(c).err().map(|e| format!("{}: {e}", c.what)))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

/// `docs/errors.md` has a row for each case: its words and its exit code.
#[test]
fn docs_errors_md_lists_every_case() {
    let doc =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/errors.md"))
            .unwrap();
    let rows: Vec<&str> = doc.lines().filter(|l| l.starts_with('|')).collect();
    let missing: Vec<String> = CASES
        .iter()
        .filter(|c| {
            !rows
                .iter()
                .any(|r| r.contains(c.says) && r.trim_end().ends_with(&format!("| {} |", c.code)))
        })
        .map(|c| format!("{} (exit {}): {:?}", c.what, c.code, c.says))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/errors.md has no row with these words and exit codes:\n{}",
        missing.join("\n")
    );
}
