//! Admitting a canvas, phase by phase, in process: what `canvas run` does with the file
//! before its first node (parse, normalize, lint, typed load, compile), on the bench
//! canvases of `../shared/bench` (or `CANVAS_SHARED`). Each phase's median of warm
//! repetitions, in µs, and the whole pipeline once cold (the first pass of the process,
//! which also pays for the memory it touches first). Run with `cargo bench --bench admit`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use canvas_components::{Registry, RunCatalog};
use canvas_dsl::Format;
use canvas_dsl::load::{from_value, parse_value};
use canvas_dsl::normalize::normalize;
use canvas_engine::compile::Canvas;

const RUNS: usize = 30;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One pass of the pipeline; each phase's time in µs.
fn once(text: &str) -> [f64; 5] {
    let mut out = [0.0; 5];
    let mut t = Instant::now();
    let mut lap = |i: usize, t: &mut Instant| {
        out[i] = t.elapsed().as_secs_f64() * 1e6;
        *t = Instant::now();
    };
    let raw = parse_value(black_box(text), Format::Json).expect("the bench canvas parses");
    lap(0, &mut t);
    let normalized = normalize(raw);
    lap(1, &mut t);
    let findings = canvas_dsl::lint::lint(&normalized.value, &RunCatalog);
    black_box(&findings);
    lap(2, &mut t);
    let dsl = from_value(normalized.value).expect("the bench canvas loads");
    lap(3, &mut t);
    let canvas = Canvas::compile(dsl, &Registry).expect("the bench canvas compiles");
    lap(4, &mut t);
    // Dropped outside the phases: `canvas run` never frees them.
    drop(black_box(canvas));
    out
}

fn main() {
    let shared = std::env::var_os("CANVAS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let dir = shared.join("bench");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!("admit bench: skipped, {} is missing", dir.display());
        return;
    };
    let mut cases: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path().join("canvas.json")))
        .filter(|p| p.is_file())
        .collect();
    cases.sort();
    println!(
        "{:<22} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "canvas (µs)", "KB", "parse", "normalize", "lint", "load", "compile", "warm", "cold once"
    );
    for path in cases {
        let name = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&path).expect("read the bench canvas");
        let cold: f64 = once(&text).iter().sum();
        let passes: Vec<[f64; 5]> = (0..RUNS).map(|_| once(&text)).collect();
        let phase = |i: usize| median(passes.iter().map(|p| p[i]).collect());
        let warm = median(passes.iter().map(|p| p.iter().sum()).collect());
        println!(
            "{:<22} {:>8.0} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>10.0}",
            name,
            text.len() as f64 / 1e3,
            phase(0),
            phase(1),
            phase(2),
            phase(3),
            phase(4),
            warm,
            cold
        );
    }
}
