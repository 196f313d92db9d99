//! Capacity search: which open-loop rate a server sustains with at least a
//! target share of requests passing their gates, and, when limits are
//! given, its tails and shares within them too. Pure: the caller records
//! each point the search asks for and reports back what [`judge_point`]
//! makes of its receipt.
//!
//! A point **holds** when its pass share reaches the target and its block
//! meets every limit given (`--max-p95-ttft-ms` and the like, checked by the
//! gate's own evaluation, [`limit_checks`]); without limits, when its pass
//! share reaches the target. Starting from a rate `R`, the search doubles
//! while points hold, halves while they do not if none has held yet, then
//! bisects between the highest rate that held and the lowest one above it
//! that did not, until the bracket is within the precision
//! (`(high − low) / low ≤ precision`) or the point budget is spent. The
//! capacity is the highest rate that held; the bracket says how far above it
//! the true capacity may lie.

use crate::receipt::Block;
use crate::review::criteria::{BlockLimits, Check};
use crate::review::limits::limit_checks;

/// The search's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchSettings {
    /// The first rate, per s.
    pub start_per_s: f64,
    /// The pass share a point must reach to hold (e.g. 0.9).
    pub attainment: f64,
    /// Stop when (high − low) / low is at most this (e.g. 0.05).
    pub precision: f64,
    /// Stop after this many points.
    pub max_points: usize,
}

/// One recorded point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchPoint {
    /// Offered rate, per s.
    pub rate_per_s: f64,
    /// Pass share of its cohort (0 for an empty cohort).
    pub pass_share: f64,
    /// Its block met every limit given (true when none is given).
    pub meets_limits: bool,
}

/// What the search sees of a recorded point, and the check line of each
/// limit given (the gate's evaluation, so the output can name what failed).
/// Without a receipt block (the trace could not be judged) the pass share is
/// 0 and no limit is met: no evidence never holds.
pub fn judge_point(
    rate_per_s: f64,
    block: Option<&Block>,
    limits: &BlockLimits,
) -> (SearchPoint, Vec<Check>) {
    let checks = block.map_or_else(Vec::new, |b| limit_checks(b, limits));
    let point = SearchPoint {
        rate_per_s,
        pass_share: block.and_then(|b| b.rates.pass_share).unwrap_or(0.0),
        meets_limits: match block {
            Some(_) => checks.iter().all(|c| c.pass),
            None => limits.is_empty(),
        },
    };
    (point, checks)
}

/// What the search wants next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Record this rate next.
    Record(f64),
    /// The search is over.
    Done(Capacity),
}

/// Why the search stopped, and what it found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Capacity {
    /// Highest rate that held (None: no point held).
    pub low_per_s: Option<f64>,
    /// Lowest rate above it that did not hold (None: every point held).
    pub high_per_s: Option<f64>,
    /// The bracket reached the precision (false: the point budget ran out,
    /// or the rates cannot be split further).
    pub converged: bool,
}

/// Rates are kept to a thousandth of a request per second, so trace names
/// and repeated points stay exact.
pub fn round_rate(rate: f64) -> f64 {
    (rate * 1000.0).round() / 1000.0
}

/// A rate as written into a point's file name: at most three decimals, no
/// trailing zeros (`20`, `22.5`, `21.125`).
pub fn rate_text(rate: f64) -> String {
    let text = format!("{:.3}", round_rate(rate));
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

impl SearchSettings {
    /// The next step after `points` (in the order recorded).
    pub fn next(&self, points: &[SearchPoint]) -> Step {
        let passes = |p: &&SearchPoint| p.pass_share >= self.attainment && p.meets_limits;
        let low = points
            .iter()
            .filter(passes)
            .map(|p| p.rate_per_s)
            .max_by(f64::total_cmp);
        let high = points
            .iter()
            .filter(|p| !passes(p) && low.is_none_or(|l| p.rate_per_s > l))
            .map(|p| p.rate_per_s)
            .min_by(f64::total_cmp);
        let done = |converged| {
            Step::Done(Capacity {
                low_per_s: low,
                high_per_s: high,
                converged,
            })
        };
        if points.is_empty() {
            return Step::Record(round_rate(self.start_per_s));
        }
        if points.len() >= self.max_points {
            return done(false);
        }
        let next = match (low, high) {
            (Some(l), None) => round_rate(l * 2.0),
            (None, Some(h)) => round_rate(h / 2.0),
            (Some(l), Some(h)) => {
                if (h - l) / l <= self.precision {
                    return done(true);
                }
                round_rate((l + h) / 2.0)
            }
            (None, None) => return done(false),
        };
        if next <= 0.0 || points.iter().any(|p| p.rate_per_s == next) {
            return done(false);
        }
        Step::Record(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(precision: f64, max_points: usize) -> SearchSettings {
        SearchSettings {
            start_per_s: 5.0,
            attainment: 0.9,
            precision,
            max_points,
        }
    }

    /// Runs the search against a server whose pass share is 1 up to
    /// `capacity` and 0 above it; returns the rates asked for and the end.
    fn run(s: SearchSettings, capacity: f64) -> (Vec<f64>, Capacity) {
        let mut points = Vec::new();
        loop {
            match s.next(&points) {
                Step::Record(rate) => points.push(SearchPoint {
                    rate_per_s: rate,
                    pass_share: if rate <= capacity { 1.0 } else { 0.0 },
                    meets_limits: true,
                }),
                Step::Done(c) => return (points.iter().map(|p| p.rate_per_s).collect(), c),
            }
        }
    }

    #[test]
    fn doubles_then_bisects_to_the_precision() {
        // 5, 10, 20 pass; 40 fails; 30 fails (bracket 20–30, 50 %); 25 fails
        // (25 %); 22.5 fails (12.5 %); 21.25 fails (6.25 %); 20.625 fails:
        // (20.625 − 20) / 20 = 3.1 % ≤ 5 %.
        let (rates, c) = run(settings(0.05, 20), 20.0);
        assert_eq!(
            rates,
            vec![5.0, 10.0, 20.0, 40.0, 30.0, 25.0, 22.5, 21.25, 20.625]
        );
        assert_eq!(
            c,
            Capacity {
                low_per_s: Some(20.0),
                high_per_s: Some(20.625),
                converged: true
            }
        );
    }

    #[test]
    fn the_point_budget_stops_the_search_with_its_bracket() {
        let (rates, c) = run(settings(0.05, 5), 27.0);
        // 5, 10, 20 pass; 40 fails; 30 fails; budget spent at 5 points.
        assert_eq!(rates, vec![5.0, 10.0, 20.0, 40.0, 30.0]);
        assert_eq!(
            c,
            Capacity {
                low_per_s: Some(20.0),
                high_per_s: Some(30.0),
                converged: false
            }
        );
    }

    #[test]
    fn a_failing_start_halves_until_a_point_passes() {
        // 5 fails, 2.5 passes; then 3.75 fails; 3.125 passes (3.75 − 3.125 =
        // 20 %); 3.438 passes (9.1 %); bisect 3.594 fails; 3.438..3.594 is
        // 4.5 % ≤ 5 %.
        let (rates, c) = run(settings(0.05, 20), 3.5);
        assert_eq!(rates, vec![5.0, 2.5, 3.75, 3.125, 3.438, 3.594]);
        assert_eq!(c.low_per_s, Some(3.438));
        assert_eq!(c.high_per_s, Some(3.594));
        assert!(c.converged);
    }

    /// The receipt of a synthetic server at `rate`: 10 rows over a 1 s
    /// window, every TTFT exactly 50 ms × rate, ending 100 ms later, under a
    /// 100 s TTFT gate, so every row passes at every rate (pass share 1) and
    /// p95 TTFT = 50 × rate ms.
    fn slowing_server(rate: f64) -> crate::receipt::Receipt {
        let ttft = 50.0 * rate;
        let rows: Vec<serde_json::Value> = (0..10)
            .map(|i| {
                let arrival = f64::from(i) * 100.0;
                serde_json::json!({"id": format!("r{i}"), "arrivalMs": arrival,
                    "status": "completed", "firstTokenMs": arrival + ttft,
                    "completedMs": arrival + ttft + 100.0, "outputTokens": 5})
            })
            .collect();
        let doc = serde_json::json!({
            "schema": "goodput-trace/1",
            "window": {"startMs": 0, "endMs": 1000, "horizonMs": 60000},
            "equality": "inclusive",
            "classes": {"chat": {"ttftMs": 100000, "tpotMs": null, "e2eMs": null}},
            "rows": rows,
        });
        let bytes = serde_json::to_vec(&doc).expect("serialize");
        crate::analyze::analyze_bytes(&bytes, crate::analyze::AnalyzeOptions::default())
            .expect("accepted")
            .receipt
    }

    /// Runs the search against [`slowing_server`], judging each point with
    /// `limits`; returns the rates asked for, the end, and the last point's checks.
    fn run_judged(s: SearchSettings, limits: &BlockLimits) -> (Vec<f64>, Capacity, Vec<Check>) {
        let mut points = Vec::new();
        let mut last = Vec::new();
        loop {
            match s.next(&points) {
                Step::Record(rate) => {
                    let receipt = slowing_server(rate);
                    let (point, checks) = judge_point(rate, Some(&receipt.results.all), limits);
                    points.push(point);
                    last = checks;
                }
                Step::Done(c) => {
                    return (points.iter().map(|p| p.rate_per_s).collect(), c, last);
                }
            }
        }
    }

    #[test]
    fn a_tail_limit_stops_the_doubling_where_the_pass_share_never_would() {
        // p95 TTFT = 50 × rate ms against 1000 ms: 5 (250), 10 (500) and 20
        // (1000, at the limit) hold; 40 (2000), 30 (1500), 25 (1250), 22.5
        // (1125), 21.25 (1062.5) and 20.625 (1031.25) do not:
        // (20.625 − 20) / 20 = 3.1 % ≤ 5 %.
        let limits = BlockLimits {
            max_p95_ttft_ms: Some("1000".parse().expect("decimal")),
            ..BlockLimits::default()
        };
        let (rates, c, last) = run_judged(settings(0.05, 20), &limits);
        assert_eq!(
            rates,
            vec![5.0, 10.0, 20.0, 40.0, 30.0, 25.0, 22.5, 21.25, 20.625]
        );
        assert_eq!(
            c,
            Capacity {
                low_per_s: Some(20.0),
                high_per_s: Some(20.625),
                converged: true
            }
        );
        assert_eq!(last.len(), 1);
        assert_eq!(last[0].name, "p95 ttft ms");
        assert_eq!((last[0].measured, last[0].limit), (Some(1031.25), 1000.0));
        assert!(!last[0].pass);
    }

    #[test]
    fn without_limits_the_same_server_is_judged_by_its_pass_share_alone() {
        // Pass share 1 at every rate: the search doubles until the budget,
        // 5 → 160, every point held.
        let (rates, c, last) = run_judged(settings(0.05, 6), &BlockLimits::default());
        assert_eq!(rates, vec![5.0, 10.0, 20.0, 40.0, 80.0, 160.0]);
        assert_eq!(
            c,
            Capacity {
                low_per_s: Some(160.0),
                high_per_s: None,
                converged: false
            }
        );
        assert!(last.is_empty());
    }

    #[test]
    fn a_point_without_a_receipt_never_holds() {
        let limits = BlockLimits {
            max_p95_ttft_ms: Some("1000".parse().expect("decimal")),
            ..BlockLimits::default()
        };
        let (p, checks) = judge_point(5.0, None, &limits);
        assert_eq!((p.pass_share, p.meets_limits), (0.0, false));
        assert!(checks.is_empty());
    }

    #[test]
    fn rates_are_written_with_at_most_three_decimals() {
        assert_eq!(rate_text(20.0), "20");
        assert_eq!(rate_text(22.5), "22.5");
        assert_eq!(rate_text(21.125), "21.125");
        assert_eq!(rate_text(3.4375), "3.438");
    }
}
