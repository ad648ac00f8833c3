//! ExeSQL's database drivers.
