//! The answer mutation (docs/contract.md §10.16): one passing row's first
//! answer token moved just past its class's TTFA gate (its completion moved
//! with it when the answer would come after it) must turn exactly that row
//! into a miss with reason `ttfa`.

use serde_json::Value;

use super::{all, outcome, rejected, MutationOutcome, NotApplicable, Subject, Trial};
use crate::trace::model::{MAX_ABS_TIMESTAMP_MS, MAX_SPAN_MS};

/// A passing row whose first answer can be moved past its TTFA gate.
struct Delay {
    index: u64,
    id: String,
    old_ttfa: f64,
    new_ttfa: f64,
    edited: Value,
}

/// The smallest power-of-two step past `gate` that misses it under the
/// trace's equality rule.
fn step_past(gate: f64, meets: impl Fn(f64, f64) -> bool) -> f64 {
    let mut step = 1.0;
    while meets(gate + step, gate) && step < 1e6 {
        step *= 2.0;
    }
    gate + step
}

/// The first passing row with an answer in a class with a TTFA gate whose
/// answer can be moved just past the gate without completing after the
/// horizon; with its edit.
fn delayable(s: &Subject) -> Result<Delay, NotApplicable> {
    let classes = &s.base.contract.classes;
    let horizon = s.base.contract.window.horizon_ms;
    let equality = s.equality();
    let mut gated = 0;
    for rv in s.rows.iter().filter(|r| r.verdict == "pass") {
        let gate = rv
            .class
            .as_ref()
            .and_then(|c| classes.get(c))
            .and_then(|g| g.ttfa_ms);
        let (Some(gate), Some(old_ttfa)) = (gate, rv.ttfa_ms) else {
            continue;
        };
        gated += 1;
        let Some(row) = s.row(rv.index) else { continue };
        let num = |k: &str| row.get(k).and_then(Value::as_f64);
        let (Some(arrival), Some(completed)) = (num("arrivalMs"), num("completedMs")) else {
            continue;
        };
        let new_ttfa = step_past(gate, |v, g| equality.meets(v, g));
        let answer = arrival + new_ttfa;
        // The answer cannot come after the completion: move it along.
        let new_completed = completed.max(answer);
        let fits = !equality.meets(new_ttfa, gate)
            && new_completed <= horizon
            && new_completed - arrival <= MAX_SPAN_MS
            && new_completed.abs() <= MAX_ABS_TIMESTAMP_MS;
        if !fits {
            continue;
        }
        let mut edited = row.clone();
        let Some(obj) = edited.as_object_mut() else {
            continue;
        };
        obj.insert("firstAnswerMs".to_owned(), Value::from(answer));
        obj.insert("completedMs".to_owned(), Value::from(new_completed));
        let id = rv
            .id
            .clone()
            .unwrap_or_else(|| format!("/rows/{}", rv.index));
        return Ok(Delay {
            index: rv.index,
            id,
            old_ttfa,
            new_ttfa,
            edited,
        });
    }
    Err(if gated == 0 {
        NotApplicable::NoTtfaGate
    } else {
        NotApplicable::NoRoomPastTtfa
    })
}

/// Move one passing row's first answer just past its TTFA gate: pass falls
/// by exactly 1, miss and `reasons.miss.ttfa` rise by 1.
pub(super) fn push_past_ttfa(s: &Subject) -> MutationOutcome {
    let predicted = "pass falls by exactly 1; miss and reasons.miss.ttfa rise by 1";
    let result = delayable(s).and_then(|delay| judge_delay(s, delay));
    outcome(
        "push_past_ttfa",
        "move one passing row's first answer just past its TTFA gate",
        predicted,
        result,
    )
}

fn judge_delay(s: &Subject, delay: Delay) -> Trial {
    let Delay {
        index,
        id,
        old_ttfa,
        new_ttfa,
        edited,
    } = delay;
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
            let ttfa = |x: Option<u64>| x.map_or_else(|| "none".to_owned(), |n| n.to_string());
            let ok = a.counts.pass + 1 == b.counts.pass
                && a.counts.miss == b.counts.miss + 1
                && a.reasons.miss.ttfa == b.reasons.miss.ttfa.map(|n| n + 1);
            Ok((
                ok,
                format!(
                    "row {id:?} TTFA {} ms; pass {} → {}; miss {} → {}; reasons.miss.ttfa {} → {}",
                    goodput_util::number::transition(old_ttfa, new_ttfa),
                    b.counts.pass,
                    a.counts.pass,
                    b.counts.miss,
                    a.counts.miss,
                    ttfa(b.reasons.miss.ttfa),
                    ttfa(a.reasons.miss.ttfa)
                ),
            ))
        }
    }
}
