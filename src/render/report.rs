//! The receipt as one self-contained HTML page, for a person reviewing a run.
//!
//! Pure: an [`Analysis`] and the sweep entries in, a `String` of HTML out. The
//! page fetches nothing (inline CSS and SVG, no script, no font, no URL; a
//! Content-Security-Policy of `default-src 'none'` says so to the browser too),
//! and the same trace gives the same bytes (no clock, host or path inside).
//!
//! A trace is untrusted input: every string that comes from it — row ids,
//! class names, failure reasons, labels — goes through [`escape`] before it
//! reaches the page, in text and in attributes alike.
//!
//! **Bounded output.** A trace may hold 100,000 rows or more, so:
//! - the verdict lanes draw one mark per row up to [`LANE_MARK_LIMIT`] rows;
//!   above it, rows are counted into columns [`LANE_COLUMN_PX`] pixels wide per
//!   lane and class, and each non-empty column is one mark carrying its count
//!   (at most 6 lanes × sub-lanes × 530 columns, whatever the row count);
//! - a histogram has at most [`HISTOGRAM_BINS`] bars;
//! - the invalid-row list shows the first [`MAX_LISTED_INVALID_ROWS`] rows.
//!
//! Every figure in the tables is read from the receipt or the sweep entries;
//! the charts only place the judged rows (they recount nothing).

use super::text::{fixed, opt, share};
use std::fmt::Write;

use crate::analyze::Analysis;
use crate::receipt::{Block, LatencySummary, Receipt};
use crate::render::sweep::short;
use crate::sweep::{SweepEntry, TippingPoint};
use crate::trace::{Gates, Trace};
use crate::verdict::Verdict;

/// Above this many rows the lanes aggregate marks into per-column counts.
pub const LANE_MARK_LIMIT: usize = 2_000;
/// Width of one aggregation column of the lanes, in SVG pixels.
pub const LANE_COLUMN_PX: f64 = 2.0;
/// Most bars in one latency histogram.
pub const HISTOGRAM_BINS: usize = 40;
/// How many invalid rows the page lists by position, id and reasons.
pub const MAX_LISTED_INVALID_ROWS: usize = 100;
/// With more classes than this, the lanes are not split into one sub-lane per
/// class (the class stays in each mark's tooltip).
pub const MAX_CLASS_SUBLANES: usize = 8;

/// The verdict lanes, top to bottom: name, Okabe–Ito colour, meaning.
///
/// Position (the lane) carries the verdict; colour repeats it, so the chart
/// reads the same for a colour-blind reader or on a grey-scale print.
pub const LANES: [(&str, &str, &str); 6] = [
    (
        "pass",
        "#009E73",
        "completed and met every gate of its class",
    ),
    ("miss", "#D55E00", "completed but missed at least one gate"),
    ("failed", "#CC79A7", "failed in the window"),
    ("censored", "#E69F00", "no outcome by the horizon"),
    (
        "excluded",
        "#999999",
        "arrived in the warm-up or outside the window",
    ),
    (
        "invalid",
        "#000000",
        "kept out of both the count and the denominator",
    ),
];

/// Escapes text for HTML text and double- or single-quoted attributes.
/// Every trace-derived string goes through this.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The lane of a verdict (index into [`LANES`]).
fn lane_of(v: &Verdict) -> usize {
    match v {
        Verdict::Pass(_) => 0,
        Verdict::Miss(..) => 1,
        Verdict::Failed { .. } => 2,
        Verdict::Censored { .. } => 3,
        Verdict::Excluded(_) => 4,
        Verdict::Invalid(_) => 5,
    }
}

/// The reasons of a row's verdict, as the receipt's `rows[].reasons` lists them.
fn verdict_reasons(v: &Verdict, trace: &Trace) -> String {
    match v {
        Verdict::Invalid(set) => set
            .iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        Verdict::Excluded(e) => e.as_str().to_owned(),
        Verdict::Censored { cause, known_late } => {
            if *known_late {
                format!("{}, knownLate", cause.as_str())
            } else {
                cause.as_str().to_owned()
            }
        }
        Verdict::Failed { reason } => trace.strings.resolve(*reason).to_owned(),
        Verdict::Pass(_) => String::new(),
        Verdict::Miss(_, m) => m.names().collect::<Vec<_>>().join(", "),
    }
}

/// A coordinate with one decimal.
fn px(x: f64) -> String {
    format!("{x:.1}")
}

/// Shortens a trace string for a label (the tooltip keeps it whole).
fn clip(s: &str, keep: usize) -> String {
    if s.chars().count() <= keep {
        s.to_owned()
    } else {
        let mut head: String = s.chars().take(keep.saturating_sub(1)).collect();
        head.push('…');
        head
    }
}

/// 1, 2 or 5 × a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw {
            return m * p;
        }
    }
    10.0 * p
}

/// Tick values in `[lo, hi]`, about `target` of them, at most 40.
fn ticks(lo: f64, hi: f64, target: f64) -> Vec<f64> {
    let step = nice_step((hi - lo) / target);
    let mut out = Vec::new();
    let mut k = (lo / step).ceil();
    while k * step <= hi + step * 1e-9 && out.len() < 40 {
        out.push(k * step);
        k += 1.0;
    }
    out
}

const STYLE: &str = "\
:root{color-scheme:light}
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:#1a1a1a;background:#fff;margin:24px auto;max-width:1340px;padding:0 16px}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}dl.meta dt{color:#555}dl.meta dd{margin:0}
table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}
th,td{padding:3px 7px;border-bottom:1px solid #e4e4e4;text-align:right;white-space:nowrap}
th{background:#f4f4f4;font-weight:600}th.group{text-align:center;border-left:1px solid #ccc}
td.name,th.name{text-align:left}td.first,th.first{border-left:1px solid #ccc}
tr.all td{font-weight:600}
tr.declared td{background:#fff3c4;font-weight:600}
.scroll{overflow-x:auto}
p.note,ul.notes{color:#444;font-size:13px;margin:6px 0}
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;margin:6px 0 10px;font-size:13px}
.legend span.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin-right:5px}
svg{max-width:100%;height:auto;font-family:inherit}
svg text{font-size:11px;fill:#333}
svg .lane-label{font-size:12px;font-weight:600}
svg .band-label{font-size:11px;fill:#555}
svg .axis{stroke:#888;stroke-width:1}
svg .grid{stroke:#eee;stroke-width:1}
svg .boundary{stroke:#444;stroke-width:1;stroke-dasharray:4 3}
svg .bar{fill:#0072B2}
svg .gate{stroke:#000;stroke-width:2}
svg .gate-label{font-size:11px;font-weight:600;fill:#000;paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
svg .no-gate{font-size:12px;fill:#555;font-style:italic}
.charts{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:8px 16px}
figure{margin:0}figcaption{font-size:12px;color:#444}
.v-pass{fill:#009E73}.v-miss{fill:#D55E00}.v-failed{fill:#CC79A7}.v-censored{fill:#E69F00}.v-excluded{fill:#999999}.v-invalid{fill:#000000}
footer{margin-top:32px;color:#666;font-size:12px;border-top:1px solid #ddd;padding-top:8px}
";

/// Renders the report: header, summary, verdict lanes, latency
/// distributions, reasons, the sweep table (declared row first) and the
/// invalid rows. `sweep` is what [`crate::sweep::sweep`] returned (may be empty).
pub fn render(analysis: &Analysis, sweep: &[SweepEntry]) -> String {
    let r = &analysis.receipt;
    let mut o = String::with_capacity(64 * 1024);
    let short_sha: String = r.trace.sha256.chars().take(12).collect();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"{} {}\">\n<title>goodput report · {}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n",
        escape(&r.generator.name),
        escape(&r.generator.version),
        escape(&short_sha)
    );
    header(&mut o, r);
    summary(&mut o, r);
    lanes(&mut o, analysis);
    distributions(&mut o, analysis);
    reasons(&mut o, r);
    sweep_table(&mut o, sweep);
    invalid_list(&mut o, analysis);
    let _ = write!(
        o,
        "<footer>Made by {} {} from the trace bytes with sha256 <code>{}</code> ({}). \
         The JSON receipt (<code>goodput analyze --json</code>) is the record; this page is a view of it. \
         Same trace, same page, byte for byte.</footer>\n</body>\n</html>\n",
        escape(&r.generator.name),
        escape(&r.generator.version),
        escape(&r.trace.sha256),
        escape(&r.schema)
    );
    o
}

/// The metric label of TPOT in force (chunk cadence when tokens are chunks).
fn tpot_name(r: &Receipt) -> &'static str {
    if r.contract.tpot_label == "tpot" {
        "TPOT"
    } else {
        "chunk cadence"
    }
}

fn gate_text(g: Option<f64>, rule: &str) -> String {
    g.map_or_else(
        || "no gate".to_owned(),
        |v| format!("{rule} {} ms", short(v)),
    )
}

fn header(o: &mut String, r: &Receipt) {
    let c = &r.contract;
    let w = &c.window;
    let rule = if c.equality == "strict" { "<" } else { "≤" };
    let _ = writeln!(o, "<header>\n<h1>goodput report</h1>\n<dl class=\"meta\">");
    let mut item = |k: &str, v: String| {
        let _ = writeln!(o, "<dt>{k}</dt><dd>{v}</dd>");
    };
    item(
        "trace",
        format!(
            "sha256 <code id=\"sha256\">{}</code> · {} bytes · {} rows",
            escape(&r.trace.sha256),
            r.trace.bytes,
            r.trace.rows
        ),
    );
    item(
        "window",
        format!(
            "[{}, {}) ms = {} s · horizon {} ms",
            short(w.start_ms),
            short(w.end_ms),
            short(w.duration_ms / 1000.0),
            short(w.horizon_ms)
        ),
    );
    if c.arrivals_unknown.is_some() {
        item(
            "arrivals",
            format!(
                "<b id=\"arrivals-unknown\">{}</b>",
                escape(crate::receipt::ARRIVALS_UNKNOWN_LINE)
            ),
        );
    }
    item(
        "warm-up",
        c.warmup.as_ref().map_or_else(
            || "none".to_owned(),
            |wu| format!("[{}, {}) ms", short(wu.start_ms), short(wu.end_ms)),
        ),
    );
    item(
        "equality",
        format!(
            "{} (a value equal to its gate {})",
            escape(&c.equality),
            if c.equality == "strict" {
                "misses"
            } else {
                "passes"
            }
        ),
    );
    item(
        "tokens",
        format!(
            "{} → per-token figure is <b>{}</b>",
            escape(&c.tokens),
            escape(&c.tpot_label)
        ),
    );
    item(
        "percentiles",
        format!("{} (rank ⌈p·n/100⌉)", escape(&c.percentile_method)),
    );
    item(
        "limits",
        format!("{} rows · {} bytes", r.limits.max_rows, r.limits.max_bytes),
    );
    let tp = tpot_name(r);
    for (name, g) in &c.classes {
        let default = if c.default_class.as_deref() == Some(name.as_str()) {
            " (default)"
        } else {
            ""
        };
        item(
            "class",
            format!(
                "<b>{}</b>{default}: TTFT {} · {tp} {} · E2E {}",
                escape(name),
                gate_text(g.ttft_ms, rule),
                gate_text(g.tpot_ms, rule),
                gate_text(g.e2e_ms, rule)
            ),
        );
    }
    for (what, labels) in [("boundary", &c.boundary), ("workload", &c.workload)] {
        if labels.is_empty() {
            continue;
        }
        let text: Vec<String> = labels
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    crate::trace::Scalar::Bool(b) => b.to_string(),
                    crate::trace::Scalar::Number(n) => short(*n),
                    crate::trace::Scalar::String(s) => s.clone(),
                };
                format!("{} = {}", escape(k), escape(&v))
            })
            .collect();
        item(what, text.join(" · "));
    }
    let _ = writeln!(o, "</dl>\n</header>");
}

/// The blocks in display order: all rows first (`None`), then each class.
fn blocks(r: &Receipt) -> Vec<(Option<&str>, &Block)> {
    std::iter::once((None, &r.results.all))
        .chain(r.results.classes.iter().map(|(k, b)| (Some(k.as_str()), b)))
        .collect()
}

/// The opening `<tr>` of a block's row and its name cell: the roll-up is
/// marked `data-rollup`, a class row `data-class` (a class may be named "all").
fn block_row_start(name: Option<&str>) -> String {
    match name {
        None => "<tr class=\"all\" data-rollup=\"all\"><td class=\"name\">all rows</td>".to_owned(),
        Some(n) => format!(
            "<tr data-class=\"{}\"><td class=\"name\">{}</td>",
            escape(n),
            escape(n)
        ),
    }
}

fn summary(o: &mut String, r: &Receipt) {
    let tp = tpot_name(r);
    let _ = writeln!(
        o,
        "<section id=\"summary-section\">\n<h2>Summary</h2>\n\
         <p class=\"note\">Rates are per window second; shares are of the cohort (valid rows arriving in the window). \
         Little's law ratio = measured mean in flight / (completed/s × mean E2E); near 1 in a steady state.</p>\n\
         <div class=\"scroll\">\n<table id=\"summary\">\n<thead>\n\
         <tr><th class=\"name\"></th><th class=\"group\" colspan=\"8\">rows</th><th class=\"group\" colspan=\"6\">rates</th>\
         <th class=\"group\" colspan=\"2\">Little's law</th></tr>\n\
         <tr><th class=\"name\">block</th><th class=\"first\">arrivals</th><th>invalid</th><th>excluded</th><th>cohort</th>\
         <th>pass</th><th>miss</th><th>failed</th><th>censored</th>\
         <th class=\"first\">goodput/s</th><th>pass share</th><th>offered/s</th><th>completed/s</th><th>failure share</th><th>censored share</th>\
         <th class=\"first\">ratio</th><th>steady</th></tr>\n</thead>\n<tbody>"
    );
    let mut notes = Vec::new();
    for (name, b) in blocks(r) {
        let k = &b.counts;
        let rt = &b.rates;
        o.push_str(&block_row_start(name));
        let cells: [(&str, String, bool); 14] = [
            ("arrivals", k.arrivals.to_string(), true),
            ("invalid", k.invalid.to_string(), false),
            ("excluded", k.excluded.to_string(), false),
            ("cohort", k.cohort.to_string(), false),
            ("pass", k.pass.to_string(), false),
            ("miss", k.miss.to_string(), false),
            ("failed", k.failed.to_string(), false),
            ("censored", k.censored.to_string(), false),
            ("goodputPerS", fixed(rt.goodput_per_s, 3), true),
            ("passShare", share(rt.pass_share), false),
            ("offeredPerS", fixed(rt.offered_per_s, 3), false),
            ("completedPerS", fixed(rt.completed_per_s, 3), false),
            ("failureShare", share(rt.failure_share), false),
            ("censoredShare", share(rt.censored_share), false),
        ];
        for (col, text, first) in cells {
            let cls = if first { " class=\"first\"" } else { "" };
            let _ = write!(o, "<td{cls} data-col=\"{col}\">{text}</td>");
        }
        let l = &b.littles_law;
        let _ = writeln!(
            o,
            "<td class=\"first\" data-col=\"littlesRatio\">{}</td><td data-col=\"littlesSteady\">{}</td></tr>",
            opt(l.ratio, 2),
            match l.steady_state {
                Some(true) => "yes",
                Some(false) => "<b>no</b>",
                None => "—",
            }
        );
        if let Some(note) = &l.note {
            notes.push(format!(
                "<li><b>{}</b>: {}</li>",
                escape(name.unwrap_or("all rows")),
                escape(note)
            ));
        }
    }
    let _ = writeln!(o, "</tbody>\n</table>\n</div>");
    if !notes.is_empty() {
        let _ = writeln!(
            o,
            "<ul class=\"notes\" id=\"littles-notes\">\n{}\n</ul>",
            notes.join("\n")
        );
    }
    let _ = writeln!(
        o,
        "<h3>Latency, ms</h3>\n<p class=\"note\">Completed cohort rows (pass and miss), nearest-rank percentiles; \
         {tp} over rows with more than one output token. — means no such rows.</p>\n\
         <div class=\"scroll\">\n<table id=\"latency\">\n<thead>\n\
         <tr><th class=\"name\"></th><th class=\"group\" colspan=\"4\">TTFT</th><th class=\"group\" colspan=\"4\">{tp}</th>\
         <th class=\"group\" colspan=\"4\">E2E</th></tr>\n<tr><th class=\"name\">block</th>{cols}{cols}{cols}</tr>\n</thead>\n<tbody>",
        cols = "<th class=\"first\">n</th><th>p50</th><th>p95</th><th>p99</th>"
    );
    for (name, b) in blocks(r) {
        o.push_str(&block_row_start(name));
        for (metric, s) in [
            ("ttft", &b.latency.ttft_ms),
            ("tpot", &b.latency.tpot_ms),
            ("e2e", &b.latency.e2e_ms),
        ] {
            latency_cells(o, metric, s);
        }
        let _ = writeln!(o, "</tr>");
    }
    let _ = writeln!(o, "</tbody>\n</table>\n</div>\n</section>");
}

fn latency_cells(o: &mut String, metric: &str, s: &LatencySummary) {
    let _ = write!(
        o,
        "<td class=\"first\" data-col=\"{metric}-n\">{}</td>",
        s.n
    );
    for (p, v) in [("p50", s.p50), ("p95", s.p95), ("p99", s.p99)] {
        let _ = write!(o, "<td data-col=\"{metric}-{p}\">{}</td>", opt(v, 1));
    }
}

/// Geometry of the lanes chart, in SVG pixels.
const LANES_WIDTH: f64 = 1300.0;
const LANES_LEFT: f64 = 230.0;
const LANES_RIGHT: f64 = 16.0;
const LANES_TOP: f64 = 40.0;
const SUBLANE_PX: f64 = 14.0;
/// Room at the left of the plot for rows without a usable arrival time.
const NO_TIME_PX: f64 = 46.0;

fn lanes(o: &mut String, a: &Analysis) {
    let r = &a.receipt;
    if r.contract.arrivals_unknown.is_some() {
        // Every arrival is the window start by declaration: a timeline would
        // draw invented instants.
        let _ = writeln!(
            o,
            "<section id=\"lanes-section\">\n<h2>Verdict lanes</h2>\n\
             <p class=\"note\" id=\"lanes-not-drawn\">Not drawn: the trace declares its arrival \
             times unknown (<code>boundary.arrival = \"unknown\"</code>), so no row has an instant \
             on the run's timeline.</p>\n</section>"
        );
        return;
    }
    let contract = &a.trace.contract;
    let class_names: Vec<&str> = contract.classes.keys().map(String::as_str).collect();
    let counts = &r.results.all.counts;
    let lane_counts = [
        counts.pass,
        counts.miss,
        counts.failed,
        counts.censored,
        counts.excluded,
        counts.invalid,
    ];

    // Sub-lanes: one per class (plus one for rows whose class does not resolve).
    let split = class_names.len() > 1 && class_names.len() <= MAX_CLASS_SUBLANES;
    let unresolved = a.judgements.iter().any(|j| j.class.is_none());
    let subs = if split {
        class_names.len() + usize::from(unresolved)
    } else {
        1
    };
    let sub_of = |class: Option<usize>| -> usize {
        if !split {
            0
        } else {
            class.unwrap_or(class_names.len()).min(subs - 1)
        }
    };
    let lane_h = (subs as f64 * SUBLANE_PX + 8.0).max(26.0);

    // The time axis: warm-up start (or window start) to the horizon, widened
    // to take in early or late arrivals, but by at most one span on each
    // side; anything beyond sits on the edge (and is counted in a note).
    let lo0 = contract
        .warmup
        .map_or(contract.start_ms, |w| w.start_ms.min(contract.start_ms));
    let hi0 = contract.horizon_ms;
    let span0 = (hi0 - lo0).max(1.0);
    let arrival = |i: usize| -> Option<f64> {
        a.trace
            .rows
            .get(i)?
            .arrival_ms
            .value()
            .filter(|t| t.is_finite())
    };
    let (mut amin, mut amax) = (lo0, hi0);
    let mut no_time = 0usize;
    for i in 0..a.judgements.len() {
        match arrival(i) {
            Some(t) => {
                amin = amin.min(t);
                amax = amax.max(t);
            }
            None => no_time += 1,
        }
    }
    let lo = amin.max(lo0 - span0);
    let hi = amax.min(hi0 + span0);
    let plot_left = LANES_LEFT + if no_time > 0 { NO_TIME_PX } else { 0.0 };
    let plot_w = LANES_WIDTH - LANES_RIGHT - plot_left;
    let x_of = |t: f64| plot_left + (t.clamp(lo, hi) - lo) / (hi - lo) * plot_w;
    let (before, after) = a
        .judgements
        .iter()
        .enumerate()
        .filter_map(|(i, _)| arrival(i))
        .fold((0usize, 0usize), |(b, f), t| {
            (b + usize::from(t < lo), f + usize::from(t > hi))
        });

    let plot_h = lane_h * LANES.len() as f64;
    let axis_y = LANES_TOP + plot_h;
    let height = axis_y + 44.0;
    let aggregate = a.judgements.len() > LANE_MARK_LIMIT;

    let _ = writeln!(
        o,
        "<section id=\"lanes-section\">\n<h2>Verdict lanes</h2>\n\
         <p class=\"note\">Every row is a mark at its arrival time, in the lane of its verdict{}. \
         The x axis is seconds from the window start; the shaded bands are the warm-up (left) and the time between the window end and the horizon (right), \
         where cohort rows still running are censored. {}</p>",
        if split {
            "; inside each lane, one sub-lane per class (labelled on the left)"
        } else {
            ""
        },
        if aggregate {
            format!(
                "This trace has {} rows, more than {LANE_MARK_LIMIT}: rows are counted into columns {} px wide, \
                 one mark per non-empty column (darker = more rows; hover for the count).",
                a.judgements.len(),
                short(LANE_COLUMN_PX)
            )
        } else {
            "Hover a mark for its id, class, verdict and reasons.".to_owned()
        }
    );
    let _ = write!(o, "<div class=\"legend\" id=\"lanes-legend\">");
    for (i, (name, colour, meaning)) in LANES.iter().enumerate() {
        let _ = write!(
            o,
            "<span title=\"{meaning}\"><span class=\"sw\" style=\"background:{colour}\"></span>{name} ({})</span>",
            lane_counts[i]
        );
    }
    let _ = writeln!(o, "</div>");
    let _ = writeln!(
        o,
        "<svg id=\"lanes\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         role=\"img\" aria-label=\"verdict lanes over arrival time\" data-aggregated=\"{aggregate}\">",
        w = px(LANES_WIDTH),
        h = px(height)
    );

    // Bands and boundaries.
    let band = |o: &mut String, from: f64, to: f64, fill: &str, label: &str| {
        let (x0, x1) = (x_of(from), x_of(to));
        if x1 - x0 <= 0.0 {
            return;
        }
        let _ = writeln!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\"/>",
            px(x0),
            px(LANES_TOP),
            px(x1 - x0),
            px(plot_h)
        );
        // A label only where it fits (about 6 px per character).
        if x1 - x0 >= label.chars().count() as f64 * 6.2 + 8.0 {
            let _ = writeln!(
                o,
                "<text class=\"band-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{label}</text>",
                px((x0 + x1) / 2.0),
                px(LANES_TOP - 22.0)
            );
        }
    };
    if let Some(w) = &contract.warmup {
        if w.end_ms > w.start_ms {
            band(o, w.start_ms, w.end_ms, "#ececec", "warm-up (excluded)");
        }
    }
    band(
        o,
        contract.start_ms,
        contract.end_ms,
        "#ffffff",
        &format!("window {} s (cohort)", short(contract.window_s())),
    );
    if hi0 > contract.end_ms {
        band(
            o,
            contract.end_ms,
            hi0,
            "#f3efe4",
            "after the window, until the horizon",
        );
    }
    let mut bounds: Vec<(f64, &str)> = Vec::new();
    if let Some(w) = &contract.warmup {
        bounds.push((w.start_ms, "warm-up start"));
        if w.end_ms < contract.start_ms {
            bounds.push((w.end_ms, "warm-up end"));
        }
    }
    bounds.push((contract.start_ms, "window start"));
    bounds.push((contract.end_ms, "window end"));
    if hi0 > contract.end_ms {
        bounds.push((hi0, "horizon"));
    }
    for (t, what) in &bounds {
        let x = x_of(*t);
        let _ = writeln!(
            o,
            "<line class=\"boundary\" data-boundary=\"{what}\" data-ms=\"{}\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"><title>{what}: {} ms</title></line>",
            short(*t),
            px(LANES_TOP - 14.0),
            px(axis_y),
            short(*t),
            x = px(x),
        );
        let _ = writeln!(
            o,
            "<text class=\"band-label\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">{}</text>",
            px(x),
            px(LANES_TOP - 4.0),
            if *what == "horizon" { "end" } else { "middle" },
            if *what == "horizon" {
                "horizon ▸"
            } else {
                "│"
            }
        );
    }

    // Lane backgrounds and labels.
    for (i, (name, colour, _)) in LANES.iter().enumerate() {
        let y = LANES_TOP + i as f64 * lane_h;
        let _ = writeln!(
            o,
            "<line class=\"grid\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>\
             <rect x=\"8\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{colour}\"/>\
             <text class=\"lane-label\" x=\"24\" y=\"{}\">{name} <tspan font-weight=\"400\">{}</tspan></text>",
            px(8.0),
            px(LANES_WIDTH - LANES_RIGHT),
            px(y + lane_h / 2.0 - 5.0),
            px(y + lane_h / 2.0 + 4.0),
            lane_counts[i],
            y = px(y),
        );
        if split {
            for s in 0..subs {
                let label = class_names.get(s).copied().unwrap_or("(no class)");
                let _ = writeln!(
                    o,
                    "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"10\">{}</text>",
                    px(LANES_LEFT - 6.0),
                    px(y + 4.0 + s as f64 * SUBLANE_PX + SUBLANE_PX / 2.0 + 3.5),
                    escape(&clip(label, 22))
                );
            }
        }
    }
    if no_time > 0 {
        let _ = writeln!(
            o,
            "<text class=\"band-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no time</text>",
            px(LANES_LEFT + NO_TIME_PX / 2.0 - 4.0),
            px(LANES_TOP - 4.0)
        );
    }

    // The marks.
    let mark_y =
        |lane: usize, sub: usize| LANES_TOP + lane as f64 * lane_h + 4.0 + sub as f64 * SUBLANE_PX;
    let x_mark = |i: usize| match arrival(i) {
        Some(t) => x_of(t),
        None => LANES_LEFT + NO_TIME_PX / 2.0 - 4.0,
    };
    if aggregate {
        let columns = (LANES_WIDTH / LANE_COLUMN_PX).ceil() as usize + 1;
        let mut cells = vec![0u64; LANES.len() * subs * columns];
        for (i, j) in a.judgements.iter().enumerate() {
            let col = ((x_mark(i) / LANE_COLUMN_PX).floor().max(0.0) as usize).min(columns - 1);
            let lane = lane_of(&j.verdict);
            cells[(lane * subs + sub_of(j.class)) * columns + col] += 1;
        }
        for lane in 0..LANES.len() {
            let name = LANES[lane].0;
            for sub in 0..subs {
                let row = &cells[(lane * subs + sub) * columns..(lane * subs + sub + 1) * columns];
                let max = row.iter().copied().max().unwrap_or(0).max(1) as f64;
                for (col, &n) in row.iter().enumerate() {
                    if n == 0 {
                        continue;
                    }
                    let opacity = 0.3 + 0.7 * (n as f64).ln_1p() / max.ln_1p();
                    let _ = writeln!(
                        o,
                        "<rect class=\"cell v-{name}\" data-verdict=\"{name}\" data-count=\"{n}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill-opacity=\"{:.2}\"><title>{n} {name}</title></rect>",
                        px(col as f64 * LANE_COLUMN_PX),
                        px(mark_y(lane, sub)),
                        px(LANE_COLUMN_PX),
                        px(SUBLANE_PX - 2.0),
                        opacity
                    );
                }
            }
        }
    } else {
        for (i, j) in a.judgements.iter().enumerate() {
            let lane = lane_of(&j.verdict);
            let name = LANES[lane].0;
            let id = a
                .trace
                .rows
                .get(i)
                .and_then(|row| row.id.get())
                .map_or_else(|| format!("(no usable id) /rows/{i}"), |s| s.to_string());
            let class = j
                .class
                .and_then(|c| class_names.get(c).copied())
                .unwrap_or("(no class)");
            let reasons = verdict_reasons(&j.verdict, &a.trace);
            let when = arrival(i).map_or_else(
                || "no arrival".to_owned(),
                |t| format!("arrival {} ms", short(t)),
            );
            let _ = writeln!(
                o,
                "<rect class=\"mark v-{name}\" data-verdict=\"{name}\" x=\"{}\" y=\"{}\" width=\"2\" height=\"{}\" fill-opacity=\"0.8\"><title>{} · {} · {name}{}{} · {when}</title></rect>",
                px(x_mark(i) - 1.0),
                px(mark_y(lane, sub_of(j.class))),
                px(SUBLANE_PX - 2.0),
                escape(&id),
                escape(class),
                if reasons.is_empty() { "" } else { ": " },
                escape(&reasons),
            );
        }
    }

    // The time axis, in seconds from the window start.
    let _ = writeln!(
        o,
        "<line class=\"axis\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>",
        px(plot_left),
        px(plot_left + plot_w),
        y = px(axis_y)
    );
    let s0 = contract.start_ms;
    for v in ticks((lo - s0) / 1000.0, (hi - s0) / 1000.0, 10.0) {
        let x = x_of(s0 + v * 1000.0);
        let _ = writeln!(
            o,
            "<line class=\"axis\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px(axis_y),
            px(axis_y + 5.0),
            px(axis_y + 17.0),
            short(v),
            x = px(x)
        );
    }
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arrival, s from the window start</text>\n</svg>",
        px(plot_left + plot_w / 2.0),
        px(axis_y + 36.0)
    );
    if before + after + no_time > 0 {
        let _ = writeln!(
            o,
            "<p class=\"note\" id=\"lanes-edges\">{before} rows arriving more than one span before the window and {after} more than one span after the horizon \
             are drawn on the edge of the axis; {no_time} rows without a usable arrival time are drawn in the “no time” column.</p>"
        );
    }
    let _ = writeln!(o, "</section>");
}

/// Geometry of one histogram.
const HIST_W: f64 = 420.0;
const HIST_H: f64 = 190.0;
const HIST_LEFT: f64 = 40.0;
const HIST_RIGHT: f64 = 24.0;
const HIST_TOP: f64 = 22.0;
const HIST_BOTTOM: f64 = 36.0;

fn distributions(o: &mut String, a: &Analysis) {
    let r = &a.receipt;
    let contract = &a.trace.contract;
    let rule = if contract.equality.as_str() == "strict" {
        "<"
    } else {
        "≤"
    };
    let _ = writeln!(
        o,
        "<section id=\"distributions\">\n<h2>Latency distributions</h2>\n\
         <p class=\"note\">Histograms of completed cohort rows (pass and miss) of each class, at most {HISTOGRAM_BINS} bars from 0 ms; \
         the black line is the class's gate ({rule} under <b>{}</b> equality). {} is over rows with more than one output token.</p>",
        escape(contract.equality.as_str()),
        tpot_name(r)
    );
    for (c, (name, gates)) in contract.classes.iter().enumerate() {
        let Some(block) = r.results.classes.get(name) else {
            continue;
        };
        let _ = writeln!(
            o,
            "<h3>class {}</h3>\n<div class=\"charts\" data-class=\"{}\">",
            escape(name),
            escape(name)
        );
        let metrics: [(&str, &str, Option<f64>, &LatencySummary, u64); 3] = [
            (
                "ttft",
                "TTFT",
                gates.ttft_ms,
                &block.latency.ttft_ms,
                block.reasons.miss.ttft,
            ),
            (
                "tpot",
                tpot_name(r),
                gates.tpot_ms,
                &block.latency.tpot_ms,
                block.reasons.miss.tpot,
            ),
            (
                "e2e",
                "E2E",
                gates.e2e_ms,
                &block.latency.e2e_ms,
                block.reasons.miss.e2e,
            ),
        ];
        for (key, label, gate, summary, missed) in metrics {
            let values: Vec<f64> = a
                .judgements
                .iter()
                .filter(|j| j.class == Some(c))
                .filter_map(|j| j.verdict.measured())
                .filter_map(|m| match key {
                    "ttft" => Some(m.ttft_ms),
                    "tpot" => m.tpot_ms,
                    _ => Some(m.e2e_ms),
                })
                .collect();
            histogram(o, name, key, label, gate, rule, &values, summary, missed);
        }
        let _ = writeln!(o, "</div>");
    }
    let _ = writeln!(o, "</section>");
}

#[allow(clippy::too_many_arguments)]
fn histogram(
    o: &mut String,
    class: &str,
    key: &str,
    label: &str,
    gate: Option<f64>,
    rule: &str,
    values: &[f64],
    summary: &LatencySummary,
    missed: u64,
) {
    let vmax = values.iter().copied().fold(0.0f64, f64::max);
    let top_raw = vmax.max(gate.unwrap_or(0.0));
    let step = nice_step(top_raw / 5.0);
    let mut top = if top_raw > 0.0 {
        (top_raw / step).ceil() * step
    } else {
        1.0
    };
    if top <= 0.0 || !top.is_finite() {
        top = 1.0;
    }
    let x0 = HIST_LEFT;
    let x1 = HIST_W - HIST_RIGHT;
    let y0 = HIST_H - HIST_BOTTOM;
    let x_of = |v: f64| x0 + (v / top).clamp(0.0, 1.0) * (x1 - x0);
    let bins = HISTOGRAM_BINS;
    let width = top / bins as f64;
    let mut counts = vec![0u64; bins];
    for &v in values {
        let b = ((v.max(0.0) / width).floor() as usize).min(bins - 1);
        counts[b] += 1;
    }
    let cmax = counts.iter().copied().max().unwrap_or(0);
    let _ = writeln!(
        o,
        "<figure class=\"dist\" data-class=\"{}\" data-metric=\"{key}\">\n\
         <svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" \
         aria-label=\"{label} histogram\" data-ms0=\"0\" data-ms1=\"{}\" data-x0=\"{}\" data-x1=\"{}\">",
        escape(class),
        short(top),
        px(x0),
        px(x1),
        w = px(HIST_W),
        h = px(HIST_H),
    );
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"14\" font-weight=\"600\">{label} (ms)</text>",
        px(x0)
    );
    if values.is_empty() {
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"no-gate\">no completed rows</text>",
            px((x0 + x1) / 2.0),
            px((HIST_TOP + y0) / 2.0)
        );
    }
    let plot_h = y0 - HIST_TOP;
    for (b, &n) in counts.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let h = n as f64 / cmax.max(1) as f64 * plot_h;
        let (lo, hi) = (b as f64 * width, (b + 1) as f64 * width);
        let _ = writeln!(
            o,
            "<rect class=\"bar\" data-count=\"{n}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>[{}, {}) ms: {n} rows</title></rect>",
            px(x_of(lo) + 0.5),
            px(y0 - h),
            px((x_of(hi) - x_of(lo) - 1.0).max(0.5)),
            px(h),
            short(lo),
            short(hi)
        );
    }
    // Axes: x ticks in ms, the tallest bar's count on y.
    let _ = writeln!(
        o,
        "<line class=\"axis\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>\
         <line class=\"axis\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{y}\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"end\">{cmax}</text><text x=\"{}\" y=\"{y}\" text-anchor=\"end\">0</text>",
        px(x0),
        px(x1),
        px(HIST_TOP),
        px(x0 - 4.0),
        px(HIST_TOP + 4.0),
        px(x0 - 4.0),
        x = px(x0),
        y = px(y0),
    );
    for v in ticks(0.0, top, 5.0) {
        let x = x_of(v);
        let _ = writeln!(
            o,
            "<line class=\"axis\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px(y0),
            px(y0 + 4.0),
            px(y0 + 15.0),
            short(v),
            x = px(x)
        );
    }
    match gate {
        Some(g) => {
            let x = x0 + (g / top).clamp(0.0, 1.0) * (x1 - x0);
            let right_half = x > (x0 + x1) / 2.0;
            let _ = writeln!(
                o,
                "<line class=\"gate\" data-gate-ms=\"{}\" x1=\"{x:.2}\" y1=\"{}\" x2=\"{x:.2}\" y2=\"{}\"/>\
                 <text class=\"gate-label\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">gate {rule} {}</text>",
                short(g),
                px(HIST_TOP - 4.0),
                px(y0),
                px(if right_half { x - 4.0 } else { x + 4.0 }),
                px(HIST_TOP + 8.0),
                if right_half { "end" } else { "start" },
                short(g)
            );
        }
        None => {
            let _ = writeln!(
                o,
                "<text class=\"no-gate\" x=\"{}\" y=\"{}\" text-anchor=\"end\">no gate</text>",
                px(x1),
                px(HIST_TOP + 8.0)
            );
        }
    }
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">ms</text>\n</svg>",
        px((x0 + x1) / 2.0),
        px(HIST_H - 4.0)
    );
    let gate_part = match gate {
        Some(_) => format!(" · over the gate: {missed}"),
        None => " · no gate".to_owned(),
    };
    let _ = writeln!(
        o,
        "<figcaption>n {} · p50 {} · p95 {} · p99 {} · max {} ms{gate_part}</figcaption>\n</figure>",
        summary.n,
        opt(summary.p50, 1),
        opt(summary.p95, 1),
        opt(summary.p99, 1),
        opt(summary.max, 1)
    );
}

/// Top reasons of a map, largest first (ties by name), escaped.
fn reason_list(map: &std::collections::BTreeMap<String, u64>) -> String {
    let mut v: Vec<(&String, &u64)> = map.iter().filter(|(_, c)| **c > 0).collect();
    if v.is_empty() {
        return "none".to_owned();
    }
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, c)| format!("{} {c}", escape(k)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn reasons(o: &mut String, r: &Receipt) {
    let tp = tpot_name(r);
    let _ = writeln!(
        o,
        "<section id=\"reasons-section\">\n<h2>Why rows did not pass</h2>\n<div class=\"scroll\">\n<table id=\"reasons\">\n<thead><tr>\
         <th class=\"name\">block</th><th>miss: TTFT</th><th>miss: {tp}</th><th>miss: E2E</th><th class=\"name\">failures</th>\
         <th>in flight</th><th>done after horizon</th><th>failed after horizon</th><th>known late</th>\
         <th>warm-up</th><th>outside window</th><th class=\"name\">invalid</th></tr></thead>\n<tbody>"
    );
    for (name, b) in blocks(r) {
        let s = &b.reasons;
        let _ = writeln!(
            o,
            "{}<td>{}</td><td>{}</td><td>{}</td><td class=\"name\">{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"name\">{}</td></tr>",
            block_row_start(name),
            s.miss.ttft,
            s.miss.tpot,
            s.miss.e2e,
            reason_list(&s.failure),
            s.censored.in_flight,
            s.censored.completed_after_horizon,
            s.censored.failed_after_horizon,
            s.censored.known_late,
            s.exclusion.warmup,
            s.exclusion.outside_window,
            reason_list(&s.invalid),
        );
    }
    let _ = writeln!(o, "</tbody>\n</table>\n</div>\n</section>");
}

fn gates_text(g: &Gates) -> String {
    let one = |x: Option<f64>| x.map_or_else(|| "–".to_owned(), short);
    format!("{}/{}/{}", one(g.ttft_ms), one(g.tpot_ms), one(g.e2e_ms))
}

fn sweep_table(o: &mut String, entries: &[SweepEntry]) {
    let _ = writeln!(
        o,
        "<section id=\"sweep-section\">\n<h2>Sensitivity sweep</h2>"
    );
    let Some(first) = entries.first() else {
        let _ = writeln!(
            o,
            "<p class=\"note\">No sweep was computed.</p>\n</section>"
        );
        return;
    };
    let scope = match &first.class {
        None => "all rows; every class's gates move together".to_owned(),
        Some(c) => format!("class {} alone", escape(c)),
    };
    let _ = writeln!(
        o,
        "<p class=\"note\">Scope: {scope}. Each gate multiplied by a factor, one gate at a time (null gates stay null); \
         cohort {} rows under every line. Only the first, highlighted line is the declared result; every other line is hypothetical.</p>\n\
         <div class=\"scroll\">\n<table id=\"sweep\">\n<thead><tr><th class=\"name\"></th><th>factors TTFT/TPOT/E2E</th><th>pass</th><th>goodput/s</th>\
         <th>pass share</th><th>Δpass</th><th>Δgoodput/s</th><th>Δshare</th><th class=\"name\">gates in force, ms (TTFT/TPOT/E2E)</th></tr></thead>\n<tbody>",
        first.cohort
    );
    for e in entries {
        let (label, cls) = if e.hypothetical {
            ("hypothetical", "hypothetical")
        } else {
            ("declared", "declared")
        };
        let f = &e.factors;
        let (dp, dg, ds) = super::sweep::delta_cells(e);
        let in_force: Vec<String> = e
            .classes
            .iter()
            .map(|(n, g)| format!("{} {}", escape(n), gates_text(g)))
            .collect();
        let _ = writeln!(
            o,
            "<tr class=\"{cls}\" data-hypothetical=\"{}\"><td class=\"name\">{label}</td><td>{} / {} / {}</td><td data-col=\"pass\">{}</td>\
             <td data-col=\"goodputPerS\">{}</td><td>{}</td><td>{dp}</td><td>{dg}</td><td>{ds}</td><td class=\"name\">{}</td></tr>",
            e.hypothetical,
            short(f.ttft),
            short(f.tpot),
            short(f.e2e),
            e.pass,
            fixed(e.goodput_per_s, 3),
            share(e.pass_share),
            in_force.join(" · ")
        );
    }
    let _ = writeln!(o, "</tbody>\n</table>\n</div>");
    if let Some(fr) = &first.fragility {
        let n = &fr.near_gate;
        let _ = writeln!(
            o,
            "<p class=\"note\" id=\"fragility\">Fragility: {} of {} passing rows sit within {} % below a gate (TTFT {}, TPOT {}, E2E {}).</p>\n<ul class=\"notes\">",
            n.rows,
            first.pass,
            short(n.share * 100.0),
            n.ttft,
            n.tpot,
            n.e2e
        );
        let strict = fr.equality == crate::trace::Equality::Strict;
        for (name, t) in [
            ("TTFT", &fr.tipping.ttft),
            ("TPOT", &fr.tipping.tpot),
            ("E2E", &fr.tipping.e2e),
        ] {
            let point = |p: &TippingPoint, verb: &str, when: &str| {
                format!(
                    "pass {verb} once the gate is {when} {} ms ({:+.1} % from {} ms, class {}, {} row(s))",
                    short(p.threshold_ms),
                    p.change_pct,
                    short(p.gate_ms),
                    escape(&p.class),
                    p.rows
                )
            };
            let down = t.down.as_ref().map_or_else(
                || "no tightening drops a row".to_owned(),
                |p| point(p, "falls", if strict { "at or below" } else { "below" }),
            );
            let up = t.up.as_ref().map_or_else(
                || "no loosening adds a row".to_owned(),
                |p| point(p, "rises", if strict { "above" } else { "at or above" }),
            );
            let _ = writeln!(o, "<li><b>{name}</b> down: {down}; up: {up}</li>");
        }
        let _ = writeln!(o, "</ul>");
    }
    let _ = writeln!(o, "</section>");
}

fn invalid_list(o: &mut String, a: &Analysis) {
    let rows = a.invalid_rows();
    let _ = writeln!(o, "<section id=\"invalid-section\">\n<h2>Invalid rows</h2>");
    if rows.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"note\">None: every row was valid.</p>\n</section>"
        );
        return;
    }
    let _ = writeln!(
        o,
        "<p class=\"note\">{} invalid rows, kept out of both the pass count and the denominator; each with every reason that applies.</p>\n\
         <table id=\"invalid\">\n<thead><tr><th class=\"name\">row</th><th class=\"name\">id</th><th class=\"name\">reasons</th></tr></thead>\n<tbody>",
        rows.len()
    );
    for row in rows.iter().take(MAX_LISTED_INVALID_ROWS) {
        let id = row.id.as_deref().map_or_else(
            || "<i>(no usable id)</i>".to_owned(),
            |s| format!("<code>{}</code>", escape(s)),
        );
        let _ = writeln!(
            o,
            "<tr><td class=\"name\">/rows/{}</td><td class=\"name\">{id}</td><td class=\"name\">{}</td></tr>",
            row.index,
            escape(&row.reasons.join(", "))
        );
    }
    let _ = writeln!(o, "</tbody>\n</table>");
    if rows.len() > MAX_LISTED_INVALID_ROWS {
        let _ = writeln!(
            o,
            "<p class=\"note\">… and {} more (all are listed by <code>goodput analyze --json --rows</code>).</p>",
            rows.len() - MAX_LISTED_INVALID_ROWS
        );
    }
    let _ = writeln!(o, "</section>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_the_five_html_specials() {
        assert_eq!(
            escape("<script>a&b\"c'd</script>"),
            "&lt;script&gt;a&amp;b&quot;c&#39;d&lt;/script&gt;"
        );
    }

    #[test]
    fn nice_steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.5), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(0.0), 1.0);
        assert_eq!(ticks(0.0, 10.0, 5.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    }
}
