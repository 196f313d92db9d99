//! A comparison of two runs for people: a text table per block (the
//! default) or Markdown for a pull request. Class names come from the
//! traces: the text escapes them for a terminal, the Markdown as Markdown
//! (goodput_util::escape).

use goodput_core::compare::{block_name, BlockComparison, Comparison, FigureComparison, Verdict};
use goodput_core::intervals::percent;
use goodput_util::escape;

/// The text table of a comparison.
pub fn render_text(c: &Comparison) -> String {
    let mut out = header(c);
    for block in &c.blocks {
        out.push_str(&format!(
            "\n{} (cohort {} vs {})\n",
            escape::terminal(&title(block)),
            block.cohort_a,
            block.cohort_b
        ));
        out.push_str(&format!(
            "  {:<14} {:>10} {:>10}  {:<34} {:<17}  {}\n",
            "figure",
            "A",
            "B",
            format!("B - A [{} % interval]", percent(c.confidence)),
            "verdict",
            "detectable (80 % power)"
        ));
        for f in &block.figures {
            out.push_str(&format!(
                "  {:<14} {:>10} {:>10}  {:<34} {:<17}  {}\n",
                label(f),
                value(f, f.a),
                value(f, f.b),
                difference(f),
                f.verdict.as_str(),
                detectable(f)
            ));
        }
    }
    out.push_str(&quality_line(c));
    out.push_str(&footer(c));
    // The net under the per-string escaping: no raw control byte leaves.
    goodput_util::escape::terminal_lines(&out).into_owned()
}

/// The Markdown of a comparison (one table per block).
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = format!(
        "### goodput compare: B − A at {} % confidence\n\n",
        percent(c.confidence)
    );
    if let Some(note) = &c.closed_loop {
        out.push_str(&format!("> **Warning: closed loop.** {note}.\n\n"));
    }
    out.push_str(&format!(
        "A: `{}` (cohort {}) · B: `{}` (cohort {}){}\n",
        short(&c.a.sha256),
        c.a.cohort,
        short(&c.b.sha256),
        c.b.cohort,
        if c.judged_under_a {
            " · B re-judged under A's gates"
        } else {
            ""
        }
    ));
    for block in &c.blocks {
        out.push_str(&format!(
            "\n**{}** (cohort {} vs {})\n\n| figure | A | B | B − A [{} % interval] | verdict | detectable (80 % power) |\n|---|---:|---:|---|---|---|\n",
            escape::markdown(&title(block)),
            block.cohort_a,
            block.cohort_b,
            percent(c.confidence)
        ));
        for f in &block.figures {
            let verdict = match f.verdict {
                Verdict::Indistinguishable => f.verdict.as_str().to_owned(),
                Verdict::TooFewValues => format!("_{}_", f.verdict.as_str()),
                v => format!("**{}**", v.as_str()),
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                label(f),
                value(f, f.a),
                value(f, f.b),
                difference(f),
                verdict,
                detectable(f)
            ));
        }
    }
    out.push('\n');
    out.push_str(&quality_line(c));
    out.push_str(&footer(c));
    out
}

fn header(c: &Comparison) -> String {
    let warning = match &c.closed_loop {
        Some(note) => format!("WARNING closed-loop workload: {note}.\n"),
        None => String::new(),
    };
    format!(
        "goodput compare: B - A at {} % confidence{}\n{warning}A  trace {}  cohort {}  window {} s  {}\nB  trace {}  cohort {}  window {} s  {}\n",
        percent(c.confidence),
        if c.judged_under_a {
            " (B re-judged under A's gates)"
        } else {
            ""
        },
        short(&c.a.sha256),
        c.a.cohort,
        c.a.window_s,
        c.a.arrival_mode.as_str(),
        short(&c.b.sha256),
        c.b.cohort,
        c.b.window_s,
        c.b.arrival_mode.as_str()
    )
}

/// `quality  A 98.0 % (50 judged)  B 90.0 % (50 judged)  B - A −8.0 [−17.4, +0.6] pp  indistinguishable`,
/// or nothing when a run has no quality block.
fn quality_line(c: &Comparison) -> String {
    let Some(q) = &c.quality else {
        return String::new();
    };
    let share = |s: Option<f64>, n: u64| match s {
        Some(s) => format!("{:.1} % ({n} judged)", s * 100.0),
        None => "none judged".to_owned(),
    };
    let diff = q.difference.map_or_else(
        || "—".to_owned(),
        |i| {
            let d = q.b.zip(q.a).map_or(0.0, |(b, a)| b - a);
            format!(
                "{:+.1} [{:+.1}, {:+.1}] pp",
                d * 100.0,
                i.lower * 100.0,
                i.upper * 100.0
            )
        },
    );
    let note = q
        .note
        .as_deref()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    format!(
        "\nquality  A {}  B {}  B - A {}  {}{}\n",
        share(q.a, q.judged_a),
        share(q.b, q.judged_b),
        diff,
        q.verdict,
        note
    )
}

fn footer(c: &Comparison) -> String {
    let m = &c.methods;
    let mut pooled = String::new();
    if let Some(method) = &m.pooled_quantile_difference {
        pooled.push_str(&format!("; ITL (gaps pooled over rows) {method}"));
    }
    if let Some(method) = &m.pooled_share_difference {
        pooled.push_str(&format!(
            "; reasoning share (tokens pooled over rows) {method}"
        ));
    }
    format!(
        "\nMethods: shares {}; goodput/s {} (same cohort: Newcombe x cohort / window s), \
         else {}; percentiles {}{pooled}.\n\
         Detectable = (z(1-a/2) + z(0.80)) x SE, SE = interval width / (2 z(1-a/2)); \
         requests per run needed = n x (detectable / |B - A|)^2, n = mean cohort.\n",
        m.share_difference,
        m.rate_difference_known_cohort,
        m.rate_difference,
        m.quantile_difference
    )
}

fn title(block: &BlockComparison) -> String {
    match &block.class {
        None => "all rows".to_owned(),
        Some(_) => format!("class {}", block_name(block)),
    }
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

fn label(f: &FigureComparison) -> String {
    match f.figure.as_str() {
        "goodput" => "goodput/s".to_owned(),
        "pass_share" => "pass share".to_owned(),
        "failure_share" => "failure share".to_owned(),
        "no_answer_share" => "no answer".to_owned(),
        "reasoning_share" => "reasoning".to_owned(),
        other => match other.split_once('_') {
            Some((p, metric)) => format!("{p} {} ms", metric.to_uppercase()),
            None => other.to_owned(),
        },
    }
}

/// A value in the figure's unit: shares as percentages.
fn value(f: &FigureComparison, v: Option<f64>) -> String {
    match v {
        None => "-".to_owned(),
        Some(v) => number(f, v, false),
    }
}

fn number(f: &FigureComparison, v: f64, signed: bool) -> String {
    let sign = if signed && v >= 0.0 { "+" } else { "" };
    match f.unit.as_str() {
        // A run's share never reads 100 % or 0 % unless it is exactly that.
        "share" if !signed => goodput_util::figures::percent(v, 1),
        "share" => format!("{sign}{:.1} %", v * 100.0),
        "req/s" => format!("{sign}{v:.3}"),
        _ => format!("{sign}{v:.1}"),
    }
}

fn difference(f: &FigureComparison) -> String {
    match (f.difference, f.interval) {
        (Some(d), Some(i)) => format!(
            "{} [{}, {}]",
            number(f, d, true),
            number(f, i.lower, true),
            number(f, i.upper, true)
        ),
        (Some(d), None) => format!("{} [no interval]", number(f, d, true)),
        _ => "-".to_owned(),
    }
}

fn detectable(f: &FigureComparison) -> String {
    let mut parts = Vec::new();
    if let Some(m) = f.minimum_detectable {
        parts.push(format!("±{}", number(f, m, false)));
    }
    if let Some(n) = f.required_requests_per_run {
        parts.push(if f.interval.is_some() {
            format!("~{} requests per run to detect this", thousands(n))
        } else {
            format!("needs {} values per run", thousands(n))
        });
    } else if let Some(note) = &f.note {
        parts.push(note.clone());
    }
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join("; ")
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(1_234), "1,234");
        assert_eq!(thousands(12_345_678), "12,345,678");
    }
}
