//! What comes out of a recording: one row per request, the document around
//! the rows, the spool every ending is appended to as it comes, the trace
//! of a recorder that died, and the closing summary's figures.

pub mod frame;
pub mod recover;
pub mod row;
pub mod spool;
pub mod summary;
