//! ExeSQL.
