//! Link arguments of the `canvas` binary.
//!
//! Position-dependent: a PIE binary of this size carries ~80k relative relocations (1.9 MB
//! of `.rela.dyn`) that the dynamic loader applies on every start, copying every page of
//! `.data.rel.ro` (1.4 MB): about a millisecond and 2–3 MB of resident memory per process,
//! a fifth of a short run. Packed relocations (`-z pack-relative-relocs`) save the table
//! but not the copying, and measured 1.3 ms slower per run than this. The cost: the
//! binary's own image loads at a fixed address (its libraries, heap and stacks are still
//! randomised).
//!
//! Hot code first: with lld, the functions listed in `link/symbol-order.txt` (the ones the
//! common paths run, written by `scripts/symbol_order.py`) are laid out together, so a
//! short run maps about 8 MiB less of the binary (docs/performance.md). Other linkers do
//! not take the option, so it is passed only where rustc links with lld by default:
//! x86_64 Linux from Rust 1.90 on, unless the build opts out of it. Names the binary no
//! longer has are ignored, so a stale list costs the gain, never the build.
//! `CANVAS_SYMBOL_ORDER=0` turns it off.

use std::env;
use std::path::Path;
use std::process::Command;

const ORDER: &str = "link/symbol-order.txt";

fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
    println!("cargo:rerun-if-changed={ORDER}");
    println!("cargo:rerun-if-env-changed=CANVAS_SYMBOL_ORDER");
    let order = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join(ORDER);
    if order.is_file() && links_with_lld() && env::var("CANVAS_SYMBOL_ORDER").as_deref() != Ok("0")
    {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// True when rustc links this build with its own lld: the x86_64 Linux target from Rust
/// 1.90, without flags that choose another linker or linker flavor.
fn links_with_lld() -> bool {
    if env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu") {
        return false;
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if [
        "linker-features",
        "link-self-contained",
        "linker-flavor",
        "fuse-ld",
    ]
    .iter()
    .any(|f| flags.contains(f))
    {
        return false;
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let text = String::from_utf8_lossy(&out.stdout);
    let mut version = text.split_whitespace().nth(1).unwrap_or("").split('.');
    version.next() == Some("1") && version.next().and_then(|m| m.parse::<u32>().ok()) >= Some(90)
}
