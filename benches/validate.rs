//! `canvas validate` on RAGFlow's 50-node menu canvas (`go-testdata/all.json`): end to end
//! (process start, read, normalize, lint, print) against the 20 ms target, and the
//! library pipeline alone. Needs `../shared` (or `CANVAS_SHARED`).

use std::hint::black_box;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use canvas_components::Catalog;
use canvas_dsl::Format;
use canvas_dsl::check::check;

const RUNS: usize = 40;
/// The end-to-end target.
const TARGET_MS: f64 = 20.0;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let shared = std::env::var_os("CANVAS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let file = shared.join("fixtures/ragflow/go-testdata/all.json");
    let Ok(text) = std::fs::read_to_string(&file) else {
        println!("validate bench: skipped, {} is missing", file.display());
        return;
    };
    let nodes = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["components"].as_object().map(|c| c.len()))
        .unwrap_or(0);
    let bin = env!("CARGO_BIN_EXE_canvas");
    let once = || {
        let t = Instant::now();
        let status = Command::new(bin)
            .args(["validate", "--format", "json"])
            .arg(&file)
            .stdout(Stdio::null())
            .status()
            .expect("run canvas validate");
        // all.json has real defects: exit 1.
        assert_eq!(status.code(), Some(1));
        t.elapsed().as_secs_f64() * 1e3
    };
    for _ in 0..5 {
        once();
    }
    let e2e = median((0..RUNS).map(|_| once()).collect());
    let lib = median(
        (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                black_box(check(black_box(&text), Format::Json, &Catalog));
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    );
    println!(
        "validate all.json ({nodes} components): end to end {e2e:.2} ms (target {TARGET_MS} ms, {:.1}x under), \
         parse + normalize + lint + positions {lib:.3} ms",
        TARGET_MS / e2e
    );
}
