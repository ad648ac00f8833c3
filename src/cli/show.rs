//! `canvas show RUN_ID`: one stored run's summary (status, canvas, times, the form it
//! waits on, its error) and what to do next.

use std::fmt::Write as _;

use clap::{Args, ValueEnum};
use serde::Serialize;
use serde_json::Value;

use super::CliError;
use super::opts::StoreOpts;
use super::runs::{RunJson, human_bytes, local_time, runs_word, write_stdout};
use canvas_store::{RunRecord, RunStatus};

/// Output formats of `canvas show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    /// Readable lines.
    Text,
    /// One JSON object.
    Json,
}

/// Options of `canvas show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The run id (a unique prefix, or `latest`), or a batch id.
    pub run_id: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ShowFormat::Text)]
    pub format: ShowFormat,
    /// Where runs are stored.
    #[command(flatten)]
    pub store: StoreOpts,
}

/// `canvas show --format json`: the run as `canvas runs` prints it, plus its event count
/// and the size of the store on disk.
#[derive(Debug, Serialize)]
struct ShowJson<'a> {
    #[serde(flatten)]
    run: RunJson<'a>,
    events: usize,
    store_bytes: u64,
}

/// Run `canvas show`.
pub fn exec(args: ShowArgs) -> Result<u8, CliError> {
    let found = args.store.find_run(&args.run_id);
    // Not a run: maybe a batch.
    if let Err(e) = &found {
        if let Some(store) = args.store.open_existing().ok().flatten() {
            if let Ok(batch) = store.find_batch(&args.run_id) {
                return super::batches::show(&*store, &batch, args.format == ShowFormat::Json);
            }
        }
        tracing::debug!(error = %e.message, "not a run nor a batch");
    }
    let (store, rec) = found?;
    let events = store.events(&rec.id)?.len();
    let size = store.size()?;
    match args.format {
        ShowFormat::Json => {
            let doc = ShowJson {
                run: RunJson::from(&rec),
                events,
                store_bytes: size.bytes,
            };
            write_stdout(|out| {
                serde_json::to_writer_pretty(&mut *out, &doc)?;
                writeln!(out)
            })
        }
        ShowFormat::Text => {
            let store = format!(
                "{} ({}, {})",
                args.store.location()?,
                human_bytes(size.bytes),
                runs_word(size.runs)
            );
            let text = summary(&rec, events, &store);
            // The error and the tips may quote model text: no control character gets
            // to the terminal as it is.
            let text = canvas_ui::visible(&text);
            write_stdout(|out| out.write_all(text.as_bytes()))
        }
    }
}

/// The text summary of a run (`store` describes the store it is in), ending with its
/// `next:` line.
fn summary(rec: &RunRecord, events: usize, store: &str) -> String {
    let hash: String = rec.canvas_hash.chars().take(12).collect();
    let mut s = format!("run {}\n", rec.id);
    let mut field = |name: &str, value: &str| {
        let _ = writeln!(s, "  {:<9}{value}", format!("{name}:"));
    };
    field("status", rec.status.as_str());
    field("canvas", &rec.source);
    field("hash", &hash);
    field("created", &local_time(rec.created_at));
    field("updated", &local_time(rec.updated_at));
    field("turns", &rec.turns.to_string());
    field("events", &events.to_string());
    field("store", store);
    if let Some(e) = &rec.error {
        field("error", e);
    }
    let form = rec
        .waiting
        .as_ref()
        .filter(|_| rec.status == RunStatus::Waiting);
    let fields = form.map(form_fields).unwrap_or_default();
    if let Some(form) = form {
        s.push_str("  waiting for:\n");
        let width = fields
            .iter()
            .map(|f| f.key.chars().count())
            .max()
            .unwrap_or(0);
        let ty_width = fields
            .iter()
            .map(|f| f.ty.chars().count())
            .max()
            .unwrap_or(0);
        for f in &fields {
            let need = if f.optional { "optional" } else { "required" };
            let line = format!("    {:<width$}  {:<ty_width$}  {need}", f.key, f.ty);
            // An options field takes only its options: say which.
            match f.options.as_deref() {
                Some(options) => {
                    let _ = writeln!(s, "{line}  one of: {}", options.join(", "));
                }
                None => {
                    let _ = writeln!(s, "{line}");
                }
            }
        }
        let tips = form
            .get("tips")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim();
        if !tips.is_empty() {
            let _ = writeln!(s, "  tips:    {tips}");
        }
    }
    let _ = writeln!(s, "next: {}", next_step(rec, &fields));
    s
}

/// One field of a pending form.
#[derive(Debug, PartialEq)]
struct FormField {
    key: String,
    ty: String,
    optional: bool,
    /// The choices of an options field.
    options: Option<Vec<String>>,
}

/// The fields of a pending form (`{"inputs": {key: definition}, "tips": ...}`).
fn form_fields(form: &Value) -> Vec<FormField> {
    let Some(inputs) = form.get("inputs").and_then(Value::as_object) else {
        return Vec::new();
    };
    inputs
        .iter()
        .map(|(key, def)| FormField {
            key: key.clone(),
            ty: def
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("-")
                .to_string(),
            optional: def
                .get("optional")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            options: match canvas_ui::prompt::field_kind(def) {
                canvas_ui::prompt::FieldKind::Options(list) => {
                    Some(list.iter().map(canvas_ui::prompt::option_text).collect())
                }
                _ => None,
            },
        })
        .collect()
}

/// The command that continues the run.
fn next_step(rec: &RunRecord, fields: &[FormField]) -> String {
    let id = &rec.id;
    match rec.status {
        RunStatus::Waiting => {
            // `canvas resume` insists on the required fields; when every field is
            // optional, naming them all still says what the form asks for.
            let required: Vec<&FormField> = fields.iter().filter(|f| !f.optional).collect();
            let named = if required.is_empty() {
                fields.iter().collect()
            } else {
                required
            };
            let mut cmd = format!("canvas resume {id}");
            for f in named {
                let _ = write!(cmd, " -i {}=…", f.key);
            }
            cmd
        }
        RunStatus::Running | RunStatus::Interrupted | RunStatus::Cancelled => {
            format!("canvas resume {id}")
        }
        RunStatus::Succeeded | RunStatus::Failed => {
            format!("canvas resume {id} -q \"…\" (the next turn)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn waiting() -> RunRecord {
        let mut r = RunRecord::new("/f.json", "{}");
        r.status = RunStatus::Waiting;
        r.waiting = Some(json!({
            "inputs": {
                "name": {"name": "Name", "type": "line", "optional": false},
                "note": {"name": "Note", "type": "paragraph", "optional": true},
                "room": {"name": "Room", "type": "options", "options": ["Single", "Suite"], "optional": true}
            },
            "tips": "Name?"
        }));
        r
    }

    #[test]
    fn waiting_run_lists_the_form_and_required_fields() {
        let r = waiting();
        let s = summary(&r, 7, "/s.db (4.1 kB, 1 run)");
        assert!(s.starts_with(&format!("run {}\n", r.id)), "{s}");
        assert!(s.contains("  status:  waiting\n"), "{s}");
        assert!(s.contains("  events:  7\n"), "{s}");
        assert!(s.contains("  store:   /s.db (4.1 kB, 1 run)\n"), "{s}");
        assert!(
            s.contains(&format!("  hash:    {}\n", &r.canvas_hash[..12])),
            "{s}"
        );
        assert!(s.contains("    name  line       required\n"), "{s}");
        assert!(s.contains("    note  paragraph  optional\n"), "{s}");
        assert!(
            s.contains("    room  options    optional  one of: Single, Suite\n"),
            "{s}"
        );
        assert!(s.contains("  tips:    Name?\n"), "{s}");
        assert!(
            s.ends_with(&format!("next: canvas resume {} -i name=…\n", r.id)),
            "{s}"
        );
    }

    #[test]
    fn next_step_by_status() {
        let mut r = waiting();
        r.waiting = Some(json!({"inputs": {"a": {"type": "line", "optional": true}}}));
        let f = form_fields(r.waiting.as_ref().unwrap());
        assert_eq!(next_step(&r, &f), format!("canvas resume {} -i a=…", r.id));
        r.status = RunStatus::Interrupted;
        assert_eq!(next_step(&r, &[]), format!("canvas resume {}", r.id));
        r.status = RunStatus::Failed;
        r.error = Some("boom".into());
        assert!(next_step(&r, &[]).contains("-q"));
        let s = summary(&r, 0, "-");
        assert!(s.contains("  error:   boom\n"), "{s}");
        assert!(!s.contains("waiting for"), "{s}");
    }
}
