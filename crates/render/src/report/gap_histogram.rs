//! The gaps between token-carrying stream events of one class
//! (docs/contract.md §10.15) as a histogram beside its latency histograms:
//! every gap of its completed cohort rows, pooled, with the class's stall
//! gate drawn on it, and under it the stall misses, the rows that could not
//! be judged on the gate and the fluidity share, read from the receipt's
//! `gaps` block.
//!
//! Drawn only for a class whose block has `gaps`, so a trace without gaps
//! keeps its page byte for byte.

use std::fmt::Write;

use crate::report::chart::{chart, Bars, Chart};
use crate::sensitivity::short;
use crate::text::{opt, share};
use goodput_core::analyze::Analysis;
use goodput_core::receipt::gaps::{GapBlock, INTER_TOKEN};
use goodput_core::receipt::Block;
use goodput_core::trace::Gates;

/// A non-empty bar of the gap histogram is at least this tall: one stall
/// among thousands of steady gaps would otherwise be a bar under a tenth of
/// a pixel, and the stall is what the chart is for.
pub(super) const MIN_GAP_BAR_PX: f64 = 2.0;

/// The name of the figure the receipt's `label` stands for.
pub(super) fn title(g: &GapBlock) -> &'static str {
    if g.label == INTER_TOKEN {
        "inter-token latency"
    } else {
        "inter-event latency"
    }
}

/// One class's gap histogram, after its latency histograms; nothing when
/// its block has no `gaps`.
pub(super) fn figure(
    o: &mut String,
    a: &Analysis,
    class: (usize, &str),
    gates: &Gates,
    block: &Block,
    rule: &str,
) {
    let Some(g) = &block.gaps else {
        return;
    };
    let look = Chart {
        key: "gap",
        label: title(g),
        gate: gates.stall_ms,
        gate_word: "stall gate",
        empty: "no completed rows with gaps",
        bars: Bars {
            noun: "gaps",
            min_height: MIN_GAP_BAR_PX,
        },
    };
    chart(o, class.1, &look, rule, &pooled_gaps(a, class.0));
    caption(o, g, block, gates);
}

/// Every gap of the class's completed cohort rows (pass and miss), in row
/// order: the values the receipt's `gaps.gapMs` summarises.
fn pooled_gaps(a: &Analysis, class: usize) -> Vec<f64> {
    a.judgements
        .iter()
        .zip(&a.trace.rows)
        .filter(|(j, _)| j.class == Some(class) && j.verdict.measured().is_some())
        .filter_map(|(_, row)| row.gaps_ms.get())
        .flat_map(|gaps| gaps.iter().copied())
        .collect()
}

/// The caption: the pooled summary, then the stall gate's misses and the
/// rows it could not judge, then fluidity when the class has a deadline.
fn caption(o: &mut String, g: &GapBlock, block: &Block, gates: &Gates) {
    let s = &g.gap_ms;
    let stall = match (gates.stall_ms, block.reasons.miss.stall) {
        (Some(_), Some(missed)) => format!(
            "stall: <span data-col=\"stallMisses\">{missed}</span> rows over the gate (largest gap) · \
             <span data-col=\"notJudgedOnStall\">{}</span> rows not judged on stall (no gaps)",
            g.not_judged_on_stall
        ),
        _ => "no stall gate".to_owned(),
    };
    let fluidity = g.fluidity.as_ref().map_or_else(String::new, |f| {
        let deadline = gates
            .token_deadline_ms
            .map_or_else(String::new, |d| format!(" of {} ms", short(d)));
        format!(
            " · fluidity <span data-col=\"fluidity\">{}</span> ({} of {} token deadlines{deadline} met)",
            share(f.share),
            f.met,
            f.deadlines
        )
    });
    let _ = writeln!(
        o,
        "<figcaption>n {} gaps in {} rows · p50 {} · p95 {} · p99 {} · max {} ms<br>{stall}{fluidity}</figcaption>\n</figure>",
        s.n,
        g.rows,
        opt(s.p50, 1),
        opt(s.p95, 1),
        opt(s.p99, 1),
        opt(s.max, 1)
    );
}
