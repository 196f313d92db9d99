//! The reviewer tools: four ways to question a receipt instead of trusting it.
//!
//! They sit beside the analyzer and reuse it, so they can never count
//! differently from `analyze`:
//!
//! - [`sweep`] recounts the judged rows under scaled gates (with
//!   [`crate::verdict::missed`]): does the conclusion hang on one threshold?
//! - [`mutate`] edits a trace and checks that a calculator's receipt moves as
//!   predicted: a test of the calculator that must be able to fail.
//! - [`verify`] recomputes a receipt from its trace and lists every difference.
//! - [`gate`] turns a receipt into an admission decision for CI; its
//!   release criteria (recovery, p95 TPOT, several classes' limits) are in
//!   [`release_gate`].
//! - [`limits`] is the one evaluation of a block's tail and share limits,
//!   shared by `gate`, the frontier and the capacity search.
//! - [`diagnosis`] reads a class's counts into the dominant cause of its
//!   lost requests and where that points to look.
//!
//! Like every library part they return data and typed errors; the command
//! line prints them and picks the exit status.

pub mod check;
pub mod criteria;
pub mod diagnosis;
pub mod energy_gate;
pub mod exact;
pub mod gap_gate;
pub mod gate;
pub mod limits;
pub mod mutate;
pub mod release_gate;
pub mod sensitivity;
pub mod verify;
