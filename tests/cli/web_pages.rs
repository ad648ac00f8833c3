//! web_pages tests.
