//! retrieval tests.
