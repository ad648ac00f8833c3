//! Integration tests: the real `canvas` binary, driven like a user drives it.

mod agent_tools;
mod canvases;
mod chat;
mod code_exec;
mod concurrency;
mod conformance;
mod crash;
mod errors;
mod exe_sql;
mod fixtures;
mod graph;
mod inspect;
mod invoke;
mod mcp;
mod migrate;
mod models;
mod peer;
mod resume;
mod retrieval;
mod run;
mod stop;
mod terminal;
mod util;
mod validate;
