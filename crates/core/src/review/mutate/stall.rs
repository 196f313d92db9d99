//! The stall mutation (docs/contract.md §10.15): one passing row's largest
//! gap stretched just past its class's stall gate (its completion moved by
//! as much, so the gaps still fit) must turn exactly that row into a miss
//! with reason `stall`.

use serde_json::Value;

use super::{all, outcome, rejected, MutationOutcome, NotApplicable, Subject, Trial};
use crate::trace::model::{MAX_ABS_TIMESTAMP_MS, MAX_SPAN_MS};

/// A passing row whose largest gap can be stretched past its stall gate.
struct Stretch {
    index: u64,
    id: String,
    old_gap: f64,
    new_gap: f64,
    edited: Value,
}

/// The first passing row with gaps in a class with a stall gate whose
/// largest gap can be stretched just past the gate without completing after
/// the horizon; with its edit.
fn stretchable(s: &Subject) -> Result<Stretch, NotApplicable> {
    let classes = &s.base.contract.classes;
    let horizon = s.base.contract.window.horizon_ms;
    let equality = s.equality();
    let mut gated = 0;
    for rv in s.rows.iter().filter(|r| r.verdict == "pass") {
        let gate = rv
            .class
            .as_ref()
            .and_then(|c| classes.get(c))
            .and_then(|g| g.stall_ms);
        let (Some(gate), Some(old_gap), Some(at)) = (gate, rv.max_gap_ms, rv.max_gap_index) else {
            continue;
        };
        gated += 1;
        let Some(row) = s.row(rv.index) else { continue };
        let num = |k: &str| row.get(k).and_then(Value::as_f64);
        let (Some(arrival), Some(completed)) = (num("arrivalMs"), num("completedMs")) else {
            continue;
        };
        let mut step = 1.0;
        while equality.meets(gate + step, gate) && step < 1e6 {
            step *= 2.0;
        }
        let new_gap = gate + step;
        let new_completed = completed + (new_gap - old_gap);
        let fits = !equality.meets(new_gap, gate)
            && new_completed <= horizon
            && new_completed - arrival <= MAX_SPAN_MS
            && new_completed.abs() <= MAX_ABS_TIMESTAMP_MS;
        if !fits {
            continue;
        }
        let mut edited = row.clone();
        let slot = edited
            .get_mut("gapsMs")
            .and_then(|g| g.get_mut(usize::try_from(at).unwrap_or(usize::MAX)));
        let Some(slot) = slot else { continue };
        *slot = Value::from(new_gap);
        if let Some(obj) = edited.as_object_mut() {
            obj.insert("completedMs".to_owned(), Value::from(new_completed));
        }
        let id = rv
            .id
            .clone()
            .unwrap_or_else(|| format!("/rows/{}", rv.index));
        return Ok(Stretch {
            index: rv.index,
            id,
            old_gap,
            new_gap,
            edited,
        });
    }
    Err(if gated == 0 {
        NotApplicable::NoStallGate
    } else {
        NotApplicable::NoRoomPastStall
    })
}

/// Stretch one passing row's largest gap just past its stall gate: pass
/// falls by exactly 1, miss and `reasons.miss.stall` rise by 1.
pub(super) fn push_past_stall(s: &Subject) -> MutationOutcome {
    let predicted = "pass falls by exactly 1; miss and reasons.miss.stall rise by 1";
    let result = stretchable(s).and_then(|stretch| judge_stretch(s, stretch));
    outcome(
        "push_past_stall",
        "stretch one passing row's largest gap just past its stall gate",
        predicted,
        result,
    )
}

fn judge_stretch(s: &Subject, stretch: Stretch) -> Trial {
    let Stretch {
        index,
        id,
        old_gap,
        new_gap,
        edited,
    } = stretch;
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
            let stall = |x: Option<u64>| x.map_or_else(|| "none".to_owned(), |n| n.to_string());
            let ok = a.counts.pass + 1 == b.counts.pass
                && a.counts.miss == b.counts.miss + 1
                && a.reasons.miss.stall == b.reasons.miss.stall.map(|n| n + 1);
            Ok((
                ok,
                format!(
                    "row {id:?} largest gap {} ms; pass {} → {}; miss {} → {}; \
                     reasons.miss.stall {} → {}",
                    goodput_util::number::transition(old_gap, new_gap),
                    b.counts.pass,
                    a.counts.pass,
                    b.counts.miss,
                    a.counts.miss,
                    stall(b.reasons.miss.stall),
                    stall(a.reasons.miss.stall)
                ),
            ))
        }
    }
}
