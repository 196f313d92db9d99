//! Judgements → receipt: counting, rates, latency summaries and reasons, once
//! per class and once for all rows. Pure: no I/O, no clock.

use std::collections::BTreeMap;

use crate::stats::{summarize, Summary};
use crate::trace::{Labels, Slot, Trace};
use crate::verdict::{Censor, Exclusion, Judgement, Verdict};

use super::{
    Block, ContractInfo, Counts, Generator, LatencyBlock, LatencySummary, LimitsInfo, Rates,
    Reasons, Receipt, Results, RowVerdict, TraceInfo, WindowInfo, RECEIPT_SCHEMA,
};

/// What the caller asked the receipt to contain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiptOptions {
    /// Include per-row verdicts (`--rows`).
    pub rows: bool,
}

/// Running totals for one block.
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
}

impl Tally {
    fn add(&mut self, verdict: &Verdict) {
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
            }
            Verdict::Failed { reason } => {
                c.cohort += 1;
                c.failed += 1;
                *self.failure.entry(*reason).or_insert(0) += 1;
            }
            Verdict::Pass(m) | Verdict::Miss(m, _) => {
                c.cohort += 1;
                self.output_tokens += m.output_tokens;
                self.ttft.push(m.ttft_ms);
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

    fn finish(mut self, trace: &Trace) -> Block {
        let window_s = trace.contract.window_s();
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
        };
        let latency = LatencyBlock {
            ttft_ms: summary(summarize(&mut self.ttft)),
            tpot_ms: summary(summarize(&mut self.tpot)),
            e2e_ms: summary(summarize(&mut self.e2e)),
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
        Block {
            counts: c,
            rates,
            latency,
            reasons,
        }
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
    let mut all = Tally::default();
    let mut per_class: Vec<Tally> = contract.classes.keys().map(|_| Tally::default()).collect();
    for j in judgements {
        all.add(&j.verdict);
        if let Some(tally) = j.class.and_then(|c| per_class.get_mut(c)) {
            tally.add(&j.verdict);
        }
    }
    let classes = contract
        .classes
        .keys()
        .cloned()
        .zip(per_class)
        .map(|(name, tally)| (name, tally.finish(trace)))
        .collect();
    let rows = options.rows.then(|| row_verdicts(trace, judgements));
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
        contract: ContractInfo {
            equality: contract.equality.as_str().to_owned(),
            percentile_method: "nearest-rank".to_owned(),
            tokens: contract.tokens.as_str().to_owned(),
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
        },
        results: Results {
            all: all.finish(trace),
            classes,
        },
        rows,
        sweep: None,
    }
}

fn row_verdicts(trace: &Trace, judgements: &[Judgement]) -> Vec<RowVerdict> {
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
            RowVerdict {
                index: index as u64,
                id: row.id.get().map(|id| id.to_string()),
                class: j
                    .class
                    .and_then(|c| class_names.get(c))
                    .map(|s| s.to_string()),
                verdict: j.verdict.as_str().to_owned(),
                reasons,
                ttft_ms: measured.map(|m| m.ttft_ms),
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
            }
        })
        .collect()
}
