//! The one evaluation of a block's tail and share limits ([`BlockLimits`]):
//! failure and censored shares at or below their ceilings, nearest-rank p95
//! TTFT / E2E / TPOT and p99 TTFT / E2E / TPOT at or below their limits.
//!
//! Why one function: `gate` checks these limits on its judged block, and the
//! frontier and the capacity search judge every rate by them
//! (`frontier --max-p95-ttft-ms`, `record --find-capacity --max-p95-ttft-ms`).
//! With one evaluation a rate the capacity says held is a run `gate` passes
//! on the same limits, comparison for comparison: shares compare their
//! counts with the ceiling exactly, p95 TTFT and E2E the double with the
//! decimal as written (docs/contract.md §9.2), p95 TPOT as doubles (as
//! `gate --max-p95-tpot-ms` always has), p99s the double with the decimal as
//! written, like p95 TTFT. A figure that cannot be
//! measured (a share of an empty cohort, a percentile of no completed rows)
//! fails: no evidence never holds.

use crate::receipt::Block;
use crate::review::criteria::{BlockLimits, Check};
use crate::review::exact::{self, Decimal};

/// One limit given, with what it bounds.
enum Bound<'l> {
    FailureShare(&'l Decimal),
    CensoredShare(&'l Decimal),
    P95Ttft(&'l Decimal),
    P95E2e(&'l Decimal),
    P95Tpot(f64),
    P95Ttfa(&'l Decimal),
    P99Ttft(&'l Decimal),
    P99E2e(&'l Decimal),
    P99Tpot(&'l Decimal),
}

/// The limits given, in the fixed order of every view: failure share,
/// censored share, p95 TTFT, p95 E2E, p95 TPOT, p95 TTFA, p99 TTFT, p99 E2E, p99
/// TPOT.
fn bounds(limits: &BlockLimits) -> Vec<Bound<'_>> {
    let l = limits;
    [
        l.max_failure_share.as_ref().map(Bound::FailureShare),
        l.max_censored_share.as_ref().map(Bound::CensoredShare),
        l.max_p95_ttft_ms.as_ref().map(Bound::P95Ttft),
        l.max_p95_e2e_ms.as_ref().map(Bound::P95E2e),
        l.max_p95_tpot_ms.map(Bound::P95Tpot),
        l.max_p95_ttfa_ms.as_ref().map(Bound::P95Ttfa),
        l.p99.ttft_ms.as_ref().map(Bound::P99Ttft),
        l.p99.e2e_ms.as_ref().map(Bound::P99E2e),
        l.p99.tpot_ms.as_ref().map(Bound::P99Tpot),
    ]
    .into_iter()
    .flatten()
    .collect()
}

impl Bound<'_> {
    /// The gate's name of the figure.
    fn name(&self) -> &'static str {
        match self {
            Bound::FailureShare(_) => "failure share",
            Bound::CensoredShare(_) => "censored share",
            Bound::P95Ttft(_) => "p95 ttft ms",
            Bound::P95E2e(_) => "p95 e2e ms",
            Bound::P95Tpot(_) => "p95 tpot ms",
            Bound::P95Ttfa(_) => "p95 ttfa ms",
            Bound::P99Ttft(_) => "p99 ttft ms",
            Bound::P99E2e(_) => "p99 e2e ms",
            Bound::P99Tpot(_) => "p99 tpot ms",
        }
    }

    /// The limit as a double (for JSON and display).
    fn limit(&self) -> f64 {
        match self {
            Bound::FailureShare(d)
            | Bound::CensoredShare(d)
            | Bound::P95Ttft(d)
            | Bound::P95E2e(d)
            | Bound::P95Ttfa(d)
            | Bound::P99Ttft(d)
            | Bound::P99E2e(d)
            | Bound::P99Tpot(d) => d.to_f64(),
            Bound::P95Tpot(x) => *x,
        }
    }

    /// The block's figure and whether it is within the limit.
    fn judge(&self, block: &Block) -> (Option<f64>, bool) {
        let (rates, counts, lat) = (&block.rates, &block.counts, &block.latency);
        let share = |part, ceiling| exact::share_at_most(part, counts.cohort, ceiling);
        let latency = |m: Option<f64>, limit| m.is_some_and(|m| exact::latency_at_most(m, limit));
        match self {
            Bound::FailureShare(c) => (rates.failure_share, share(counts.failed, c)),
            Bound::CensoredShare(c) => (rates.censored_share, share(counts.censored, c)),
            Bound::P95Ttft(l) => (lat.ttft_ms.p95, latency(lat.ttft_ms.p95, l)),
            Bound::P95E2e(l) => (lat.e2e_ms.p95, latency(lat.e2e_ms.p95, l)),
            Bound::P95Tpot(l) => (lat.tpot_ms.p95, lat.tpot_ms.p95.is_some_and(|m| m <= *l)),
            Bound::P95Ttfa(l) => {
                let p95 = block.answer.as_ref().and_then(|a| a.ttfa_ms.p95);
                (p95, latency(p95, l))
            }
            Bound::P99Ttft(l) => (lat.ttft_ms.p99, latency(lat.ttft_ms.p99, l)),
            Bound::P99E2e(l) => (lat.e2e_ms.p99, latency(lat.e2e_ms.p99, l)),
            Bound::P99Tpot(l) => (lat.tpot_ms.p99, latency(lat.tpot_ms.p99, l)),
        }
    }
}

/// Each limit given as (the gate's name, the limit), in the order of
/// [`limit_checks`]: what a view lists as the criteria it judged by.
pub fn limit_names(limits: &BlockLimits) -> Vec<(&'static str, f64)> {
    bounds(limits)
        .iter()
        .map(|b| (b.name(), b.limit()))
        .collect()
}

/// The check line of every limit given, in a fixed order: failure share,
/// censored share, p95 TTFT, p95 E2E, p95 TPOT, p95 TTFA, p99 TTFT, p99 E2E, p99
/// TPOT.
/// Their names are the gate's
/// (`failure share`, `p95 ttft ms`, …), so every view words them alike.
pub fn limit_checks(block: &Block, limits: &BlockLimits) -> Vec<Check> {
    bounds(limits)
        .iter()
        .map(|b| {
            let (measured, pass) = b.judge(block);
            Check {
                name: b.name(),
                measured,
                comparison: "<=",
                limit: b.limit(),
                derivation: None,
                pass,
                class: None,
                note: None,
            }
        })
        .collect()
}
