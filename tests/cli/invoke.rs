//! invoke tests.
