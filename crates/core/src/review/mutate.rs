//! The mutation check (docs/contract.md §8): an anti-cheating test that must be able to fail.
//!
//! Each mutation edits the trace (as a JSON tree, re-serialized), predicts how
//! the receipt must move, asks the calculator for the receipt of the edited
//! trace, and reports `caught` when it moved as predicted and `NOT CAUGHT`
//! otherwise. A mutation whose precondition does not hold on this trace is
//! `not applicable`, with why.
//!
//! The calculator is a parameter ([`Calculator`]) so the check itself can be
//! tested: run against a deliberately broken calculator (failures left out of
//! the denominator, `strict` read as `inclusive`, duplicates ignored) it must
//! say `NOT CAUGHT`. Rows are chosen from the calculator's own per-row verdicts
//! (`rows` in its receipt): the check tests that the calculator's totals are
//! consistent with its verdicts and with the contract, not a second copy of them.
//!
//! Every receipt is compared with the receipt of the *re-serialized, unedited*
//! trace, so a trace that does not survive a JSON round trip unchanged (a row
//! with a repeated key, say) cannot make a mutation look wrong.

use goodput_util::number::{decimal, transition};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::analyze::{analyze_bytes, AnalyzeOptions};
use crate::receipt::{Block, Receipt, RowVerdict};
use crate::review::verify::diff_values;
use crate::trace::model::{MAX_ABS_TIMESTAMP_MS, MAX_SPAN_MS};
use crate::trace::{Equality, Limits, Rejection};

mod answer;
mod stall;

/// Anything that turns trace bytes into a receipt. The receipt must carry
/// per-row verdicts (`rows`): the mutations pick their rows from them.
pub trait Calculator {
    /// The receipt of `trace_bytes`, or why the document is rejected.
    fn receipt(&self, trace_bytes: &[u8]) -> Result<Receipt, Rejection>;
}

/// The real calculator: `analyze` with per-row verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Analyzer {
    /// Limits for every trace it judges (the mutated ones are a row and a few
    /// bytes larger than the original; see [`Analyzer::for_mutations_of`]).
    pub limits: Limits,
}

impl Analyzer {
    /// An analyzer whose limits admit the mutated copies of a trace that fits
    /// `limits`: one more row, and room for re-serialization.
    pub fn for_mutations_of(limits: Limits) -> Analyzer {
        Analyzer {
            limits: Limits {
                max_rows: limits.max_rows.saturating_add(1),
                max_bytes: limits.max_bytes.saturating_mul(2).saturating_add(65_536),
            },
        }
    }
}

impl Calculator for Analyzer {
    fn receipt(&self, trace_bytes: &[u8]) -> Result<Receipt, Rejection> {
        let options = AnalyzeOptions {
            limits: self.limits,
            rows: true,
            strict: false,
        };
        analyze_bytes(trace_bytes, options).map(|a| a.receipt)
    }
}

/// Why the check could not run at all (exit status 2).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MutateError {
    /// The trace itself is rejected.
    #[error("rejected: {0}")]
    Rejected(Rejection),
    /// The trace could not be read as a JSON tree to edit.
    #[error("the trace cannot be edited as JSON: {0}")]
    NotEditable(String),
    /// The calculator gave no per-row verdicts to pick rows from.
    #[error("the calculator's receipt has no per-row verdicts (rows), so no row can be picked")]
    NoRows,
}

/// How one mutation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    /// The receipt moved as predicted.
    Caught,
    /// It did not: the counting or reporting path is wrong.
    NotCaught,
    /// The precondition does not hold on this trace.
    NotApplicable,
}

impl Status {
    /// How the status is printed for people.
    pub fn label(self) -> &'static str {
        match self {
            Status::Caught => "caught",
            Status::NotCaught => "NOT CAUGHT",
            Status::NotApplicable => "not applicable",
        }
    }
}

/// One mutation, its prediction and what happened.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MutationOutcome {
    /// Short name, e.g. `drop_miss`.
    pub name: &'static str,
    /// What the mutation does.
    pub mutation: String,
    /// How the receipt must move.
    pub predicted: String,
    /// How it moved (null when not applicable).
    pub observed: Option<String>,
    /// Why the mutation does not apply (null when it does).
    pub why_not_applicable: Option<String>,
    /// The verdict on this mutation.
    pub status: Status,
}

/// The whole check.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MutationReport {
    /// sha256 of the trace as given.
    pub trace_sha256: String,
    /// Remarks that are not verdicts (e.g. a trace that changes on a JSON round trip).
    pub notes: Vec<String>,
    /// Every mutation of docs/contract.md §8, in its order.
    pub mutations: Vec<MutationOutcome>,
    /// Mutations that moved the receipt as predicted.
    pub caught: u64,
    /// Mutations that did not.
    pub not_caught: u64,
    /// Mutations whose precondition did not hold.
    pub not_applicable: u64,
}

impl MutationReport {
    /// Every applicable mutation moved the receipt as predicted.
    pub fn passed(&self) -> bool {
        self.not_caught == 0
    }
}

/// The trace as an editable tree, and the baseline receipt of its re-serialization.
struct Subject<'c> {
    doc: Value,
    base: Receipt,
    rows: Vec<RowVerdict>,
    calc: &'c dyn Calculator,
}

impl Subject<'_> {
    /// The equality rule the baseline receipt judged by.
    fn equality(&self) -> Equality {
        match self.base.contract.equality.as_str() {
            "strict" => Equality::Strict,
            _ => Equality::Inclusive,
        }
    }

    /// The receipt of `doc` (re-serialized), or why there is none (reported
    /// as the observation).
    fn judge(&self, doc: &Value) -> Result<Receipt, Unjudged> {
        let bytes = serde_json::to_vec(doc).map_err(Unjudged::Unserializable)?;
        self.calc.receipt(&bytes).map_err(Unjudged::Rejected)
    }

    /// A copy of the document without the rows whose index `drop` selects.
    fn without_rows(&self, drop: impl Fn(&RowVerdict) -> bool) -> Value {
        let mut doc = self.doc.clone();
        let dropped: std::collections::BTreeSet<u64> = self
            .rows
            .iter()
            .filter(|r| drop(r))
            .map(|r| r.index)
            .collect();
        if let Some(rows) = doc.get_mut("rows").and_then(Value::as_array_mut) {
            let mut i = 0u64;
            rows.retain(|_| {
                let keep = !dropped.contains(&i);
                i += 1;
                keep
            });
        }
        doc
    }

    fn row(&self, index: u64) -> Option<&Value> {
        self.doc.get("rows")?.get(usize::try_from(index).ok()?)
    }
}

/// Why a mutated trace has no receipt; its text is the mutation's observation.
#[derive(Debug, thiserror::Error)]
enum Unjudged {
    /// The edited tree could not be written back as JSON.
    #[error("cannot serialize: {0}")]
    Unserializable(serde_json::Error),
    /// The calculator rejected the edited trace.
    #[error("the mutated trace was rejected: {0}")]
    Rejected(Rejection),
}

/// Why a mutation's precondition does not hold on this trace; its text is
/// the report's `whyNotApplicable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
enum NotApplicable {
    /// No row passes, so dropping rows cannot raise the pass share.
    #[error("no row passes, so no pass share can rise")]
    NoPassShareToRaise,
    /// No row has the verdict the mutation drops.
    #[error("there is no {0} row to drop")]
    NothingToDrop(&'static str),
    /// No row passes.
    #[error("no row passes")]
    NoPass,
    /// No passing row has a TTFT gate to push it past.
    #[error("no passing row belongs to a class with a TTFT gate")]
    NoTtftGate,
    /// Every push past the gate would leave the horizon or the 24 h span.
    #[error(
        "no passing row can be pushed past its TTFT gate without completing after the \
         horizon or spanning more than 24 h"
    )]
    NoRoomPastGate,
    /// The trace is strict already.
    #[error("the trace already declares strict equality")]
    AlreadyStrict,
    /// No passing row with gaps has a stall gate to stretch it past.
    #[error("no passing row with gapsMs belongs to a class with a stall gate")]
    NoStallGate,
    /// Every stretch past the stall gate would complete after the horizon.
    #[error(
        "no passing row's largest gap can be stretched past its stall gate without completing \
         after the horizon"
    )]
    NoRoomPastStall,
    /// No passing row with a first answer has a TTFA gate to push it past.
    #[error("no passing row with firstAnswerMs belongs to a class with a TTFA gate")]
    NoTtfaGate,
    /// Every push past the TTFA gate would complete after the horizon.
    #[error(
        "no passing row's first answer can be moved past its TTFA gate without completing \
         after the horizon"
    )]
    NoRoomPastTtfa,
    /// No passing row sits on a gate.
    #[error("no passing row sits exactly on a gate, so strict and inclusive agree here")]
    NothingOnGate,
}

/// A mutation tried: whether the receipt moved as predicted, and how it
/// moved; or why the mutation does not apply.
type Trial = Result<(bool, String), NotApplicable>;

fn all(r: &Receipt) -> &Block {
    &r.results.all
}

/// "1 row", "2 rows".
fn rows(n: u64) -> String {
    if n == 1 {
        "1 row".to_owned()
    } else {
        format!("{n} rows")
    }
}

/// `a → b` of an optional figure, rounded for people (exact when rounding
/// would hide a change); `null` when absent.
fn moved(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => transition(a, b),
        (a, b) => {
            let one = |x: Option<f64>| x.map_or_else(|| "null".to_owned(), decimal);
            format!("{} → {}", one(a), one(b))
        }
    }
}

/// Runs every mutation of docs/contract.md §8 on `trace_bytes` with `calc`.
pub fn check(trace_bytes: &[u8], calc: &dyn Calculator) -> Result<MutationReport, MutateError> {
    let original = calc.receipt(trace_bytes).map_err(MutateError::Rejected)?;
    let doc: Value =
        serde_json::from_slice(trace_bytes).map_err(|e| MutateError::NotEditable(e.to_string()))?;
    let base_bytes =
        serde_json::to_vec(&doc).map_err(|e| MutateError::NotEditable(e.to_string()))?;
    let mut base = calc.receipt(&base_bytes).map_err(MutateError::Rejected)?;
    let mut notes = Vec::new();
    if base.results != original.results {
        notes.push(
            "the trace does not survive a JSON round trip unchanged (a row with a repeated \
             key?); mutations are compared with the round-tripped trace"
                .to_owned(),
        );
    }
    let rows = base.rows.take().ok_or(MutateError::NoRows)?;
    let subject = Subject {
        doc,
        base,
        rows,
        calc,
    };
    let mutations = vec![
        drop_verdict(&subject, "miss", true),
        drop_verdict(&subject, "failed", false),
        drop_verdict(&subject, "censored", false),
        drop_invalid(&subject),
        push_past_ttft(&subject),
        stall::push_past_stall(&subject),
        answer::push_past_ttfa(&subject),
        flip_equality(&subject),
        duplicate_id(&subject),
    ];
    let count = |s: Status| mutations.iter().filter(|m| m.status == s).count() as u64;
    Ok(MutationReport {
        trace_sha256: original.trace.sha256.clone(),
        notes,
        caught: count(Status::Caught),
        not_caught: count(Status::NotCaught),
        not_applicable: count(Status::NotApplicable),
        mutations,
    })
}

fn outcome(
    name: &'static str,
    mutation: impl Into<String>,
    predicted: impl Into<String>,
    result: Trial,
) -> MutationOutcome {
    let (status, observed, why) = match result {
        Ok((true, observed)) => (Status::Caught, Some(observed), None),
        Ok((false, observed)) => (Status::NotCaught, Some(observed), None),
        Err(why) => (Status::NotApplicable, None, Some(why.to_string())),
    };
    MutationOutcome {
        name,
        mutation: mutation.into(),
        predicted: predicted.into(),
        observed,
        why_not_applicable: why,
        status,
    }
}

/// A mutated trace the calculator rejected: observed, and not caught.
fn rejected(why: Unjudged) -> Trial {
    Ok((false, why.to_string()))
}

/// Drop every row with `verdict` (`miss`, `failed` or `censored`).
fn drop_verdict(s: &Subject, verdict: &'static str, goodput_too: bool) -> MutationOutcome {
    let name = match verdict {
        "miss" => "drop_miss",
        "failed" => "drop_failed",
        _ => "drop_censored",
    };
    let mutation = format!("drop every {verdict} row");
    let predicted = if goodput_too {
        "passShare rises; pass and goodput/s unchanged"
    } else {
        "passShare rises; pass unchanged"
    };
    let before = all(&s.base);
    let n = match verdict {
        "miss" => before.counts.miss,
        "failed" => before.counts.failed,
        _ => before.counts.censored,
    };
    let result = if before.counts.pass == 0 {
        Err(NotApplicable::NoPassShareToRaise)
    } else if n == 0 {
        Err(NotApplicable::NothingToDrop(verdict))
    } else {
        match s.judge(&s.without_rows(|r| r.verdict == verdict)) {
            Err(e) => rejected(e),
            Ok(after) => {
                let a = all(&after);
                let rises = match (before.rates.pass_share, a.rates.pass_share) {
                    (Some(x), Some(y)) => y > x,
                    _ => false,
                };
                let held = a.counts.pass == before.counts.pass
                    && (!goodput_too || a.rates.goodput_per_s == before.rates.goodput_per_s);
                Ok((
                    rises && held,
                    format!(
                        "dropped {}; passShare {}; pass {} → {}; goodput/s {}; \
                         cohort {} → {}",
                        rows(n),
                        moved(before.rates.pass_share, a.rates.pass_share),
                        before.counts.pass,
                        a.counts.pass,
                        transition(before.rates.goodput_per_s, a.rates.goodput_per_s),
                        before.counts.cohort,
                        a.counts.cohort
                    ),
                ))
            }
        }
    };
    outcome(name, mutation, predicted, result)
}

/// Drop every invalid row: only `invalid`, `arrivals` and `reasons.invalid` may move.
fn drop_invalid(s: &Subject) -> MutationOutcome {
    let predicted = "every count, rate and latency figure unchanged, in every block, but \
                     invalid (→ 0), arrivals (− invalid) and reasons.invalid (→ empty)";
    let n = all(&s.base).counts.invalid;
    let result = if n == 0 {
        Err(NotApplicable::NothingToDrop("invalid"))
    } else {
        match s.judge(&s.without_rows(|r| r.verdict == "invalid")) {
            Err(e) => rejected(e),
            Ok(after) => {
                let mut expected = s.base.results.clone();
                for block in std::iter::once(&mut expected.all).chain(expected.classes.values_mut())
                {
                    block.counts.arrivals -= block.counts.invalid;
                    block.counts.invalid = 0;
                    block.reasons.invalid.clear();
                }
                let (want, got) = (
                    serde_json::to_value(&expected).unwrap_or(Value::Null),
                    serde_json::to_value(&after.results).unwrap_or(Value::Null),
                );
                let walk = diff_values(&want, &got, false);
                let observed = if walk.differences.is_empty() {
                    format!(
                        "dropped {}; invalid {n} → 0, arrivals {} → {}; nothing else moved",
                        rows(n),
                        all(&s.base).counts.arrivals,
                        all(&after).counts.arrivals
                    )
                } else {
                    let list: Vec<String> = walk
                        .differences
                        .iter()
                        .take(8)
                        .map(|d| {
                            let v = |x: &Option<Value>| {
                                x.as_ref()
                                    .map_or_else(|| "(absent)".to_owned(), |v| v.to_string())
                            };
                            format!(
                                "/results{} expected {} got {}",
                                d.path,
                                v(&d.receipt),
                                v(&d.recomputed)
                            )
                        })
                        .collect();
                    format!("dropped {}; unexpected moves: {}", rows(n), list.join("; "))
                };
                Ok((walk.differences.is_empty(), observed))
            }
        }
    };
    outcome("drop_invalid", "drop every invalid row", predicted, result)
}

/// A passing row pushed just past its TTFT gate.
struct Push {
    /// The row's index in the trace.
    index: u64,
    /// Its id (or its pointer when it has none), for the observation.
    id: String,
    /// TTFT before and after the push, ms.
    old_ttft: f64,
    new_ttft: f64,
    /// The row as edited.
    edited: Value,
}

/// The first passing row of a class with a TTFT gate that can be pushed just
/// past that gate without leaving the horizon or the 24 h span; with its edit.
fn pushable(s: &Subject) -> Result<Push, NotApplicable> {
    let classes = &s.base.contract.classes;
    let horizon = s.base.contract.window.horizon_ms;
    let equality = s.equality();
    let mut passing = 0;
    let mut gated = 0;
    for rv in s.rows.iter().filter(|r| r.verdict == "pass") {
        passing += 1;
        let Some(gate) = rv
            .class
            .as_ref()
            .and_then(|c| classes.get(c))
            .and_then(|g| g.ttft_ms)
        else {
            continue;
        };
        gated += 1;
        let Some(row) = s.row(rv.index) else { continue };
        let num = |k: &str| row.get(k).and_then(Value::as_f64);
        let (Some(arrival), Some(first), Some(completed)) =
            (num("arrivalMs"), num("firstTokenMs"), num("completedMs"))
        else {
            continue;
        };
        // Just past the gate: 1 ms over, more if rounding at this magnitude
        // swallows 1 ms; TTFT is computed exactly as the analyzer does.
        let mut step = 1.0;
        let mut new_first = arrival + gate + step;
        while equality.meets(new_first - arrival, gate) && step < 1e6 {
            step *= 2.0;
            new_first = arrival + gate + step;
        }
        // A row with gaps keeps them valid: its completion moves with its
        // first token (the gaps between them are unchanged).
        let new_completed = if row.get("gapsMs").is_some() {
            completed + (new_first - first)
        } else {
            completed.max(new_first)
        };
        let fits = !equality.meets(new_first - arrival, gate)
            && new_completed <= horizon
            && new_completed - arrival <= MAX_SPAN_MS
            && new_first.abs() <= MAX_ABS_TIMESTAMP_MS
            && new_completed.abs() <= MAX_ABS_TIMESTAMP_MS;
        if !fits {
            continue;
        }
        let mut edited = row.clone();
        if let Some(obj) = edited.as_object_mut() {
            obj.insert("firstTokenMs".to_owned(), Value::from(new_first));
            if new_completed != completed {
                obj.insert("completedMs".to_owned(), Value::from(new_completed));
            }
        }
        let id = rv
            .id
            .clone()
            .unwrap_or_else(|| format!("/rows/{}", rv.index));
        return Ok(Push {
            index: rv.index,
            id,
            old_ttft: first - arrival,
            new_ttft: new_first - arrival,
            edited,
        });
    }
    Err(if passing == 0 {
        NotApplicable::NoPass
    } else if gated == 0 {
        NotApplicable::NoTtftGate
    } else {
        NotApplicable::NoRoomPastGate
    })
}

/// Push one passing row just past its TTFT gate: pass falls by exactly 1.
fn push_past_ttft(s: &Subject) -> MutationOutcome {
    let predicted = "pass falls by exactly 1; miss and reasons.miss.ttft rise by 1";
    let result = pushable(s).and_then(|push| {
        let Push {
            index,
            id,
            old_ttft,
            new_ttft,
            edited,
        } = push;
        let mut doc = s.doc.clone();
        if let Some(slot) = doc
            .get_mut("rows")
            .and_then(|r| r.get_mut(usize::try_from(index).unwrap_or(usize::MAX)))
        {
            *slot = edited;
        }
        match s.judge(&doc) {
            Err(e) => rejected(e),
            Ok(after) => {
                let (b, a) = (all(&s.base), all(&after));
                let ok = a.counts.pass + 1 == b.counts.pass
                    && a.counts.miss == b.counts.miss + 1
                    && a.reasons.miss.ttft == b.reasons.miss.ttft + 1;
                Ok((
                    ok,
                    format!(
                        "row {id:?} TTFT {} ms; pass {} → {}; miss {} → {}; \
                         reasons.miss.ttft {} → {}",
                        transition(old_ttft, new_ttft),
                        b.counts.pass,
                        a.counts.pass,
                        b.counts.miss,
                        a.counts.miss,
                        b.reasons.miss.ttft,
                        a.reasons.miss.ttft
                    ),
                ))
            }
        }
    });
    outcome(
        "push_past_ttft",
        "push one passing row just past its TTFT gate",
        predicted,
        result,
    )
}

/// Flip `inclusive` to `strict`: pass falls by the passing rows sitting on a gate.
fn flip_equality(s: &Subject) -> MutationOutcome {
    let classes = &s.base.contract.classes;
    let on_gate: Vec<&RowVerdict> = s
        .rows
        .iter()
        .filter(|r| r.verdict == "pass")
        .filter(|r| {
            let Some(g) = r.class.as_ref().and_then(|c| classes.get(c)) else {
                return false;
            };
            let on = |v: Option<f64>, g: Option<f64>| v.is_some() && v == g;
            on(r.ttft_ms, g.ttft_ms)
                || on(r.tpot_ms, g.tpot_ms)
                || on(r.e2e_ms, g.e2e_ms)
                || on(r.max_gap_ms, g.stall_ms)
                || on(r.ttfa_ms, g.ttfa_ms)
        })
        .collect();
    let k = on_gate.len() as u64;
    let predicted = format!(
        "pass falls by exactly the passing rows sitting on a gate ({k}{})",
        on_gate
            .first()
            .and_then(|r| r.id.as_ref())
            .map_or_else(String::new, |id| format!(", e.g. {id:?}"))
    );
    let result = if s.base.contract.equality != "inclusive" {
        Err(NotApplicable::AlreadyStrict)
    } else if k == 0 {
        Err(NotApplicable::NothingOnGate)
    } else {
        let mut doc = s.doc.clone();
        if let Some(obj) = doc.as_object_mut() {
            obj.insert("equality".to_owned(), Value::from("strict"));
        }
        match s.judge(&doc) {
            Err(e) => rejected(e),
            Ok(after) => {
                let (b, a) = (all(&s.base).counts.pass, all(&after).counts.pass);
                Ok((
                    a + k == b,
                    format!("pass {b} → {a} (expected {})", b.saturating_sub(k)),
                ))
            }
        }
    };
    outcome(
        "flip_equality",
        "flip equality from inclusive to strict",
        predicted,
        result,
    )
}

/// Append a copy of a passing row: both copies become invalid, pass falls by 1.
fn duplicate_id(s: &Subject) -> MutationOutcome {
    let predicted = "both copies invalid (invalid and reasons.invalid.duplicate_id rise by 2); \
                     pass falls by exactly 1";
    let chosen = s
        .rows
        .iter()
        .find(|r| r.verdict == "pass" && r.id.is_some())
        .and_then(|r| Some((r.id.clone()?, s.row(r.index)?.clone())));
    let result = match chosen {
        None => Err(NotApplicable::NoPass),
        Some((id, row)) => {
            let mut doc = s.doc.clone();
            if let Some(rows) = doc.get_mut("rows").and_then(Value::as_array_mut) {
                rows.push(row);
            }
            match s.judge(&doc) {
                Err(e) => rejected(e),
                Ok(after) => {
                    let (b, a) = (all(&s.base), all(&after));
                    let dup =
                        |x: &Block| x.reasons.invalid.get("duplicate_id").copied().unwrap_or(0);
                    let ok = a.counts.pass + 1 == b.counts.pass
                        && a.counts.invalid == b.counts.invalid + 2
                        && dup(a) == dup(b) + 2;
                    Ok((
                        ok,
                        format!(
                            "copied row {id:?}; pass {} → {}; invalid {} → {}; duplicate_id {} → {}",
                            b.counts.pass,
                            a.counts.pass,
                            b.counts.invalid,
                            a.counts.invalid,
                            dup(b),
                            dup(a)
                        ),
                    ))
                }
            }
        }
    };
    outcome(
        "duplicate_id",
        "append a copy of a passing row (same id)",
        predicted,
        result,
    )
}
