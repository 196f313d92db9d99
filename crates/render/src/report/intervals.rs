//! The headline figures with their intervals, as people read them:
//! "58.5 % (49.1 %–67.3 %)": the HTML report's "How sure" section.

use std::fmt::Write;

use crate::report::html::escape;
use goodput_core::intervals::{percent, Interval, QuantileInterval};
use goodput_core::receipt::{Block, Receipt};
use goodput_util::figures;

/// A share with its interval, e.g. `58.5 % (49.1 %–67.3 %)`; `—` for an
/// empty cohort. Each figure goes through [`percent`](goodput_util::figures::percent),
/// so none reads 100 % or 0 % unless it is exactly that (2,499 of 2,500:
/// `99.96 % (99.8 %–99.99 %)`, never `100.0 %`).
pub fn share_with_interval(share: Option<f64>, interval: Option<Interval>) -> String {
    match (share, interval) {
        (Some(s), Some(i)) => format!(
            "{} ({}–{})",
            figures::percent(s, 1),
            figures::percent(i.lower, 1),
            figures::percent(i.upper, 1)
        ),
        _ => "—".to_owned(),
    }
}

/// A rate with its interval, e.g. `4.500 (3.600–5.560)`.
pub fn rate_with_interval(rate: f64, interval: Interval) -> String {
    format!("{rate:.3} ({:.3}–{:.3})", interval.lower, interval.upper)
}

/// A percentile with its interval, e.g. `812.0 (640.5–990.2)`, or the value
/// and "n too small" when the order statistics give none.
pub fn percentile_with_interval(value: Option<f64>, interval: &QuantileInterval) -> String {
    match (value, interval.lower, interval.upper) {
        (None, _, _) => "—".to_owned(),
        (Some(v), Some(lo), Some(hi)) => format!("{v:.1} ({lo:.1}–{hi:.1})"),
        (Some(v), _, _) => format!("{v:.1} (n too small)"),
    }
}

/// The report's table of intervals: one row per block.
pub fn report_section(r: &Receipt) -> String {
    let mut o = String::new();
    let level = percent(r.contract.intervals.confidence);
    let tp = if r.contract.tpot_label == "tpot" {
        "TPOT"
    } else {
        "chunk cadence"
    };
    // A TTFA column only when some block has answer figures (§10.16).
    let with_ttfa = r.results.all.answer.is_some();
    let ttfa_head = if with_ttfa {
        "<th>p95 TTFA ms</th>"
    } else {
        ""
    };
    let _ = writeln!(
        o,
        "<section id=\"intervals-section\">\n<h2>How sure: {level} % intervals</h2>\n\
         <p class=\"note\">Each figure with the range a rerun of the same size would likely give: \
         shares by the Wilson score interval, goodput/s by the exact Poisson interval on the pass count, \
         percentiles by distribution-free order statistics (\"n too small\" when there are too few values \
         for one). <code>goodput compare A B</code> says whether two runs differ beyond this noise.</p>\n\
         <div class=\"scroll\">\n<table id=\"intervals\">\n<thead>\n<tr><th class=\"name\">block</th>\
         <th class=\"first\">goodput/s</th><th>pass share</th><th>failure share</th><th>censored share</th>\
         <th class=\"first\">p95 TTFT ms</th><th>p95 {tp} ms</th><th>p95 E2E ms</th><th>p99 E2E ms</th>{ttfa_head}</tr>\n</thead>\n<tbody>"
    );
    let blocks = std::iter::once((None, &r.results.all))
        .chain(r.results.classes.iter().map(|(k, b)| (Some(k.as_str()), b)));
    for (name, b) in blocks {
        row(&mut o, name, b, with_ttfa);
    }
    let _ = writeln!(o, "</tbody>\n</table>\n</div>\n</section>");
    o
}

fn row(o: &mut String, name: Option<&str>, b: &Block, with_ttfa: bool) {
    let i = &b.intervals;
    let rt = &b.rates;
    let l = &b.latency;
    let cells = [
        (
            "goodputPerS",
            rate_with_interval(rt.goodput_per_s, i.goodput_per_s),
        ),
        (
            "passShare",
            share_with_interval(rt.pass_share, i.pass_share),
        ),
        (
            "failureShare",
            share_with_interval(rt.failure_share, i.failure_share),
        ),
        (
            "censoredShare",
            share_with_interval(rt.censored_share, i.censored_share),
        ),
        (
            "ttft-p95",
            percentile_with_interval(l.ttft_ms.p95, &i.ttft_ms.p95),
        ),
        (
            "tpot-p95",
            percentile_with_interval(l.tpot_ms.p95, &i.tpot_ms.p95),
        ),
        (
            "e2e-p95",
            percentile_with_interval(l.e2e_ms.p95, &i.e2e_ms.p95),
        ),
        (
            "e2e-p99",
            percentile_with_interval(l.e2e_ms.p99, &i.e2e_ms.p99),
        ),
    ];
    let ttfa = with_ttfa.then(|| {
        let text = b.answer.as_ref().map_or_else(
            || "—".to_owned(),
            |a| percentile_with_interval(a.ttfa_ms.p95, &a.intervals.ttfa_ms.p95),
        );
        ("ttfa-p95", text)
    });
    let _ = write!(
        o,
        "<tr><td class=\"name\">{}</td>",
        escape(name.unwrap_or("all rows"))
    );
    for (k, (col, text)) in cells.into_iter().chain(ttfa).enumerate() {
        let cls = if k == 0 || k == 4 {
            " class=\"first\""
        } else {
            ""
        };
        let _ = write!(o, "<td{cls} data-col=\"{col}\">{}</td>", two_lines(&text));
    }
    let _ = writeln!(o, "</tr>");
}

/// A figure over its interval, on two lines so the table fits the page:
/// `58.5 %<br>(49.1 %–67.3 %)` (the interval muted); escaped.
fn two_lines(text: &str) -> String {
    let text = escape(text);
    match text.split_once(" (") {
        Some((value, interval)) => {
            format!("{value}<br><span class=\"muted\">({interval}</span>")
        }
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_with_their_intervals() {
        let i = Interval {
            lower: 0.491,
            upper: 0.673,
        };
        assert_eq!(
            share_with_interval(Some(0.585), Some(i)),
            "58.5 % (49.1 %–67.3 %)"
        );
        assert_eq!(share_with_interval(None, None), "—");
        // 2,499 of 2,500 (Wilson 95 %: 0.997738–0.999929): one decimal would
        // print 100.0 % for the share and its upper bound.
        let near_one = Interval {
            lower: 0.997_737_614_631_025_5,
            upper: 0.999_929_386_688_041_2,
        };
        assert_eq!(
            share_with_interval(Some(0.9996), Some(near_one)),
            "99.96 % (99.8 %–99.99 %)"
        );
        // 1 of 2,500 failed (0.0000706–0.00226): never 0.0 %.
        let near_zero = Interval {
            lower: 7.061_331_195_866_894e-5,
            upper: 0.002_262_385_368_974_366_3,
        };
        assert_eq!(
            share_with_interval(Some(0.0004), Some(near_zero)),
            "0.04 % (0.01 %–0.2 %)"
        );
        assert_eq!(
            rate_with_interval(
                4.5,
                Interval {
                    lower: 3.6,
                    upper: 5.56
                }
            ),
            "4.500 (3.600–5.560)"
        );
    }
}
