//! The ground floor of `goodput`: small helpers every wing uses, importing
//! nothing of the project above them.
//!
//! - [`json`]: canonical JSON bytes (stable key order, numbers normalised),
//!   so the same value always serialises to the same bytes: receipts, traces,
//!   reports and comparisons are hashed and diffed byte for byte.
//! - [`number`] and [`figures`]: numbers, counts and shares for people, with
//!   as many digits as their meaning needs.
//! - [`io`]: reading within a byte limit (before anything is parsed) and
//!   writing atomically.
//! - [`pointer`]: JSON-pointer escaping, for error messages that name where.
//! - [`escape`]: one escaping function per output kind (terminal, Markdown,
//!   CSV, HTML/SVG), so a trace's strings are shown, never run.

pub mod escape;
pub mod figures;
pub mod io;
pub mod json;
pub mod number;
pub mod pointer;
