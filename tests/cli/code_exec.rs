//! code_exec tests.
