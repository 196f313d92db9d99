//! The capacity search's closing text: one line per point recorded (in rate
//! order, the frontier) and the capacity with its bracket; with limits, the
//! criteria it was judged by and what failed at the first rate above it that
//! did not hold. Pure: figures in, text out; the command-line layer prints it.

use std::fmt::Write as _;

use goodput_core::frontier::capacity::{rate_text, Capacity};
use goodput_core::frontier::{CriterionCheck, Limit};
use goodput_core::receipt::SaturationVerdict;

use crate::frontier::{criteria_text, criterion_text, failed_at, limit_sentence};

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
    /// Each limit given, checked on this point (empty without limits).
    pub checks: Vec<CriterionCheck>,
}

/// What failed at a point that did not hold: the pass share when short of
/// the target, then each limit it failed.
fn failures(row: &CapacityRow, attainment: f64) -> Vec<CriterionCheck> {
    let short = (row.pass_share < attainment).then(|| CriterionCheck {
        name: "pass share".to_owned(),
        measured: Some(row.pass_share),
        comparison: ">=".to_owned(),
        limit: attainment,
        pass: false,
    });
    let failed = row.checks.iter().filter(|c| !c.pass).cloned();
    short.into_iter().chain(failed).collect()
}

/// A recorded point's limits, each against its value, and whether they all
/// hold (`None` without limits): `  p95 TTFT 1102 ms > 1000 ms → not held`.
pub fn point_limits_line(checks: &[CriterionCheck]) -> Option<String> {
    if checks.is_empty() {
        return None;
    }
    let list: Vec<String> = checks.iter().map(criterion_text).collect();
    let verdict = if checks.iter().all(|c| c.pass) {
        "every limit holds"
    } else {
        "not held"
    };
    Some(format!("  {} → {verdict}\n", list.join("; ")))
}

/// The frontier (points by rate) and the capacity line; `limits` are the
/// criteria besides the pass share that a point had to hold (none: the
/// text is the pass-share search's, unchanged).
pub fn render(
    rows: &[CapacityRow],
    capacity: &Capacity,
    attainment: f64,
    limits: &[Limit],
) -> String {
    let mut sorted: Vec<&CapacityRow> = rows.iter().collect();
    sorted.sort_by(|a, b| a.rate_per_s.total_cmp(&b.rate_per_s));
    let mut s = String::new();
    let extra: String = limits
        .iter()
        .map(|l| format!(", {}", limit_sentence(l)))
        .collect();
    let _ = writeln!(
        s,
        "frontier ({} points, target pass share {}{extra}):",
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
    if limits.is_empty() {
        pass_share_capacity(&mut s, capacity, attainment, tail);
    } else {
        judged_capacity(&mut s, rows, capacity, attainment, limits, tail);
    }
    s
}

/// The capacity line of a search by the pass share alone.
fn pass_share_capacity(s: &mut String, capacity: &Capacity, attainment: f64, tail: &str) {
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
}

/// The capacity line of a search judged by limits too, then what failed at
/// the first rate above the capacity that did not hold (`bracket`'s high).
fn judged_capacity(
    s: &mut String,
    rows: &[CapacityRow],
    capacity: &Capacity,
    attainment: f64,
    limits: &[Limit],
    tail: &str,
) {
    let criteria = criteria_text(attainment, limits);
    let _ = match (capacity.low_per_s, capacity.high_per_s) {
        (Some(low), Some(high)) => writeln!(
            s,
            "capacity: {}/s holding {criteria} (bracket {} – {}/s){tail}",
            rate_text(low),
            rate_text(low),
            rate_text(high)
        ),
        (Some(low), None) => writeln!(
            s,
            "capacity: at least {}/s (every point held {criteria}){tail}",
            rate_text(low)
        ),
        (None, Some(high)) => writeln!(
            s,
            "capacity: below {}/s (no point held {criteria}){tail}",
            rate_text(high)
        ),
        (None, None) => writeln!(s, "capacity: unknown (no point recorded)"),
    };
    let first_not_held = capacity
        .high_per_s
        .and_then(|high| rows.iter().find(|r| r.rate_per_s == high));
    if let Some(row) = first_not_held {
        let failed = failures(row, attainment);
        let _ = writeln!(s, "  not held at {}", failed_at(row.rate_per_s, &failed));
    }
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
            checks: Vec::new(),
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
        let text = render(&rows, &c, 0.9, &[]);
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
        let text = render(&rows, &c, 0.9, &[]);
        assert!(text.contains("89.96 %"), "{text}");
        assert!(!text.contains("90.0 %"), "{text}");
    }

    fn ttft_check(measured: f64) -> CriterionCheck {
        CriterionCheck {
            name: "p95 ttft ms".into(),
            measured: Some(measured),
            comparison: "<=".into(),
            limit: 1000.0,
            pass: measured <= 1000.0,
        }
    }

    #[test]
    fn a_search_judged_by_a_limit_names_what_failed_above_the_capacity() {
        // Pass share holds at 2, 3 and 4/s; p95 TTFT 600, 900, 1102 ms
        // against 1000 ms: 3/s held, 4/s did not, by its p95 TTFT alone.
        let rows: Vec<CapacityRow> = [(2.0, 600.0), (3.0, 900.0), (4.0, 1102.0)]
            .iter()
            .map(|&(rate, ttft)| CapacityRow {
                checks: vec![ttft_check(ttft)],
                ..row(rate, 0.95, SaturationVerdict::Steady)
            })
            .collect();
        let c = Capacity {
            low_per_s: Some(3.0),
            high_per_s: Some(4.0),
            converged: false,
        };
        let limits = [Limit {
            name: "p95 ttft ms".into(),
            comparison: "<=".into(),
            limit: 1000.0,
        }];
        let text = render(&rows, &c, 0.9, &limits);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "frontier (3 points, target pass share 90 %, p95 TTFT ≤ 1000 ms):"
        );
        assert_eq!(
            lines[5],
            "capacity: 3/s holding pass share ≥ 90 %, p95 TTFT ≤ 1000 ms (bracket 3 – 4/s) \
             (not converged: the point budget ran out)"
        );
        assert_eq!(lines[6], "  not held at 4/s: p95 TTFT 1102 ms > 1000 ms");
        // A point short of the target names its pass share first.
        let mut short = rows.clone();
        short[2].pass_share = 0.85;
        let text = render(&short, &c, 0.9, &limits);
        assert!(
            text.contains(
                "not held at 4/s: pass share 85.0 % < 90.0 %; p95 TTFT 1102 ms > 1000 ms"
            ),
            "{text}"
        );
        assert_eq!(
            point_limits_line(&rows[2].checks).as_deref(),
            Some("  p95 TTFT 1102 ms > 1000 ms → not held\n")
        );
        assert_eq!(point_limits_line(&[]), None);
    }
}
