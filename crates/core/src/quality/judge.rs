//! Judging a sidecar (docs/quality.md "Judging"): the share of judged items
//! whose answer met its expectation or matched the baseline's, with its
//! Wilson interval, and the items that changed against a baseline.
//!
//! - An item with an expectation is judged by its recorded verdict: `met`
//!   counts for, `missed` against.
//! - A `failed` item (no answer) is judged and counts against: a server that
//!   drops the hard prompts must not score better for it.
//! - An item without an expectation (`baseline`) is judged only against a
//!   baseline sidecar of the same bank: matched when both answers have the
//!   same sha256, changed otherwise. Without a baseline, or when the
//!   baseline has no answer for it (absent or failed), it is **not judged**
//!   and left out of the share.
//!
//! share = (met + matched) / (met + missed + failed + matched + changed).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::intervals::{method, wilson, Confidence, Interval};
use crate::quality::bank::Bank;
use crate::quality::sidecar::{ItemLine, ItemStatus, Sidecar, Verdict};
use crate::quality::QualityError;

/// The counts behind a quality share.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QualityCounts {
    /// Item lines in the sidecar.
    pub items: u64,
    /// Items whose answer met their expectation.
    pub met: u64,
    /// Items whose answer missed their expectation.
    pub missed: u64,
    /// Items whose request failed (judged, not met).
    pub failed: u64,
    /// Items without an expectation whose answer matched the baseline's.
    pub matched: u64,
    /// Items without an expectation whose answer differs from the baseline's.
    pub changed: u64,
    /// Items without an expectation and no baseline answer to judge them by.
    pub not_judged: u64,
}

impl QualityCounts {
    /// Items that count for the share.
    pub fn good(&self) -> u64 {
        self.met + self.matched
    }

    /// Items judged: the share's denominator.
    pub fn judged(&self) -> u64 {
        self.met + self.missed + self.failed + self.matched + self.changed
    }
}

/// Which way an item changed against the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// It met its expectation (or had an answer) in the baseline and no
    /// longer does: met → missed, met → failed, answered → failed.
    Worse,
    /// It did not meet its expectation in the baseline and now does.
    Better,
    /// The verdict is the same but the answer is not (for an item without
    /// an expectation this is what "changed" means, and it counts against).
    AnswerChanged,
}

/// One item that changed against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Change {
    /// The item id (untrusted text: escape it for display).
    pub id: String,
    /// Which way.
    pub kind: ChangeKind,
    /// The baseline's verdict.
    pub before: Verdict,
    /// This run's verdict.
    pub after: Verdict,
    /// The baseline's answer (null: it failed).
    pub before_answer: Option<String>,
    /// This run's answer (null: it failed).
    pub after_answer: Option<String>,
}

/// The baseline a report was judged against.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BaselineInfo {
    /// sha256 of the baseline sidecar.
    pub sidecar_sha256: String,
    /// The model the baseline's requests named.
    pub model: String,
    /// Items of this run the baseline has no line for.
    pub missing_items: u64,
}

/// `goodput quality --json`: the judged sidecar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QualityReport {
    /// Always `goodput-quality-report/1`.
    pub schema: String,
    /// sha256 of the judged sidecar.
    pub sidecar_sha256: String,
    /// sha256 of the bank both runs answered.
    pub bank_sha256: String,
    /// The model the requests named.
    pub model: String,
    /// The baseline, when one was given.
    pub baseline: Option<BaselineInfo>,
    /// Whether every verdict was recomputed from the bank (`--bank`).
    pub rejudged: bool,
    /// The counts.
    pub counts: QualityCounts,
    /// (met + matched) / judged; null when nothing was judged.
    pub share: Option<f64>,
    /// The share's Wilson score interval; null when nothing was judged.
    pub interval: Option<Interval>,
    /// The interval's two-sided confidence level.
    pub confidence: f64,
    /// Always `wilson-score`.
    pub method: String,
    /// Items that changed against the baseline, in sidecar order.
    pub changes: Vec<Change>,
}

/// Judges `sidecar`, against `baseline` when given (same bank required).
pub fn judge(
    sidecar: &Sidecar,
    baseline: Option<&Sidecar>,
    confidence: Confidence,
) -> Result<QualityReport, QualityError> {
    if let Some(b) = baseline {
        same_bank("--baseline", &b.header.bank_sha256, sidecar)?;
    }
    let mut counts = QualityCounts::default();
    let mut changes = Vec::new();
    let mut missing = 0;
    for (_, item) in &sidecar.items {
        counts.items += 1;
        let before = match baseline {
            Some(b) => {
                let found = b.item(&item.id);
                missing += u64::from(found.is_none());
                found
            }
            None => None,
        };
        count(&mut counts, item, before);
        if let Some(change) = before.and_then(|b| change(b, item)) {
            changes.push(change);
        }
    }
    let (share, interval) = share_of(&counts, confidence);
    Ok(QualityReport {
        schema: crate::quality::REPORT_SCHEMA.to_owned(),
        sidecar_sha256: sidecar.sha256.clone(),
        bank_sha256: sidecar.header.bank_sha256.clone(),
        model: sidecar.header.model.clone(),
        baseline: baseline.map(|b| BaselineInfo {
            sidecar_sha256: b.sha256.clone(),
            model: b.header.model.clone(),
            missing_items: missing,
        }),
        rejudged: false,
        counts,
        share,
        interval,
        confidence: confidence.level(),
        method: method::SHARE.to_owned(),
        changes,
    })
}

/// The share and its Wilson interval (both null when nothing was judged).
fn share_of(counts: &QualityCounts, confidence: Confidence) -> (Option<f64>, Option<Interval>) {
    let (x, n) = (counts.good(), counts.judged());
    let share = (n > 0).then(|| x as f64 / n as f64);
    (share, wilson(x, n, confidence))
}

fn same_bank(what: &'static str, found: &str, sidecar: &Sidecar) -> Result<(), QualityError> {
    if found == sidecar.header.bank_sha256 {
        return Ok(());
    }
    Err(QualityError::OtherBank {
        what,
        found: found.to_owned(),
        expected: sidecar.header.bank_sha256.clone(),
    })
}

/// Adds one item to the counts.
fn count(c: &mut QualityCounts, item: &ItemLine, before: Option<&ItemLine>) {
    match item.verdict {
        Verdict::Met => c.met += 1,
        Verdict::Missed => c.missed += 1,
        Verdict::Failed => c.failed += 1,
        Verdict::Baseline => match before {
            Some(b) if b.status == ItemStatus::Completed => {
                if b.answer_sha256 == item.answer_sha256 {
                    c.matched += 1;
                } else {
                    c.changed += 1;
                }
            }
            _ => c.not_judged += 1,
        },
    }
}

/// The item's change against its baseline line, if any. Worse and better
/// are moves of the item's part in the share (met → missed or failed, an
/// answer → failed, and back); anything else with another answer is an
/// answer change.
fn change(before: &ItemLine, after: &ItemLine) -> Option<Change> {
    use Verdict::{Baseline, Failed, Met, Missed};
    let same_answer = before.answer_sha256 == after.answer_sha256;
    let kind = match (before.verdict, after.verdict) {
        (b, a) if b == a && same_answer => return None,
        (b, a) if b == a => ChangeKind::AnswerChanged,
        (Met, Missed | Failed) | (Baseline, Failed) => ChangeKind::Worse,
        (Missed | Failed, Met) | (Failed, Baseline) => ChangeKind::Better,
        _ => ChangeKind::AnswerChanged,
    };
    Some(Change {
        id: after.id.clone(),
        kind,
        before: before.verdict,
        after: after.verdict,
        before_answer: before.answer.clone(),
        after_answer: after.answer.clone(),
    })
}

/// Recomputes every completed item's verdict from `bank` (same bank
/// required): a recorded verdict the bank's expectation does not give, or an
/// item the bank does not hold, is an error naming the sidecar line.
pub fn rejudge(sidecar: &Sidecar, bank: &Bank) -> Result<(), QualityError> {
    same_bank("--bank", &bank.sha256, sidecar)?;
    for (line, item) in &sidecar.items {
        let Some(bank_item) = bank.item(&item.id) else {
            return Err(QualityError::Line {
                file: crate::quality::FileKind::Sidecar,
                line: *line,
                pointer: "/id".to_owned(),
                problem: format!("{:?} is not an item of the bank", item.id),
            });
        };
        let Some(answer) = &item.answer else { continue };
        let judged = match bank_item.judge(answer) {
            Some(true) => Verdict::Met,
            Some(false) => Verdict::Missed,
            None => Verdict::Baseline,
        };
        if judged != item.verdict {
            return Err(QualityError::VerdictDisagrees {
                line: *line,
                id: item.id.clone(),
                recorded: item.verdict.as_str(),
                judged: judged.as_str(),
            });
        }
    }
    Ok(())
}

/// The receipt's `quality` block (docs/contract.md §7.x): the sidecar beside
/// the trace, judged alone (items without an expectation are not judged
/// there; `goodput quality --baseline` judges them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QualityBlock {
    /// The sidecar's file name, as the trace's `quality.sidecar` gives it.
    pub sidecar: String,
    /// sha256 of the sidecar (the trace's `quality.sha256`, checked).
    pub sidecar_sha256: String,
    /// sha256 of the bank.
    pub bank_sha256: String,
    /// The model the bank's requests named.
    pub model: String,
    /// Item lines.
    pub items: u64,
    /// Met their expectation.
    pub met: u64,
    /// Missed it.
    pub missed: u64,
    /// Failed (judged, not met).
    pub failed: u64,
    /// Items without an expectation (judged only against a baseline run).
    pub baseline_judged: u64,
    /// met / (met + missed + failed); null when that is 0.
    pub share: Option<f64>,
    /// Its Wilson score interval at the receipt's confidence level.
    pub interval: Option<Interval>,
    /// Always `wilson-score`.
    pub method: String,
}

/// The receipt block of `sidecar`, named `name` in the trace.
pub fn receipt_block(name: &str, sidecar: &Sidecar, confidence: Confidence) -> QualityBlock {
    let mut counts = QualityCounts::default();
    for (_, item) in &sidecar.items {
        counts.items += 1;
        count(&mut counts, item, None);
    }
    let (share, interval) = share_of(&counts, confidence);
    QualityBlock {
        sidecar: name.to_owned(),
        sidecar_sha256: sidecar.sha256.clone(),
        bank_sha256: sidecar.header.bank_sha256.clone(),
        model: sidecar.header.model.clone(),
        items: counts.items,
        met: counts.met,
        missed: counts.missed,
        failed: counts.failed,
        baseline_judged: counts.not_judged,
        share,
        interval,
        method: method::SHARE.to_owned(),
    }
}

/// Changes counted by kind (for a summary line).
pub fn change_counts(changes: &[Change]) -> BTreeMap<&'static str, u64> {
    let mut out = BTreeMap::new();
    for c in changes {
        let key = match c.kind {
            ChangeKind::Worse => "worse",
            ChangeKind::Better => "better",
            ChangeKind::AnswerChanged => "answer-changed",
        };
        *out.entry(key).or_insert(0) += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quality::sidecar::tests::{answered, header};
    use crate::quality::{parse_sidecar, FileKind, QualityLimits};

    fn sidecar(lines: &[String]) -> Sidecar {
        let text = format!("{}\n{}\n", header('a'), lines.join("\n"));
        parse_sidecar(text.as_bytes(), FileKind::Sidecar, QualityLimits::default()).unwrap()
    }

    fn ci95() -> Confidence {
        Confidence::new(0.95).unwrap()
    }

    #[test]
    fn three_of_fifty_answers_changed_against_the_baseline() {
        // 50 items without an expectation; the run under load changed the
        // answers of q07, q23 and q41.
        let answer = |i: usize, changed: bool| {
            let text = if changed {
                format!("answer {i} (changed)")
            } else {
                format!("answer {i}")
            };
            answered(&format!("q{i:02}"), &text, "baseline")
        };
        let base: Vec<String> = (0..50).map(|i| answer(i, false)).collect();
        let run: Vec<String> = (0..50)
            .map(|i| answer(i, [7, 23, 41].contains(&i)))
            .collect();
        let r = judge(&sidecar(&run), Some(&sidecar(&base)), ci95()).unwrap();
        assert_eq!(
            (r.counts.matched, r.counts.changed, r.counts.judged()),
            (47, 3, 50)
        );
        // share 47 / 50 = 0.94. Wilson at 95 %: z = 1.959964, z² = 3.841459;
        // denominator 1 + z²/50 = 1.0768292; centre (0.94 + z²/100) / 1.0768292
        // = 0.9784146 / 1.0768292 = 0.9086070; half-width
        // z × √(0.94 × 0.06 / 50 + z² / 10000) / 1.0768292
        // = 1.959964 × √0.0015121 / 1.0768292 = 0.0707780
        // → [0.8378291, 0.9793850].
        assert_eq!(r.share, Some(0.94));
        let i = r.interval.unwrap();
        assert!((i.lower - 0.837_829_1).abs() < 1e-6, "{i:?}");
        assert!((i.upper - 0.979_385_0).abs() < 1e-6, "{i:?}");
        let ids: Vec<&str> = r.changes.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["q07", "q23", "q41"]);
        assert!(r
            .changes
            .iter()
            .all(|c| c.kind == ChangeKind::AnswerChanged));
        assert_eq!(r.changes[0].before_answer.as_deref(), Some("answer 7"));
        assert_eq!(
            r.changes[0].after_answer.as_deref(),
            Some("answer 7 (changed)")
        );
        assert_eq!(r.baseline.as_ref().map(|b| b.missing_items), Some(0));
    }

    #[test]
    fn each_way_an_item_can_change_is_named() {
        let failed = |id: &str| {
            format!(
                r#"{{"id":"{id}","status":"failed","reason":"timeout","verdict":"failed","arrivalMs":1}}"#
            )
        };
        let base = sidecar(&[
            answered("a", "4", "met"),
            answered("b", "5", "missed"),
            answered("c", "x", "baseline"),
            answered("d", "y", "baseline"),
            answered("e", "7", "missed"),
            answered("f", "same", "met"),
        ]);
        let run = sidecar(&[
            answered("a", "5", "missed"),
            answered("b", "4", "met"),
            failed("c"),
            answered("d", "y", "baseline"),
            answered("e", "8", "missed"),
            answered("f", "same", "met"),
            answered("g", "new", "baseline"),
        ]);
        let r = judge(&run, Some(&base), ci95()).unwrap();
        let kinds: Vec<(&str, ChangeKind)> =
            r.changes.iter().map(|c| (c.id.as_str(), c.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("a", ChangeKind::Worse),
                ("b", ChangeKind::Better),
                ("c", ChangeKind::Worse),
                ("e", ChangeKind::AnswerChanged),
            ]
        );
        // met: b, f; missed: a, e; failed: c; matched: d; g has no baseline line.
        let c = &r.counts;
        assert_eq!(
            (
                c.met,
                c.missed,
                c.failed,
                c.matched,
                c.changed,
                c.not_judged
            ),
            (2, 2, 1, 1, 0, 1)
        );
        // (2 + 1) / (2 + 2 + 1 + 1) = 3 / 6.
        assert_eq!(r.share, Some(0.5));
        assert_eq!(r.baseline.as_ref().map(|b| b.missing_items), Some(1));
        assert_eq!(change_counts(&r.changes).get("worse"), Some(&2));
    }

    #[test]
    fn without_a_baseline_items_without_an_expectation_are_not_judged() {
        let run = sidecar(&[
            answered("a", "4", "met"),
            answered("b", "x", "baseline"),
            answered("c", "5", "missed"),
        ]);
        let r = judge(&run, None, ci95()).unwrap();
        // 1 met of 2 judged; b is not judged.
        assert_eq!(
            (r.counts.good(), r.counts.judged(), r.counts.not_judged),
            (1, 2, 1)
        );
        assert_eq!(r.share, Some(0.5));
        assert!(r.changes.is_empty());
        let block = receipt_block("t.quality.jsonl", &run, ci95());
        assert_eq!(
            (block.met, block.missed, block.baseline_judged, block.share),
            (1, 1, 1, Some(0.5))
        );
    }

    #[test]
    fn a_baseline_of_another_bank_is_refused() {
        let run = sidecar(&[answered("a", "4", "met")]);
        let text = format!("{}\n{}\n", header('b'), answered("a", "4", "met"));
        let other = parse_sidecar(
            text.as_bytes(),
            FileKind::Baseline,
            QualityLimits::default(),
        )
        .unwrap();
        let e = judge(&run, Some(&other), ci95()).unwrap_err();
        assert!(
            matches!(
                e,
                QualityError::OtherBank {
                    what: "--baseline",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn rejudging_from_the_bank_catches_a_verdict_it_does_not_give() {
        let bank_text =
            "{\"id\":\"a\",\"prompt\":\"2+2?\",\"expect\":{\"anyOf\":[\"4\",\"four\"]}}\n";
        let bank =
            crate::quality::parse_bank(bank_text.as_bytes(), QualityLimits::default()).unwrap();
        let head = header('0').replace(&"0".repeat(64), &bank.sha256);
        let parse = |line: String| {
            let text = format!("{head}\n{line}\n");
            parse_sidecar(text.as_bytes(), FileKind::Sidecar, QualityLimits::default()).unwrap()
        };
        assert_eq!(rejudge(&parse(answered("a", "four", "met")), &bank), Ok(()));
        let e = rejudge(&parse(answered("a", "five", "met")), &bank).unwrap_err();
        assert_eq!(
            e.to_string(),
            "quality sidecar line 2: item \"a\" is recorded as met but the bank's expectation gives missed"
        );
        let e = rejudge(&parse(answered("z", "four", "met")), &bank).unwrap_err();
        assert!(
            e.to_string().contains("\"z\" is not an item of the bank"),
            "{e}"
        );
    }
}
