//! The results file: one line per row (`.jsonl`) or one CSV record per row (`.csv`),
//! in dataset order, written whole from the store (so a resumed batch's file has every
//! row) to a temporary file renamed into place.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use canvas_store::BatchRow;
use serde::Deserialize;

use super::RowResult;

/// The CSV columns.
const COLUMNS: &[&str] = &[
    "row",
    "id",
    "run_id",
    "status",
    "passed",
    "answer",
    "seconds",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "error",
    "checks",
    "outputs",
];

/// Write the results of `rows` to `path` (`.csv` for CSV, anything else JSON lines).
/// Rows not done yet have no line.
pub fn write(path: &Path, rows: &[BatchRow]) -> std::io::Result<()> {
    let mut file = ResultsFile::create(path)?;
    for row in rows {
        if let Some(r) = result_of(row) {
            file.add(&r)?;
        }
    }
    file.finish()
}

/// A row's result, when it is done (and its stored result is readable).
pub fn result_of(row: &BatchRow) -> Option<RowResult> {
    row.result
        .as_ref()
        .and_then(|r| RowResult::deserialize(r).ok())
}

/// A results file written a row at a time, to a temporary file renamed into place by
/// [`ResultsFile::finish`] (dropped unfinished, the temporary goes).
pub struct ResultsFile {
    tmp: PathBuf,
    path: PathBuf,
    out: Option<Out>,
}

enum Out {
    Jsonl(BufWriter<File>),
    Csv(Box<csv::Writer<BufWriter<File>>>),
}

impl ResultsFile {
    /// Start the results file `path` (`.csv` for CSV, anything else JSON lines).
    pub fn create(path: &Path) -> std::io::Result<ResultsFile> {
        let csv = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "results".into());
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let file = BufWriter::new(File::create(&tmp)?);
        let mut me = ResultsFile {
            tmp,
            path: path.to_path_buf(),
            out: None,
        };
        me.out = Some(if csv {
            let mut w = csv::Writer::from_writer(file);
            w.write_record(COLUMNS)?;
            Out::Csv(Box::new(w))
        } else {
            Out::Jsonl(file)
        });
        Ok(me)
    }

    /// Add a row's line.
    pub fn add(&mut self, r: &RowResult) -> std::io::Result<()> {
        match &mut self.out {
            Some(Out::Jsonl(out)) => {
                serde_json::to_writer(&mut *out, r)?;
                out.write_all(b"\n")
            }
            Some(Out::Csv(w)) => write_csv_record(w, r),
            None => Ok(()),
        }
    }

    /// Make the file durable and put it in place.
    pub fn finish(mut self) -> std::io::Result<()> {
        let file = match self.out.take() {
            Some(Out::Jsonl(out)) => out,
            Some(Out::Csv(w)) => w.into_inner().map_err(|e| e.into_error())?,
            None => return Ok(()),
        };
        file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&self.tmp, &self.path)
    }
}

impl Drop for ResultsFile {
    fn drop(&mut self) {
        // Unfinished (or failed while finishing): the temporary is not left behind.
        let _ = std::fs::remove_file(&self.tmp);
    }
}

fn write_csv_record(w: &mut csv::Writer<BufWriter<File>>, r: &RowResult) -> std::io::Result<()> {
    let passed = r.passed.map(|p| p.to_string()).unwrap_or_default();
    w.write_record([
        r.row.to_string(),
        r.id.clone(),
        r.run_id.clone().unwrap_or_default(),
        r.status.as_str().to_string(),
        passed,
        r.answer.clone(),
        r.seconds.to_string(),
        r.usage.prompt_tokens.to_string(),
        r.usage.completion_tokens.to_string(),
        r.usage.total_tokens.to_string(),
        r.error.clone().unwrap_or_default(),
        json_text(&r.checks),
        json_text(&r.outputs),
    ])?;
    Ok(())
}

/// JSON text of a column value.
fn json_text<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_store::RowStatus;
    use serde_json::json;

    fn rows() -> Vec<BatchRow> {
        let result = json!({
            "row": 1, "id": "a", "run_id": "R1", "status": "succeeded",
            "answer": "hi, \"you\"\nthere", "outputs": {"content": "hi"},
            "checks": [{"check": "contains", "on": "answer", "expected": "hi", "passed": true}],
            "passed": true,
            "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3, "calls": 1},
            "seconds": 0.5, "error": null,
        });
        vec![
            BatchRow {
                idx: 0,
                row_id: "a".into(),
                status: RowStatus::Succeeded,
                run_id: Some("R1".into()),
                passed: Some(true),
                result: Some(result),
                attempts: 1,
            },
            BatchRow {
                idx: 1,
                row_id: "b".into(),
                status: RowStatus::Pending,
                run_id: None,
                passed: None,
                result: None,
                attempts: 0,
            },
        ]
    }

    #[test]
    fn jsonl_has_a_line_per_done_row() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.jsonl");
        write(&p, &rows()).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["id"], "a");
        assert_eq!(lines[0]["usage"]["total_tokens"], 3);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }

    #[test]
    fn a_file_left_unfinished_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.jsonl");
        let mut f = ResultsFile::create(&p).unwrap();
        f.add(&result_of(&rows()[0]).unwrap()).unwrap();
        drop(f);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn csv_quotes_what_it_must() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.CSV");
        write(&p, &rows()).unwrap();
        let mut rd = csv::Reader::from_path(&p).unwrap();
        assert_eq!(rd.headers().unwrap().iter().collect::<Vec<_>>(), COLUMNS);
        let recs: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        assert_eq!(recs.len(), 1);
        assert_eq!(&recs[0][5], "hi, \"you\"\nthere");
        assert_eq!(&recs[0][4], "true");
        let checks: serde_json::Value = serde_json::from_str(&recs[0][11]).unwrap();
        assert_eq!(checks[0]["check"], "contains");
    }
}
