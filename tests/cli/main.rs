//! Integration tests: the real `canvas` binary, driven like a user drives it.

mod conformance;
mod errors;
mod fixtures;
mod resume;
mod run;
mod util;
