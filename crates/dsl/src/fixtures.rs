//! Test access to RAGFlow's exported canvases in `../shared/fixtures/ragflow`.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Every canvas of the fixtures' `go-testdata` and `test-dsl` folders, parsed, with its
/// path; empty (and said on stderr) when `../shared` is missing, which fails under
/// `CI=true`.
pub(crate) fn ragflow_canvases() -> Vec<(PathBuf, Value)> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/fixtures/ragflow"
    ));
    if !dir.is_dir() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "../shared is missing"
        );
        eprintln!("skipping: {} is missing", dir.display());
        return Vec::new();
    }
    let mut out = Vec::new();
    for sub in ["go-testdata", "test-dsl"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap().flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap();
            out.push((e.path(), serde_json::from_str(&text).unwrap()));
        }
    }
    out
}
