//! Tables for spreadsheets and scripts: `goodput analyze --csv` (one line per
//! row) and `goodput frontier --csv` (one line per trace). RFC 4180 (the
//! `csv` crate quotes a field holding a comma, a quote or a line break);
//! numbers are exact, in the shortest form that reads back to the same double,
//! as in JSON; an empty field is a null. Every string from a trace (ids,
//! classes, reasons, string label values, frontier labels) goes through
//! [`cell`], so a spreadsheet shows it instead of running it as a formula.

use std::borrow::Cow;
use std::collections::BTreeMap;

use goodput_core::analyze::Analysis;
use goodput_core::frontier::Frontier;
use goodput_core::receipt::RowVerdict;
use goodput_core::trace::{Labels, Scalar};
use goodput_util::escape::csv_cell;

/// A string from the trace as a cell a spreadsheet will not run.
fn cell(s: &str) -> String {
    csv_cell(s).into_owned()
}

/// The fixed columns of `goodput analyze --csv`; one column per label key
/// (sorted, the union over all rows, at most [`MAX_LABEL_COLUMNS`]) follows them.
pub const ROW_COLUMNS: [&str; 10] = [
    "index",
    "id",
    "class",
    "verdict",
    "reasons",
    "arrivalMs",
    "ttftMs",
    "tpotMs",
    "e2eMs",
    "outputTokens",
];

/// The columns of `goodput frontier --csv`: the points' fields, as in JSON.
pub const FRONTIER_COLUMNS: [&str; 15] = [
    "label",
    "sha256",
    "nominalRatePerS",
    "cohort",
    "offeredPerS",
    "completedPerS",
    "goodputPerS",
    "passShare",
    "failureShare",
    "censoredShare",
    "p95TtftMs",
    "p95TpotMs",
    "tpotLabel",
    "littlesInFlight",
    "inFlightMean",
];

fn number(x: Option<f64>) -> String {
    x.map_or_else(String::new, |v| {
        if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
            format!("{}", v as i64)
        } else {
            format!("{v}")
        }
    })
}

fn scalar(s: &Scalar) -> String {
    match s {
        Scalar::Bool(b) => b.to_string(),
        Scalar::Number(n) => number(Some(*n)),
        Scalar::String(s) => cell(s),
    }
}

/// The most label keys that become columns of `goodput analyze --csv`. A
/// trace with more distinct keys would make the table rows × keys wide (a
/// key per request makes it quadratic), so past the cap the keys present on
/// the most rows (ties by name) keep a column each and every row's other
/// labels go, as one JSON object, into a last column [`OTHER_LABELS`].
pub const MAX_LABEL_COLUMNS: usize = 64;

/// The last column when a trace has more than [`MAX_LABEL_COLUMNS`] label
/// keys: the row's remaining labels as a JSON object (empty when none).
pub const OTHER_LABELS: &str = "otherLabels";

/// The label columns: every key when there are at most
/// [`MAX_LABEL_COLUMNS`], else the most frequent ones; sorted by name. The
/// flag says whether the [`OTHER_LABELS`] column follows them.
fn label_columns(verdicts: &[RowVerdict]) -> (Vec<&str>, bool) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for labels in verdicts.iter().filter_map(|r| r.labels.as_ref()) {
        for key in labels.keys() {
            *counts.entry(key.as_str()).or_default() += 1;
        }
    }
    if counts.len() <= MAX_LABEL_COLUMNS {
        return (counts.into_keys().collect(), false);
    }
    let mut by_use: Vec<(&str, usize)> = counts.into_iter().collect();
    // Stable sort of name-sorted keys: ties stay in name order.
    by_use.sort_by_key(|k| std::cmp::Reverse(k.1));
    let mut keys: Vec<&str> = by_use[..MAX_LABEL_COLUMNS].iter().map(|k| k.0).collect();
    keys.sort_unstable();
    (keys, true)
}

/// The labels of a row that have no column, as a compact JSON object.
fn other_labels(labels: Option<&Labels>, columns: &[&str]) -> String {
    let mut rest = serde_json::Map::new();
    for (key, value) in labels.into_iter().flatten() {
        if columns.binary_search(&key.as_str()).is_err() {
            let mut v = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
            goodput_util::json::normalize_numbers(&mut v);
            rest.insert(key.clone(), v);
        }
    }
    if rest.is_empty() {
        String::new()
    } else {
        serde_json::Value::Object(rest).to_string()
    }
}

/// One line per row of the trace, in trace order: the verdict, its reasons
/// (`;`-separated), the row's arrival, its measured TTFT / TPOT / E2E (empty
/// when the verdict has none), its `outputTokens` as written (empty when
/// absent or unusable), and its labels (at most [`MAX_LABEL_COLUMNS`]
/// columns, then [`OTHER_LABELS`]). Each line is written as it is built, so
/// memory is the output plus one line.
pub fn analysis_rows(analysis: &Analysis) -> Result<Vec<u8>, csv::Error> {
    let verdicts: Cow<'_, [RowVerdict]> = match &analysis.receipt.rows {
        Some(rows) => Cow::Borrowed(rows),
        None => Cow::Owned(analysis.row_verdicts()),
    };
    let (keys, other) = label_columns(&verdicts);
    let mut w = csv::Writer::from_writer(Vec::new());
    let extra = other.then_some(OTHER_LABELS);
    // Label keys come from the trace too.
    let header = keys.iter().map(|k| csv_cell(k).into_owned());
    w.write_record(
        ROW_COLUMNS
            .iter()
            .map(|c| (*c).to_owned())
            .chain(header)
            .chain(extra.map(str::to_owned)),
    )?;
    let mut record = csv::StringRecord::new();
    for (r, raw) in verdicts.iter().zip(&analysis.trace.rows) {
        record.clear();
        record.push_field(&r.index.to_string());
        record.push_field(&csv_cell(r.id.as_deref().unwrap_or_default()));
        record.push_field(&csv_cell(r.class.as_deref().unwrap_or_default()));
        record.push_field(&r.verdict);
        record.push_field(&csv_cell(&r.reasons.join(";")));
        for x in [raw.arrival_ms.value(), r.ttft_ms, r.tpot_ms, r.e2e_ms] {
            record.push_field(&number(x));
        }
        record.push_field(&number(raw.output_tokens.value()));
        for key in &keys {
            let value = r.labels.as_ref().and_then(|l| l.get(*key));
            record.push_field(&value.map_or_else(String::new, scalar));
        }
        if other {
            record.push_field(&other_labels(r.labels.as_ref(), &keys));
        }
        w.write_record(&record)?;
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// One line per point of the frontier, sorted as in the frontier (the knee
/// and the capacity are in the text, Markdown and JSON views).
pub fn frontier_points(f: &Frontier) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(FRONTIER_COLUMNS)?;
    for p in &f.points {
        w.write_record([
            cell(&p.label),
            p.sha256.clone(),
            number(p.nominal_rate_per_s),
            p.cohort.to_string(),
            number(Some(p.offered_per_s)),
            number(Some(p.completed_per_s)),
            number(Some(p.goodput_per_s)),
            number(p.pass_share),
            number(p.failure_share),
            number(p.censored_share),
            number(p.p95_ttft_ms),
            number(p.p95_tpot_ms),
            p.tpot_label.clone(),
            number(p.littles_in_flight),
            number(p.in_flight_mean),
        ])?;
    }
    w.into_inner().map_err(|e| e.into_error().into())
}
