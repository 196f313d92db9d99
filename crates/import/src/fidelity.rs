//! Import fidelity: two errors of the source tool that its own figures cannot
//! show, caught from its export.
//!
//! **Token counts.** A load generator may count output tokens with its own
//! client-side tokenizer, which need not be the model's, while the server
//! reports the model's count in its `usage` block. The importers prefer the
//! server's count for `outputTokens` and keep the tool's as the row label
//! [`CLIENT_TOKENS_LABEL`]; [`TokenAgreement`] says on how many completed
//! cohort rows the two differ and by how much, and how the run judges with the
//! tool's counts (which is what the tool's own TPOT and goodput used).
//!
//! **Offered load.** A tool may not send the load it was configured for.
//! [`RateCheck`] sets the configured rate (from the export's own arguments)
//! beside the rate the arrivals show, and applies one rule:
//!
//! - N arrivals of the cohort, first to last spanning S seconds, enclose
//!   N − 1 inter-arrival gaps, so the offered rate is (N − 1) / S (a constant
//!   schedule gives exactly its rate; the drain after the last send does not
//!   dilute it, as it would a count over the whole window).
//! - Under a Poisson process of the configured rate λ the number of arrivals
//!   after the first within S is Poisson(λ·S) (for a span ended by the last
//!   arrival, by the Poisson–gamma duality: P(N − 1 gaps fit in S) =
//!   P(Poisson(λ·S) ≥ N − 1)).
//! - The rate differs beyond the arrival process's own randomness when N − 1
//!   lies outside the central 99.9 % interval [L, U] of Poisson(λ·S):
//!   L = the smallest k with P(X ≤ k) > 0.0005, U = the smallest k with
//!   P(X ≤ k) ≥ 0.9995. A constant schedule varies less than a Poisson one,
//!   so for it the rule is generous, never strict.
//! - Only Poisson and constant schedules are judged; other processes (gamma
//!   with burstiness ≠ 1, closed loops) are shown, not judged.

use serde::Serialize;

use crate::model::{fmt_num, same_figure};
pub use crate::model::{ConfiguredRate, Process};
use crate::model::{Imported, Reported};
use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::trace::write::RowStatus;
use goodput_core::trace::Scalar;

/// The row label that keeps the tool's own output-token count when the
/// trace's `outputTokens` is the server's usage count.
pub const CLIENT_TOKENS_LABEL: &str = "clientOutputTokens";

/// The share of the Poisson distribution left out on each side of the
/// interval (central 99.9 %).
pub const POISSON_TAIL: f64 = 0.0005;

/// The tool's own output-token counts set beside the server's usage counts.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenAgreement {
    /// The field that holds the tool's own count (e.g. AIPerf's `output_sequence_length`).
    pub client_field: String,
    /// Completed cohort rows carrying both counts.
    pub rows_compared: u64,
    /// Of those, rows whose two counts differ.
    pub rows_differing: u64,
    /// Nearest-rank median of |client − usage| over the differing rows, tokens.
    pub median_difference: Option<f64>,
    /// Largest |client − usage|, tokens.
    pub max_difference: Option<f64>,
    /// Nearest-rank median of |client − usage| / usage over the differing rows, %.
    pub median_difference_pct: Option<f64>,
    /// Largest |client − usage| / usage, %.
    pub max_difference_pct: Option<f64>,
    /// The same trace judged with the tool's counts (what the tool's own
    /// TPOT and goodput used); `None` when no row differs.
    pub with_client_counts: Option<ClientCountJudgement>,
    /// Completed cohort rows whose record had no usage count, so their
    /// `outputTokens` is the tool's own count (the trace then says
    /// `"tokens": "client-tokenizer"`).
    pub rows_without_usage: u64,
}

/// The receipt's figures when `outputTokens` is the tool's own count.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientCountJudgement {
    /// Passing cohort rows.
    pub pass: u64,
    /// Of those, rows of one token by the tool's count.
    pub one_token_pass: u64,
    /// pass / window s.
    pub goodput_per_s: f64,
    /// Nearest-rank TPOT p50, ms.
    pub tpot_p50_ms: Option<f64>,
    /// Nearest-rank TPOT p99, ms.
    pub tpot_p99_ms: Option<f64>,
}

/// The configured rate beside the offered one, judged by the rule in the module docs.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateCheck {
    /// What the tool was asked for.
    pub configured: ConfiguredRate,
    /// Cohort arrivals (N).
    pub arrivals: u64,
    /// First to last cohort arrival, s (S).
    pub span_s: f64,
    /// (N − 1) / S.
    pub offered_per_s: f64,
    /// λ·S: the expected number of arrivals after the first.
    pub expected_gaps: f64,
    /// The central 99.9 % interval [L, U] of Poisson(λ·S); `None` when not judged.
    pub interval: Option<[u64; 2]>,
    /// N − 1 lies outside the interval.
    pub beyond_noise: bool,
}

/// Everything the fidelity checks found; empty parts are `None`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Fidelity {
    /// Client counts beside usage counts (when the export carries both).
    pub tokens: Option<TokenAgreement>,
    /// Configured beside offered rate (when the export names a rate).
    pub rate: Option<RateCheck>,
    /// What the gap rule did with the tool's per-request inter-token
    /// latencies (when the export carries them; `crate::gaps`).
    pub gaps: Option<crate::gaps::GapChecks>,
}

/// Runs both checks on an imported run and its per-row verdicts (`pass`,
/// `miss`, … in trace order).
pub fn assess(imported: &Imported, verdicts: &[&str]) -> Fidelity {
    Fidelity {
        tokens: token_agreement(imported, verdicts),
        rate: imported
            .reported
            .configured_rate
            .as_ref()
            .and_then(|c| rate_check(imported, verdicts, c)),
        gaps: imported.gaps.clone(),
    }
}

/// The tool's count of a row, when the row carries a whole one >= 1.
fn client_count(labels: &goodput_core::trace::Labels) -> Option<u64> {
    match labels.get(CLIENT_TOKENS_LABEL) {
        Some(Scalar::Number(x)) if *x >= 1.0 && x.fract() == 0.0 && *x <= 1e9 => Some(*x as u64),
        _ => None,
    }
}

/// Whether a row's verdict puts it in the completed cohort.
fn completed_verdict(v: &str) -> bool {
    v == "pass" || v == "miss"
}

fn token_agreement(imported: &Imported, verdicts: &[&str]) -> Option<TokenAgreement> {
    let client_field = imported.reported.client_tokens_from.clone()?;
    let mut abs = Vec::new();
    let mut pct = Vec::new();
    let mut compared = 0u64;
    let mut without_usage = 0u64;
    for (row, v) in imported.trace.rows.iter().zip(verdicts) {
        if row.status != RowStatus::Completed || !completed_verdict(v) {
            continue;
        }
        let (Some(usage), Some(client)) = (row.output_tokens, client_count(&row.labels)) else {
            without_usage += u64::from(row.output_tokens.is_some());
            continue;
        };
        compared += 1;
        if usage != client {
            let d = usage.abs_diff(client) as f64;
            abs.push(d);
            pct.push(d / usage as f64 * 100.0);
        }
    }
    if compared == 0 {
        return None;
    }
    goodput_core::stats::sort_ascending(&mut abs);
    goodput_core::stats::sort_ascending(&mut pct);
    let median = |v: &[f64]| goodput_core::stats::nearest_rank(v, 50);
    Some(TokenAgreement {
        client_field,
        rows_compared: compared,
        rows_differing: abs.len() as u64,
        median_difference: median(&abs),
        max_difference: abs.last().copied(),
        median_difference_pct: median(&pct),
        max_difference_pct: pct.last().copied(),
        rows_without_usage: without_usage,
        with_client_counts: if abs.is_empty() {
            None
        } else {
            judge_with_client_counts(imported)
        },
    })
}

/// Judges the trace again with each completed row's `outputTokens` replaced
/// by the tool's own count; `None` if that trace cannot be judged (it always
/// can: only whole counts >= 1 are substituted).
fn judge_with_client_counts(imported: &Imported) -> Option<ClientCountJudgement> {
    let mut trace = imported.trace.clone();
    for row in &mut trace.rows {
        if row.status == RowStatus::Completed {
            if let Some(c) = client_count(&row.labels) {
                row.output_tokens = Some(c);
            }
        }
    }
    let bytes = crate::model::trace_bytes(&mut trace).ok()?;
    let limits = crate::model::limits_for(trace.rows.len(), bytes.len());
    let analysis = analyze_bytes(
        &bytes,
        AnalyzeOptions {
            limits,
            rows: false,
            strict: false,
        },
    )
    .ok()?;
    // The judgements, not the receipt's rows: no per-row echo is built.
    let one_token_pass = trace
        .rows
        .iter()
        .zip(&analysis.judgements)
        .filter(|(row, j)| row.output_tokens == Some(1) && j.verdict.as_str() == "pass")
        .count() as u64;
    let r = analysis.receipt;
    let all = &r.results.all;
    Some(ClientCountJudgement {
        pass: all.counts.pass,
        one_token_pass,
        goodput_per_s: all.rates.goodput_per_s,
        tpot_p50_ms: all.latency.tpot_ms.p50,
        tpot_p99_ms: all.latency.tpot_ms.p99,
    })
}

fn rate_check(
    imported: &Imported,
    verdicts: &[&str],
    configured: &ConfiguredRate,
) -> Option<RateCheck> {
    let mut arrivals: Vec<f64> = imported
        .trace
        .rows
        .iter()
        .zip(verdicts)
        .filter(|(_, v)| **v != "invalid" && **v != "excluded")
        .map(|(row, _)| row.arrival_ms)
        .collect();
    goodput_core::stats::sort_ascending(&mut arrivals);
    let (first, last) = (*arrivals.first()?, *arrivals.last()?);
    let span_s = (last - first) / 1000.0;
    if arrivals.len() < 2 || span_s <= 0.0 || configured.per_s.is_nan() || configured.per_s <= 0.0 {
        return None;
    }
    let gaps = arrivals.len() as u64 - 1;
    let expected = configured.per_s * span_s;
    let interval = match configured.process {
        Process::Poisson | Process::Constant => poisson_interval(expected, POISSON_TAIL),
        Process::Other => None,
    };
    Some(RateCheck {
        configured: configured.clone(),
        arrivals: arrivals.len() as u64,
        span_s,
        offered_per_s: gaps as f64 / span_s,
        expected_gaps: expected,
        interval,
        beyond_noise: interval.is_some_and(|[lo, hi]| gaps < lo || gaps > hi),
    })
}

/// ln(k!): exact sum below 30, else Stirling's series to k⁻⁵ (error < 1e-15
/// relative there).
fn ln_factorial(k: u64) -> f64 {
    if k < 30 {
        return (2..=k).map(|i| (i as f64).ln()).sum();
    }
    let x = k as f64;
    x * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI * x).ln() + 1.0 / (12.0 * x)
        - 1.0 / (360.0 * x.powi(3))
        + 1.0 / (1260.0 * x.powi(5))
}

/// The central interval [L, U] of Poisson(`mu`) leaving at most `tail` on
/// each side: L = the smallest k with P(X ≤ k) > tail, U = the smallest k
/// with P(X ≤ k) ≥ 1 − tail. The probabilities are summed outward from the
/// mode over mode ± 12·√mu + 12 (the mass beyond is below 1e-30) and
/// normalized. `None` for a mean that is not finite, negative, or over 1e12.
pub fn poisson_interval(mu: f64, tail: f64) -> Option<[u64; 2]> {
    if !(0.0..=1e12).contains(&mu) {
        return None;
    }
    if mu == 0.0 {
        return Some([0, 0]);
    }
    let mode = mu.floor() as u64;
    let reach = (12.0 * mu.sqrt() + 12.0).ceil() as u64;
    let lo = mode.saturating_sub(reach);
    let hi = mode + reach;
    let mut pmf = vec![0.0; (hi - lo + 1) as usize];
    let at_mode = (mode as f64 * mu.ln() - mu - ln_factorial(mode)).exp();
    pmf[(mode - lo) as usize] = at_mode;
    for k in mode + 1..=hi {
        pmf[(k - lo) as usize] = pmf[(k - 1 - lo) as usize] * mu / k as f64;
    }
    for k in (lo..mode).rev() {
        pmf[(k - lo) as usize] = pmf[(k + 1 - lo) as usize] * (k + 1) as f64 / mu;
    }
    let total: f64 = pmf.iter().sum();
    let mut cdf = 0.0;
    let (mut lower, mut upper) = (None, None);
    for (i, p) in pmf.iter().enumerate() {
        cdf += p / total;
        let k = lo + i as u64;
        if lower.is_none() && cdf > tail {
            lower = Some(k);
        }
        if upper.is_none() && cdf >= 1.0 - tail {
            upper = Some(k);
            break;
        }
    }
    Some([lower?, upper.unwrap_or(hi)])
}

/// The sentence that reconciles the tool's goodput through its own token
/// counts, when the server's counts do not reproduce it and the tool's do
/// (exactly, or with the tool's one-token rule). `pass`, `one_token_pass`
/// and `ours` are the receipt's (usage counts).
pub fn goodput_by_client_counts(
    f: &Fidelity,
    r: &Reported,
    pass: u64,
    one_token_pass: u64,
    window_s: f64,
    ours: f64,
    tool_goodput: f64,
) -> Option<String> {
    let tokens = f.tokens.as_ref()?;
    let c = tokens.with_client_counts.as_ref()?;
    let one_token_rule = |pass: u64, one: u64| {
        r.one_token_never_good
            && one > 0
            && same_figure(tool_goodput, (pass - one) as f64 / window_s)
    };
    if same_figure(tool_goodput, ours) || one_token_rule(pass, one_token_pass) {
        return None;
    }
    let tool = r.tool.as_str();
    let w = fmt_num(window_s);
    let field = &tokens.client_field;
    let usage = format!(
        "with the server's usage counts goodput gives {pass} passing / {w} s = {ours} req/s"
    );
    if same_figure(tool_goodput, c.goodput_per_s) {
        Some(format!(
            "Goodput differs by the token counts: {tool} reported {tool_goodput} req/s, which the \
             trace reproduces with {tool}'s own counts ({field}): {} passing / {w} s; {usage}.",
            c.pass
        ))
    } else if one_token_rule(c.pass, c.one_token_pass) {
        Some(format!(
            "Goodput differs by the token counts and the one-token rule: {tool} reported \
             {tool_goodput} req/s = ({} passing by {tool}'s own counts ({field}) − {} one-token \
             passes, which {tool} never counts as good) / {w} s; {usage}.",
            c.pass, c.one_token_pass
        ))
    } else {
        None
    }
}

/// One sentence per finding, for the comparison's "why they differ".
pub fn sentences(f: &Fidelity, r: &Reported) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(t) = &f.tokens {
        out.push(token_sentence(t, &r.tool));
    }
    if let Some(rate) = &f.rate {
        out.push(rate_sentence(rate, &r.tool));
    }
    if let Some(g) = &f.gaps {
        out.push(gap_sentence(g, &r.tool));
    }
    out
}

/// The gap rule's outcome in words: how many rows kept their gaps, and why
/// the others did not.
fn gap_sentence(g: &crate::gaps::GapChecks, tool: &str) -> String {
    let field = &g.field;
    let n = g.rows_with_list;
    if g.left_out {
        return format!(
            "Gaps left out (--no-gaps): {n} completed row(s) carried {tool}'s {field}; the \
             trace has no gapsMs, so no gap distribution or stall gate."
        );
    }
    let mut s = format!(
        "Gaps: {} of {n} completed row(s) with {tool}'s {field} keep them as gapsMs \
         (offsets rounded to the µs)",
        g.kept
    );
    if g.trimmed > 0 {
        s.push_str(&format!(
            "; {} trimmed (their sum overran the first-token-to-completion span by more than \
             1 µs and at most 1 ms, taken from the last gap)",
            g.trimmed
        ));
    }
    if g.more_gaps_than_tokens > 0 {
        s.push_str(&format!(
            "; more_gaps_than_tokens: {} row(s) have more ITLs than outputTokens − 1, so {tool} \
             timed chunks that carried no token (an empty finish chunk counts as one), and which \
             is spurious cannot be told: they keep none",
            g.more_gaps_than_tokens
        ));
    }
    if g.gaps_exceed_span > 0 {
        s.push_str(&format!(
            "; gaps_exceed_span: {} row(s) whose ITLs sum to more than the span plus 1 ms keep \
             none",
            g.gaps_exceed_span
        ));
    }
    if g.over_row_cap > 0 {
        s.push_str(&format!(
            "; {} row(s) over the trace's cap of 100,000 gaps keep none",
            g.over_row_cap
        ));
    }
    s.push('.');
    if g.dropped() > 0 || g.kept < n {
        s.push_str(&format!(
            " {tool}'s own ITL figures include every row's list; goodput's gap distribution \
             covers the kept rows only."
        ));
    }
    s
}

fn token_sentence(t: &TokenAgreement, tool: &str) -> String {
    let field = &t.client_field;
    let fallback = if t.rows_without_usage == 0 {
        String::new()
    } else {
        format!(
            " ({} completed row{} had no usage and keep{} {tool}'s own count, so the trace says \
             \"tokens\": \"client-tokenizer\")",
            t.rows_without_usage,
            if t.rows_without_usage == 1 { "" } else { "s" },
            if t.rows_without_usage == 1 { "s" } else { "" }
        )
    };
    if t.rows_differing == 0 {
        return format!(
            "Token counts agree: on all {} completed cohort rows the server's usage count equals \
             {tool}'s own ({field}); TPOT and token rates are computed from usage{fallback}.",
            t.rows_compared
        );
    }
    let show = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), fmt_num);
    let mut s = format!(
        "Token counts disagree: on {} of {} completed cohort rows {tool}'s own count ({field}, \
         its client-side tokenizer) differs from the server's usage count, by {} tokens median \
         and {} max ({} % and {} % of usage). TPOT and token rates here are computed from \
         usage{fallback}; {tool}'s are from its own counts",
        t.rows_differing,
        t.rows_compared,
        show(t.median_difference),
        show(t.max_difference),
        show(t.median_difference_pct.map(|x| (x * 10.0).round() / 10.0)),
        show(t.max_difference_pct.map(|x| (x * 10.0).round() / 10.0)),
    );
    if let Some(c) = &t.with_client_counts {
        s.push_str(&format!(
            ", with which this trace gives TPOT p50 {} ms, p99 {} ms and {} passing",
            show(c.tpot_p50_ms),
            show(c.tpot_p99_ms),
            c.pass
        ));
    }
    s.push('.');
    s
}

fn rate_sentence(rate: &RateCheck, tool: &str) -> String {
    let c = &rate.configured;
    let process = match c.process {
        Process::Poisson => "Poisson",
        Process::Constant => "constant",
        Process::Other => "non-Poisson",
    };
    let head = format!(
        "Offered load: {tool} was configured for {} req/s ({process}; {}); its {} cohort \
         arrivals span {} s first to last, {} gaps: {} req/s offered",
        fmt_num(c.per_s),
        c.from,
        rate.arrivals,
        fmt_num(rate.span_s),
        rate.arrivals - 1,
        fmt_num(rate.offered_per_s)
    );
    let Some([lo, hi]) = rate.interval else {
        return format!(
            "{head}. Not judged: the count of a {process} schedule is not Poisson, so no \
             interval is drawn."
        );
    };
    let expected = fmt_num(rate.expected_gaps);
    if rate.beyond_noise {
        format!(
            "{head}. A Poisson process at {} req/s expects {expected} arrivals after the first \
             in that span, between {lo} and {hi} with 99.9 % probability; {} is outside: {tool} \
             did not send what it was asked to. Every latency figure of this run was measured \
             at a load nobody asked for ({} req/s, not {}).",
            fmt_num(c.per_s),
            rate.arrivals - 1,
            fmt_num(rate.offered_per_s),
            fmt_num(c.per_s)
        )
    } else {
        format!(
            "{head}; {} gaps lie inside [{lo}, {hi}], the 99.9 % interval of a Poisson count \
             of mean {} req/s × {} s = {expected}: within the arrival process's own randomness.",
            rate.arrivals - 1,
            fmt_num(c.per_s),
            fmt_num(rate.span_s)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_factorial_matches_the_exact_sum_where_stirling_takes_over() {
        for k in [30u64, 31, 50, 170] {
            let exact: f64 = (2..=k).map(|i| (i as f64).ln()).sum();
            assert!(
                (ln_factorial(k) - exact).abs() < 1e-9,
                "{k}: {} vs {exact}",
                ln_factorial(k)
            );
        }
        assert_eq!(ln_factorial(0), 0.0);
        assert_eq!(ln_factorial(1), 0.0);
    }

    #[test]
    fn poisson_interval_of_small_means_by_hand() {
        // mu = 1: P(X=0) = e^-1 = 0.3679 > 0.0005, so L = 0. P(X<=k):
        // k=5: 0.99941 (< 0.9995), k=6: 0.99992 (>= 0.9995), so U = 6.
        assert_eq!(poisson_interval(1.0, POISSON_TAIL), Some([0, 6]));
        // mu = 10: P(X<=1) = 11·e^-10 = 0.000499 (<= 0.0005), P(X<=2) = 0.00277, so L = 2;
        // P(X<=21) = 0.99930 (< 0.9995), P(X<=22) = 0.99970, so U = 22.
        assert_eq!(poisson_interval(10.0, POISSON_TAIL), Some([2, 22]));
        assert_eq!(poisson_interval(0.0, POISSON_TAIL), Some([0, 0]));
        assert_eq!(poisson_interval(f64::NAN, POISSON_TAIL), None);
        assert_eq!(poisson_interval(-1.0, POISSON_TAIL), None);
    }
}
