//! A frontier for people: a text table (sentences wrapped at 100 columns,
//! trace paths whole), a Markdown table, and an SVG chart. All pure: they return Strings; the JSON form is
//! the [`Frontier`] itself through `render::json::to_canonical_json`.
//!
//! **Why a hand-written SVG.** The chart is four panels of polylines, points,
//! ticks and a few labels. `plotters` could draw it, but it would be a new
//! dependency tree to build on every machine, and its text layout estimates
//! glyph sizes from font metrics (a bundled heuristic without the `ttf`
//! feature) that a snapshot would then depend on. Writing the ~40 elements
//! ourselves keeps the output byte-stable: coordinates are printed with one
//! decimal, numbers on ticks with [`short`], no clock, no random ids — the
//! same frontier always gives the same bytes, so the snapshot test is exact.

use std::fmt::Write;

use crate::sensitivity::short;
use goodput_core::frontier::{
    Capacity, CriterionCheck, Frontier, FrontierPoint, Knee, Limit, RateShare, WideBracket,
    WIDE_BRACKET_RATE_RATIO, WIDE_BRACKET_SHARE_DROP,
};
use goodput_util::figures::{
    number_against, percent, percent_against, percent_beside, percent_or_dash, percent_short,
};
use goodput_util::number::decimal;

/// The widest line the text output wraps its sentences to; a table row is
/// its figures (at most this wide) then the trace's whole path.
pub const MAX_TEXT_COLUMNS: usize = 100;

fn fixed(x: Option<f64>, decimals: usize) -> String {
    x.map_or_else(|| "—".to_owned(), |v| format!("{v:.decimals$}"))
}

fn scope(f: &Frontier) -> String {
    match &f.class {
        None => "all rows".to_owned(),
        Some(c) => format!("class {c:?}"),
    }
}

/// The knee in one sentence.
pub fn knee_sentence(knee: &Knee) -> String {
    match knee {
        Knee::Found {
            offered_per_s,
            goodput_per_s,
            next_offered_per_s,
            at_lowest_rate,
            signals,
        } => {
            let why: Vec<&str> = signals.iter().map(|s| s.describe()).collect();
            let why = why.join(", ");
            if *at_lowest_rate {
                format!(
                    "at or below {}/s, the lowest rate tested (goodput {}/s); past it goodput \
                     stops rising — at {}/s: {why}; test lower rates to place it",
                    short(*offered_per_s),
                    short(*goodput_per_s),
                    short(*next_offered_per_s)
                )
            } else {
                format!(
                    "{}/s (goodput {}/s); past it goodput stops rising — at {}/s: {why}",
                    short(*offered_per_s),
                    short(*goodput_per_s),
                    short(*next_offered_per_s)
                )
            }
        }
        Knee::NotReached {
            highest_offered_per_s,
        } => format!(
            "not reached: goodput kept rising up to the highest rate tested ({}/s) — test higher rates",
            short(*highest_offered_per_s)
        ),
        Knee::TooFewPoints { steps } => format!(
            "cannot be named: {steps} distinct offered rate{} with a cohort; a knee needs at least two",
            if *steps == 1 { "" } else { "s" }
        ),
    }
}

/// A criterion's figure for people, and whether it is a share: `p95 TTFT`
/// in ms for the gate's `p95 ttft ms` (TPOT, E2E and TTFA alike, at any
/// percentile), any other `… ms` figure as its words (`largest gap`); a
/// share (`pass share`, `failure share`) as itself.
fn figure_name(name: &str) -> (String, bool) {
    let Some(figure) = name.strip_suffix(" ms") else {
        return (name.to_owned(), true);
    };
    let label = match figure.split_once(' ') {
        Some((p, metric)) if matches!(metric, "ttft" | "tpot" | "e2e" | "ttfa") => {
            format!("{p} {}", metric.to_uppercase())
        }
        _ => figure.to_owned(),
    };
    (label, false)
}

/// A limit as written in a sentence: `p95 TTFT ≤ 1000 ms`, `failure share ≤ 5 %`.
fn limit_text(name: &str, comparison: &str, limit: f64) -> String {
    let sign = if comparison == ">=" { "≥" } else { "≤" };
    match figure_name(name) {
        (label, true) => format!("{label} {sign} {}", percent_short(limit, None)),
        (label, false) => format!("{label} {sign} {} ms", decimal(limit)),
    }
}

/// What a rate's criterion measured against its limit, the sign saying
/// which side it fell on, in digits that keep the two apart when they
/// differ: `p95 TTFT 1102 ms > 1000 ms`, `pass share 85.0 % < 90.0 %`.
pub fn criterion_text(c: &CriterionCheck) -> String {
    let (label, share) = figure_name(&c.name);
    let Some(v) = c.measured else {
        let limit = limit_text(&c.name, &c.comparison, c.limit);
        return format!("{label} not measurable ({limit} required)");
    };
    let sign = match (c.comparison.as_str(), c.pass) {
        (">=", true) => "≥",
        (">=", false) => "<",
        (_, true) => "≤",
        (_, false) => ">",
    };
    if share {
        let (v, l) = percent_against(v, c.limit, 1);
        return format!("{label} {v} {sign} {l}");
    }
    let (a, b) = (decimal(v), decimal(c.limit));
    let keeps = |a: &str, b: &str| {
        let (x, y) = (a.parse::<f64>(), b.parse::<f64>());
        matches!((x, y), (Ok(x), Ok(y)) if x.total_cmp(&y) == v.total_cmp(&c.limit))
    };
    let (a, b) = if keeps(&a, &b) {
        (a, b)
    } else {
        number_against(v, c.limit, 3)
    };
    format!("{label} {a} ms {sign} {b} ms")
}

/// A limit in a sentence: `p95 TTFT ≤ 1000 ms`.
pub fn limit_sentence(l: &Limit) -> String {
    limit_text(&l.name, &l.comparison, l.limit)
}

/// Every criterion a rate had to hold: the pass-share target, then each
/// limit (`pass share ≥ 90 %, p95 TTFT ≤ 1000 ms`).
pub fn criteria_text(attainment: f64, limits: &[Limit]) -> String {
    let mut parts = vec![format!("pass share ≥ {}", percent_short(attainment, None))];
    parts.extend(limits.iter().map(limit_sentence));
    parts.join(", ")
}

/// What failed at one rate: `30/s: p95 TTFT 1102 ms > 1000 ms; failure share …`.
pub fn failed_at(rate: f64, failed: &[CriterionCheck]) -> String {
    let list: Vec<String> = failed.iter().map(criterion_text).collect();
    format!("{}/s: {}", short(rate), list.join("; "))
}

/// The capacity in one sentence (and a warning line when pass share was not
/// monotone; with limits, the criteria it was judged by). Shares compared
/// with the target are shown with the digits that keep them on their side
/// of it (`best 89.96 %`, never `best 90 %` below a 90 % target).
pub fn capacity_sentences(capacity: &Capacity, attainment: f64, limits: &[Limit]) -> Vec<String> {
    let mut v = capacity_lead(capacity, attainment, limits);
    if !limits.is_empty() {
        v.insert(
            1,
            format!(
                "judged by {}, held by every repeat of a rate",
                criteria_text(attainment, limits)
            ),
        );
    }
    v
}

/// The warning when rates under the capacity did not hold.
fn not_monotone(below: &[f64], target: &str, limits: &[Limit]) -> Option<String> {
    (!below.is_empty()).then(|| {
        let list: Vec<String> = below.iter().map(|x| format!("{}/s", short(*x))).collect();
        let what = if limits.is_empty() {
            format!("pass share was already below {target}")
        } else {
            "a lower rate already did not hold".to_owned()
        };
        format!(
            "warning: {what} at {} — it is not monotone in load; repeat those points before \
             trusting the capacity",
            list.join(", ")
        )
    })
}

/// The sentence of a capacity interpolated between two rates.
fn interpolated(offered: f64, meets: &RateShare, misses: &RateShare, attainment: f64) -> String {
    let share_text = |x: f64| percent_short(x, Some(attainment));
    let how = if offered == meets.offered_per_s {
        format!(
            "met exactly at {}/s ({}); {}/s is below ({})",
            short(meets.offered_per_s),
            share_text(meets.pass_share),
            short(misses.offered_per_s),
            share_text(misses.pass_share)
        )
    } else {
        format!(
            "interpolated between {}/s ({}) and {}/s ({})",
            short(meets.offered_per_s),
            share_text(meets.pass_share),
            short(misses.offered_per_s),
            share_text(misses.pass_share)
        )
    };
    format!(
        "{}/s at pass share ≥ {}, {how}",
        short(offered),
        percent_short(attainment, None)
    )
}

/// The warning of a wide bracket: which rule it broke, by how much, and
/// what the capacity could be instead (`warning: the bracket is wide — …`).
pub fn wide_bracket_sentence(w: &WideBracket, meets: &RateShare, misses: &RateShare) -> String {
    let mut why = Vec::new();
    if w.rules.iter().any(|r| r == "rate_ratio") {
        why.push(match w.rate_ratio {
            Some(r) => format!(
                "{}/s is {}× {}/s (more than {}×)",
                short(misses.offered_per_s),
                figure_ratio(r),
                short(meets.offered_per_s),
                short(WIDE_BRACKET_RATE_RATIO)
            ),
            None => format!("the lower rate is {}/s", short(meets.offered_per_s)),
        });
    }
    if w.rules.iter().any(|r| r == "share_drop") {
        why.push(format!(
            "the pass share fell {} points between them (more than {})",
            figure_ratio(w.share_drop * 100.0),
            short(WIDE_BRACKET_SHARE_DROP * 100.0)
        ));
    }
    format!(
        "warning: the bracket is wide — {}; the crossing could be anywhere from {}/s to {}/s, \
         so the interpolated rate is a rough estimate: test rates in between",
        why.join(" and "),
        short(meets.offered_per_s),
        short(misses.offered_per_s)
    )
}

/// A ratio or a number of points with one decimal, `3.0`, `94.7`.
fn figure_ratio(x: f64) -> String {
    format!("{x:.1}")
}

/// The capacity's own sentence, then its warnings, if any.
fn capacity_lead(capacity: &Capacity, attainment: f64, limits: &[Limit]) -> Vec<String> {
    let target = percent_short(attainment, None);
    let mut wide = None;
    let (first, below): (String, &[f64]) = match capacity {
        Capacity::Interpolated {
            offered_per_s,
            meets,
            misses,
            below_target_under_capacity: below,
            wide_bracket,
        } => {
            wide = wide_bracket
                .as_ref()
                .map(|w| wide_bracket_sentence(w, meets, misses));
            (
                interpolated(*offered_per_s, meets, misses, attainment),
                below,
            )
        }
        Capacity::AtLeast {
            offered_per_s,
            below_target_under_capacity: below,
        } => {
            let never = if limits.is_empty() {
                format!("never fell below the target ({target})")
            } else {
                "every rate held every criterion".to_owned()
            };
            let rate = short(*offered_per_s);
            (
                format!("{never}; capacity ≥ {rate}/s, the highest rate tested"),
                below,
            )
        }
        Capacity::Limited {
            offered_per_s,
            fails,
            failed,
            below_target_under_capacity: below,
            ..
        } => (
            format!(
                "{}/s, the highest rate that held every criterion; the next did not — {}",
                short(*offered_per_s),
                failed_at(fails.offered_per_s, failed)
            ),
            below,
        ),
        Capacity::NoneHolds {
            lowest_offered_per_s: low,
            failed,
            ..
        } => (
            format!(
                "no rate tested held every criterion; at the lowest, {} — the capacity is below \
                 {}/s, if anywhere; test lower rates",
                failed_at(*low, failed),
                short(*low)
            ),
            &[],
        ),
        Capacity::NoneMeets {
            best_pass_share: Some(best),
            lowest_offered_per_s: Some(low),
        } => (
            format!(
                "no rate tested met pass share ≥ {target} (best {}); the capacity is below \
                 {}/s, the lowest rate tested, if anywhere — test lower rates",
                percent_short(*best, Some(attainment)),
                short(*low)
            ),
            &[],
        ),
        Capacity::NoneMeets { .. } => (
            format!("no trace had a cohort: no pass share to compare with {target}"),
            &[],
        ),
    };
    let mut v = vec![first];
    v.extend(wide);
    v.extend(not_monotone(below, &target, limits));
    v
}

const TEXT_HEAD: [&str; 9] = [
    "offered/s",
    "served/s",
    "goodput/s",
    "pass",
    "failed",
    "cens",
    "p95 TTFT ms",
    "p95 TPOT ms",
    "λW",
];
const TEXT_WIDTHS: [usize; 9] = [9, 9, 9, 7, 7, 7, 11, 11, 7];

/// One point's cells. The pass share is shown beside the attainment target
/// it is compared with, so it never rounds onto or across it.
fn text_cells(p: &FrontierPoint, attainment: f64) -> [String; 9] {
    [
        format!("{:.2}", p.offered_per_s),
        fixed(p.served_per_s, 2),
        format!("{:.2}", p.goodput_per_s),
        p.pass_share
            .map_or_else(|| "—".to_owned(), |s| percent_beside(s, attainment, 1)),
        percent_or_dash(p.failure_share, 1),
        percent_or_dash(p.censored_share, 1),
        fixed(p.p95_ttft_ms, 1),
        fixed(p.p95_tpot_ms, 1),
        fixed(p.littles_in_flight, 2),
    ]
}

/// A figure of the streams shown only when some point has it: the p99 of
/// the pooled gaps (a point whose block has a `gaps` block), the p95 TTFA
/// (a point whose block has an `answer` block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stream {
    P99Gap,
    P95Ttfa,
}

impl Stream {
    /// The columns in play for `f`, in print order.
    fn columns(f: &Frontier) -> Vec<Stream> {
        let mut out = Vec::new();
        if f.points.iter().any(|p| p.gap_rows.is_some()) {
            out.push(Stream::P99Gap);
        }
        if f.points.iter().any(|p| p.answered.is_some()) {
            out.push(Stream::P95Ttfa);
        }
        out
    }

    fn head(self) -> &'static str {
        match self {
            Stream::P99Gap => "p99 gap ms",
            Stream::P95Ttfa => "p95 TTFA ms",
        }
    }

    fn value(self, p: &FrontierPoint) -> Option<f64> {
        match self {
            Stream::P99Gap => p.p99_gap_ms,
            Stream::P95Ttfa => p.p95_ttfa_ms,
        }
    }

    /// The sentence for a frontier in which no point has the figure: said,
    /// never drawn as zeros.
    fn none_sentence(self) -> &'static str {
        match self {
            Stream::P99Gap => {
                "no step has gaps: no completed cohort row carries gapsMs (recorded with \
                 --no-gaps, or by a tool that exports none), so there is no p99 gap to show"
            }
            Stream::P95Ttfa => {
                "no step has a first answer token: no completed cohort row carries \
                 firstAnswerMs, so there is no TTFA to show"
            }
        }
    }

    /// Whether no point of `f` has the figure.
    fn none_in(self, f: &Frontier) -> bool {
        f.points.iter().all(|p| self.value(p).is_none())
    }
}

/// The table of the stream figures in play (p99 gap, p95 TTFA) by offered
/// load, below the main table (which is already as wide as a line may be),
/// and a note for each figure no step has.
fn stream_table(o: &mut String, f: &Frontier) {
    let columns = Stream::columns(f);
    if columns.is_empty() {
        return;
    }
    let _ = writeln!(o);
    let mut line = |cells: Vec<String>, label: &str| {
        let mut l = format!("{:>9} ", cells[0]);
        for (cell, c) in cells[1..].iter().zip(&columns) {
            let _ = write!(l, "{cell:>w$} ", w = c.head().len());
        }
        let _ = write!(l, " {}", goodput_util::escape::terminal(label));
        let _ = writeln!(o, "{}", l.trim_end());
    };
    let mut head = vec!["offered/s".to_owned()];
    head.extend(columns.iter().map(|c| c.head().to_owned()));
    line(head, "trace");
    for p in &f.points {
        let mut cells = vec![format!("{:.2}", p.offered_per_s)];
        cells.extend(columns.iter().map(|c| fixed(c.value(p), 1)));
        line(cells, &p.label);
    }
    for c in columns.iter().filter(|c| c.none_in(f)) {
        wrap(o, "note", c.none_sentence());
    }
}

/// Goodput/s with its interval, e.g. `4.50 (3.60–5.56)`.
fn goodput_with_interval(p: &FrontierPoint) -> String {
    let i = p.goodput_interval;
    format!("{:.2} ({:.2}–{:.2})", p.goodput_per_s, i.lower, i.upper)
}

/// The pass share with its interval, e.g. `58.5 % (49.1 %–67.3 %)`: the
/// share beside the attainment target it is compared with, and each bound
/// with the digits that keep it off 0 % and 100 % unless it is exact.
fn pass_share_with_interval(p: &FrontierPoint, attainment: f64) -> String {
    match (p.pass_share, p.pass_share_interval) {
        (Some(share), Some(i)) => format!(
            "{} ({}–{})",
            percent_beside(share, attainment, 1),
            percent(i.lower, 1),
            percent(i.upper, 1)
        ),
        (Some(share), None) => percent_beside(share, attainment, 1),
        (None, _) => "—".to_owned(),
    }
}

/// Per point, the peak queue and KV use the server reported (points whose
/// trace has a `record --metrics` sidecar only).
fn server_peaks(o: &mut String, f: &Frontier) {
    let with: Vec<String> = f
        .points
        .iter()
        .filter(|p| p.peak_waiting.is_some() || p.peak_kv_usage.is_some())
        .map(|p| {
            let waiting = p.peak_waiting.map_or_else(|| "—".to_owned(), short);
            let kv = p.peak_kv_usage.map_or_else(
                || "—".to_owned(),
                |k| goodput_util::figures::percent_short(k.clamp(0.0, 1.0), None),
            );
            format!(
                "{}/s: peak queue {waiting}, peak KV use {kv}",
                short(p.offered_per_s)
            )
        })
        .collect();
    if !with.is_empty() {
        wrap(o, "server", &with.join("; "));
    }
}

/// The frontier as a text table.
pub fn text(f: &Frontier) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "FRONTIER  {} · {} trace{} · sorted by offered load (cohort / window s)",
        scope(f),
        f.points.len(),
        if f.points.len() == 1 { "" } else { "s" }
    );
    // The trace is the last column, whole (a path cut short names no file
    // one can open); a long path makes its own line longer, the figures
    // before it keep their columns.
    let mut line = |cells: &[String; 9], label: &str| {
        let mut l = String::new();
        for (cell, w) in cells.iter().zip(TEXT_WIDTHS) {
            let _ = write!(l, "{cell:>w$} ");
        }
        let _ = write!(l, " {}", goodput_util::escape::terminal(label));
        let _ = writeln!(o, "{}", l.trim_end());
    };
    line(&TEXT_HEAD.map(str::to_owned), "trace");
    for p in &f.points {
        line(&text_cells(p, f.attainment), &p.label);
    }
    stream_table(&mut o, f);
    let _ = writeln!(o);
    wrap(&mut o, "knee", &knee_sentence(&f.knee));
    for (i, s) in capacity_sentences(&f.capacity, f.attainment, &f.limits)
        .iter()
        .enumerate()
    {
        wrap(&mut o, if i == 0 { "capacity" } else { "" }, s);
    }
    if f.points.iter().any(|p| p.tpot_label == "chunk_cadence") {
        wrap(
            &mut o,
            "note",
            "some traces counted stream chunks: their p95 TPOT is chunk cadence",
        );
    }
    if f.points
        .iter()
        .any(|p| p.tpot_label == "tpot_client_tokens")
    {
        wrap(
            &mut o,
            "note",
            "some traces' tokens were counted by a client-side tokenizer: their p95 TPOT is per \
             client token, not necessarily per model token",
        );
    }
    server_peaks(&mut o, f);
    wrap(
        &mut o,
        "",
        "served/s = completions per second from the first to the last completion (what the \
         server kept up with, whatever the grace); goodput/s per window second; shares are of the \
         cohort; λW = completed/s × mean E2E (Little's law)",
    );
    // The net under the per-string escaping: no raw control byte leaves.
    goodput_util::escape::terminal_lines(&o).into_owned()
}

/// Writes `text` after a 10-column `head`, wrapped at [`MAX_TEXT_COLUMNS`]
/// with a hanging indent (a word longer than a line gets a line of its own).
fn wrap(o: &mut String, head: &str, text: &str) {
    let indent = 10;
    let mut line = format!("{head:<indent$}");
    let mut fresh = true;
    for word in text.split(' ') {
        let len = line.chars().count();
        if !fresh && len + 1 + word.chars().count() > MAX_TEXT_COLUMNS {
            let _ = writeln!(o, "{line}");
            line = " ".repeat(indent);
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    let _ = writeln!(o, "{line}");
}

/// The Markdown table with the knee and capacity below it.
pub fn markdown(f: &Frontier) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Frontier of {} over {} trace{}, sorted by offered load (cohort / window s).\n",
        scope(f),
        f.points.len(),
        if f.points.len() == 1 { "" } else { "s" }
    );
    let streams = Stream::columns(f);
    let stream_heads: String = streams
        .iter()
        .map(|c| format!(" {} |", c.head().replace(" ms", " (ms)")))
        .collect();
    let _ = writeln!(
        o,
        "| offered/s | served/s | completed/s | goodput/s | pass share | failure share \
         | censored share | p95 TTFT (ms) | p95 TPOT (ms) |{stream_heads} in flight (λW) | trace |"
    );
    let _ = writeln!(
        o,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|{}---:|:---|",
        "---:|".repeat(streams.len())
    );
    for p in &f.points {
        let c = text_cells(p, f.attainment);
        let stream_cells: String = streams
            .iter()
            .map(|s| format!("{} | ", fixed(s.value(p), 1)))
            .collect();
        let _ = writeln!(
            o,
            "| {} | {} | {:.2} | {} | {} | {} | {} | {} | {} | {stream_cells}{} | {} |",
            c[0],
            c[1],
            p.completed_per_s,
            goodput_with_interval(p),
            pass_share_with_interval(p, f.attainment),
            c[4],
            c[5],
            c[6],
            c[7],
            c[8],
            goodput_util::escape::markdown_code(&p.label)
        );
    }
    let _ = writeln!(o);
    for s in streams.iter().filter(|s| s.none_in(f)) {
        let _ = writeln!(o, "- **Note:** {}.", s.none_sentence());
    }
    let _ = writeln!(o, "- **Knee:** {}", knee_sentence(&f.knee));
    let caps = capacity_sentences(&f.capacity, f.attainment, &f.limits);
    if let Some((first, rest)) = caps.split_first() {
        let _ = writeln!(
            o,
            "- **Capacity at {} attainment:** {first}",
            percent_short(f.attainment, None)
        );
        for s in rest {
            let _ = writeln!(o, "- {s}");
        }
    }
    o
}

// ---------------------------------------------------------------- SVG ----

const SVG_W: f64 = 720.0;
const SVG_H: f64 = 1010.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 700.0;
/// (top, bottom) of each panel's plot area: throughput, pass share, p95
/// TTFT, p95 TPOT.
const TOP_PANEL: (f64, f64) = (50.0, 300.0);
const SHARE_PANEL: (f64, f64) = (360.0, 510.0);
const BOTTOM_PANEL: (f64, f64) = (580.0, 740.0);
const TPOT_PANEL: (f64, f64) = (800.0, 960.0);
/// Room above the highest gate line, so its label stays inside the plot.
const GATE_HEADROOM: f64 = 1.15;
const SHARE_COLOUR: &str = "#762a83";
const GOODPUT_COLOUR: &str = "#1b7837";
const SERVED_COLOUR: &str = "#2166ac";
const DIAGONAL_COLOUR: &str = "#999999";
const TTFT_COLOUR: &str = "#b2182b";
const TPOT_COLOUR: &str = "#e08214";
const GAP_COLOUR: &str = "#8c510a";
const TTFA_COLOUR: &str = "#c51b7d";
/// How far below the previous panel's top each stream panel (p99 gap,
/// p95 TTFA) starts, and its plot height: the TPOT panel's spacing.
const STREAM_PANEL_STEP: f64 = 220.0;
const STREAM_PANEL_HEIGHT: f64 = 160.0;
const GATE_COLOUR: &str = "#000000";
const KNEE_COLOUR: &str = "#555555";

/// A "nice" axis: from 0 to a multiple of a 1-2-5 step, about five ticks.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Axis {
    max: f64,
    step: f64,
}

impl Axis {
    fn for_max(data_max: f64) -> Axis {
        let m = if data_max.is_finite() && data_max > 0.0 {
            data_max
        } else {
            1.0
        };
        let raw = m / 5.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|k| k * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag);
        Axis {
            max: (m / step).ceil() * step,
            step,
        }
    }

    fn ticks(&self) -> Vec<f64> {
        let n = (self.max / self.step).round() as usize;
        (0..=n).map(|i| i as f64 * self.step).collect()
    }
}

/// SVG text and attribute values: the one HTML escaping.
fn esc(s: &str) -> String {
    goodput_util::escape::html(s)
}

struct Panel {
    top: f64,
    bottom: f64,
    x: Axis,
    y: Axis,
}

impl Panel {
    fn px(&self, x: f64) -> f64 {
        LEFT + (RIGHT - LEFT) * x / self.x.max
    }
    fn py(&self, y: f64) -> f64 {
        self.bottom - (self.bottom - self.top) * y / self.y.max
    }

    /// Frame, grid, ticks and axis titles.
    fn axes(&self, o: &mut String, y_title: &str, x_title: &str) {
        let _ = writeln!(o, "  <g class=\"axes\" stroke=\"#000\" fill=\"none\">");
        let _ = writeln!(
            o,
            "    <rect x=\"{LEFT:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>",
            self.top,
            RIGHT - LEFT,
            self.bottom - self.top
        );
        let _ = writeln!(o, "  </g>");
        let _ = writeln!(
            o,
            "  <g class=\"grid\" stroke=\"#ddd\" stroke-width=\"0.5\">"
        );
        for t in self.y.ticks().iter().skip(1) {
            let y = self.py(*t);
            let _ = writeln!(
                o,
                "    <line x1=\"{LEFT:.1}\" y1=\"{y:.1}\" x2=\"{RIGHT:.1}\" y2=\"{y:.1}\"/>"
            );
        }
        let _ = writeln!(o, "  </g>");
        let _ = writeln!(o, "  <g class=\"ticks\" text-anchor=\"middle\">");
        for t in self.x.ticks() {
            let x = self.px(t);
            let _ = writeln!(
                o,
                "    <text x=\"{x:.1}\" y=\"{:.1}\">{}</text>",
                self.bottom + 16.0,
                short(t)
            );
        }
        let _ = writeln!(o, "  </g>");
        let _ = writeln!(o, "  <g class=\"ticks\" text-anchor=\"end\">");
        for t in self.y.ticks() {
            let y = self.py(t);
            let _ = writeln!(
                o,
                "    <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                LEFT - 6.0,
                y + 4.0,
                short(t)
            );
        }
        let _ = writeln!(o, "  </g>");
        let _ = writeln!(
            o,
            "  <text class=\"axis-title\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            (LEFT + RIGHT) / 2.0,
            self.bottom + 34.0,
            esc(x_title)
        );
        let cy = (self.top + self.bottom) / 2.0;
        let _ = writeln!(
            o,
            "  <text class=\"axis-title\" x=\"20.0\" y=\"{cy:.1}\" text-anchor=\"middle\" \
             transform=\"rotate(-90 20.0 {cy:.1})\">{}</text>",
            esc(y_title)
        );
    }

    /// The line served = offered: a server that keeps up lies on it, and the
    /// served curve leaves it at the knee.
    fn diagonal(&self, o: &mut String) {
        let end = self.x.max.min(self.y.max);
        let _ = writeln!(
            o,
            "  <line class=\"diagonal\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" \
             stroke=\"{DIAGONAL_COLOUR}\" stroke-dasharray=\"4 3\"/>",
            self.px(0.0),
            self.py(0.0),
            self.px(end),
            self.py(end)
        );
    }

    /// Interval bars: a vertical line from lower to upper at each x, with
    /// short caps, so a step that sits inside the noise shows as overlapping bars.
    fn bars(&self, o: &mut String, name: &str, colour: &str, bars: &[(f64, f64, f64)]) {
        let _ = writeln!(
            o,
            "  <g class=\"interval-bars\" data-name=\"{}\" stroke=\"{colour}\" stroke-width=\"1\">",
            esc(name)
        );
        for (x, lower, upper) in bars {
            let (px, y0, y1) = (self.px(*x), self.py(*lower), self.py(*upper));
            let _ = writeln!(
                o,
                "    <path d=\"M{px:.1},{y0:.1}V{y1:.1}M{:.1},{y0:.1}H{:.1}M{:.1},{y1:.1}H{:.1}\"/>",
                px - 3.0,
                px + 3.0,
                px - 3.0,
                px + 3.0
            );
        }
        let _ = writeln!(o, "  </g>");
    }

    /// A horizontal reference line across the panel (the attainment target),
    /// labelled at its right end.
    fn target(&self, o: &mut String, y: f64, label: &str) {
        let py = self.py(y);
        let _ = writeln!(
            o,
            "  <g class=\"target\"><line x1=\"{LEFT:.1}\" y1=\"{py:.1}\" x2=\"{RIGHT:.1}\" y2=\"{py:.1}\" \
             stroke=\"{KNEE_COLOUR}\" stroke-dasharray=\"6 2 1 2\"/><text x=\"{:.1}\" y=\"{:.1}\" \
             text-anchor=\"end\" fill=\"{KNEE_COLOUR}\">{}</text></g>",
            RIGHT - 4.0,
            py - 4.0,
            esc(label)
        );
    }

    /// One series: a polyline through the points and a circle on each.
    fn series(&self, o: &mut String, name: &str, colour: &str, pts: &[(f64, f64)]) {
        if pts.is_empty() {
            return;
        }
        let path: Vec<String> = pts
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", self.px(*x), self.py(*y)))
            .collect();
        let _ = writeln!(
            o,
            "  <g class=\"series\" data-name=\"{}\" stroke=\"{colour}\" fill=\"{colour}\">",
            esc(name)
        );
        let _ = writeln!(
            o,
            "    <polyline fill=\"none\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        for (x, y) in pts {
            let _ = writeln!(
                o,
                "    <circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\"/>",
                self.px(*x),
                self.py(*y)
            );
        }
        let _ = writeln!(o, "  </g>");
    }
}

/// The chart: served/s and goodput/s against offered/s on top, with the
/// served = offered diagonal (where served leaves it, the server stopped
/// keeping up: the knee, whatever the grace period); the pass share with its
/// interval bars and the attainment target in the middle, so a knee or a
/// capacity that sits inside the noise is visibly so; p95 TTFT, then p95
/// TPOT, below, each with the classes' gates on it (a p95 above a gate means
/// more than 5 % of requests missed it). The knee is a dashed vertical line
/// through every panel, the capacity a dotted one.
pub fn svg(f: &Frontier) -> String {
    let panels = Panels::for_frontier(f);
    let mut o = String::new();
    svg_open(
        &mut o,
        f,
        SVG_H + STREAM_PANEL_STEP * panels.streams.len() as f64,
    );
    throughput_panel(&mut o, &panels.top, f);
    pass_share_panel(&mut o, &panels.share, f);
    ttft_panel(&mut o, &panels.bottom, f);
    tpot_panel(&mut o, &panels.tpot, f);
    for (stream, panel) in &panels.streams {
        stream_panel(&mut o, panel, f, *stream);
    }
    knee_and_capacity_marks(&mut o, &panels, f);
    legend(&mut o);
    let _ = writeln!(o, "</svg>");
    o
}

/// The chart's three panels, stacked, sharing one offered-load x axis.
struct Panels {
    /// Served/s and goodput/s.
    top: Panel,
    /// The pass share, 0–100 %.
    share: Panel,
    /// p95 TTFT.
    bottom: Panel,
    /// p95 TPOT.
    tpot: Panel,
    /// The stream figures in play (p99 gap, p95 TTFA), one panel each below.
    streams: Vec<(Stream, Panel)>,
}

impl Panels {
    /// Axes that hold every point's figures and every class's gates.
    fn for_frontier(f: &Frontier) -> Panels {
        let pts = &f.points;
        let x_max = pts.iter().map(|p| p.offered_per_s).fold(0.0, f64::max);
        // The top panel holds the offered = served diagonal too, so it is as
        // tall as the highest offered rate.
        let y_max = pts
            .iter()
            .map(|p| {
                p.served_per_s
                    .unwrap_or(0.0)
                    .max(p.goodput_per_s)
                    .max(p.offered_per_s)
                    .max(p.goodput_interval.upper)
            })
            .fold(0.0, f64::max);
        let x = Axis::for_max(x_max);
        Panels {
            top: Panel {
                top: TOP_PANEL.0,
                bottom: TOP_PANEL.1,
                x,
                y: Axis::for_max(y_max),
            },
            share: Panel {
                top: SHARE_PANEL.0,
                bottom: SHARE_PANEL.1,
                x,
                y: Axis {
                    max: 100.0,
                    step: 20.0,
                },
            },
            bottom: Panel {
                top: BOTTOM_PANEL.0,
                bottom: BOTTOM_PANEL.1,
                x,
                y: latency_axis(
                    pts.iter().filter_map(|p| p.p95_ttft_ms),
                    &gate_lines(f, Gate::Ttft),
                ),
            },
            tpot: Panel {
                top: TPOT_PANEL.0,
                bottom: TPOT_PANEL.1,
                x,
                y: latency_axis(
                    pts.iter().filter_map(|p| p.p95_tpot_ms),
                    &gate_lines(f, Gate::Tpot),
                ),
            },
            streams: Stream::columns(f)
                .into_iter()
                .enumerate()
                .map(|(i, stream)| {
                    let top = TPOT_PANEL.0 + STREAM_PANEL_STEP * (i + 1) as f64;
                    let panel = Panel {
                        top,
                        bottom: top + STREAM_PANEL_HEIGHT,
                        x,
                        y: latency_axis(
                            pts.iter().filter_map(|p| stream.value(p)),
                            &gate_lines(f, stream.gate()),
                        ),
                    };
                    (stream, panel)
                })
                .collect(),
        }
    }
}

/// The `<svg>` element (`height` tall), its title and the white background.
fn svg_open(o: &mut String, f: &Frontier, height: f64) {
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{SVG_W}\" height=\"{height}\" \
         viewBox=\"0 0 {SVG_W} {height}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        o,
        "  <title>goodput frontier: {} over {} traces</title>",
        esc(&scope(f)),
        f.points.len()
    );
    let _ = writeln!(
        o,
        "  <rect width=\"{SVG_W}\" height=\"{height}\" fill=\"#fff\"/>"
    );
}

/// The top panel: served/s, goodput/s with its interval bars, and the
/// served = offered diagonal.
fn throughput_panel(o: &mut String, top: &Panel, f: &Frontier) {
    let pts = &f.points;
    let _ = writeln!(
        o,
        "  <text class=\"panel-title\" x=\"{LEFT:.1}\" y=\"30.0\" font-size=\"14\">Served throughput and goodput vs offered load ({})</text>",
        esc(&scope(f))
    );
    top.axes(o, "requests/s", "offered load (requests/s)");
    top.diagonal(o);
    top.series(
        o,
        "served/s",
        SERVED_COLOUR,
        &pts.iter()
            .filter_map(|p| p.served_per_s.map(|s| (p.offered_per_s, s)))
            .collect::<Vec<_>>(),
    );
    top.bars(
        o,
        "goodput/s interval",
        GOODPUT_COLOUR,
        &pts.iter()
            .map(|p| {
                let i = p.goodput_interval;
                (p.offered_per_s, i.lower, i.upper)
            })
            .collect::<Vec<_>>(),
    );
    top.series(
        o,
        "goodput/s",
        GOODPUT_COLOUR,
        &pts.iter()
            .map(|p| (p.offered_per_s, p.goodput_per_s))
            .collect::<Vec<_>>(),
    );
}

/// The middle panel: the pass share with its interval bars and the
/// attainment target.
fn pass_share_panel(o: &mut String, share: &Panel, f: &Frontier) {
    let pts = &f.points;
    let _ = writeln!(
        o,
        "  <text class=\"panel-title\" x=\"{LEFT:.1}\" y=\"{:.1}\" font-size=\"14\">Pass share vs offered load (bars: Wilson score interval)</text>",
        SHARE_PANEL.0 - 12.0
    );
    share.axes(o, "pass share (%)", "offered load (requests/s)");
    share.target(
        o,
        f.attainment * 100.0,
        &format!("target {}", percent_short(f.attainment, None)),
    );
    share.bars(
        o,
        "pass share interval",
        SHARE_COLOUR,
        &pts.iter()
            .filter_map(|p| {
                p.pass_share_interval
                    .map(|i| (p.offered_per_s, i.lower * 100.0, i.upper * 100.0))
            })
            .collect::<Vec<_>>(),
    );
    share.series(
        o,
        "pass share",
        SHARE_COLOUR,
        &pts.iter()
            .filter_map(|p| p.pass_share.map(|v| (p.offered_per_s, v * 100.0)))
            .collect::<Vec<_>>(),
    );
}

/// A latency panel's y axis: up to the highest p95 or, with room for its
/// label, the highest gate.
fn latency_axis(p95s: impl Iterator<Item = f64>, gates: &[(f64, String)]) -> Axis {
    let data = p95s.fold(0.0, f64::max);
    let gate = gates
        .iter()
        .map(|(g, _)| g * GATE_HEADROOM)
        .fold(0.0, f64::max);
    Axis::for_max(data.max(gate))
}

/// The metric a gate line is drawn for.
#[derive(Clone, Copy)]
enum Gate {
    Ttft,
    Tpot,
    Stall,
    Ttfa,
}

/// The distinct gates of `metric` among the frontier's classes, ascending,
/// each with the classes that declared it: `(1000, "chat, code")`.
fn gate_lines(f: &Frontier, metric: Gate) -> Vec<(f64, String)> {
    let mut lines: Vec<(f64, Vec<&str>)> = Vec::new();
    for g in &f.gates {
        let value = match metric {
            Gate::Ttft => g.ttft_ms,
            Gate::Tpot => g.tpot_ms,
            Gate::Stall => g.stall_ms,
            Gate::Ttfa => g.ttfa_ms,
        };
        let Some(v) = value.filter(|v| v.is_finite()) else {
            continue;
        };
        match lines.iter_mut().find(|(x, _)| *x == v) {
            Some((_, names)) if !names.contains(&g.class.as_str()) => names.push(&g.class),
            Some(_) => {}
            None => lines.push((v, vec![&g.class])),
        }
    }
    lines.sort_by(|a, b| a.0.total_cmp(&b.0));
    lines
        .into_iter()
        .map(|(v, names)| (v, names.join(", ")))
        .collect()
}

/// Each gate of a latency panel as a solid black horizontal line, labelled
/// above it at the left (`TTFT gate 1000 ms (chat)`), or one "no gate"
/// note when no class in scope gates the metric.
fn draw_gates(o: &mut String, panel: &Panel, f: &Frontier, metric: Gate, name: &str) {
    let lines = gate_lines(f, metric);
    if lines.is_empty() {
        let _ = writeln!(
            o,
            "  <text class=\"no-gate\" x=\"{:.1}\" y=\"{:.1}\" fill=\"#555\" font-style=\"italic\">no {name} gate in any class</text>",
            LEFT + 6.0,
            panel.top + 14.0
        );
        return;
    }
    for (v, classes) in lines {
        let y = panel.py(v);
        let _ = writeln!(
            o,
            "  <g class=\"gate\" data-gate-ms=\"{}\"><line x1=\"{LEFT:.1}\" y1=\"{y:.1}\" x2=\"{RIGHT:.1}\" y2=\"{y:.1}\" \
             stroke=\"{GATE_COLOUR}\" stroke-width=\"1.5\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"{GATE_COLOUR}\" \
             stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">{name} gate {} ms ({})</text></g>",
            short(v),
            LEFT + 6.0,
            y - 4.0,
            short(v),
            esc(&classes)
        );
    }
}

/// The fourth panel: p95 TPOT with the classes' TPOT gates.
fn tpot_panel(o: &mut String, panel: &Panel, f: &Frontier) {
    let chunks = f.points.iter().any(|p| p.tpot_label == "chunk_cadence");
    let what = if chunks {
        "p95 time per output token (chunk cadence for traces that counted chunks)"
    } else {
        "p95 time per output token"
    };
    let _ = writeln!(
        o,
        "  <text class=\"panel-title\" x=\"{LEFT:.1}\" y=\"{:.1}\" font-size=\"14\">{what} vs offered load</text>",
        TPOT_PANEL.0 - 12.0
    );
    panel.axes(o, "p95 TPOT (ms)", "offered load (requests/s)");
    draw_gates(o, panel, f, Gate::Tpot, "TPOT");
    panel.series(
        o,
        "p95 TPOT (ms)",
        TPOT_COLOUR,
        &f.points
            .iter()
            .filter_map(|p| p.p95_tpot_ms.map(|t| (p.offered_per_s, t)))
            .collect::<Vec<_>>(),
    );
}

impl Stream {
    /// The gate drawn on the figure's panel: the stall gate (on the largest
    /// gap of a row: a p99 gap above it means stalls in many rows), the
    /// TTFA gate.
    fn gate(self) -> Gate {
        match self {
            Stream::P99Gap => Gate::Stall,
            Stream::P95Ttfa => Gate::Ttfa,
        }
    }

    /// (panel title, y-axis title, gate name, colour).
    fn svg_words(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            Stream::P99Gap => (
                "p99 gap between token-carrying events (pooled) vs offered load",
                "p99 gap (ms)",
                "stall",
                GAP_COLOUR,
            ),
            Stream::P95Ttfa => (
                "p95 time to first answer token vs offered load",
                "p95 TTFA (ms)",
                "TTFA",
                TTFA_COLOUR,
            ),
        }
    }
}

/// A stream panel below TPOT: the p99 gap or the p95 TTFA with the
/// classes' stall or TTFA gates, or, when no step has the figure, a
/// sentence saying so (never a line of zeros).
fn stream_panel(o: &mut String, panel: &Panel, f: &Frontier, stream: Stream) {
    let (title, y_title, gate, colour) = stream.svg_words();
    let _ = writeln!(
        o,
        "  <text class=\"panel-title\" x=\"{LEFT:.1}\" y=\"{:.1}\" font-size=\"14\">{title}</text>",
        panel.top - 12.0
    );
    panel.axes(o, y_title, "offered load (requests/s)");
    if stream.none_in(f) {
        let _ = writeln!(
            o,
            "  <text class=\"no-data\" x=\"{:.1}\" y=\"{:.1}\" fill=\"#555\" font-style=\"italic\">{}</text>",
            LEFT + 6.0,
            panel.top + 30.0,
            match stream {
                Stream::P99Gap => "no step has gaps (no row carries gapsMs)",
                Stream::P95Ttfa => "no step has a first answer token (no row carries firstAnswerMs)",
            }
        );
    }
    draw_gates(o, panel, f, stream.gate(), gate);
    panel.series(
        o,
        y_title,
        colour,
        &f.points
            .iter()
            .filter_map(|p| stream.value(p).map(|v| (p.offered_per_s, v)))
            .collect::<Vec<_>>(),
    );
}

/// The third panel: p95 TTFT with the classes' TTFT gates.
fn ttft_panel(o: &mut String, bottom: &Panel, f: &Frontier) {
    let _ = writeln!(
        o,
        "  <text class=\"panel-title\" x=\"{LEFT:.1}\" y=\"{:.1}\" font-size=\"14\">p95 time to first token vs offered load</text>",
        BOTTOM_PANEL.0 - 12.0
    );
    bottom.axes(o, "p95 TTFT (ms)", "offered load (requests/s)");
    draw_gates(o, bottom, f, Gate::Ttft, "TTFT");
    bottom.series(
        o,
        "p95 TTFT (ms)",
        TTFT_COLOUR,
        &f.points
            .iter()
            .filter_map(|p| p.p95_ttft_ms.map(|t| (p.offered_per_s, t)))
            .collect::<Vec<_>>(),
    );
}

/// The knee (dashed) and the interpolated capacity (dotted), each a
/// vertical line through every panel, when the frontier has them.
fn knee_and_capacity_marks(o: &mut String, panels: &Panels, f: &Frontier) {
    if let Knee::Found {
        offered_per_s,
        at_lowest_rate,
        ..
    } = &f.knee
    {
        let label = if *at_lowest_rate {
            format!("knee ≤ {}/s", short(*offered_per_s))
        } else {
            format!("knee {}/s", short(*offered_per_s))
        };
        rate_mark(o, panels, *offered_per_s, &label, "6 4", "knee");
    }
    if let Capacity::Interpolated {
        offered_per_s,
        wide_bracket,
        ..
    } = &f.capacity
    {
        let label = format!(
            "capacity {}/s @ {}{}",
            short(*offered_per_s),
            percent_short(f.attainment, None),
            if wide_bracket.is_some() {
                " (wide bracket: rough)"
            } else {
                ""
            }
        );
        rate_mark(o, panels, *offered_per_s, &label, "2 3", "capacity");
    }
    if let Capacity::Limited { offered_per_s, .. } = &f.capacity {
        let label = format!("capacity {}/s (held every limit)", short(*offered_per_s));
        rate_mark(o, panels, *offered_per_s, &label, "2 3", "capacity");
    }
}

/// A vertical line at `rate` through every panel, labelled in the top one.
fn rate_mark(o: &mut String, panels: &Panels, rate: f64, label: &str, dash: &str, class: &str) {
    let px = panels.top.px(rate);
    let _ = writeln!(
        o,
        "  <g class=\"{class}\" stroke=\"{KNEE_COLOUR}\" stroke-dasharray=\"{dash}\">"
    );
    let streams = panels.streams.iter().map(|(_, p)| p);
    for p in [&panels.top, &panels.share, &panels.bottom, &panels.tpot]
        .into_iter()
        .chain(streams)
    {
        let _ = writeln!(
            o,
            "    <line x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\"/>",
            p.top, p.bottom
        );
    }
    let _ = writeln!(o, "  </g>");
    // Labels to the right of the line, or to its left near the right edge.
    let (tx, anchor) = if px > RIGHT - 120.0 {
        (px - 4.0, "end")
    } else {
        (px + 4.0, "start")
    };
    let ty = if class == "knee" {
        TOP_PANEL.1 - 8.0
    } else {
        TOP_PANEL.1 - 24.0
    };
    let _ = writeln!(
        o,
        "  <text class=\"{class}-label\" x=\"{tx:.1}\" y=\"{ty:.1}\" text-anchor=\"{anchor}\" \
         fill=\"{KNEE_COLOUR}\">{}</text>",
        esc(label)
    );
}

/// The legend, top-left inside the top panel, drawn last (on a white card)
/// so the knee and capacity lines never cross its text.
fn legend(o: &mut String) {
    let _ = writeln!(
        o,
        "  <rect class=\"legend-card\" x=\"{:.1}\" y=\"{:.1}\" width=\"250.0\" height=\"56.0\" \
         fill=\"#fff\" fill-opacity=\"0.9\"/>",
        LEFT + 4.0,
        TOP_PANEL.0 + 2.0
    );
    for (i, (name, colour)) in [
        ("served/s (completions over their span)", SERVED_COLOUR),
        ("goodput/s (met every gate)", GOODPUT_COLOUR),
        ("served = offered", DIAGONAL_COLOUR),
    ]
    .iter()
    .enumerate()
    {
        let y = TOP_PANEL.0 + 16.0 + 16.0 * i as f64;
        let _ = writeln!(
            o,
            "  <g class=\"legend\"><line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" \
             stroke=\"{colour}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
            LEFT + 10.0,
            y - 4.0,
            LEFT + 30.0,
            y - 4.0,
            LEFT + 36.0,
            y,
            esc(name)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wide_bracket_warning_names_both_rules_and_the_range() {
        // 3.8 / 1.267 = 2.9992 → "3.0×"; 94.7 − 0 = 94.7 points.
        let meets = RateShare {
            offered_per_s: 1.267,
            pass_share: 0.947,
        };
        let misses = RateShare {
            offered_per_s: 3.8,
            pass_share: 0.0,
        };
        let w = WideBracket::of(&meets, &misses).unwrap();
        assert_eq!(
            wide_bracket_sentence(&w, &meets, &misses),
            "warning: the bracket is wide — 3.8/s is 3.0× 1.267/s (more than 1.5×) and the pass \
             share fell 94.7 points between them (more than 50); the crossing could be anywhere \
             from 1.267/s to 3.8/s, so the interpolated rate is a rough estimate: test rates in \
             between"
        );
    }

    #[test]
    fn axes_round_up_to_a_one_two_five_step() {
        assert_eq!(
            Axis::for_max(42.0),
            Axis {
                max: 50.0,
                step: 10.0
            }
        );
        assert_eq!(
            Axis::for_max(0.0),
            Axis {
                max: 1.0,
                step: 0.2
            }
        );
        assert_eq!(
            Axis::for_max(900.0),
            Axis {
                max: 1000.0,
                step: 200.0
            }
        );
        assert_eq!(Axis::for_max(7.0).ticks().len(), 5); // 0, 2, 4, 6, 8
    }
}
