//! The text receipt's answer lines (docs/contract.md §10.16): one line per
//! block with time to first answer (TTFA), the thinking time before it,
//! the rows that never answered, the TTFA misses and the reasoning share.
//! Shown only when some block has an `answer` block, so receipts of
//! traces without answer instants read as before.

use std::fmt::Write;

use goodput_core::receipt::Receipt;

use crate::cells::{opt, share};

/// Appends the `ANSWER` section to `o` (nothing when no block has one).
pub fn write_answers(o: &mut String, receipt: &Receipt) {
    if receipt.results.all.answer.is_none() {
        return;
    }
    let (blocks, w) = crate::cells::named_blocks(receipt, 12);
    let _ = writeln!(
        o,
        "\n{:<w$} {:>8} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>6} {:>9} {:>9}",
        "ANSWER ms",
        "answered",
        "no answer",
        "ttfa p50",
        "ttfa p95",
        "ttfa p99",
        "think p50",
        "think p95",
        "ttfa",
        "noAnswer",
        "reasoning"
    );
    for (name, b) in &blocks {
        let Some(a) = &b.answer else { continue };
        let count = |n: Option<u64>| n.map_or_else(|| "—".to_owned(), |n| n.to_string());
        let _ = writeln!(
            o,
            "{name:<w$} {:>8} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>6} {:>9} {:>9}",
            a.answered,
            a.no_answer,
            opt(a.ttfa_ms.p50, 1),
            opt(a.ttfa_ms.p95, 1),
            opt(a.ttfa_ms.p99, 1),
            opt(a.thinking_ms.p50, 1),
            opt(a.thinking_ms.p95, 1),
            count(b.reasons.miss.ttfa),
            count(b.reasons.miss.no_answer),
            share(a.reasoning.as_ref().and_then(|r| r.share)),
        );
    }
    let _ = writeln!(
        o,
        "(ttfa = first answer token − arrival; think = first answer − first token of any kind; \
         ttfa/noAnswer = rows that missed their ttfaMs / never answered; reasoning = reasoning \
         share of output tokens)"
    );
}
