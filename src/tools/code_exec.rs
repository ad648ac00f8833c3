//! CodeExec.
