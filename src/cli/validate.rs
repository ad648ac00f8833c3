//! `canvas validate FILE...`: static checks for CI, no network and no model calls.
//! Text grouped per file, JSON, or GitHub workflow commands; exit 1 on errors (or on
//! warnings with `--strict`), 2 when an input cannot be read or parsed.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde::Serialize;

use super::runs::write_stdout;
use super::{CliError, exit};
use canvas_dsl::check::Located;
use canvas_dsl::{Finding, Format, Level};

/// Output formats of `canvas validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ValidateFormat {
    /// Findings grouped per file (colored on a terminal).
    Text,
    /// One JSON document: every file with its findings.
    Json,
    /// GitHub Actions workflow commands (`::error file=…,line=…::`).
    Github,
}

/// Options of `canvas validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Canvas files, or directories searched for *.json, *.yaml and *.yml.
    #[arg(required = true, value_name = "FILE")]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ValidateFormat::Text)]
    pub format: ValidateFormat,
    /// Fail on warnings too.
    #[arg(long)]
    pub strict: bool,
}

/// One checked file.
#[derive(Debug, Serialize)]
struct FileReport {
    file: String,
    findings: Vec<Located>,
}

/// Run `canvas validate`.
pub fn exec(args: ValidateArgs) -> Result<u8, CliError> {
    let files = expand(&args.paths)?;
    let mut reports = Vec::with_capacity(files.len());
    let mut skipped = Vec::new();
    for f in &files {
        match check_file(f) {
            Some(r) => reports.push(r),
            None => skipped.push(f.path.display().to_string()),
        }
    }
    let unreadable = reports.iter().any(|r| {
        r.findings
            .iter()
            .any(|l| matches!(l.finding.code, "C001" | "C002"))
    });
    let failing = |l: &Located| match l.finding.level {
        Level::Error => true,
        Level::Warning => args.strict,
        Level::Info => false,
    };
    let failed = reports.iter().any(|r| r.findings.iter().any(failing));
    let color =
        io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let written = match args.format {
        ValidateFormat::Text => write_stdout(|out| render_text(out, &reports, &skipped, color)),
        ValidateFormat::Json => write_stdout(|out| {
            serde_json::to_writer_pretty(&mut *out, &reports)?;
            writeln!(out)
        }),
        ValidateFormat::Github => write_stdout(|out| render_github(out, &reports)),
    };
    written?;
    Ok(if unreadable {
        exit::INVALID
    } else if failed {
        exit::FAILED
    } else {
        exit::OK
    })
}

/// An input file, and whether it was found by searching a directory (rather than named).
pub(super) struct Input {
    /// The file (`-` for stdin).
    pub path: PathBuf,
    /// Found under a named directory.
    pub found: bool,
}

/// Files named on the command line, and the canvas files under named directories
/// (sorted, hidden entries skipped). A missing path is a usage error.
pub(super) fn expand(paths: &[PathBuf]) -> Result<Vec<Input>, CliError> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" || p.is_file() {
            out.push(Input {
                path: p.clone(),
                found: false,
            });
        } else if p.is_dir() {
            let mut found = Vec::new();
            walk(p, &mut found);
            found.sort();
            out.extend(found.into_iter().map(|path| Input { path, found: true }));
        } else {
            return Err(
                CliError::invalid(format!("{}: no such file or directory", p.display()))
                    .hint("pass canvas files (JSON or YAML) or directories holding them"),
            );
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().and_then(|x| x.to_str()).is_some_and(|x| {
            ["json", "yaml", "yml"]
                .iter()
                .any(|e| x.eq_ignore_ascii_case(e))
        }) {
            out.push(p);
        }
    }
}

/// The format a file's name implies.
pub(super) fn format_of(path: &Path) -> Format {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml") => Format::Yaml,
        Some(e) if e.eq_ignore_ascii_case("json") => Format::Json,
        _ => Format::Sniff,
    }
}

/// Read a file (or stdin for `-`).
pub(super) fn read(path: &Path) -> io::Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        io::Read::read_to_string(&mut io::stdin(), &mut s)?;
        Ok(s)
    } else {
        std::fs::read_to_string(path)
    }
}

/// Check one file; `None` for a file found in a directory that parses but is plainly
/// not a canvas (no `components`, `graph` or `dsl`: a mock script, a config file).
fn check_file(input: &Input) -> Option<FileReport> {
    let path = &input.path;
    let file = path.display().to_string();
    let findings = match read(path) {
        Ok(text) => {
            if input.found && !looks_like_canvas(&text, format_of(path)) {
                return None;
            }
            // What `canvas run` would refuse, this reports first (the run's own load
            // and compile run here too).
            canvas_components::validate::check(&text, format_of(path))
        }
        Err(e) => vec![Located {
            finding: Finding::new("C001", Level::Error, format!("cannot read the file: {e}")),
            line: None,
            column: None,
        }],
    };
    Some(FileReport { file, findings })
}

/// Whether a text parses to something with a canvas's top-level keys (a text that does
/// not parse counts as one, so its syntax error is reported).
pub(super) fn looks_like_canvas(text: &str, format: Format) -> bool {
    match canvas_dsl::load::parse_value(text, format) {
        Ok(serde_json::Value::Object(o)) => ["components", "graph", "dsl"]
            .iter()
            .any(|k| o.contains_key(*k)),
        Ok(_) => false,
        Err(_) => true,
    }
}

fn paint(on: bool, code: &str, s: &str) -> String {
    if on {
        format!("\x1b[{code}m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

/// `file` then one line per finding (`line:col level[code] component: message`) and its
/// hint, then a summary.
fn render_text(
    out: &mut dyn Write,
    reports: &[FileReport],
    skipped: &[String],
    color: bool,
) -> io::Result<()> {
    let mut counts = [0usize; 3];
    for r in reports {
        if r.findings.is_empty() {
            writeln!(
                out,
                "{}: {}",
                paint(color, "1", &r.file),
                paint(color, "32", "ok")
            )?;
            continue;
        }
        writeln!(out, "{}", paint(color, "1", &r.file))?;
        for l in &r.findings {
            let f = &l.finding;
            counts[f.level as usize] += 1;
            let (c, name) = match f.level {
                Level::Error => ("31;1", "error"),
                Level::Warning => ("33;1", "warning"),
                Level::Info => ("36", "info"),
            };
            let at = match (l.line, l.column) {
                (Some(line), Some(col)) => format!("{line}:{col}"),
                (Some(line), None) => format!("{line}"),
                _ => "-".into(),
            };
            let who = f
                .component
                .as_ref()
                .map(|c| format!("{c}: "))
                .unwrap_or_default();
            writeln!(
                out,
                "  {at:>9}  {}  {who}{}",
                paint(color, c, &format!("{name}[{}]", f.code)),
                f.message
            )?;
            if let Some(h) = &f.hint {
                writeln!(out, "  {:>9}  {} {h}", "", paint(color, "2", "hint:"))?;
            }
        }
    }
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let skipped = match skipped {
        [] => String::new(),
        [one] => format!(" ({one} skipped: not a canvas)"),
        many => format!(" ({} skipped: not canvases)", plural(many.len(), "file")),
    };
    writeln!(
        out,
        "{} checked: {}, {}, {}{skipped}",
        plural(reports.len(), "file"),
        plural(counts[0], "error"),
        plural(counts[1], "warning"),
        plural(counts[2], "note")
    )
}

/// GitHub workflow commands: `::error file=F,line=L,col=C,title=C013::message`.
fn render_github(out: &mut dyn Write, reports: &[FileReport]) -> io::Result<()> {
    for r in reports {
        for l in &r.findings {
            let f = &l.finding;
            let cmd = match f.level {
                Level::Error => "error",
                Level::Warning => "warning",
                Level::Info => "notice",
            };
            let mut props = format!("file={}", gh_prop(&r.file));
            if let Some(line) = l.line {
                props.push_str(&format!(",line={line}"));
            }
            if let Some(col) = l.column {
                props.push_str(&format!(",col={col}"));
            }
            props.push_str(&format!(",title={}", gh_prop(f.code)));
            let who = f
                .component
                .as_ref()
                .map(|c| format!("{c}: "))
                .unwrap_or_default();
            let hint = f
                .hint
                .as_ref()
                .map(|h| format!("\n{h}"))
                .unwrap_or_default();
            writeln!(
                out,
                "::{cmd} {props}::{}",
                gh_data(&format!("{who}{}{hint}", f.message))
            )?;
        }
    }
    Ok(())
}

/// Escape a workflow-command message.
fn gh_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escape a workflow-command property.
fn gh_prop(s: &str) -> String {
    gh_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_commands_escape_their_data() {
        assert_eq!(gh_data("a%b\nc"), "a%25b%0Ac");
        assert_eq!(gh_prop("dir/a:b,c.json"), "dir/a%3Ab%2Cc.json");
    }

    #[test]
    fn github_output_has_file_line_and_title() {
        let reports = [FileReport {
            file: "f.json".into(),
            findings: vec![Located {
                finding: Finding::new("C010", Level::Error, "downstream \"X\" does not exist")
                    .component("A:B")
                    .hint("fix it"),
                line: Some(3),
                column: Some(7),
            }],
        }];
        let mut buf = Vec::new();
        render_github(&mut buf, &reports).unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "::error file=f.json,line=3,col=7,title=C010::A:B: downstream \"X\" does not exist%0Afix it\n"
        );
    }
}
