//! Integration tests: the real `canvas` binary, driven like a user drives it.

mod concurrency;
mod conformance;
mod crash;
mod errors;
mod fixtures;
mod inspect;
mod resume;
mod run;
mod terminal;
mod util;
