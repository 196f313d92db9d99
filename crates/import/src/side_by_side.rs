//! The source tool's figures set beside the receipt's, figure by figure,
//! with every difference the goodput contract makes on purpose explained in
//! a sentence (failures in the denominator, one-token TPOT, percentile
//! method, window, the tool's own gates).

use schemars::JsonSchema;
use serde::Serialize;

use goodput_core::receipt::{LatencySummary, Receipt};
use goodput_core::trace::write::RowStatus;

use crate::{Imported, Reported};

/// The source tool's figures beside the receipt's, with every difference
/// explained. Built by [`compare`]; rendered by `render::import`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// The source tool.
    pub tool: String,
    /// Its version, when known.
    pub version: Option<String>,
    /// The shape of the tool's file that was detected (the trace's
    /// `boundary.shape`), when the tool has several (vLLM's changed across
    /// releases, and the shape decides the mapping).
    pub shape: Option<String>,
    /// The gates the trace declares (`class: ttft=…,tpot=…,e2e=…`).
    pub gates: String,
    /// The equality rule.
    pub equality: String,
    /// Figure by figure.
    pub figures: Vec<FigurePair>,
    /// Why figures differ, one sentence each.
    pub differences: Vec<String>,
    /// Token-count agreement and configured-vs-offered rate.
    pub fidelity: crate::fidelity::Fidelity,
}

/// One figure as the tool reported it and as the receipt gives it.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FigurePair {
    /// What it is (`requests`, `goodput/s`, `TTFT p99 ms`, …).
    pub name: String,
    /// The tool's value, when its file carries one.
    pub tool: Option<f64>,
    /// The receipt's value (`all` block), when defined.
    pub goodput: Option<f64>,
    /// Where goodput's figure comes from in the receipt.
    pub receipt_field: String,
}

/// Whether two reported rates are the same figure (the tool rounds nothing,
/// but divides in another order; 1e-9 relative is far below any display).
pub fn same_figure(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// Pairs the tool's figures with the receipt's and explains each difference.
pub fn compare(imported: &Imported, receipt: &Receipt) -> Comparison {
    let r = &imported.reported;
    let all = &receipt.results.all;
    let c = &all.counts;
    let trace = &imported.trace;
    let count = |n: u64| Some(n as f64);
    let q = |s: &LatencySummary| (s.p50, s.p99);
    let (ttft50, ttft99) = q(&all.latency.ttft_ms);
    let (tpot50, tpot99) = q(&all.latency.tpot_ms);
    let (e2e50, e2e99) = q(&all.latency.e2e_ms);
    let pair = |name: &str, tool: Option<f64>, goodput: Option<f64>, field: &str| FigurePair {
        name: name.to_owned(),
        tool,
        goodput,
        receipt_field: field.to_owned(),
    };
    let window_s = (receipt.contract.window.end_ms - receipt.contract.window.start_ms) / 1000.0;
    let figures = vec![
        pair(
            "requests",
            r.requests.map(|n| n as f64),
            count(c.cohort),
            "counts.cohort",
        ),
        pair(
            "successful",
            r.successful.map(|n| n as f64),
            count(c.pass + c.miss),
            "counts.pass + counts.miss",
        ),
        pair(
            "failed",
            r.failed.map(|n| n as f64),
            count(c.failed),
            "counts.failed",
        ),
        pair(
            "incomplete",
            r.incomplete.map(|n| n as f64),
            count(c.censored),
            "counts.censored",
        ),
        pair(
            "duration s",
            r.duration_s,
            Some(window_s),
            "contract.window.durationMs / 1000",
        ),
        pair(
            "throughput req/s",
            r.request_throughput_per_s,
            Some(all.rates.completed_per_s),
            "rates.completedPerS",
        ),
        pair(
            "goodput req/s",
            r.goodput_per_s,
            Some(all.rates.goodput_per_s),
            "rates.goodputPerS",
        ),
        pair(
            "output tok/s",
            r.output_tokens_per_s,
            Some(all.rates.output_tokens_per_s),
            "rates.outputTokensPerS",
        ),
        pair("TTFT p50 ms", r.ttft_ms.p50, ttft50, "latency.ttftMs.p50"),
        pair("TTFT p99 ms", r.ttft_ms.p99, ttft99, "latency.ttftMs.p99"),
        pair("TPOT p50 ms", r.tpot_ms.p50, tpot50, "latency.tpotMs.p50"),
        pair("TPOT p99 ms", r.tpot_ms.p99, tpot99, "latency.tpotMs.p99"),
        pair("E2E p50 ms", r.e2e_ms.p50, e2e50, "latency.e2eMs.p50"),
        pair("E2E p99 ms", r.e2e_ms.p99, e2e99, "latency.e2eMs.p99"),
    ];

    let mut differences = Vec::new();
    let tool = r.tool.as_str();
    // Only the warm-up is excluded by the tool as by goodput; a request
    // outside the window is one the tool may have counted, so it is not
    // said to agree.
    let exclusion = &all.reasons.exclusion;
    if exclusion.warmup > 0 {
        differences.push(format!(
            "{} request(s) arrived in the warm-up: excluded by goodput as by {tool} \
             (reasons.exclusion.warmup).",
            exclusion.warmup
        ));
    }
    if exclusion.outside_window > 0 {
        differences.push(format!(
            "{} request(s) arrived outside the window: excluded from goodput's cohort \
             (reasons.exclusion.outside_window); compare with the requests {tool} counted.",
            exclusion.outside_window
        ));
    }
    if c.failed > 0 {
        let share = goodput_util::figures::percent(all.rates.failure_share.unwrap_or(0.0), 1);
        differences.push(format!(
            "{} failed request(s) stay in goodput's cohort ({share} failure share) and \
             count against passShare; {tool} leaves failures out of its latency figures.",
            c.failed
        ));
    }
    if c.censored > 0 {
        differences.push(format!(
            "{} request(s) unfinished when {tool} stopped are censored (in_flight) in goodput's \
             cohort: neither pass nor miss, but visible in censoredShare.",
            c.censored
        ));
    }
    // One-token rows of the cohort, by verdict (the receipt's rows are in trace order).
    let verdicts = receipt.rows.as_deref().unwrap_or(&[]);
    let one_token_verdict = |verdict: &str| {
        trace
            .rows
            .iter()
            .zip(verdicts)
            .filter(|(row, v)| {
                row.status == RowStatus::Completed
                    && row.output_tokens == Some(1)
                    && v.verdict == verdict
            })
            .count() as u64
    };
    let one_token_pass = one_token_verdict("pass");
    let one_token = one_token_pass + one_token_verdict("miss");
    if one_token > 0 {
        differences.push(format!(
            "{one_token} completed cohort request(s) produced one token ({one_token_pass} of them \
             pass): goodput gives them no TPOT (the TPOT gate does not apply; they are absent \
             from the TPOT percentiles); {}.",
            r.one_token_rule
        ));
    }
    let n = all.latency.ttft_ms.n;
    if n > 0 {
        let rank99 = (99 * n).div_ceil(100);
        differences.push(format!(
            "Percentiles: {}; goodput uses nearest rank, the value at rank ⌈p·n/100⌉ \
             (with n = {n}, p99 is the {rank99}{} smallest value).",
            r.percentile_method,
            ordinal_suffix(rank99)
        ));
    }
    if !r.latency_population.is_empty() {
        differences.push(format!(
            "Latency population: {}; goodput's latency blocks cover the completed cohort \
             rows (pass + miss).",
            r.latency_population
        ));
    }
    if !r.window_rule.is_empty() {
        differences.push(format!(
            "Window: {}. Every goodput rate is per window second ({} s).",
            r.window_rule,
            fmt_num(window_s)
        ));
    }
    if let Some(gates) = &r.tool_gates {
        differences.push(format!(
            "{tool}'s own goodput used {gates}; goodput's trace declares the gates above \
             (--slo): compare like with like."
        ));
    }
    let fidelity = crate::fidelity::assess(imported, receipt);
    if let Some(tool_goodput) = r.goodput_per_s {
        let ours = all.rates.goodput_per_s;
        differences.push(
            crate::fidelity::goodput_by_client_counts(
                &fidelity,
                r,
                c.pass,
                one_token_pass,
                window_s,
                ours,
                tool_goodput,
            )
            .unwrap_or_else(|| {
                explain_goodput(r, c.pass, one_token_pass, window_s, ours, tool_goodput)
            }),
        );
    }
    differences.extend(crate::fidelity::sentences(&fidelity, r));
    let gates = receipt
        .contract
        .classes
        .iter()
        .map(|(name, g)| {
            let gate = |v: Option<f64>| v.map_or_else(|| "none".to_owned(), fmt_num);
            format!(
                "{name}: ttft={},tpot={},e2e={}",
                gate(g.ttft_ms),
                gate(g.tpot_ms),
                gate(g.e2e_ms)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Comparison {
        tool: r.tool.clone(),
        version: r.version.clone(),
        shape: match trace.boundary.get("shape") {
            Some(goodput_core::trace::Scalar::String(s)) => Some(s.clone()),
            _ => None,
        },
        gates,
        equality: receipt.contract.equality.clone(),
        figures,
        differences,
        fidelity,
    }
}

/// The sentence that reconciles the tool's goodput with the receipt's: the
/// same figure, or the same figure once the tool's documented one-token rule
/// is applied, or an unexplained difference (then the gates probably differ).
fn explain_goodput(
    r: &Reported,
    pass: u64,
    one_token_pass: u64,
    window_s: f64,
    ours: f64,
    tool_goodput: f64,
) -> String {
    let tool = r.tool.as_str();
    let w = fmt_num(window_s);
    if same_figure(tool_goodput, ours) {
        return format!(
            "Goodput reproduced: {tool} reported {tool_goodput} req/s; goodput gives {pass} \
             passing / {w} s = {ours} req/s with the same gates."
        );
    }
    let tool_rule = (pass - one_token_pass) as f64 / window_s;
    if r.one_token_never_good && one_token_pass > 0 && same_figure(tool_goodput, tool_rule) {
        return format!(
            "Goodput differs by the one-token rule alone: {tool} reported {tool_goodput} req/s = \
             ({pass} passing − {one_token_pass} one-token passes) / {w} s; goodput counts those \
             {one_token_pass} (their TPOT gate does not apply) and gives {pass} / {w} s = {ours} \
             req/s."
        );
    }
    let implied = r
        .duration_s
        .map(|d| {
            format!(
                " (≈ {} good requests over its {} s)",
                fmt_num(tool_goodput * d),
                fmt_num(d)
            )
        })
        .unwrap_or_default();
    format!(
        "Goodput differs: {tool} reported {tool_goodput} req/s{implied}; goodput gives {pass} \
         passing / {w} s = {ours} req/s. Check that --slo and --equality match the gates {tool} \
         used, and the window and one-token rules above."
    )
}

fn ordinal_suffix(n: u64) -> &'static str {
    match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// A number as people read it: integers without a fraction, others to 4
/// significant decimals.
pub fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_read_as_english() {
        let got: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101]
            .iter()
            .map(|&n| format!("{n}{}", ordinal_suffix(n)))
            .collect();
        assert_eq!(
            got,
            ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"]
        );
    }
}
