//! Support code shared by the core's integration tests.

pub mod streams;
