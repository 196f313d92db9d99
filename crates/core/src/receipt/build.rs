//! Judgements → receipt: counting, rates, latency summaries and reasons, once
//! per class and once for all rows. Pure: no I/O, no clock.

use std::collections::BTreeMap;

use crate::intervals::{self, poisson_exact, quantile_interval, wilson, Confidence, Interval};
use crate::stats::{summarize, summarize_sorted, Summary};
use crate::trace::{Gates, Labels, RawRow, RawStatus, Slot, Trace};
use crate::verdict::{Censor, Exclusion, Judgement, Verdict};

use crate::receipt::saturation::{
    BlockFigures, Instants, Saturation, SaturationTally, SaturationVerdict,
};
use crate::receipt::{
    Block, BlockIntervals, ContractInfo, Counts, Generator, IntervalContract, LatencyBlock,
    LatencySummary, LimitsInfo, LittlesLaw, PercentileIntervals, Rates, Reasons, Receipt, Results,
    RowVerdict, TraceInfo, WindowInfo, RECEIPT_SCHEMA,
};

/// From this many rows on, the tally runs on two threads.
const PARALLEL_TALLY_ROWS: usize = 100_000;

/// Tallies rows once each: in their class, or (class unresolved) in the
/// returned `unresolved` tally. The `all` block is the sum of those.
fn tally(
    judgements: &[Judgement],
    rows: &[RawRow],
    contract: &crate::trace::Contract,
    clip: Clip,
) -> (Vec<Tally>, Tally) {
    let mut unresolved = Tally::default();
    let mut per_class: Vec<Tally> = contract.classes.keys().map(|_| Tally::default()).collect();
    for (j, row) in judgements.iter().zip(rows) {
        match j.class.and_then(|c| per_class.get_mut(c)) {
            Some(tally) => tally.add(&j.verdict, row, clip),
            None => unresolved.add(&j.verdict, row, clip),
        }
    }
    (per_class, unresolved)
}

/// What the caller asked the receipt to contain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiptOptions {
    /// Include per-row verdicts (`--rows`).
    pub rows: bool,
    /// The level of every block's intervals (`--confidence`).
    pub confidence: Confidence,
}

/// Running totals for one block. Rows whose class does not resolve are all
/// invalid, so they carry no latency: the `all` block's latency values are
/// exactly the union of the classes' (merged after sorting, see
/// `latency_blocks`), and only its counts are summed with `absorb`.
#[derive(Default)]
struct Tally {
    counts: Counts,
    reasons: Reasons,
    failure: BTreeMap<u32, u64>,
    invalid: BTreeMap<&'static str, u64>,
    output_tokens: u64,
    good_tokens: u64,
    ttft: Vec<f64>,
    tpot: Vec<f64>,
    e2e: Vec<f64>,
    /// Total ms that cohort rows spent in flight inside the window (Little's law).
    busy: FixedSum,
    /// Failed cohort rows with no `endedMs`.
    unknown_end: u64,
    /// Total ms censored cohort rows were known to be in the system: each
    /// from its arrival to the horizon, its lower bound (Little's law's W).
    censored_time: FixedSum,
    /// In flight at fixed instants, arrivals and completions per bin.
    saturation: SaturationTally,
    /// Earliest and latest `completedMs` of pass and miss rows (served throughput).
    completions: Span,
}

/// The earliest and latest of a set of instants; min and max do not depend
/// on the order the rows come in, so the receipt stays deterministic.
#[derive(Clone, Copy, Debug, Default)]
struct Span(Option<(f64, f64)>);

impl Span {
    fn add(&mut self, t: f64) {
        self.0 = Some(match self.0 {
            None => (t, t),
            Some((lo, hi)) => (lo.min(t), hi.max(t)),
        });
    }

    fn absorb(&mut self, other: Span) {
        if let Some((lo, hi)) = other.0 {
            self.add(lo);
            self.add(hi);
        }
    }

    /// The rate of `n` events spread over the span (docs/contract.md §7.6
    /// `servedPerS`): the first event opens the span, so `n` events are
    /// `n − 1` gaps, and a steady stream at r per second reads exactly r.
    /// `None` with fewer than two events or a zero span.
    fn rate_per_s(self, n: u64) -> Option<f64> {
        let (lo, hi) = self.0?;
        let span_s = (hi - lo) / 1000.0;
        (n >= 2 && span_s > 0.0).then(|| (n - 1) as f64 / span_s)
    }

    /// The span `rate_per_s` divides by, in ms, when that rate exists.
    fn span_ms(self, n: u64) -> Option<f64> {
        let (lo, hi) = self.0?;
        self.rate_per_s(n).map(|_| hi - lo)
    }
}

/// A sum of milliseconds in fixed point (units of 2^-32 ms, in an i128).
/// Integer addition is associative, so the total cannot depend on row order,
/// and no sort is needed; rounding each term to 2^-32 ms (about 0.2 ps) is far
/// below any clock a trace comes from.
#[derive(Clone, Copy, Debug, Default)]
struct FixedSum(i128);

impl FixedSum {
    const SCALE: f64 = 4_294_967_296.0; // 2^32

    fn add(&mut self, ms: f64) {
        // Spans are at most 24 h (8.64e7 ms), so ms × 2^32 < 2^59: exact in an i128.
        self.0 += (ms * Self::SCALE).round() as i128;
    }

    fn value(self) -> f64 {
        self.0 as f64 / Self::SCALE
    }
}

/// The bounds every row's in-flight time is clipped to, and the instants
/// the saturation figures look at.
#[derive(Clone, Copy)]
struct Clip {
    start_ms: f64,
    end_ms: f64,
    horizon_ms: f64,
    instants: Instants,
}

impl Clip {
    /// Milliseconds a cohort row spent in flight inside the window, or `None`
    /// when its end is unknown (a failure without `endedMs`).
    fn busy_ms(self, row: &RawRow) -> Option<f64> {
        let start = row.arrival_ms.value()?;
        let end = match row.status {
            Slot::Set(RawStatus::Completed) => row.completed_ms.value()?.min(self.horizon_ms),
            Slot::Set(RawStatus::Failed) => row.ended_ms.value()?.min(self.horizon_ms),
            _ => self.horizon_ms,
        };
        Some((end.min(self.end_ms) - start.max(self.start_ms)).max(0.0))
    }
}

impl Tally {
    fn add(&mut self, verdict: &Verdict, row: &RawRow, clip: Clip) {
        self.saturation.add(verdict, row, &clip.instants);
        let in_cohort = !matches!(verdict, Verdict::Invalid(_) | Verdict::Excluded(_));
        if in_cohort {
            match clip.busy_ms(row) {
                Some(ms) => self.busy.add(ms),
                None => self.unknown_end += 1,
            }
        }
        let c = &mut self.counts;
        c.arrivals += 1;
        match verdict {
            Verdict::Invalid(set) => {
                c.invalid += 1;
                for reason in set.iter() {
                    *self.invalid.entry(reason.as_str()).or_insert(0) += 1;
                }
            }
            Verdict::Excluded(why) => {
                c.excluded += 1;
                match why {
                    Exclusion::Warmup => self.reasons.exclusion.warmup += 1,
                    Exclusion::OutsideWindow => self.reasons.exclusion.outside_window += 1,
                }
            }
            Verdict::Censored { cause, known_late } => {
                c.cohort += 1;
                c.censored += 1;
                let r = &mut self.reasons.censored;
                match cause {
                    Censor::InFlight => r.in_flight += 1,
                    Censor::CompletedAfterHorizon => r.completed_after_horizon += 1,
                    Censor::FailedAfterHorizon => r.failed_after_horizon += 1,
                }
                r.known_late += u64::from(*known_late);
                if let Some(arrival) = row.arrival_ms.value() {
                    self.censored_time.add((clip.horizon_ms - arrival).max(0.0));
                }
            }
            Verdict::Failed { reason } => {
                c.cohort += 1;
                c.failed += 1;
                *self.failure.entry(*reason).or_insert(0) += 1;
            }
            Verdict::Pass(m) | Verdict::Miss(m, _) => {
                c.cohort += 1;
                if let Some(done) = row.completed_ms.value() {
                    self.completions.add(done.min(clip.horizon_ms));
                }
                self.output_tokens += m.output_tokens;
                self.ttft.extend(m.ttft_ms);
                self.e2e.push(m.e2e_ms);
                if let Some(t) = m.tpot_ms {
                    self.tpot.push(t);
                }
                if let Verdict::Miss(_, missed) = verdict {
                    c.miss += 1;
                    let r = &mut self.reasons.miss;
                    r.ttft += u64::from(missed.ttft);
                    r.tpot += u64::from(missed.tpot);
                    r.e2e += u64::from(missed.e2e);
                } else {
                    c.pass += 1;
                    self.good_tokens += m.output_tokens;
                }
            }
        }
    }

    /// Takes in another tally of other rows: counts, reasons and latency values.
    fn merge(&mut self, other: Tally) {
        self.absorb(&other);
        self.ttft.extend_from_slice(&other.ttft);
        self.tpot.extend_from_slice(&other.tpot);
        self.e2e.extend_from_slice(&other.e2e);
    }

    /// Adds another tally's counts and reasons (not its latency values).
    fn absorb(&mut self, other: &Tally) {
        let (c, o) = (&mut self.counts, &other.counts);
        c.arrivals += o.arrivals;
        c.invalid += o.invalid;
        c.excluded += o.excluded;
        c.cohort += o.cohort;
        c.pass += o.pass;
        c.miss += o.miss;
        c.failed += o.failed;
        c.censored += o.censored;
        let (r, o) = (&mut self.reasons, &other.reasons);
        r.miss.ttft += o.miss.ttft;
        r.miss.tpot += o.miss.tpot;
        r.miss.e2e += o.miss.e2e;
        r.exclusion.warmup += o.exclusion.warmup;
        r.exclusion.outside_window += o.exclusion.outside_window;
        r.censored.in_flight += o.censored.in_flight;
        r.censored.completed_after_horizon += o.censored.completed_after_horizon;
        r.censored.failed_after_horizon += o.censored.failed_after_horizon;
        r.censored.known_late += o.censored.known_late;
        for (k, n) in &other.failure {
            *self.failure.entry(*k).or_insert(0) += n;
        }
        for (k, n) in &other.invalid {
            *self.invalid.entry(k).or_insert(0) += n;
        }
        self.output_tokens += other.output_tokens;
        self.good_tokens += other.good_tokens;
        self.unknown_end += other.unknown_end;
        self.busy.0 += other.busy.0;
        self.censored_time.0 += other.censored_time.0;
        self.saturation.absorb(&other.saturation);
        self.completions.absorb(other.completions);
    }

    fn finish(
        self,
        trace: &Trace,
        instants: &Instants,
        latency: Latency,
        confidence: Confidence,
        gates: &[&Gates],
    ) -> Block {
        let Latency {
            summaries: latency,
            intervals: percentiles,
        } = latency;
        let busy_ms = self.busy.value();
        let window_s = trace.contract.window_s();
        // Completion instants are arrival + E2E: with no arrival instants
        // (every row dated at the window start) their span is a spread of
        // latencies, not of time, so no served rate is read from it.
        let dated = !trace.contract.arrivals_unknown();
        let c = self.counts;
        let share = |part: u64| (c.cohort > 0).then(|| part as f64 / c.cohort as f64);
        let rates = Rates {
            goodput_per_s: c.pass as f64 / window_s,
            pass_share: share(c.pass),
            offered_per_s: c.cohort as f64 / window_s,
            completed_per_s: (c.pass + c.miss) as f64 / window_s,
            output_tokens_per_s: self.output_tokens as f64 / window_s,
            good_tokens_per_s: self.good_tokens as f64 / window_s,
            failure_share: share(c.failed),
            censored_share: share(c.censored),
            served_per_s: self
                .completions
                .rate_per_s(c.pass + c.miss)
                .filter(|_| dated),
        };
        let mut reasons = self.reasons;
        reasons.failure = self
            .failure
            .into_iter()
            .map(|(ix, n)| (trace.strings.resolve(ix).to_owned(), n))
            .collect();
        reasons.invalid = self
            .invalid
            .into_iter()
            .map(|(name, n)| (name.to_owned(), n))
            .collect();
        let mut littles_law = littles_law(Occupancy {
            in_flight_mean: (!trace.contract.arrivals_unknown())
                .then(|| busy_ms / (window_s * 1000.0)),
            window_s,
            completed: c.pass + c.miss,
            mean_e2e_ms: latency.e2e_ms.mean,
            censored: c.censored,
            censored_ms: self.censored_time.value(),
            unknown_end: self.unknown_end,
        });
        let intervals = block_intervals(c, window_s, percentiles, confidence);
        let saturation = self.saturation.finish(
            instants,
            BlockFigures {
                cohort: c.cohort,
                failed: c.failed,
                censored: c.censored,
                served_per_s: rates.served_per_s,
                served_span_ms: self.completions.span_ms(c.pass + c.miss).filter(|_| dated),
                wait_gate_ms: smallest(gates, |g| g.ttft_ms).or(smallest(gates, |g| g.e2e_ms)),
                tpot_gate_ms: smallest(gates, |g| g.tpot_ms),
            },
            trace.contract.arrivals_unknown(),
        );
        steady_state_from(&mut littles_law, &saturation);
        Block {
            counts: c,
            rates,
            latency,
            reasons,
            littles_law,
            intervals,
            saturation,
            percentiles: None,
            gaps: None,
            answer: None,
            server_timing: None,
        }
    }
}

/// The smallest non-null gate of one metric among `gates`.
fn smallest(gates: &[&Gates], pick: impl Fn(&Gates) -> Option<f64>) -> Option<f64> {
    gates.iter().filter_map(|g| pick(g)).reduce(f64::min)
}

/// Little's law's `steadyState` follows the saturation verdict
/// (docs/contract.md §7.9): a ratio near 1 proves nothing when observation
/// stopped at the window's end (it is 1 by construction there), so the
/// ratio stays a figure and the verdict decides.
fn steady_state_from(law: &mut LittlesLaw, saturation: &Saturation) {
    law.steady_state = match saturation.verdict {
        SaturationVerdict::Steady => Some(true),
        SaturationVerdict::Overloaded => Some(false),
        SaturationVerdict::Inconclusive => None,
    };
    law.note = match saturation.verdict {
        SaturationVerdict::Overloaded => Some(
            "not steady: the saturation verdict is overloaded (saturation.evidence says why)"
                .to_owned(),
        ),
        _ if law.in_flight_mean.is_none() => law.note.take(),
        _ => None,
    };
}

/// The share and rate intervals of one block's counts, beside its
/// percentile intervals (computed where the values are sorted).
fn block_intervals(
    c: Counts,
    window_s: f64,
    percentiles: [PercentileIntervals; 3],
    confidence: Confidence,
) -> BlockIntervals {
    let share = |part: u64| wilson(part, c.cohort, confidence);
    let goodput = poisson_exact(c.pass, confidence);
    let [ttft_ms, tpot_ms, e2e_ms] = percentiles;
    BlockIntervals {
        pass_share: share(c.pass),
        failure_share: share(c.failed),
        censored_share: share(c.censored),
        goodput_per_s: Interval {
            lower: goodput.lower / window_s,
            upper: goodput.upper / window_s,
        },
        ttft_ms,
        tpot_ms,
        e2e_ms,
    }
}

/// One block's latency summaries with the intervals of their percentiles
/// (TTFT, TPOT, E2E).
struct Latency {
    summaries: LatencyBlock,
    intervals: [PercentileIntervals; 3],
}

/// The p50/p95/p99 intervals of ascending `sorted` values.
fn percentile_intervals(sorted: &[f64], confidence: Confidence) -> PercentileIntervals {
    PercentileIntervals {
        p50: quantile_interval(sorted, 50, confidence),
        p95: quantile_interval(sorted, 95, confidence),
        p99: quantile_interval(sorted, 99, confidence),
    }
}

/// Sorts each class's latency values and summarises them, per class and for
/// all classes together. The three metrics are independent, so each is sorted
/// on its own thread; the `all` values are the classes' sorted runs
/// concatenated and merged by a stable sort (which detects and merges runs in
/// linear time), never a second full sort.
fn latency_blocks(classes: &mut [Tally], confidence: Confidence) -> (Vec<Latency>, Latency) {
    let mut columns: Vec<Vec<&mut Vec<f64>>> = vec![Vec::new(), Vec::new(), Vec::new()];
    for tally in classes.iter_mut() {
        let Tally {
            ttft, tpot, e2e, ..
        } = tally;
        columns[0].push(ttft);
        columns[1].push(tpot);
        columns[2].push(e2e);
    }
    let summaries: Vec<ColumnSummary> = std::thread::scope(|scope| {
        let handles: Vec<_> = columns
            .into_iter()
            .map(|column| scope.spawn(move || summarize_column(column, confidence)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|payload| std::panic::resume_unwind(payload))
            })
            .collect()
    });
    let block = |pick: &dyn Fn(&ColumnSummary) -> &MetricSummary| {
        let [ttft, tpot, e2e] = [0, 1, 2].map(|m| pick(&summaries[m]));
        Latency {
            summaries: LatencyBlock {
                ttft_ms: summary(ttft.0),
                tpot_ms: summary(tpot.0),
                e2e_ms: summary(e2e.0),
            },
            intervals: [ttft.1.clone(), tpot.1.clone(), e2e.1.clone()],
        }
    };
    let per_class = (0..classes.len()).map(|i| block(&|s| &s.0[i])).collect();
    (per_class, block(&|s| &s.1))
}

/// One metric's summary with its percentile intervals.
type MetricSummary = (Summary, PercentileIntervals);

/// One metric's summaries: per class, and for all classes together.
type ColumnSummary = (Vec<MetricSummary>, MetricSummary);

/// One metric across classes: each class sorted and summarised, then the
/// sorted runs merged for `all`.
fn summarize_column(column: Vec<&mut Vec<f64>>, confidence: Confidence) -> ColumnSummary {
    let mut per_class = Vec::with_capacity(column.len());
    let mut merged: Vec<f64> = Vec::with_capacity(column.iter().map(|v| v.len()).sum());
    for values in column {
        let summary = summarize(values);
        per_class.push((summary, percentile_intervals(values, confidence)));
        merged.extend_from_slice(values);
        *values = Vec::new();
    }
    merged.sort_by(f64::total_cmp);
    let all = (
        summarize_sorted(&merged),
        percentile_intervals(&merged, confidence),
    );
    (per_class, all)
}

/// The occupancy ratio outside which a run is called not steady.
const STEADY_RATIO: (f64, f64) = (0.8, 1.25);

/// What Little's law is computed from, for one block.
struct Occupancy {
    /// L, measured.
    in_flight_mean: Option<f64>,
    window_s: f64,
    /// Pass + miss rows.
    completed: u64,
    /// Mean E2E of those rows.
    mean_e2e_ms: Option<f64>,
    /// Censored cohort rows.
    censored: u64,
    /// Their summed lower-bound time in the system (arrival → horizon), ms.
    censored_ms: f64,
    unknown_end: u64,
}

/// L = λ·W with censored rows counted at their lower bound: λ counts the
/// completed and the censored rows per window second, W averages the
/// completed rows' E2E with the censored rows' arrival → horizon. Without
/// censored rows, λ is `completedPerS` and W is the E2E mean, exactly.
fn littles_law(o: Occupancy) -> LittlesLaw {
    let Occupancy {
        in_flight_mean,
        window_s,
        completed,
        mean_e2e_ms,
        censored,
        censored_ms,
        unknown_end,
    } = o;
    let completed_per_s = completed as f64 / window_s;
    let lambda_per_s = (completed + censored) as f64 / window_s;
    let mean_time_ms = match (mean_e2e_ms, censored) {
        (w, 0) => w,
        (w, k) => {
            let completed_ms = w.map_or(0.0, |w| w * completed as f64);
            Some((completed_ms + censored_ms) / (completed + k) as f64)
        }
    };
    let predicted = mean_time_ms.map(|w| lambda_per_s * w / 1000.0);
    let ratio = in_flight_mean
        .zip(predicted.filter(|p| *p > 0.0))
        .map(|(l, p)| l / p);
    let steady_state = ratio.map(|r| (STEADY_RATIO.0..=STEADY_RATIO.1).contains(&r));
    let note = match ratio {
        _ if in_flight_mean.is_none() => Some(
            "not measured: arrival times are unknown (boundary.arrival = \"unknown\"), so no \
             request's time in flight is known"
                .to_owned(),
        ),
        Some(r) if r > STEADY_RATIO.1 => Some(format!(
            "not steady: {r:.2}x more requests were in flight than throughput x latency \
             explains (a growing queue, work cut off at the horizon, or failures holding slots)"
        )),
        Some(r) if r < STEADY_RATIO.0 => Some(format!(
            "not steady: only {r:.2}x the requests in flight that throughput x latency predicts \
             (requests ran on past the window end: a window short against the latencies, or a \
             load that had not settled)"
        )),
        _ => None,
    };
    LittlesLaw {
        in_flight_mean,
        completed_per_s,
        mean_e2e_ms,
        censored_at_lower_bound: censored,
        lambda_per_s,
        mean_time_in_system_ms: mean_time_ms,
        predicted_in_flight: predicted,
        ratio,
        steady_state,
        unknown_end,
        note,
    }
}

fn summary(s: Summary) -> LatencySummary {
    let [p50, p90, p95, p99] = s.percentiles;
    LatencySummary {
        n: s.n,
        min: s.min,
        mean: s.mean,
        p50,
        p90,
        p95,
        p99,
        max: s.max,
    }
}

/// Builds the receipt of a trace from its judgements (one per row, in order).
pub fn build_receipt(trace: &Trace, judgements: &[Judgement], options: ReceiptOptions) -> Receipt {
    let contract = &trace.contract;
    let clip = Clip {
        start_ms: contract.start_ms,
        end_ms: contract.end_ms,
        horizon_ms: contract.horizon_ms,
        instants: Instants::new(contract.start_ms, contract.end_ms, contract.horizon_ms),
    };
    let instants = clip.instants;
    let (mut per_class, unresolved) = tally_rows(trace, judgements, clip);
    let mut all = unresolved;
    for tally in &per_class {
        all.absorb(tally);
    }
    let confidence = options.confidence;
    let (class_latency, all_latency) = latency_blocks(&mut per_class, confidence);
    let classes = contract
        .classes
        .keys()
        .cloned()
        .zip(per_class.into_iter().zip(class_latency))
        .map(|(name, (tally, latency))| {
            let gates = [&contract.classes[&name]];
            let block = tally.finish(trace, &instants, latency, confidence, &gates);
            (name, block)
        })
        .collect();
    let all_gates: Vec<&Gates> = contract.classes.values().collect();
    let rows = options.rows.then(|| row_verdicts(trace, judgements));
    let mut results = Results {
        all: all.finish(trace, &instants, all_latency, confidence, &all_gates),
        classes,
    };
    crate::receipt::gaps::attach(trace, judgements, &mut results, confidence);
    crate::receipt::answer::attach(trace, judgements, &mut results, confidence);
    crate::receipt::server_timing::attach(trace, judgements, &mut results, confidence);
    Receipt {
        schema: RECEIPT_SCHEMA.to_owned(),
        generator: Generator {
            name: crate::GENERATOR_NAME.to_owned(),
            version: crate::GENERATOR_VERSION.to_owned(),
        },
        trace: TraceInfo {
            sha256: trace.sha256.clone(),
            bytes: trace.bytes,
            rows: trace.rows.len() as u64,
        },
        limits: LimitsInfo {
            max_rows: trace.limits.max_rows,
            max_bytes: trace.limits.max_bytes,
        },
        contract: contract_info(contract, confidence),
        results,
        rows,
        sweep: None,
        recovery: None,
        cost: None,
        tokenizer_mismatch: crate::receipt::tokenizer::mismatch(trace),
        energy: None,
        quality: None,
    }
}

/// Tallies the judged rows per class (and those whose class does not
/// resolve). Large traces are tallied in two halves on two threads; tallies
/// merge exactly (integer counts, fixed-point sums, latency values sorted
/// later).
fn tally_rows(trace: &Trace, judgements: &[Judgement], clip: Clip) -> (Vec<Tally>, Tally) {
    let contract = &trace.contract;
    let rows = &trace.rows[..judgements.len().min(trace.rows.len())];
    if judgements.len() < PARALLEL_TALLY_ROWS {
        return tally(judgements, rows, contract, clip);
    }
    let mid = judgements.len() / 2;
    let (first, second) = std::thread::scope(|scope| {
        let first = scope.spawn(|| tally(&judgements[..mid], &rows[..mid], contract, clip));
        let second = tally(&judgements[mid..], &rows[mid..], contract, clip);
        let first = first
            .join()
            .unwrap_or_else(|payload| std::panic::resume_unwind(payload));
        (first, second)
    });
    let (mut per_class, mut unresolved) = first;
    for (mine, theirs) in per_class.iter_mut().zip(second.0) {
        mine.merge(theirs);
    }
    unresolved.merge(second.1);
    (per_class, unresolved)
}

/// The receipt's `contract`: the rules the verdicts were reached under.
fn contract_info(contract: &crate::trace::Contract, confidence: Confidence) -> ContractInfo {
    ContractInfo {
        equality: contract.equality.as_str().to_owned(),
        percentile_method: "nearest-rank".to_owned(),
        percentiles: crate::stats::PercentileSet::default().values(),
        intervals: IntervalContract {
            confidence: confidence.level(),
            share: intervals::method::SHARE.to_owned(),
            rate: intervals::method::RATE.to_owned(),
            quantile: intervals::method::QUANTILE.to_owned(),
        },
        tokens: contract.tokens.as_str().to_owned(),
        streamed: contract.streamed,
        tpot_label: contract.tokens.tpot_label().to_owned(),
        boundary: contract.boundary.clone(),
        workload: contract.workload.clone(),
        window: WindowInfo {
            start_ms: contract.start_ms,
            end_ms: contract.end_ms,
            horizon_ms: contract.horizon_ms,
            duration_ms: contract.end_ms - contract.start_ms,
        },
        warmup: contract.warmup,
        default_class: contract.default_class.clone(),
        classes: contract.classes.clone(),
        arrival_mode: contract.arrival_mode(),
        arrivals_unknown: contract
            .arrivals_unknown()
            .then(|| crate::receipt::ARRIVALS_UNKNOWN_NOTE.to_owned()),
        phases: contract.phases.clone(),
        resources: None,
    }
}

/// One verdict per row, in trace order: what `--rows` embeds in the receipt,
/// and what the per-row text table and CSV show.
pub fn row_verdicts(trace: &Trace, judgements: &[Judgement]) -> Vec<RowVerdict> {
    let class_names: Vec<&String> = trace.contract.classes.keys().collect();
    trace
        .rows
        .iter()
        .zip(judgements)
        .enumerate()
        .map(|(index, (row, j))| {
            let reasons: Vec<String> = match &j.verdict {
                Verdict::Invalid(set) => set.iter().map(|r| r.as_str().to_owned()).collect(),
                Verdict::Excluded(why) => vec![why.as_str().to_owned()],
                Verdict::Censored { cause, known_late } => {
                    let mut v = vec![cause.as_str().to_owned()];
                    if *known_late {
                        v.push("knownLate".to_owned());
                    }
                    v
                }
                Verdict::Failed { reason } => vec![trace.strings.resolve(*reason).to_owned()],
                Verdict::Pass(_) => Vec::new(),
                Verdict::Miss(_, missed) => missed.names().map(str::to_owned).collect(),
            };
            let measured = j.verdict.measured();
            let largest = row
                .gaps_ms
                .get()
                .and_then(|g| crate::receipt::gaps::largest_gap(g));
            RowVerdict {
                index: index as u64,
                id: row.id.get().map(|id| id.to_string()),
                class: j
                    .class
                    .and_then(|c| class_names.get(c))
                    .map(|s| s.to_string()),
                verdict: j.verdict.as_str().to_owned(),
                reasons,
                ttft_ms: measured.and_then(|m| m.ttft_ms),
                tpot_ms: measured.and_then(|m| m.tpot_ms),
                e2e_ms: measured.map(|m| m.e2e_ms),
                labels: match &row.labels {
                    Slot::Set(labels) => Some(
                        labels
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.clone()))
                            .collect::<Labels>(),
                    ),
                    _ => None,
                },
                max_gap_ms: largest.map(|(g, _)| g),
                max_gap_index: largest.map(|(_, i)| i as u64),
                ttfa_ms: measured.and_then(|m| m.ttfa_ms),
            }
        })
        .collect()
}
