//! The summary of a batch, from its stored rows: counts, seconds (p50, p95), tokens,
//! failures grouped by error, and the rows whose checks failed.

use canvas_engine::usage::Usage;
use canvas_store::{BatchRow, RowCounts, RowStatus};
use serde::Serialize;

use super::RowResult;

/// A batch's summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Rows in the batch.
    pub rows: u64,
    /// Where they stand.
    pub counts: RowCounts,
    /// Median seconds of the done rows.
    pub p50_seconds: Option<f64>,
    /// 95th percentile seconds of the done rows.
    pub p95_seconds: Option<f64>,
    /// Tokens of every done row.
    pub usage: Usage,
    /// Failed rows grouped by error, the most frequent first: the error and the row ids.
    pub failures: Vec<(String, Vec<String>)>,
    /// Rows waiting at a form, by id.
    pub waiting: Vec<String>,
    /// Rows whose checks failed: the row id and the checks that failed.
    pub checks_failed: Vec<(String, Vec<String>)>,
}

impl Summary {
    /// The summary of a batch's `rows`.
    pub fn of(rows: &[BatchRow]) -> Summary {
        let mut b = SummaryBuilder::default();
        for row in rows {
            b.add(row, crate::results::result_of(row).as_ref());
        }
        b.finish()
    }

    /// Every row finished and every check held: the batch passes (exit 0).
    pub fn passed(&self) -> bool {
        self.counts.succeeded == self.rows && self.counts.checks_failed == 0
    }
}

/// A [`Summary`] built a row at a time (a large batch's rows need not all be in memory).
#[derive(Debug, Default)]
pub struct SummaryBuilder {
    s: Summary,
    seconds: Vec<f64>,
    failures: Vec<(String, Vec<String>)>,
}

impl SummaryBuilder {
    /// Count `row`, whose result (when it is done) is `result`.
    pub fn add(&mut self, row: &BatchRow, result: Option<&RowResult>) {
        let s = &mut self.s;
        s.rows += 1;
        s.counts.add(row.status, row.passed);
        let Some(result) = result else {
            return;
        };
        self.seconds.push(result.seconds);
        s.usage.prompt_tokens += result.usage.prompt_tokens;
        s.usage.completion_tokens += result.usage.completion_tokens;
        s.usage.total_tokens += result.usage.total_tokens;
        s.usage.calls += result.usage.calls;
        match row.status {
            RowStatus::Failed => {
                let error = result.error.clone().unwrap_or_else(|| "failed".into());
                match self.failures.iter_mut().find(|(e, _)| *e == error) {
                    Some((_, ids)) => ids.push(row.row_id.clone()),
                    None => self.failures.push((error, vec![row.row_id.clone()])),
                }
            }
            RowStatus::Waiting => s.waiting.push(row.row_id.clone()),
            _ => {}
        }
        if result.passed == Some(false) {
            let failed = result
                .checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| {
                    let expected = match &c.expected {
                        serde_json::Value::String(t) => format!("{t:?}"),
                        other => other.to_string(),
                    };
                    match &c.actual {
                        Some(a) => format!("{} {} {expected} (got {a})", c.on, c.check),
                        None => format!("{} {} {expected}", c.on, c.check),
                    }
                })
                .collect();
            s.checks_failed.push((row.row_id.clone(), failed));
        }
    }

    /// The summary of the rows added.
    pub fn finish(mut self) -> Summary {
        // Most frequent first; ties in order of first appearance.
        self.failures.sort_by_key(|f| std::cmp::Reverse(f.1.len()));
        self.s.failures = self.failures;
        self.seconds.sort_by(f64::total_cmp);
        self.s.p50_seconds = percentile(&self.seconds, 0.50);
        self.s.p95_seconds = percentile(&self.seconds, 0.95);
        self.s
    }
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted
        .get(rank.saturating_sub(1).min(sorted.len() - 1))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(
        i: u64,
        status: RowStatus,
        passed: Option<bool>,
        seconds: f64,
        error: Option<&str>,
    ) -> BatchRow {
        let checks = match passed {
            Some(false) => {
                json!([{"check": "contains", "on": "answer", "expected": "x", "passed": false}])
            }
            Some(true) => {
                json!([{"check": "contains", "on": "answer", "expected": "x", "passed": true}])
            }
            None => json!([]),
        };
        let result = json!({
            "row": i, "id": format!("r{i}"), "run_id": "R", "status": status.as_str(),
            "answer": "", "outputs": null, "checks": checks, "passed": passed,
            "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3, "calls": 1},
            "seconds": seconds, "error": error,
        });
        BatchRow {
            idx: i - 1,
            row_id: format!("r{i}"),
            status,
            run_id: Some("R".into()),
            passed,
            result: Some(result),
            attempts: 1,
        }
    }

    #[test]
    fn counts_percentiles_failures_and_checks() {
        let mut rows = vec![
            row(1, RowStatus::Succeeded, Some(true), 1.0, None),
            row(2, RowStatus::Succeeded, Some(false), 2.0, None),
            row(3, RowStatus::Failed, None, 3.0, Some("boom")),
            row(4, RowStatus::Failed, None, 4.0, Some("bang")),
            row(5, RowStatus::Failed, None, 5.0, Some("bang")),
            row(6, RowStatus::Waiting, None, 6.0, Some("waits")),
        ];
        rows.push(BatchRow {
            idx: 6,
            row_id: "r7".into(),
            status: RowStatus::Pending,
            run_id: None,
            passed: None,
            result: None,
            attempts: 0,
        });
        let s = Summary::of(&rows);
        assert_eq!(s.rows, 7);
        assert_eq!(
            (
                s.counts.succeeded,
                s.counts.failed,
                s.counts.waiting,
                s.counts.pending
            ),
            (2, 3, 1, 1)
        );
        assert_eq!(s.counts.checks_failed, 1);
        assert_eq!(s.p50_seconds, Some(3.0));
        assert_eq!(s.p95_seconds, Some(6.0));
        assert_eq!(s.usage.total_tokens, 18);
        assert_eq!(
            s.failures,
            vec![
                ("bang".to_string(), vec!["r4".to_string(), "r5".to_string()]),
                ("boom".to_string(), vec!["r3".to_string()])
            ]
        );
        assert_eq!(s.waiting, ["r6"]);
        assert_eq!(
            s.checks_failed,
            vec![("r2".to_string(), vec!["answer contains \"x\"".to_string()])]
        );
        assert!(!s.passed());
        let ok = Summary::of(&rows[..1]);
        assert!(ok.passed());
    }
}
