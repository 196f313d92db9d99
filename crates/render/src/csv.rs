//! Tables for spreadsheets and scripts: `goodput analyze --csv` (one line per
//! row) and `goodput frontier --csv` (one line per trace). RFC 4180 (the
//! `csv` crate quotes a field holding a comma, a quote or a line break);
//! numbers are exact, in the shortest form that reads back to the same double,
//! as in JSON; an empty field is a null.

use std::collections::BTreeSet;

use goodput_core::analyze::Analysis;
use goodput_core::frontier::Frontier;
use goodput_core::trace::Scalar;

/// The fixed columns of `goodput analyze --csv`; one column per label key
/// (sorted, the union over all rows) follows them.
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
        Scalar::String(s) => s.clone(),
    }
}

/// One line per row of the trace, in trace order: the verdict, its reasons
/// (`;`-separated), the row's arrival, its measured TTFT / TPOT / E2E (empty
/// when the verdict has none), its `outputTokens` as written (empty when
/// absent or unusable), and its labels.
pub fn analysis_rows(analysis: &Analysis) -> Result<Vec<u8>, csv::Error> {
    let verdicts = analysis.row_verdicts();
    let keys: BTreeSet<&str> = verdicts
        .iter()
        .filter_map(|r| r.labels.as_ref())
        .flat_map(|l| l.keys().map(String::as_str))
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(ROW_COLUMNS.iter().copied().chain(keys.iter().copied()))?;
    for (r, raw) in verdicts.iter().zip(&analysis.trace.rows) {
        let mut record = vec![
            r.index.to_string(),
            r.id.clone().unwrap_or_default(),
            r.class.clone().unwrap_or_default(),
            r.verdict.clone(),
            r.reasons.join(";"),
            number(raw.arrival_ms.value()),
            number(r.ttft_ms),
            number(r.tpot_ms),
            number(r.e2e_ms),
            number(raw.output_tokens.value()),
        ];
        for key in &keys {
            record.push(
                r.labels
                    .as_ref()
                    .and_then(|l| l.get(*key))
                    .map_or_else(String::new, scalar),
            );
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
            p.label.clone(),
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
