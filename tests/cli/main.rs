//! Integration tests: the real `canvas` binary, driven like a user drives it.

mod canvases;
mod chat;
mod concurrency;
mod conformance;
mod crash;
mod errors;
mod fixtures;
mod graph;
mod inspect;
mod migrate;
mod models;
mod peer;
mod resume;
mod run;
mod stop;
mod terminal;
mod util;
mod validate;
