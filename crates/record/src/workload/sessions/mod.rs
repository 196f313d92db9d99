//! Multi-turn sessions: conversations whose next turn waits for the last
//! answer.
//!
//! Sources:
//! - `--dataset sharegpt FILE`: a JSON array of `{"conversations": [{"from",
//!   "value"}…]}`; every `human`/`user` message is a turn, in order. The
//!   dataset's own replies are dropped: each turn is sent with the model's
//!   *actual* replies so far.
//! - `--dataset multi-turn FILE`: AIPerf's multi-turn JSONL, one session per
//!   line: `{"session_id": "…", "turns": [{"text": "…", "delay": ms}…]}`
//!   (`texts`, a list of strings, is joined with a blank line; lines sharing a
//!   `session_id` are one session, in file order). A turn's `delay` is its
//!   think time; the first turn's is ignored (sessions start on the arrival
//!   schedule).
//!
//! Timing: session `s` starts at the `s`-th instant of the open-loop
//! schedule (`--request-rate`, `--arrival`) and uses conversation
//! `s mod conversations`. Turn 1 is eligible at that instant; turn `k + 1` is
//! eligible when turn `k` completed plus its think time (`delay`, else
//! `--think-time`). Each turn is one row whose `arrivalMs` is the instant it
//! became eligible, and latency counts from there, so a turn sent late by a
//! busy client is charged for the wait (see docs/recorder.md).
//!
//! Endings: a failed turn ends its session; each later turn is a failed row
//! with reason `session_aborted`, arriving (and ending) when the failure was
//! seen. A turn not yet eligible when observation stopped is an in-flight row
//! labelled `notEligible`, arriving at its eligibility instant when that is
//! known (the previous turn completed) and at the stop instant otherwise: it
//! never arrived inside the window, so it is excluded, not judged.
//!
//! This folder holds what is known before the first send: the datasets
//! ([`dataset`]) and the sessions' layout over the schedule and the trace
//! ([`set`]). Playing them (each turn sent with the replies so far, the
//! waits and the endings above) is the run loop's, in `run::sessions`.

pub mod dataset;
pub mod set;

pub use self::dataset::{load_multi_turn, load_sharegpt, Conversation, Dataset, Turn};
pub use self::set::SessionSet;
