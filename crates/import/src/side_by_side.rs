//! The source tool's figures set beside the receipt's, figure by figure,
//! with every difference the goodput contract makes on purpose explained in
//! a sentence (failures in the denominator, one-token TPOT, percentile
//! method, window, the tool's own gates).

use schemars::JsonSchema;
use serde::Serialize;

use goodput_core::receipt::{Block, Counts, LatencyBlock, LatencySummary, Receipt};
use goodput_core::trace::write::RowStatus;

pub use crate::model::{fmt_num, same_figure};
use crate::model::{Imported, Reported};

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

/// Pairs the tool's figures with the receipt's and explains each difference
/// (the receipt must carry its per-row verdicts).
pub fn compare(imported: &Imported, receipt: &Receipt) -> Comparison {
    let rows = receipt.rows.as_deref().unwrap_or(&[]);
    let verdicts: Vec<&str> = rows.iter().map(|v| v.verdict.as_str()).collect();
    compare_with(imported, receipt, &verdicts)
}

/// [`compare`] with the per-row verdicts given apart (`pass`, `miss`, … in
/// trace order), so a receipt without its rows — a few bytes per row instead
/// of each row's echo — is enough.
pub fn compare_with(imported: &Imported, receipt: &Receipt, verdicts: &[&str]) -> Comparison {
    let r = &imported.reported;
    let all = &receipt.results.all;
    let window_s = (receipt.contract.window.end_ms - receipt.contract.window.start_ms) / 1000.0;
    let mut figures = count_figures(r, &all.counts);
    figures.extend(rate_figures(r, all, window_s));
    figures.extend(latency_figures(r, &all.latency));
    figures.extend(itl_figures(r, all));
    figures.extend(ttfa_figures(r, all));

    let one_token = OneToken::count(imported, verdicts);
    let mut differences = cohort_notes(&r.tool, all);
    differences.extend(one_token.note(r));
    differences.extend(method_notes(r, all.latency.ttft_ms.n, window_s));
    let fidelity = crate::fidelity::assess(imported, verdicts);
    if let Some(tool_goodput) = r.goodput_per_s {
        differences.push(goodput_note(
            &fidelity,
            r,
            all,
            one_token.pass,
            window_s,
            tool_goodput,
        ));
    }
    differences.extend(crate::fidelity::sentences(&fidelity, r));
    Comparison {
        tool: r.tool.clone(),
        version: r.version.clone(),
        shape: match imported.trace.boundary.get("shape") {
            Some(goodput_core::trace::Scalar::String(s)) => Some(s.clone()),
            _ => None,
        },
        gates: gates_text(receipt),
        equality: receipt.contract.equality.clone(),
        figures,
        differences,
        fidelity,
    }
}

/// A [`FigurePair`] of its parts.
fn pair(name: &str, tool: Option<f64>, goodput: Option<f64>, field: &str) -> FigurePair {
    FigurePair {
        name: name.to_owned(),
        tool,
        goodput,
        receipt_field: field.to_owned(),
    }
}

/// Requests, successful, failed and incomplete: the tool's counts beside
/// the receipt's.
fn count_figures(r: &Reported, c: &Counts) -> Vec<FigurePair> {
    let count = |n: u64| Some(n as f64);
    let tool = |n: Option<u64>| n.map(|n| n as f64);
    vec![
        pair(
            "requests",
            tool(r.requests),
            count(c.cohort),
            "counts.cohort",
        ),
        pair(
            "successful",
            tool(r.successful),
            count(c.pass + c.miss),
            "counts.pass + counts.miss",
        ),
        pair("failed", tool(r.failed), count(c.failed), "counts.failed"),
        pair(
            "incomplete",
            tool(r.incomplete),
            count(c.censored),
            "counts.censored",
        ),
    ]
}

/// The duration and the rates per second beside the receipt's window and rates.
fn rate_figures(r: &Reported, all: &Block, window_s: f64) -> [FigurePair; 4] {
    [
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
    ]
}

/// TTFT, TPOT and E2E medians and 99th percentiles beside the receipt's.
fn latency_figures(r: &Reported, latency: &LatencyBlock) -> [FigurePair; 6] {
    let q = |s: &LatencySummary| (s.p50, s.p99);
    let (ttft50, ttft99) = q(&latency.ttft_ms);
    let (tpot50, tpot99) = q(&latency.tpot_ms);
    let (e2e50, e2e99) = q(&latency.e2e_ms);
    [
        pair("TTFT p50 ms", r.ttft_ms.p50, ttft50, "latency.ttftMs.p50"),
        pair("TTFT p99 ms", r.ttft_ms.p99, ttft99, "latency.ttftMs.p99"),
        pair("TPOT p50 ms", r.tpot_ms.p50, tpot50, "latency.tpotMs.p50"),
        pair("TPOT p99 ms", r.tpot_ms.p99, tpot99, "latency.tpotMs.p99"),
        pair("E2E p50 ms", r.e2e_ms.p50, e2e50, "latency.e2eMs.p50"),
        pair("E2E p99 ms", r.e2e_ms.p99, e2e99, "latency.e2eMs.p99"),
    ]
}

/// The tool's pooled ITL figures beside the receipt's gap distribution
/// (`gaps.gapMs`, from the imported gaps), when either side has them.
fn itl_figures(r: &Reported, all: &Block) -> Vec<FigurePair> {
    let gaps = all.gaps.as_ref().map(|g| &g.gap_ms);
    let tool = &r.itl_ms;
    if gaps.is_none() && tool.mean.is_none() && tool.p50.is_none() && tool.p99.is_none() {
        return Vec::new();
    }
    let ours = |f: fn(&LatencySummary) -> Option<f64>| gaps.and_then(f);
    vec![
        pair(
            "ITL mean ms",
            tool.mean,
            ours(|g| g.mean),
            "gaps.gapMs.mean",
        ),
        pair("ITL p50 ms", tool.p50, ours(|g| g.p50), "gaps.gapMs.p50"),
        pair("ITL p99 ms", tool.p99, ours(|g| g.p99), "gaps.gapMs.p99"),
    ]
}

/// The tool's time to first output token beside the receipt's TTFA
/// (`answer.ttfaMs`), when either side has one.
fn ttfa_figures(r: &Reported, all: &Block) -> Vec<FigurePair> {
    let answer = all.answer.as_ref().map(|a| &a.ttfa_ms);
    if answer.is_none() && r.ttfa_ms.p50.is_none() && r.ttfa_ms.p99.is_none() {
        return Vec::new();
    }
    vec![
        pair(
            "TTFA p50 ms",
            r.ttfa_ms.p50,
            answer.and_then(|a| a.p50),
            "answer.ttfaMs.p50",
        ),
        pair(
            "TTFA p99 ms",
            r.ttfa_ms.p99,
            answer.and_then(|a| a.p99),
            "answer.ttfaMs.p99",
        ),
    ]
}

/// Who is in goodput's cohort and who is not: warm-up and out-of-window
/// exclusions, failures kept in the denominator, censored requests.
fn cohort_notes(tool: &str, all: &Block) -> Vec<String> {
    let mut notes = Vec::new();
    let c = &all.counts;
    // Only the warm-up is excluded by the tool as by goodput; a request
    // outside the window is one the tool may have counted, so it is not
    // said to agree.
    let exclusion = &all.reasons.exclusion;
    if exclusion.warmup > 0 {
        notes.push(format!(
            "{} request(s) arrived in the warm-up: excluded by goodput as by {tool} \
             (reasons.exclusion.warmup).",
            exclusion.warmup
        ));
    }
    if exclusion.outside_window > 0 {
        notes.push(format!(
            "{} request(s) arrived outside the window: excluded from goodput's cohort \
             (reasons.exclusion.outside_window); compare with the requests {tool} counted.",
            exclusion.outside_window
        ));
    }
    if c.failed > 0 {
        let share = goodput_util::figures::percent(all.rates.failure_share.unwrap_or(0.0), 1);
        notes.push(format!(
            "{} failed request(s) stay in goodput's cohort ({share} failure share) and \
             count against passShare; {tool} leaves failures out of its latency figures.",
            c.failed
        ));
    }
    if c.censored > 0 {
        notes.push(format!(
            "{} request(s) unfinished when {tool} stopped are censored (in_flight) in goodput's \
             cohort: neither pass nor miss, but visible in censoredShare.",
            c.censored
        ));
    }
    notes
}

/// The completed one-token rows of the cohort, and how many of them pass.
struct OneToken {
    completed: u64,
    pass: u64,
}

impl OneToken {
    /// Counts them by verdict (the verdicts are in trace order).
    fn count(imported: &Imported, verdicts: &[&str]) -> OneToken {
        let with_verdict = |verdict: &str| {
            imported
                .trace
                .rows
                .iter()
                .zip(verdicts)
                .filter(|(row, v)| {
                    row.status == RowStatus::Completed
                        && row.output_tokens == Some(1)
                        && **v == verdict
                })
                .count() as u64
        };
        let pass = with_verdict("pass");
        OneToken {
            completed: pass + with_verdict("miss"),
            pass,
        }
    }

    /// goodput's one-token rule beside the tool's, when there are any.
    fn note(&self, r: &Reported) -> Option<String> {
        let (one_token, one_token_pass) = (self.completed, self.pass);
        (one_token > 0).then(|| {
            format!(
                "{one_token} completed cohort request(s) produced one token ({one_token_pass} of \
                 them pass): goodput gives them no TPOT (the TPOT gate does not apply; they are \
                 absent from the TPOT percentiles); {}.",
                r.one_token_rule
            )
        })
    }
}

/// How the figures are computed on each side: percentile method, latency
/// population, window, and the tool's own gates.
fn method_notes(r: &Reported, n: u64, window_s: f64) -> Vec<String> {
    let mut notes = Vec::new();
    if n > 0 {
        let rank99 = (99 * n).div_ceil(100);
        notes.push(format!(
            "Percentiles: {}; goodput uses nearest rank, the value at rank ⌈p·n/100⌉ \
             (with n = {n}, p99 is the {rank99}{} smallest value).",
            r.percentile_method,
            ordinal_suffix(rank99)
        ));
    }
    if !r.latency_population.is_empty() {
        notes.push(format!(
            "Latency population: {}; goodput's latency blocks cover the completed cohort \
             rows (pass + miss).",
            r.latency_population
        ));
    }
    if !r.window_rule.is_empty() {
        notes.push(format!(
            "Window: {}. Every goodput rate is per window second ({} s).",
            r.window_rule,
            fmt_num(window_s)
        ));
    }
    if let Some(gates) = &r.tool_gates {
        notes.push(format!(
            "{}'s own goodput used {gates}; goodput's trace declares the gates above \
             (--slo): compare like with like.",
            r.tool
        ));
    }
    notes
}

/// The sentence on the tool's goodput figure: by the tool's own token
/// counts when they explain it, else [`explain_goodput`].
fn goodput_note(
    fidelity: &crate::fidelity::Fidelity,
    r: &Reported,
    all: &Block,
    one_token_pass: u64,
    window_s: f64,
    tool_goodput: f64,
) -> String {
    let pass = all.counts.pass;
    let ours = all.rates.goodput_per_s;
    crate::fidelity::goodput_by_client_counts(
        fidelity,
        r,
        pass,
        one_token_pass,
        window_s,
        ours,
        tool_goodput,
    )
    .unwrap_or_else(|| explain_goodput(r, pass, one_token_pass, window_s, ours, tool_goodput))
}

/// The gates the trace declares, class by class (`name: ttft=…,tpot=…,e2e=…`).
fn gates_text(receipt: &Receipt) -> String {
    receipt
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
        .join("; ")
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
