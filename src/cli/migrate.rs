//! `canvas migrate FILE...`: rewrite legacy DSL into the current form (`dsl::normalize`)
//! and show the unified diff, write it (`--write`, `-o`), or fail CI when a file needs it
//! (`--check`).

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde::Serialize;
use serde_json::Value;
use similar::TextDiff;

use super::runs::write_stdout;
use super::validate::{expand, format_of, read};
use super::{CliError, exit};
use canvas_dsl::Format;
use canvas_dsl::load::parse_value;
use canvas_dsl::normalize::{Applied, normalize};

/// Output formats of `canvas migrate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MigrateFormat {
    /// A unified diff of each rewrite (colored on a terminal).
    Diff,
    /// Each file with the rules applied and where.
    Json,
}

/// Options of `canvas migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Canvas files, or directories searched for *.json, *.yaml and *.yml.
    #[arg(required = true, value_name = "FILE")]
    pub paths: Vec<PathBuf>,
    /// Rewrite each file in place (only files that need it are touched).
    #[arg(long, conflicts_with = "output")]
    pub write: bool,
    /// Write the migrated canvas to OUT (one input file only).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Exit 1 when any file needs migrating (for CI); nothing is written.
    #[arg(long, conflicts_with_all = ["write", "output"])]
    pub check: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = MigrateFormat::Diff)]
    pub format: MigrateFormat,
}

/// One migrated file.
#[derive(Debug, Serialize)]
struct FileMigration {
    file: String,
    changed: bool,
    applied: Vec<Applied>,
    #[serde(skip)]
    before: String,
    #[serde(skip)]
    after: String,
}

/// Run `canvas migrate`.
pub fn exec(args: MigrateArgs) -> Result<u8, CliError> {
    let files = expand(&args.paths)?;
    if args.output.is_some() && files.len() != 1 {
        return Err(
            CliError::invalid("-o/--output takes exactly one input file")
                .hint("use --write to migrate several files in place"),
        );
    }
    let mut done = Vec::with_capacity(files.len());
    for f in &files {
        done.push(migrate_file(&f.path)?);
    }
    if let Some(out) = &args.output {
        let m = &done[0];
        write_file(out, &m.after)?;
    }
    if args.write {
        for m in done.iter().filter(|m| m.changed) {
            write_file(Path::new(&m.file), &m.after)?;
        }
    }
    let color =
        io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    match args.format {
        MigrateFormat::Json => write_stdout(|out| {
            serde_json::to_writer_pretty(&mut *out, &done)?;
            writeln!(out)
        })?,
        MigrateFormat::Diff if args.check => write_stdout(|out| {
            for m in &done {
                if m.changed {
                    writeln!(
                        out,
                        "{}: needs migrating ({})",
                        m.file,
                        rules_of(&m.applied)
                    )?;
                }
            }
            Ok(())
        })?,
        MigrateFormat::Diff => write_stdout(|out| {
            for m in &done {
                render_diff(out, m, color)?;
            }
            Ok(())
        })?,
    };
    let changed = done.iter().filter(|m| m.changed).count();
    if args.check {
        if changed > 0 {
            eprintln!(
                "{changed} of {} file{} need{} migrating (hint: canvas migrate --write)",
                done.len(),
                if done.len() == 1 { "" } else { "s" },
                if changed == 1 { "s" } else { "" }
            );
            return Ok(exit::FAILED);
        }
    } else if args.write {
        eprintln!("migrated {changed} of {} file(s)", done.len());
    } else if changed == 0 && args.output.is_none() && args.format == MigrateFormat::Diff {
        eprintln!("nothing to migrate: already in the current form");
    }
    Ok(exit::OK)
}

/// The distinct rules applied, in order, comma-separated.
fn rules_of(applied: &[Applied]) -> String {
    let mut rules: Vec<&str> = Vec::new();
    for a in applied {
        if !rules.contains(&a.rule) {
            rules.push(a.rule);
        }
    }
    rules.join(", ")
}

fn migrate_file(path: &Path) -> Result<FileMigration, CliError> {
    let file = path.display().to_string();
    let text =
        read(path).map_err(|e| CliError::invalid(format!("{file}: cannot read the file: {e}")))?;
    let format = match format_of(path) {
        Format::Sniff
            if text
                .trim_start_matches('\u{feff}')
                .trim_start()
                .starts_with('{') =>
        {
            Format::Json
        }
        Format::Sniff => Format::Yaml,
        f => f,
    };
    let value =
        parse_value(&text, format).map_err(|e| CliError::invalid(format!("{file}: {e}")))?;
    let normalized = normalize(value.clone());
    let changed = !normalized.applied.is_empty();
    let style = Style::of(&text, format);
    let before = style.render(&value);
    let after = if changed {
        style.render(&normalized.value)
    } else {
        text.clone()
    };
    Ok(FileMigration {
        file,
        changed,
        applied: normalized.applied,
        before,
        after,
    })
}

/// How the file was written, so the rewrite looks like it: JSON indentation (or
/// compact), YAML, and the final newline.
struct Style {
    yaml: bool,
    indent: Option<String>,
    newline: bool,
}

impl Style {
    fn of(text: &str, format: Format) -> Style {
        let indent = text
            .lines()
            .skip(1)
            .find(|l| !l.trim().is_empty())
            .map(|l| l[..l.len() - l.trim_start().len()].to_string())
            .filter(|i| !i.is_empty());
        Style {
            yaml: format == Format::Yaml,
            indent,
            newline: text.ends_with('\n'),
        }
    }

    fn render(&self, v: &Value) -> String {
        let mut s = if self.yaml {
            yaml_serde::to_string(v).unwrap_or_default()
        } else if let Some(indent) = &self.indent {
            let mut buf = Vec::new();
            let fmt = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
            let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
            match v.serialize(&mut ser) {
                Ok(()) => String::from_utf8(buf).unwrap_or_default(),
                Err(_) => String::new(),
            }
        } else {
            serde_json::to_string(v).unwrap_or_default()
        };
        if self.newline && !s.ends_with('\n') {
            s.push('\n');
        } else if !self.newline && !self.yaml {
            while s.ends_with('\n') {
                s.pop();
            }
        }
        s
    }
}

/// Write a file atomically (a temporary file next to it, then a rename), so an
/// interrupted write never leaves half a canvas.
fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    let fail = |e: io::Error| {
        CliError::new(
            exit::FAILED,
            format!("{}: cannot write: {e}", path.display()),
        )
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.canvas-migrate.tmp"));
    let res = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res.map_err(fail)
}

fn render_diff(out: &mut dyn Write, m: &FileMigration, color: bool) -> io::Result<()> {
    if !m.changed {
        return Ok(());
    }
    let diff = TextDiff::from_lines(&m.before, &m.after);
    // git-style a/ b/ prefixes for relative paths.
    let (a, b) = if Path::new(&m.file).is_absolute() {
        (m.file.clone(), m.file.clone())
    } else {
        (format!("a/{}", m.file), format!("b/{}", m.file))
    };
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&a, &b)
        .to_string();
    for line in text.lines() {
        let code = match line.as_bytes().first() {
            _ if !color => None,
            Some(b'+') if line.starts_with("+++") => Some("1"),
            Some(b'-') if line.starts_with("---") => Some("1"),
            Some(b'+') => Some("32"),
            Some(b'-') => Some("31"),
            Some(b'@') => Some("36"),
            _ => None,
        };
        match code {
            Some(c) => writeln!(out, "\x1b[{c}m{line}\x1b[0m")?,
            None => writeln!(out, "{line}")?,
        }
    }
    Ok(())
}
