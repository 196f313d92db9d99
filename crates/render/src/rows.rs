//! The per-row verdicts for a person (`goodput analyze --rows` without
//! `--json`): one line per row, in trace order, after the summary. Ids,
//! classes and reasons come from the trace and are shown through
//! [`terminal`] (escaped before they are cut, so the cut counts the
//! characters as shown).

use std::fmt::Write;

use goodput_core::receipt::RowVerdict;

use goodput_util::escape::terminal;
use goodput_util::number::decimal;

/// The longest id shown in full; longer ids are cut with `…`.
const ID_CHARS: usize = 24;

fn cell(x: Option<f64>) -> String {
    x.map_or_else(|| "—".to_owned(), decimal)
}

fn cut(text: &str, keep: usize) -> String {
    if text.chars().count() <= keep {
        text.to_owned()
    } else {
        let head: String = text.chars().take(keep - 1).collect();
        format!("{head}…")
    }
}

/// The ROWS table: index, id, class, verdict, TTFT/TPOT/E2E in ms (rounded
/// for display; `—` when the row has none) and the reasons. `tpot_name` is
/// `tpot`, or `chunk` when tokens are stream chunks.
pub fn table(rows: &[RowVerdict], tpot_name: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "ROWS {:>6}  {:<24} {:<14} {:<9} {:>10} {:>9} {:>10}  reasons",
        "index",
        "id",
        "class",
        "verdict",
        "ttft ms",
        format!("{tpot_name} ms"),
        "e2e ms"
    );
    for r in rows {
        let id =
            r.id.as_deref()
                .map_or_else(|| "(no id)".to_owned(), |id| cut(&terminal(id), ID_CHARS));
        let class = r
            .class
            .as_deref()
            .map_or_else(|| "—".to_owned(), |c| cut(&terminal(c), 14));
        let _ = writeln!(
            o,
            "     {:>6}  {:<24} {:<14} {:<9} {:>10} {:>9} {:>10}  {}",
            r.index,
            id,
            class,
            r.verdict,
            cell(r.ttft_ms),
            cell(r.tpot_ms),
            cell(r.e2e_ms),
            if r.reasons.is_empty() {
                "—".to_owned()
            } else {
                terminal(&r.reasons.join(", ")).into_owned()
            }
        );
    }
    // The net under the per-string escaping: no raw control byte leaves.
    goodput_util::escape::terminal_lines(&o).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(index: u64, id: Option<&str>, verdict: &str, ttft: Option<f64>) -> RowVerdict {
        RowVerdict {
            index,
            id: id.map(str::to_owned),
            class: Some("chat".to_owned()),
            verdict: verdict.to_owned(),
            reasons: if verdict == "miss" {
                vec!["ttft".to_owned(), "e2e".to_owned()]
            } else {
                Vec::new()
            },
            ttft_ms: ttft,
            tpot_ms: None,
            e2e_ms: ttft.map(|t| t + 1000.0),
            labels: None,
            max_gap_ms: None,
            max_gap_index: None,
            ttfa_ms: None,
        }
    }

    #[test]
    fn one_line_per_row_with_rounded_figures() {
        let text = table(
            &[
                row(0, Some("a"), "pass", Some(1000.0 - 715.3)),
                row(1, None, "miss", Some(1001.0)),
                row(2, Some(&"x".repeat(30)), "failed", None),
            ],
            "tpot",
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("ROWS  index  id"), "{text}");
        let words = |l: &str| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            words(lines[1]),
            ["0", "a", "chat", "pass", "284.7", "—", "1284.7", "—"]
        );
        assert_eq!(
            words(lines[2]),
            ["1", "(no", "id)", "chat", "miss", "1001", "—", "2001", "ttft,", "e2e"]
        );
        assert!(lines[3].contains(&format!("{}…", "x".repeat(23))), "{text}");
    }
}
