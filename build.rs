//! Links the `canvas` binary as a position-dependent executable.
//!
//! A PIE binary of this size carries ~80k relative relocations (1.9 MB of `.rela.dyn`) that
//! the dynamic loader applies on every start, copying every page of `.data.rel.ro` (1.4 MB):
//! about a millisecond and 2–3 MB of resident memory per process, a fifth of a short run.
//! Packed relocations (`-z pack-relative-relocs`) save the table but not the copying, and
//! measured 1.3 ms slower per run than this. The cost: the binary's own image loads at a
//! fixed address (its libraries, heap and stacks are still randomised).

fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
}
