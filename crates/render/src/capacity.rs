//! The capacity search's closing text: one line per point recorded (in rate
//! order, the frontier) and the capacity with its bracket. Pure: figures in,
//! text out; the command-line layer prints it.

use std::fmt::Write as _;

use goodput_core::frontier::capacity::{rate_text, Capacity};
use goodput_core::receipt::SaturationVerdict;

/// One recorded point of a capacity search, as the frontier shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityRow {
    /// Offered rate asked for, per s.
    pub rate_per_s: f64,
    /// Pass share of the cohort.
    pub pass_share: f64,
    /// Goodput per window second.
    pub goodput_per_s: f64,
    /// Served rate (completions over their span), per s.
    pub served_per_s: Option<f64>,
    /// The saturation verdict.
    pub verdict: SaturationVerdict,
    /// The trace's path.
    pub path: String,
}

/// The frontier (points by rate) and the capacity line.
pub fn render(rows: &[CapacityRow], capacity: &Capacity, attainment: f64) -> String {
    let mut sorted: Vec<&CapacityRow> = rows.iter().collect();
    sorted.sort_by(|a, b| a.rate_per_s.total_cmp(&b.rate_per_s));
    let mut s = String::new();
    let _ = writeln!(
        s,
        "frontier ({} points, target pass share {}):",
        rows.len(),
        goodput_util::figures::percent_short(attainment, None)
    );
    let _ = writeln!(
        s,
        "  {:>9}  {:>10}  {:>10}  {:>9}  {:<12}  trace",
        "rate/s", "pass share", "goodput/s", "served/s", "saturation"
    );
    for r in sorted {
        let _ = writeln!(
            s,
            "  {:>9}  {:>10}  {:>10.2}  {:>9}  {:<12}  {}",
            rate_text(r.rate_per_s),
            goodput_util::figures::percent_beside(r.pass_share, attainment, 1),
            r.goodput_per_s,
            r.served_per_s
                .map_or_else(|| "—".to_owned(), |v| format!("{v:.2}")),
            r.verdict.as_str(),
            r.path
        );
    }
    let tail = if capacity.converged {
        ""
    } else {
        " (not converged: the point budget ran out)"
    };
    let _ = match (capacity.low_per_s, capacity.high_per_s) {
        (Some(low), Some(high)) => writeln!(
            s,
            "capacity: {}/s at a pass share of at least {} (bracket {} – {}/s){tail}",
            rate_text(low),
            goodput_util::figures::percent_short(attainment, None),
            rate_text(low),
            rate_text(high)
        ),
        (Some(low), None) => writeln!(
            s,
            "capacity: at least {}/s (every point passed){tail}",
            rate_text(low)
        ),
        (None, Some(high)) => writeln!(
            s,
            "capacity: below {}/s (no point reached a pass share of {}){tail}",
            rate_text(high),
            goodput_util::figures::percent_short(attainment, None)
        ),
        (None, None) => writeln!(s, "capacity: unknown (no point recorded)"),
    };
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(rate: f64, share: f64, verdict: SaturationVerdict) -> CapacityRow {
        CapacityRow {
            rate_per_s: rate,
            pass_share: share,
            goodput_per_s: rate * share,
            served_per_s: Some(rate.min(20.0)),
            verdict,
            path: format!("trace-{}.json", rate_text(rate)),
        }
    }

    #[test]
    fn the_frontier_is_in_rate_order_and_the_capacity_has_its_bracket() {
        let rows = [
            row(10.0, 1.0, SaturationVerdict::Steady),
            row(40.0, 0.1, SaturationVerdict::Overloaded),
            row(20.0, 0.95, SaturationVerdict::Steady),
        ];
        let c = Capacity {
            low_per_s: Some(20.0),
            high_per_s: Some(40.0),
            converged: false,
        };
        let text = render(&rows, &c, 0.9);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "frontier (3 points, target pass share 90 %):");
        assert!(lines[2].trim_start().starts_with("10 "), "{text}");
        assert!(lines[3].trim_start().starts_with("20 "), "{text}");
        assert!(
            lines[4].contains("10.0 %") && lines[4].contains("overloaded"),
            "{text}"
        );
        assert_eq!(
            lines[5],
            "capacity: 20/s at a pass share of at least 90 % (bracket 20 – 40/s) \
             (not converged: the point budget ran out)"
        );
    }

    #[test]
    fn a_share_just_short_of_the_target_never_reads_as_it() {
        // 0.8996 against 90 %: one decimal would read 90.0 %.
        let rows = [row(30.0, 0.8996, SaturationVerdict::Inconclusive)];
        let c = Capacity {
            low_per_s: None,
            high_per_s: Some(30.0),
            converged: false,
        };
        let text = render(&rows, &c, 0.9);
        assert!(text.contains("89.96 %"), "{text}");
        assert!(!text.contains("90.0 %"), "{text}");
    }
}
