//! The text receipt's "where the time went" lines (docs/contract.md §10.17):
//! per block, the client TTFT split by the server's own timing into queue,
//! prefill and time outside the engine, and the client check. Shown only
//! when some block has a `serverTiming` block, so receipts of traces without
//! server timing read as before.

use std::fmt::Write;

use goodput_core::receipt::server_timing::{OutsideCheck, TimeSplit};
use goodput_core::receipt::Receipt;

use crate::cells::{opt, share};

/// Appends the `WHERE THE TIME WENT` section to `o` (nothing when no block
/// has server timing).
pub fn write_server_timing(o: &mut String, receipt: &Receipt) {
    if receipt.results.all.server_timing.is_none() {
        return;
    }
    let (blocks, w) = crate::cells::named_blocks(receipt, 19);
    let _ = writeln!(
        o,
        "\n{:<w$} {:>6} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8}  TTFT misses: queue / prefill / outside",
        "WHERE THE TIME WENT",
        "rows",
        "queue p50",
        "prefill50",
        "outside50",
        "outside95",
        "queue",
        "prefill",
        "outside",
    );
    let mut checks = Vec::new();
    for (name, b) in &blocks {
        let Some(t) = &b.server_timing else { continue };
        let _ = writeln!(
            o,
            "{name:<w$} {:>6} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8}  {}",
            t.rows,
            opt(t.queue_ms.p50, 1),
            opt(t.prefill_ms.p50, 1),
            opt(t.outside_ms.p50, 1),
            opt(t.outside_ms.p95, 1),
            share(t.split.queue_share),
            share(t.split.prefill_share),
            share(t.split.outside_share),
            t.ttft_misses
                .map_or_else(|| "no TTFT gate".to_owned(), miss_split),
        );
        if let Some(c) = t.outside_check.filter(|c| c.flagged) {
            checks.push(check_line(name, &c));
        }
        if t.queue_reported < t.rows {
            checks.push(format!(
                "{name}: {} of {} rows carry no server queue time: their queue wait counts as \
                 outside the engine",
                t.rows - t.queue_reported,
                t.rows
            ));
        }
        if t.negative_outside > 0 {
            checks.push(format!(
                "{name}: on {} rows the server's queue + prefill exceeds the client's TTFT \
                 (clocks or definitions disagree)",
                t.negative_outside
            ));
        }
    }
    let _ = writeln!(
        o,
        "(server = the row's server.queueMs / server.prefillMs labels; outside = client TTFT − \
         queue − prefill: the client, the network and anything in front of the engine; shares \
         are of the summed TTFT)"
    );
    for c in checks {
        let _ = writeln!(o, "CHECK {c}");
    }
}

fn miss_split(s: TimeSplit) -> String {
    if s.rows == 0 {
        return "none".to_owned();
    }
    format!(
        "{} / {} / {} ({} rows)",
        share(s.queue_share),
        share(s.prefill_share),
        share(s.outside_share),
        s.rows
    )
}

fn check_line(name: &str, c: &OutsideCheck) -> String {
    format!(
        "{name}: the median time outside the engine, {} ms, is {} of the smallest TTFT gate \
         ({} ms; limit {}): the client or what is in front of the server takes part of the \
         promise",
        opt(Some(c.median_outside_ms), 1),
        share(c.share),
        opt(Some(c.smallest_ttft_gate_ms), 0),
        share(Some(c.limit)),
    )
}
