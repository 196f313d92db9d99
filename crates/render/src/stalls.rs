//! The text receipt's stall lines (docs/contract.md §10.15): one line per
//! block with the gap p50, p99 and max, the stall misses, the rows that
//! could not be judged on the stall gate and the fluidity share. Shown only
//! when some block has a `gaps` block, so receipts without gaps read as before.

use std::fmt::Write;

use goodput_core::receipt::Receipt;

use crate::cells::{opt, share};

/// Appends the `GAPS` section to `o` (nothing when no block has gaps).
pub fn write_gaps(o: &mut String, receipt: &Receipt) {
    let Some(label) = receipt.results.all.gaps.as_ref().map(|g| g.label.as_str()) else {
        return;
    };
    let (blocks, w) = crate::cells::named_blocks(receipt, 12);
    let _ = writeln!(
        o,
        "\n{:<w$} {:>6} {:>8} {:>9} {:>9} {:>9} {:>7} {:>10} {:>9}",
        "GAPS ms", "rows", "gaps", "p50", "p99", "max", "stall", "not judged", "fluidity"
    );
    for (name, b) in &blocks {
        let Some(g) = &b.gaps else { continue };
        let stall = b
            .reasons
            .miss
            .stall
            .map_or_else(|| "—".to_owned(), |n| n.to_string());
        let fluidity = g.fluidity.as_ref().and_then(|f| f.share);
        let _ = writeln!(
            o,
            "{name:<w$} {:>6} {:>8} {:>9} {:>9} {:>9} {:>7} {:>10} {:>9}",
            g.rows,
            g.gap_ms.n,
            opt(g.gap_ms.p50, 1),
            opt(g.gap_ms.p99, 1),
            opt(g.gap_ms.max, 1),
            stall,
            g.not_judged_on_stall,
            share(fluidity)
        );
    }
    let _ = writeln!(
        o,
        "(gaps between token-carrying stream events: {label}; stall = rows over their stallMs)"
    );
}
