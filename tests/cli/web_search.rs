//! web_search tests.
