//! The quality criterion of `gate --min-quality F` (docs/quality.md "The
//! gate"): its own check line, `quality share >= F`, beside the latency
//! criteria and independent of them, so a configuration cannot buy goodput
//! with broken answers.
//!
//! The figure is the share of the trace's quality sidecar (judged against
//! a baseline sidecar when one is given), or a figure imported from an
//! evaluation harness. It is compared exactly (docs/contract.md §9.2): the
//! counts `good / judged` against the decimal as written, or the imported
//! double against it. No figure — the trace names no sidecar, the sidecar
//! is not beside it, nothing was judged — fails: no evidence is never an
//! admission.

use crate::quality::judge::QualityReport;
use crate::quality::lm_eval::ImportedQuality;
use crate::review::check::Check;
use crate::review::exact::{self, Decimal};
use goodput_util::figures::percent;

/// The check's name in every view.
pub const NAME: &str = "quality share";

/// Where the gate's quality figure comes from.
#[derive(Clone, Copy, Debug)]
pub enum QualityFigure<'a> {
    /// A judged sidecar, with its file name.
    Sidecar(&'a str, &'a QualityReport),
    /// An imported figure.
    Imported(&'a ImportedQuality),
    /// No figure, and why (shown in the check's note).
    Missing(&'a str),
}

/// The `quality share >= min` check line.
pub fn quality_check(figure: QualityFigure<'_>, min: &Decimal) -> Check {
    let (measured, pass, note) = match figure {
        QualityFigure::Sidecar(name, r) => {
            let (x, n) = (r.counts.good(), r.counts.judged());
            let pass = exact::share_at_least(x, n, min);
            (r.share, pass, sidecar_note(name, r))
        }
        QualityFigure::Imported(q) => (
            Some(q.value),
            exact::at_least(q.value, min),
            imported_note(q),
        ),
        QualityFigure::Missing(why) => (None, false, why.to_owned()),
    };
    Check {
        name: NAME,
        measured,
        comparison: ">=",
        limit: min.to_f64(),
        derivation: None,
        pass,
        class: None,
        note: Some(note),
    }
}

fn interval_text(i: Option<crate::intervals::Interval>, confidence: f64) -> String {
    match i {
        Some(i) => format!(
            "{} interval {}–{}",
            percent(confidence, 0),
            percent(i.lower, 1),
            percent(i.upper, 1)
        ),
        None => "no interval".to_owned(),
    }
}

fn sidecar_note(name: &str, r: &QualityReport) -> String {
    let c = &r.counts;
    let against = if r.baseline.is_some() {
        ", against the baseline"
    } else {
        ""
    };
    let mut note = format!(
        "{} of {} judged items good{against}, {}; sidecar {}",
        c.good(),
        c.judged(),
        interval_text(r.interval, r.confidence),
        goodput_util::escape::terminal(name)
    );
    if c.not_judged > 0 {
        note.push_str(&format!(
            "; {} item(s) without an expectation not judged (give --quality-baseline)",
            c.not_judged
        ));
    }
    note
}

fn imported_note(q: &ImportedQuality) -> String {
    format!(
        "imported from {} task {} metric {}, {}; source sha256 {}",
        q.harness,
        goodput_util::escape::terminal(&q.task),
        goodput_util::escape::terminal(&q.metric),
        interval_text(q.interval, q.confidence),
        q.source_sha256
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quality::judge::QualityCounts;

    fn report(met: u64, missed: u64) -> QualityReport {
        let counts = QualityCounts {
            items: met + missed,
            met,
            missed,
            ..Default::default()
        };
        QualityReport {
            schema: crate::quality::REPORT_SCHEMA.to_owned(),
            sidecar_sha256: String::new(),
            bank_sha256: String::new(),
            model: "m".to_owned(),
            baseline: None,
            rejudged: false,
            share: Some(met as f64 / (met + missed) as f64),
            interval: None,
            confidence: 0.95,
            method: "wilson-score".to_owned(),
            counts,
            changes: vec![],
        }
    }

    fn min(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn the_share_must_reach_the_minimum_compared_exactly() {
        // 49 / 50 = 0.98 exactly: at the minimum admits (>=).
        let c = quality_check(
            QualityFigure::Sidecar("t.quality.jsonl", &report(49, 1)),
            &min("0.98"),
        );
        assert!(c.pass);
        // 48 / 50 = 0.96 < 0.98 refuses.
        let c = quality_check(
            QualityFigure::Sidecar("t.quality.jsonl", &report(48, 2)),
            &min("0.98"),
        );
        assert!(!c.pass);
        assert_eq!(c.measured, Some(0.96));
        // 98 / 100 against 0.981: 0.98 < 0.981 refuses.
        assert!(!quality_check(QualityFigure::Sidecar("s", &report(98, 2)), &min("0.981")).pass);
    }

    #[test]
    fn no_figure_fails_with_the_reason_as_its_note() {
        let c = quality_check(
            QualityFigure::Missing("the trace names no quality sidecar"),
            &min("0.9"),
        );
        assert!(!c.pass);
        assert_eq!(c.measured, None);
        assert_eq!(
            c.note.as_deref(),
            Some("the trace names no quality sidecar")
        );
        // Nothing judged (every item without an expectation, no baseline): no share.
        let mut r = report(0, 0);
        r.share = None;
        assert!(!quality_check(QualityFigure::Sidecar("s", &r), &min("0")).pass);
    }
}
