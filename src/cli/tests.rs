//! A table of valid and invalid command lines: what clap accepts, and what it refuses.

use clap::Parser;

use super::Cli;

/// Command lines clap must accept.
const VALID: &[&str] = &[
    "canvas run flow.json",
    "canvas run - -q hello",
    "canvas run flow.json -q hi -i a=1 -i b=2 --inputs in.yaml",
    "canvas run flow.json --format jsonl --store s.db --mock-llm m.yaml",
    "canvas run flow.json --format sse -v",
    "canvas run flow.json --quiet --non-interactive --max-parallel 2 --timeout 1.5 --seed 7",
    "canvas run flow.json --llm-config llm.yaml --model gpt@OpenAI --record rec.json",
    "canvas run flow.json --replay rec.json",
    "canvas run flow.json --allow-private-network --mcp-config mcp.yaml --allow-sql-writes --output-dir out",
    "canvas resume latest -i days=3",
    "canvas resume 01JABC --canvas-changed=ok -q more",
    "canvas chat flow.yaml --mock-llm m.yaml",
    "canvas runs --status waiting --limit 5 --format json --store s.db",
    "canvas runs --status WAITING",
    "canvas runs prune",
    "canvas runs prune --older-than 30d",
    "canvas runs prune --older-than 1d12h --status failed,cancelled --status WAITING --keep 5",
    "canvas runs prune --keep 0 --yes --format json --store s.db",
    "canvas runs prune -y --status succeeded",
    "canvas show latest --store s.db",
    "canvas show latest --format json",
    "canvas events latest --format jsonl --turn 2",
    "canvas cancel 01JABC --store s.db",
    "canvas validate a.json b.yaml --strict --format github",
    "canvas migrate old.json --check",
    "canvas graph flow.yaml --format dot",
    "canvas components --format json",
    "canvas completions bash",
    "canvas man",
];

/// Command lines clap must refuse (a usage error, exit 2).
const INVALID: &[&str] = &[
    "canvas",
    "canvas run",
    "canvas run flow.json --format xml",
    "canvas run flow.json -v --quiet",
    "canvas run flow.json --mock-llm m.yaml --replay r.json",
    "canvas run flow.json --record r.json --replay r.json",
    "canvas run flow.json --max-parallel 0",
    "canvas run flow.json --timeout soon",
    "canvas run flow.json --no-such-flag",
    "canvas resume",
    "canvas resume latest --canvas-changed=yes",
    "canvas runs --status sleeping",
    "canvas runs --limit -1",
    "canvas runs --status failed prune --keep 1",
    "canvas runs prune --older-than 30",
    "canvas runs prune --older-than soon",
    "canvas runs prune --status done",
    "canvas runs prune --keep -1",
    "canvas runs prune --limit 5",
    "canvas runs purge",
    "canvas runs help",
    "canvas events latest --turn 0",
    "canvas show",
    "canvas runs -v",
    "canvas completions tcsh",
    "canvas help",
];

fn parse(line: &str) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(line.split_whitespace())
}

#[test]
fn valid_command_lines_parse() {
    for line in VALID {
        if let Err(e) = parse(line) {
            panic!("{line}: {e}");
        }
    }
}

#[test]
fn invalid_command_lines_are_usage_errors() {
    for line in INVALID {
        match parse(line) {
            Ok(cli) => panic!("{line}: accepted as {cli:?}"),
            Err(e) => assert!(e.use_stderr(), "{line}: {e}"),
        }
    }
}

#[test]
fn usage_errors_are_one_error_line_and_a_hint() {
    use clap::error::ErrorKind;
    for line in INVALID {
        let Err(e) = parse(line) else { continue };
        if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            continue;
        }
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        let path = super::command_path(&args);
        let err = super::usage_error(&e.render().to_string(), &path);
        assert!(
            !err.message.is_empty() && !err.message.contains('\n'),
            "{line}: {:?}",
            err.message
        );
        let hint = err.hint.unwrap_or_default();
        assert!(
            !hint.contains('\n') && hint.ends_with(&format!("`{path} --help` shows every option")),
            "{line}: {hint:?}"
        );
        assert_eq!(err.code, super::exit::INVALID);
    }
    let args: Vec<String> = ["canvas", "runs", "prune", "--limit", "5"]
        .map(String::from)
        .to_vec();
    assert_eq!(super::command_path(&args), "canvas runs prune");
}

#[test]
fn flag_groups_resolve_to_plain_values() {
    let Ok(cli) = parse("canvas run f.json -q hi --store s.db --llm-config c.yaml -v") else {
        panic!("parse");
    };
    assert!(cli.verbose());
    let super::Command::Run(args) = cli.command else {
        panic!("not run");
    };
    assert_eq!(args.turn.store.path(), std::path::PathBuf::from("s.db"));
    assert_eq!(
        args.turn.models.llm_config(),
        Some(std::path::Path::new("c.yaml"))
    );
    let req = args
        .turn
        .request(canvas_store::TurnKind::Start, canvas_pyrt::Object::new());
    assert_eq!(req.query, "hi");
}

#[test]
fn runs_prune_is_a_subcommand_and_plain_runs_lists() {
    use super::runs::{RunsArgs, RunsCommand};
    let runs = |line: &str| match parse(line).map(|c| c.command) {
        Ok(super::Command::Runs(a)) => a,
        other => panic!("{line}: {other:?}"),
    };
    let RunsArgs { command, limit, .. } = runs("canvas runs --limit 5");
    assert!(command.is_none());
    assert_eq!(limit, 5);
    let Some(RunsCommand::Prune(p)) = runs(
        "canvas runs prune --older-than 2w --status failed,cancelled --status waiting --keep 3",
    )
    .command
    else {
        panic!("no prune");
    };
    assert_eq!(
        p.older_than,
        Some(std::time::Duration::from_secs(14 * 86_400))
    );
    use canvas_store::RunStatus::{Cancelled, Failed, Waiting};
    assert_eq!(p.status, [Failed, Cancelled, Waiting]);
    assert_eq!((p.keep, p.yes), (Some(3), false));
}

#[test]
fn env_twins_read_as_before() {
    use super::opts::{lenient_path, truthy};
    for yes in ["1", "true", "YES", " on "] {
        assert_eq!(truthy(yes), Ok(true), "{yes}");
    }
    for no in ["", "0", "no", "maybe"] {
        assert_eq!(truthy(no), Ok(false), "{no}");
    }
    // An empty CANVAS_STORE means the default store, not a store at "".
    let empty = super::opts::StoreOpts {
        store: lenient_path("").ok(),
    };
    assert_eq!(empty.path(), canvas_store::default_path());
}

/// `run` and `resume` lines are parsed against their own subcommand first: a line it
/// takes must come out as the full definition reads it, with the same options given
/// explicitly; the lines clap refuses or answers with help must be left to the full one.
#[test]
fn one_subcommand_parses_as_the_whole_definition() {
    use clap::{CommandFactory, FromArgMatches};
    let help = [
        "canvas run --help",
        "canvas run -h",
        "canvas resume --help",
        "canvas run flow.json --version",
    ];
    let mut taken = 0;
    for line in VALID.iter().chain(INVALID).chain(&help) {
        let args: Vec<std::ffi::OsString> = line.split_whitespace().map(Into::into).collect();
        let full = Cli::command()
            .try_get_matches_from(&args)
            .and_then(|m| Cli::from_arg_matches(&m).map(|c| (c, m)));
        let Some((cli, m)) = super::parse_one(&args) else {
            let fast_path = matches!(args.get(1).and_then(|a| a.to_str()), Some("run" | "resume"));
            assert!(
                !fast_path || full.is_err(),
                "{line}: the full definition takes it, the subcommand alone should too"
            );
            continue;
        };
        taken += 1;
        let (full_cli, full_m) =
            full.unwrap_or_else(|e| panic!("{line}: taken alone, refused whole: {e}"));
        assert_eq!(format!("{cli:?}"), format!("{full_cli:?}"), "{line}");
        let (name, sub) = m.subcommand().expect("a subcommand");
        let (full_name, full_sub) = full_m.subcommand().expect("a subcommand");
        assert_eq!(name, full_name, "{line}");
        assert_eq!(
            super::explicit_ids(sub),
            super::explicit_ids(full_sub),
            "{line}"
        );
    }
    // Every valid `run` and `resume` line of the table.
    assert_eq!(taken, 11);
}
