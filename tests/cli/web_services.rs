//! web_services tests.
