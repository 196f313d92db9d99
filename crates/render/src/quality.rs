//! `goodput quality` for a person, and the receipt's quality line: the
//! share of good answers with its interval, the counts, and each item that
//! changed against the baseline. Answers and ids are model output and bank
//! text, untrusted: every one goes through the terminal escaping, and long
//! answers are cut to [`ANSWER_CHARS`] characters.

use std::fmt::Write;

use goodput_core::quality::judge::{change_counts, ChangeKind, QualityBlock, QualityReport};
use goodput_util::escape::terminal;
use goodput_util::figures::percent;

/// The most characters of an answer shown in a change line.
pub const ANSWER_CHARS: usize = 60;

/// An answer as shown: quoted, escaped, cut to [`ANSWER_CHARS`] with `…`;
/// `(failed)` for none.
fn answer(text: Option<&str>) -> String {
    let Some(text) = text else {
        return "(failed)".to_owned();
    };
    let cut: String = text.chars().take(ANSWER_CHARS).collect();
    let more = if text.chars().count() > ANSWER_CHARS {
        "…"
    } else {
        ""
    };
    format!("\"{}{more}\"", terminal(&cut))
}

fn share_text(
    share: Option<f64>,
    interval: Option<goodput_core::intervals::Interval>,
    confidence: f64,
) -> String {
    match (share, interval) {
        (Some(s), Some(i)) => format!(
            "{}   {} interval {} – {}",
            percent(s, 1),
            percent(confidence, 0),
            percent(i.lower, 1),
            percent(i.upper, 1)
        ),
        _ => "n/a (nothing judged)".to_owned(),
    }
}

fn kind_name(kind: ChangeKind) -> &'static str {
    match kind {
        ChangeKind::Worse => "worse",
        ChangeKind::Better => "better",
        ChangeKind::AnswerChanged => "answer changed",
    }
}

/// Renders a judged sidecar.
pub fn render(r: &QualityReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "QUALITY  model {}; sidecar sha256 {}; bank sha256 {}",
        terminal(&r.model),
        r.sidecar_sha256,
        r.bank_sha256
    );
    if let Some(b) = &r.baseline {
        let _ = writeln!(
            o,
            "         against baseline model {}; sidecar sha256 {}",
            terminal(&b.model),
            b.sidecar_sha256
        );
    }
    let c = &r.counts;
    let _ = writeln!(
        o,
        "share    {}  ({} of {} judged, {})",
        share_text(r.share, r.interval, r.confidence),
        c.good(),
        c.judged(),
        r.method
    );
    let _ = writeln!(
        o,
        "items    {}: met {}, missed {}, failed {}, matched baseline {}, changed from baseline {}, not judged {}",
        c.items, c.met, c.missed, c.failed, c.matched, c.changed, c.not_judged
    );
    notes(&mut o, r);
    changes(&mut o, r);
    o
}

fn notes(o: &mut String, r: &QualityReport) {
    if r.counts.not_judged > 0 && r.baseline.is_none() {
        let _ = writeln!(
            o,
            "         {} item(s) have no expectation: give --baseline SIDECAR to judge them",
            r.counts.not_judged
        );
    }
    if let Some(b) = r.baseline.as_ref().filter(|b| b.missing_items > 0) {
        let _ = writeln!(
            o,
            "         {} item(s) have no line in the baseline",
            b.missing_items
        );
    }
    if r.rejudged {
        let _ = writeln!(
            o,
            "         every verdict was recomputed from the bank (--bank) and agrees"
        );
    }
}

fn changes(o: &mut String, r: &QualityReport) {
    if r.baseline.is_none() {
        return;
    }
    let counts = change_counts(&r.changes);
    let n = |k: &str| counts.get(k).copied().unwrap_or(0);
    let _ = writeln!(
        o,
        "changes  {}: worse {}, better {}, answer changed {}",
        r.changes.len(),
        n("worse"),
        n("better"),
        n("answer-changed")
    );
    for c in &r.changes {
        let _ = writeln!(
            o,
            "  {}  {} ({} → {})  {} → {}",
            terminal(&c.id),
            kind_name(c.kind),
            c.before.as_str(),
            c.after.as_str(),
            answer(c.before_answer.as_deref()),
            answer(c.after_answer.as_deref())
        );
    }
}

/// The receipt's quality line (text receipt), when it has a block.
pub fn receipt_line(q: &QualityBlock, confidence: f64) -> String {
    format!(
        "Quality: {} of {} bank answers met their expectation ({}); failed {}, without expectation {} (judge with goodput quality --baseline); sidecar {}\n",
        q.met,
        q.met + q.missed + q.failed,
        share_text(q.share, q.interval, confidence),
        q.failed,
        q.baseline_judged,
        terminal(&q.sidecar)
    )
}

/// An imported figure (`goodput quality import`) for a person.
pub fn imported(q: &goodput_core::quality::lm_eval::ImportedQuality) -> String {
    let interval = match (q.interval, q.stderr) {
        (Some(i), Some(se)) => format!(
            "{} interval {} – {} (value ± z × stderr {se}, {})",
            percent(q.confidence, 0),
            percent(i.lower, 1),
            percent(i.upper, 1),
            q.method
        ),
        _ => "no interval: the harness gave no stderr".to_owned(),
    };
    let samples = q
        .samples
        .map_or_else(String::new, |n| format!("; {n} documents"));
    let model = q
        .model
        .as_deref()
        .map_or_else(String::new, |m| format!("; model {}", terminal(m)));
    format!(
        "IMPORTED  {} task {} metric {}: {}   {interval}{samples}{model}\n          source sha256 {} (declared as imported: not measured beside this load)\n",
        q.harness,
        terminal(&q.task),
        terminal(&q.metric),
        percent(q.value, 1),
        q.source_sha256
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::quality::judge::{BaselineInfo, Change, QualityCounts};
    use goodput_core::quality::Verdict;

    #[test]
    fn a_hostile_answer_and_id_reach_the_terminal_escaped() {
        let report = QualityReport {
            schema: "goodput-quality-report/1".to_owned(),
            sidecar_sha256: "a".repeat(64),
            bank_sha256: "b".repeat(64),
            model: "m\u{1b}]0;owned\u{7}".to_owned(),
            baseline: Some(BaselineInfo {
                sidecar_sha256: "c".repeat(64),
                model: "m".to_owned(),
                missing_items: 0,
            }),
            rejudged: false,
            counts: QualityCounts {
                items: 2,
                met: 1,
                missed: 1,
                ..Default::default()
            },
            share: Some(0.5),
            interval: Some(goodput_core::intervals::Interval {
                lower: 0.1,
                upper: 0.9,
            }),
            confidence: 0.95,
            method: "wilson-score".to_owned(),
            changes: vec![Change {
                id: "q\u{202e}1".to_owned(),
                kind: ChangeKind::Worse,
                before: Verdict::Met,
                after: Verdict::Missed,
                before_answer: Some("4".to_owned()),
                after_answer: Some("\u{1b}[2J\u{1b}[31mrm -rf /\nfake line".to_owned()),
            }],
        };
        let text = render(&report);
        assert!(!text.contains('\u{1b}') && !text.contains('\u{202e}') && !text.contains('\u{7}'));
        assert!(
            text.contains(r#""\u{1b}[2J\u{1b}[31mrm -rf /\u{a}fake line""#),
            "{text}"
        );
        assert!(
            text.contains("  q\\u{202e}1  worse (met → missed)  \"4\" → "),
            "{text}"
        );
        // Every line is our own: the answer's newline did not start one.
        assert_eq!(text.lines().count(), 6, "{text}");
    }

    #[test]
    fn a_long_answer_is_cut_with_an_ellipsis() {
        let long = "x".repeat(ANSWER_CHARS + 5);
        assert_eq!(
            answer(Some(&long)),
            format!("\"{}…\"", "x".repeat(ANSWER_CHARS))
        );
        assert_eq!(answer(None), "(failed)");
    }
}
