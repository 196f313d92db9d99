//! A tool's per-request inter-token latencies → the row's `gapsMs`
//! (docs/contract.md §10.15, "Imported gaps"), and the checks that say how
//! many rows kept them.
//!
//! The tools export each request's latencies between stream chunks (vLLM
//! `itls`, AIPerf `inter_chunk_latency`) at full precision. One rule turns
//! them into gaps, the same for every importer:
//!
//! 1. **Offsets rounded to the microsecond.** The offsets from the first
//!    token, `o_j = ITL_1 + … + ITL_j`, are summed at full precision and
//!    rounded to the microsecond; gap `j` is `o_j − o_(j−1)` (rounded again,
//!    to drop the subtraction's last bit). Rounding the offsets, not each
//!    gap, keeps the gaps' sum within 0.5 µs of the tool's own sum however
//!    many there are.
//! 2. **`more_gaps_than_tokens`.** More ITLs than `outputTokens − 1` means
//!    the tool counted chunks that carried no token (vLLM's benchmark appends
//!    one for every chunk with `choices`, an empty finish chunk included):
//!    which one is spurious cannot be told, so the row keeps no gaps.
//! 3. **`gaps_exceed_span`.** The gaps' sum (in order, in double arithmetic,
//!    as the analyzer adds them) against the row's span `completedMs −
//!    firstTokenMs`: over by at most 1 µs (the contract's tolerance) the gaps
//!    are kept; over by at most 1 ms the last gap is shortened to what the
//!    span leaves after the others, to the microsecond (counted as
//!    `trimmed`); over by more, or when the others alone overrun the span,
//!    the row keeps no gaps.
//! 4. A row of more than [`MAX_GAPS_PER_ROW`] ITLs keeps none
//!    (`over_row_cap`: the trace's per-row cap).
//!
//! `goodput import --no-gaps` leaves every list out ([`GapChecks::left_out`]).

use schemars::JsonSchema;
use serde::Serialize;

use goodput_core::trace::bounds::{GAP_SUM_TOLERANCE_MS, MAX_GAPS_PER_ROW};
use goodput_core::trace::write::{round_us, RowStatus, TraceRow};

/// The largest excess of the gaps' sum over the row's span that is trimmed
/// from the last gap rather than dropping the gaps, ms.
pub const TRIM_LIMIT_MS: f64 = 1.0;

/// What the gap rule did with the completed rows whose source carried a
/// list of inter-token latencies (named checks of `goodput import`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GapChecks {
    /// The source field the lists were read from (`itls`, `inter_chunk_latency`).
    pub field: String,
    /// Completed rows (warm-up ones included) whose source carried a list.
    pub rows_with_list: u64,
    /// Of those, rows whose `gapsMs` were written (trimmed ones included).
    pub kept: u64,
    /// Kept rows whose last gap was shortened (sum over the span by more
    /// than 1 µs, at most 1 ms).
    pub trimmed: u64,
    /// Rows with more ITLs than `outputTokens − 1`: no gaps kept.
    pub more_gaps_than_tokens: u64,
    /// Rows whose ITLs sum to more than the span plus 1 ms: no gaps kept.
    pub gaps_exceed_span: u64,
    /// Rows with more ITLs than the trace's per-row cap: no gaps kept.
    pub over_row_cap: u64,
    /// `--no-gaps`: every list was left out on purpose.
    pub left_out: bool,
}

impl GapChecks {
    /// The checks of an import reading lists from `field`; `keep` is false
    /// under `--no-gaps`.
    pub fn new(field: &str, keep: bool) -> GapChecks {
        GapChecks {
            field: field.to_owned(),
            left_out: !keep,
            ..GapChecks::default()
        }
    }

    /// Rows that carried a list but keep no gaps because the rule dropped them.
    pub fn dropped(&self) -> u64 {
        self.more_gaps_than_tokens + self.gaps_exceed_span + self.over_row_cap
    }

    /// Applies the rule to a completed row: `itls_ms` are the tool's
    /// latencies in ms at full precision, non-negative (the importer checked
    /// them and named their place). The vector is reused for the gaps. Rows
    /// that are not completed, or lack a first token, completion or count,
    /// are left alone.
    pub fn apply(&mut self, row: &mut TraceRow, mut itls_ms: Vec<f64>) {
        let (Some(first), Some(done), Some(tokens)) =
            (row.first_token_ms, row.completed_ms, row.output_tokens)
        else {
            return;
        };
        if row.status != RowStatus::Completed {
            return;
        }
        self.rows_with_list += 1;
        if self.left_out {
            return;
        }
        if itls_ms.len() as u64 > tokens.saturating_sub(1) {
            self.more_gaps_than_tokens += 1;
            return;
        }
        if itls_ms.len() > MAX_GAPS_PER_ROW {
            self.over_row_cap += 1;
            return;
        }
        to_gaps(&mut itls_ms);
        match fit_to_span(&mut itls_ms, done - first) {
            Fit::Within => {}
            Fit::Trimmed => self.trimmed += 1,
            Fit::Exceeds => {
                self.gaps_exceed_span += 1;
                return;
            }
        }
        self.kept += 1;
        row.gaps_ms = Some(itls_ms);
    }
}

/// Latencies → gaps in place: differences of the offsets rounded to the µs.
fn to_gaps(values: &mut [f64]) {
    let mut exact = 0.0;
    let mut previous = 0.0;
    for v in values.iter_mut() {
        exact += *v;
        let offset = round_us(exact);
        *v = round_us(offset - previous).max(0.0);
        previous = offset;
    }
}

/// How gaps fit their row's span.
#[derive(Debug, PartialEq, Eq)]
enum Fit {
    Within,
    Trimmed,
    Exceeds,
}

/// The analyzer's own test (`sum > span + 1 µs` rejects), and the trim of
/// the last gap for an excess of at most [`TRIM_LIMIT_MS`]: it becomes what
/// the span leaves after the others, to the µs.
fn fit_to_span(gaps: &mut [f64], span_ms: f64) -> Fit {
    let fits = |g: &[f64]| g.iter().sum::<f64>() <= span_ms + GAP_SUM_TOLERANCE_MS;
    if fits(gaps) {
        return Fit::Within;
    }
    let excess = gaps.iter().sum::<f64>() - span_ms;
    let Some((last, others)) = gaps.split_last_mut() else {
        return Fit::Exceeds;
    };
    let rest = round_us(span_ms - others.iter().sum::<f64>());
    if excess > TRIM_LIMIT_MS || rest < 0.0 {
        return Fit::Exceeds;
    }
    *last = rest;
    if fits(gaps) {
        Fit::Trimmed
    } else {
        Fit::Exceeds
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::trace::Labels;

    fn row(first: f64, done: f64, tokens: u64) -> TraceRow {
        TraceRow {
            first_token_ms: Some(first),
            completed_ms: Some(done),
            output_tokens: Some(tokens),
            ..TraceRow::new("r0".into(), 0.0, RowStatus::Completed, Labels::new())
        }
    }

    #[test]
    fn offsets_are_rounded_not_each_gap() {
        // Three ITLs of 0.3333334 ms: offsets 0.3333334, 0.6666668, 1.0000002
        // round to 0.333, 0.667, 1.0, so the gaps are 0.333, 0.334, 0.333
        // (sum 1.0, within 0.5 µs of the exact 1.0000002); rounding each gap
        // would give 0.333 × 3 = 0.999, 1.0002 µs short.
        let mut v = vec![0.333_333_4; 3];
        to_gaps(&mut v);
        assert_eq!(v, [0.333, 0.334, 0.333]);
    }

    #[test]
    fn the_rule_keeps_trims_and_drops() {
        let mut c = GapChecks::new("itls", true);
        // Span 30 ms, ITLs 10 + 20.0006: the offset 30.0006 rounds to 30.001,
        // so the gaps are 10 and 20.001, over the span by 1 µs: within the
        // tolerance, kept as they are.
        let mut a = row(0.0, 30.0, 3);
        c.apply(&mut a, vec![10.0, 20.0006]);
        assert_eq!(a.gaps_ms, Some(vec![10.0, 20.001]));
        // Span 30 ms, gaps 10 + 20.5 = 30.5: over by 0.5 ms ≤ 1 ms, the last
        // gap becomes what the span leaves after the first: 30 − 10 = 20.
        let mut b = row(0.0, 30.0, 3);
        c.apply(&mut b, vec![10.0, 20.5]);
        assert_eq!(b.gaps_ms, Some(vec![10.0, 20.0]));
        // Over by 2 ms: dropped.
        let mut d = row(0.0, 30.0, 3);
        c.apply(&mut d, vec![10.0, 22.0]);
        assert_eq!(d.gaps_ms, None);
        // Three ITLs for 3 tokens (at most 2 gaps): dropped.
        let mut e = row(0.0, 30.0, 3);
        c.apply(&mut e, vec![10.0, 10.0, 0.05]);
        assert_eq!(e.gaps_ms, None);
        assert_eq!((c.rows_with_list, c.kept, c.trimmed), (4, 2, 1), "{c:?}");
        assert_eq!((c.gaps_exceed_span, c.more_gaps_than_tokens), (1, 1));
    }

    #[test]
    fn left_out_counts_the_lists_and_writes_none() {
        let mut c = GapChecks::new("itls", false);
        let mut a = row(0.0, 30.0, 3);
        c.apply(&mut a, vec![10.0, 20.0]);
        assert_eq!((a.gaps_ms, c.rows_with_list, c.kept), (None, 1, 0));
    }
}
