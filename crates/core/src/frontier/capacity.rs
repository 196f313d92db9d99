//! Capacity search: which open-loop rate a server sustains with at least a
//! target share of requests passing their gates. Pure: the caller records
//! each point the search asks for and reports its pass share back.
//!
//! Starting from a rate `R`, the search doubles while points pass (pass
//! share ≥ target), halves while they fail if no point has passed yet, then
//! bisects between the highest passing rate and the lowest failing one until
//! the bracket is within the precision (`(high − low) / low ≤ precision`) or
//! the point budget is spent. The capacity is the highest passing rate; the
//! bracket says how far above it the true capacity may lie.

/// The search's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchSettings {
    /// The first rate, per s.
    pub start_per_s: f64,
    /// The pass share a point must reach to pass (e.g. 0.9).
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
    /// Highest passing rate (None: no point passed).
    pub low_per_s: Option<f64>,
    /// Lowest failing rate above it (None: no point failed).
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
        let passes = |p: &&SearchPoint| p.pass_share >= self.attainment;
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

    #[test]
    fn rates_are_written_with_at_most_three_decimals() {
        assert_eq!(rate_text(20.0), "20");
        assert_eq!(rate_text(22.5), "22.5");
        assert_eq!(rate_text(21.125), "21.125");
        assert_eq!(rate_text(3.4375), "3.438");
    }
}
