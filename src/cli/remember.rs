//! The options a run was started with, kept with it in the store, so that `resume`
//! continues it the same way (the same model source, tool settings and limits) unless
//! its own command line says otherwise. `--timeout` is not kept: it bounds one command
//! (a run stopped by it is resumed to finish, not to time out again). Without this, a script that "resumes to be
//! safe" would send a mock-scripted run to the real provider.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::models::ModelArgs;
use super::session::TurnArgs;
use super::tools::ToolArgs;

/// What a run remembers of the command that started it. Paths are absolute, so a
/// resume from another directory finds the same files.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunOptions {
    /// `--mock-llm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mock_llm: Option<PathBuf>,
    /// `--llm-config` or `$CANVAS_LLM_CONFIG`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_config: Option<PathBuf>,
    /// `--model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `--replay`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<PathBuf>,
    /// `--mcp-config`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_config: Option<PathBuf>,
    /// `--output-dir`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_dir: Option<PathBuf>,
    /// `--allow-private-network` or `$CANVAS_ALLOW_PRIVATE`.
    #[serde(skip_serializing_if = "is_false")]
    pub allow_private_network: bool,
    /// `--allow-sql-writes`.
    #[serde(skip_serializing_if = "is_false")]
    pub allow_sql_writes: bool,
    /// `--max-parallel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_parallel: Option<u16>,
    /// `--seed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// `--max-steps`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The ids (clap's, the field names) of the options that choose where model calls go:
/// one of them given to `resume` replaces the whole remembered choice.
const MODEL_SOURCE: &[&str] = &["mock_llm", "llm_config", "model", "replay", "record"];

/// An absolute form of `p` (as given when it cannot be made absolute).
fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

impl RunOptions {
    /// The options of a command starting a run.
    pub fn of(args: &TurnArgs) -> RunOptions {
        RunOptions::of_parts(
            &args.models,
            &args.tools,
            args.max_parallel,
            args.seed,
            args.max_steps,
        )
    }

    /// The options of a command starting runs, from its flag groups and limits.
    pub fn of_parts(
        m: &ModelArgs,
        t: &ToolArgs,
        max_parallel: u16,
        seed: Option<u64>,
        max_steps: u64,
    ) -> RunOptions {
        RunOptions {
            mock_llm: m.mock_llm.as_deref().map(absolute),
            llm_config: m.llm_config().map(absolute),
            model: m.model.clone(),
            replay: m.replay.as_deref().map(absolute),
            mcp_config: t.mcp_config.as_deref().map(absolute),
            output_dir: t.output_dir.as_deref().map(absolute),
            allow_private_network: t.allow_private_network,
            allow_sql_writes: t.allow_sql_writes,
            max_parallel: Some(max_parallel),
            seed,
            max_steps: Some(max_steps),
        }
    }

    /// As the store keeps them.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Read back what the store kept (`None` for a run stored before options were kept,
    /// or with options this build does not know: then nothing is applied).
    pub fn from_value(v: &Value) -> Option<RunOptions> {
        serde_json::from_value(v.clone()).ok()
    }

    /// Put the remembered options into `args`, except those the command line (or the
    /// environment) gave explicitly: `explicit` holds their ids.
    pub fn apply(&self, args: &mut TurnArgs, explicit: &HashSet<String>) {
        self.apply_parts(
            &mut args.models,
            &mut args.tools,
            &mut args.max_parallel,
            &mut args.seed,
            &mut args.max_steps,
            explicit,
        );
    }

    /// [`RunOptions::apply`] to a command's flag groups and limits.
    pub fn apply_parts(
        &self,
        m: &mut ModelArgs,
        t: &mut ToolArgs,
        max_parallel: &mut u16,
        seed: &mut Option<u64>,
        max_steps: &mut u64,
        explicit: &HashSet<String>,
    ) {
        let given = |id: &str| explicit.contains(id);
        if !MODEL_SOURCE.iter().any(|id| given(id)) {
            m.mock_llm.clone_from(&self.mock_llm);
            m.llm_config.clone_from(&self.llm_config);
            m.model.clone_from(&self.model);
            m.replay.clone_from(&self.replay);
        }
        if !given("mcp_config") {
            t.mcp_config.clone_from(&self.mcp_config);
        }
        if !given("output_dir") {
            t.output_dir.clone_from(&self.output_dir);
        }
        if !given("allow_private_network") {
            t.allow_private_network = self.allow_private_network;
        }
        if !given("allow_sql_writes") {
            t.allow_sql_writes = self.allow_sql_writes;
        }
        if let (false, Some(n)) = (given("max_parallel"), self.max_parallel) {
            *max_parallel = n;
        }
        if !given("seed") {
            *seed = self.seed;
        }
        if let (false, Some(n)) = (given("max_steps"), self.max_steps) {
            *max_steps = n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn turn(line: &[&str]) -> TurnArgs {
        let mut argv = vec!["canvas", "run", "f.json"];
        argv.extend_from_slice(line);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Run(a) => a.turn,
            _ => unreachable!("parsed a run"),
        }
    }

    fn explicit(ids: &[&str]) -> HashSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_resume_without_flags_gets_every_remembered_option() {
        let started = turn(&[
            "--mock-llm",
            "m.yaml",
            "--max-parallel",
            "3",
            "--seed",
            "7",
            "--allow-sql-writes",
        ]);
        let kept = RunOptions::from_value(&RunOptions::of(&started).to_value()).unwrap();
        assert!(kept.mock_llm.as_ref().unwrap().is_absolute());
        assert!(kept.mock_llm.as_ref().unwrap().ends_with("m.yaml"));
        let mut resumed = turn(&[]);
        kept.apply(&mut resumed, &explicit(&[]));
        assert_eq!(resumed.models.mock_llm, kept.mock_llm);
        assert_eq!(resumed.max_parallel, 3);
        assert_eq!(resumed.seed, Some(7));
        assert!(resumed.tools.allow_sql_writes);
    }

    #[test]
    fn an_explicit_model_source_replaces_the_remembered_one() {
        let kept = RunOptions::of(&turn(&["--mock-llm", "m.yaml", "--seed", "7"]));
        let mut resumed = turn(&["--llm-config", "llm.yaml", "--seed", "9"]);
        kept.apply(&mut resumed, &explicit(&["llm_config", "seed"]));
        assert_eq!(resumed.models.mock_llm, None);
        assert_eq!(resumed.models.llm_config(), Some(Path::new("llm.yaml")));
        assert_eq!(resumed.seed, Some(9));
    }
}
