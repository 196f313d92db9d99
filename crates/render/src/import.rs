//! `goodput import`'s comparison for people: the source tool's figures beside
//! the receipt's, then one explained sentence per difference. Pure: it
//! returns text; lines stay within 100 columns.

use std::fmt::Write;

use goodput_import::fidelity::{Fidelity, RateCheck, TokenAgreement};
use goodput_import::gaps::GapChecks;
use goodput_import::{fmt_num, Comparison};

const WIDTH: usize = 100;

/// Renders the comparison; `trace_path`, `rows` and `analyze` say where the
/// trace went and how to judge it again.
pub fn render(c: &Comparison, trace_path: &str, rows: usize, analyze: &str) -> String {
    let mut s = String::new();
    let version = c
        .version
        .as_deref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "imported {}{version} → {trace_path} ({}, goodput-trace/1)",
        c.tool,
        goodput_util::number::count(rows as u64, "row")
    );
    if let Some(shape) = &c.shape {
        wrap_into(&mut s, &format!("shape: {shape}"), "", "  ");
    }
    let _ = writeln!(s, "gates: {} ({})", c.gates, c.equality);
    let _ = writeln!(s);
    let tool_head = format!("{} reported", c.tool);
    let _ = writeln!(
        s,
        "{:<18} {:>16} {:>16}   receipt field (results.all)",
        "figure", tool_head, "goodput"
    );
    for f in &c.figures {
        let show = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), fmt_num);
        let mark = match (f.tool, f.goodput) {
            // Marked as a reader sees them: equal to the shown digits or not.
            (Some(a), Some(b)) if fmt_num(a) != fmt_num(b) => "≠",
            _ => " ",
        };
        let _ = writeln!(
            s,
            "{:<18} {:>16} {:>16} {mark} {}",
            f.name,
            show(f.tool),
            show(f.goodput),
            f.receipt_field
        );
    }
    let _ = writeln!(s);
    checks_into(&mut s, &c.fidelity);
    let _ = writeln!(s, "why they differ:");
    for d in &c.differences {
        wrap_into(&mut s, d, "  - ", "    ");
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "next: {analyze}");
    // The net under the per-string escaping: no raw control byte leaves.
    goodput_util::escape::terminal_lines(&s).into_owned()
}

/// The comparison's first line when no `--slo` was given: the trace declares
/// placeholder gates (`gates`, the writer's default class), so its goodput is
/// not the source tool's goodput under that tool's SLOs.
pub fn placeholder_gates_line(tool: &str, gates: &str) -> String {
    let mut s = String::new();
    wrap_into(
        &mut s,
        &format!(
            "PLACEHOLDER GATES: no --slo given, so goodput below is judged under {gates}, \
             not under the SLOs {tool} used; pass --slo to compare like with like"
        ),
        "",
        "  ",
    );
    s
}

/// The fidelity checks, one line each (the sentences below explain them):
/// configured beside offered rate, and the tool's token counts beside usage.
fn checks_into(s: &mut String, f: &Fidelity) {
    if f.rate.is_none() && f.tokens.is_none() && f.gaps.is_none() {
        return;
    }
    let _ = writeln!(s, "checks:");
    if let Some(r) = &f.rate {
        wrap_into(s, &rate_line(r), "  load    ", "          ");
    }
    if let Some(t) = &f.tokens {
        wrap_into(s, &token_line(t), "  tokens  ", "          ");
    }
    if let Some(g) = &f.gaps {
        wrap_into(s, &gap_line(g), "  gaps    ", "          ");
    }
    let _ = writeln!(s);
}

/// The gap rule's counts, each named check with its number.
fn gap_line(g: &GapChecks) -> String {
    if g.left_out {
        return format!(
            "{} left out (--no-gaps) on {} completed rows",
            g.field, g.rows_with_list
        );
    }
    format!(
        "{} kept on {} of {} completed rows (trimmed {}); more_gaps_than_tokens {}, \
         gaps_exceed_span {}, over_row_cap {}",
        g.field,
        g.kept,
        g.rows_with_list,
        g.trimmed,
        g.more_gaps_than_tokens,
        g.gaps_exceed_span,
        g.over_row_cap
    )
}

fn rate_line(r: &RateCheck) -> String {
    let verdict = match (r.interval, r.beyond_noise) {
        (None, _) => "not judged (not a Poisson or constant schedule)".to_owned(),
        (Some([lo, hi]), true) => {
            format!(
                "{} gaps outside [{lo}, {hi}]: BEYOND POISSON NOISE",
                r.arrivals - 1
            )
        }
        (Some([lo, hi]), false) => {
            format!(
                "{} gaps inside [{lo}, {hi}]: within Poisson noise",
                r.arrivals - 1
            )
        }
    };
    format!(
        "configured {} req/s, offered {} req/s; {verdict}",
        fmt_num(r.configured.per_s),
        fmt_num(r.offered_per_s)
    )
}

fn token_line(t: &TokenAgreement) -> String {
    let show = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), fmt_num);
    let tpot = if t.rows_without_usage == 0 {
        "TPOT from usage".to_owned()
    } else {
        format!(
            "TPOT from usage, and from {} on the {} completed row{} without usage",
            t.client_field,
            t.rows_without_usage,
            if t.rows_without_usage == 1 { "" } else { "s" }
        )
    };
    if t.rows_differing == 0 {
        format!(
            "{} agrees with usage on all {} completed rows; {tpot}",
            t.client_field, t.rows_compared
        )
    } else {
        format!(
            "{} differs from usage on {} of {} completed rows (median {}, max {} tokens); {tpot}",
            t.client_field,
            t.rows_differing,
            t.rows_compared,
            show(t.median_difference),
            show(t.max_difference)
        )
    }
}

/// Appends `text` word-wrapped to [`WIDTH`] columns.
fn wrap_into(s: &mut String, text: &str, first: &str, rest: &str) {
    let mut line = first.to_owned();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            let _ = writeln!(s, "{line}");
            line = rest.to_owned();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    let _ = writeln!(s, "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_sentences_wrap_within_100_columns() {
        let mut s = String::new();
        let text = "word ".repeat(60);
        wrap_into(&mut s, &text, "  - ", "    ");
        assert!(s.lines().count() > 2);
        assert!(s.lines().all(|l| l.chars().count() <= WIDTH), "{s}");
        assert!(s.starts_with("  - word"));
        assert!(s.lines().nth(1).is_some_and(|l| l.starts_with("    word")));
    }
}
