//! exe_sql tests.
