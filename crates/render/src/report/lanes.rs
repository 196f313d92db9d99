//! The verdict lanes: every row a mark at its arrival time, in the lane of
//! its verdict (one sub-lane per class), over the warm-up, window and
//! horizon bands; above [`LANE_MARK_LIMIT`] rows, marks are counted into
//! columns so the page stays bounded.

use std::fmt::Write;

use crate::report::html::escape;
use crate::report::lane_stalls::Stalls;
use crate::report::svg::{clip, px, ticks};
use crate::sensitivity::short;
use goodput_core::analyze::Analysis;
use goodput_core::trace::{Contract, RawRow, Trace};
use goodput_core::verdict::Verdict;

/// Above this many rows the lanes aggregate marks into per-column counts.
pub const LANE_MARK_LIMIT: usize = 2_000;
/// Width of one aggregation column of the lanes, in SVG pixels.
pub const LANE_COLUMN_PX: f64 = 2.0;
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

/// The miss lane (index into [`LANES`]), where the stall bars go.
const MISS_LANE: usize = 1;

/// The lane of a verdict (index into [`LANES`]).
fn lane_of(v: &Verdict) -> usize {
    match v {
        Verdict::Pass(_) => 0,
        Verdict::Miss(..) => MISS_LANE,
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

/// Geometry of the lanes chart, in SVG pixels.
const LANES_WIDTH: f64 = 1300.0;
const LANES_LEFT: f64 = 230.0;
const LANES_RIGHT: f64 = 16.0;
const LANES_TOP: f64 = 40.0;
const SUBLANE_PX: f64 = 14.0;
/// Height of one row's mark in its sub-lane.
const MARK_PX: f64 = SUBLANE_PX - 2.0;
/// Room at the left of the plot for rows without a usable arrival time.
const NO_TIME_PX: f64 = 46.0;

/// The lanes section: the note and legend, then one SVG of bands,
/// boundaries, lane labels, marks and the time axis.
pub(super) fn section(o: &mut String, a: &Analysis) {
    if a.receipt.contract.arrivals_unknown.is_some() {
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
    let chart = Chart::of(a);
    let stalls = Stalls::of(a);
    intro(o, a, &chart, &stalls);
    bands(o, &chart);
    boundaries(o, &chart);
    lane_labels(o, &chart);
    if chart.aggregate {
        column_marks(o, a, &chart);
    } else {
        row_marks(o, a, &chart);
    }
    stalls.marks(
        o,
        a,
        |t| chart.x_of(t),
        |class| chart.mark_y(MISS_LANE, chart.sub_of(class)),
        MARK_PX,
    );
    time_axis(o, &chart);
    edge_note(o, &chart);
    stalls.cap_note(o);
    let _ = writeln!(o, "</section>");
}

/// The layout of the chart, worked out once from the trace: lanes and
/// sub-lanes, the time axis and where a row's mark goes.
struct Chart<'a> {
    contract: &'a Contract,
    rows: &'a [RawRow],
    class_names: Vec<&'a str>,
    /// Rows per lane (all rows), in [`LANES`] order.
    lane_counts: [u64; 6],
    /// One sub-lane per class (plus one for rows whose class does not resolve).
    split: bool,
    subs: usize,
    lane_h: f64,
    /// The time axis, ms: marks outside `[lo, hi]` sit on its edges.
    lo: f64,
    hi: f64,
    plot_left: f64,
    plot_w: f64,
    plot_h: f64,
    axis_y: f64,
    height: f64,
    /// Rows drawn on the left edge, the right edge, and in the "no time" column.
    before: usize,
    after: usize,
    no_time: usize,
    /// Whether marks are counted into columns (more than [`LANE_MARK_LIMIT`] rows).
    aggregate: bool,
}

impl<'a> Chart<'a> {
    fn of(a: &'a Analysis) -> Chart<'a> {
        let contract = &a.trace.contract;
        let class_names: Vec<&str> = contract.classes.keys().map(String::as_str).collect();
        let counts = &a.receipt.results.all.counts;
        let lane_counts = [
            counts.pass,
            counts.miss,
            counts.failed,
            counts.censored,
            counts.excluded,
            counts.invalid,
        ];
        let split = class_names.len() > 1 && class_names.len() <= MAX_CLASS_SUBLANES;
        let unresolved = a.judgements.iter().any(|j| j.class.is_none());
        let subs = if split {
            class_names.len() + usize::from(unresolved)
        } else {
            1
        };
        let lane_h = (subs as f64 * SUBLANE_PX + 8.0).max(26.0);
        let plot_h = lane_h * LANES.len() as f64;
        let axis_y = LANES_TOP + plot_h;
        let mut chart = Chart {
            contract,
            rows: &a.trace.rows,
            class_names,
            lane_counts,
            split,
            subs,
            lane_h,
            lo: 0.0,
            hi: 0.0,
            plot_left: 0.0,
            plot_w: 0.0,
            plot_h,
            axis_y,
            height: axis_y + 44.0,
            before: 0,
            after: 0,
            no_time: 0,
            aggregate: a.judgements.len() > LANE_MARK_LIMIT,
        };
        chart.fit_time_axis(a.judgements.len());
        chart
    }

    /// The time axis: warm-up start (or window start) to the horizon, widened
    /// to take in early or late arrivals, but by at most one span on each
    /// side; anything beyond sits on the edge (and is counted in a note).
    fn fit_time_axis(&mut self, rows: usize) {
        let contract = self.contract;
        let lo0 = contract
            .warmup
            .map_or(contract.start_ms, |w| w.start_ms.min(contract.start_ms));
        let hi0 = contract.horizon_ms;
        let span0 = (hi0 - lo0).max(1.0);
        let (mut amin, mut amax) = (lo0, hi0);
        let mut no_time = 0usize;
        for i in 0..rows {
            match self.arrival(i) {
                Some(t) => {
                    amin = amin.min(t);
                    amax = amax.max(t);
                }
                None => no_time += 1,
            }
        }
        self.lo = amin.max(lo0 - span0);
        self.hi = amax.min(hi0 + span0);
        self.no_time = no_time;
        self.plot_left = LANES_LEFT + if no_time > 0 { NO_TIME_PX } else { 0.0 };
        self.plot_w = LANES_WIDTH - LANES_RIGHT - self.plot_left;
        let (lo, hi) = (self.lo, self.hi);
        (self.before, self.after) = (0..rows)
            .filter_map(|i| self.arrival(i))
            .fold((0usize, 0usize), |(b, f), t| {
                (b + usize::from(t < lo), f + usize::from(t > hi))
            });
    }

    /// Row `i`'s arrival time, when it has a usable one.
    fn arrival(&self, i: usize) -> Option<f64> {
        self.rows
            .get(i)?
            .arrival_ms
            .value()
            .filter(|t| t.is_finite())
    }

    /// The x of a time, clamped to the axis.
    fn x_of(&self, t: f64) -> f64 {
        let (lo, hi) = (self.lo, self.hi);
        self.plot_left + (t.clamp(lo, hi) - lo) / (hi - lo) * self.plot_w
    }

    /// The x of row `i`'s mark (the "no time" column without an arrival).
    fn x_mark(&self, i: usize) -> f64 {
        match self.arrival(i) {
            Some(t) => self.x_of(t),
            None => LANES_LEFT + NO_TIME_PX / 2.0 - 4.0,
        }
    }

    /// The sub-lane of a row's class.
    fn sub_of(&self, class: Option<usize>) -> usize {
        if !self.split {
            0
        } else {
            class.unwrap_or(self.class_names.len()).min(self.subs - 1)
        }
    }

    /// The top of a mark in a lane and sub-lane.
    fn mark_y(&self, lane: usize, sub: usize) -> f64 {
        LANES_TOP + lane as f64 * self.lane_h + 4.0 + sub as f64 * SUBLANE_PX
    }
}

/// Where the lanes chart puts time, so another chart can share its axis.
#[derive(Clone, Copy, Debug)]
pub(super) struct TimeAxis {
    /// Axis start and end, ms.
    pub lo: f64,
    pub hi: f64,
    /// Plot left edge and width, SVG pixels (the lanes' width overall).
    pub plot_left: f64,
    pub plot_w: f64,
    /// The window start (tick labels count seconds from it).
    pub start_ms: f64,
}

impl TimeAxis {
    /// The x of a time, clamped to the axis.
    pub fn x_of(&self, t: f64) -> f64 {
        self.plot_left + (t.clamp(self.lo, self.hi) - self.lo) / (self.hi - self.lo) * self.plot_w
    }
}

/// The lanes chart's time axis (for the server panels below it).
pub(super) fn time_axis_of(a: &Analysis) -> TimeAxis {
    let chart = Chart::of(a);
    TimeAxis {
        lo: chart.lo,
        hi: chart.hi,
        plot_left: chart.plot_left,
        plot_w: chart.plot_w,
        start_ms: chart.contract.start_ms,
    }
}

/// The whole SVG width of the lanes chart.
pub(super) const CHART_WIDTH: f64 = LANES_WIDTH;

/// The section heading, the note on how to read the chart, the legend and
/// the opening `<svg>`.
fn intro(o: &mut String, a: &Analysis, chart: &Chart, stalls: &Stalls) {
    let _ = writeln!(
        o,
        "<section id=\"lanes-section\">\n<h2>Verdict lanes</h2>\n\
         <p class=\"note\">Every row is a mark at its arrival time, in the lane of its verdict{}. \
         The x axis is seconds from the window start; the shaded bands are the warm-up (left) and the time between the window end and the horizon (right), \
         where cohort rows still running are censored. {}{}</p>",
        if chart.split {
            "; inside each lane, one sub-lane per class (labelled on the left)"
        } else {
            ""
        },
        if chart.aggregate {
            format!(
                "This trace has {} rows, more than {LANE_MARK_LIMIT}: rows are counted into columns {} px wide, \
                 one mark per non-empty column (darker = more rows; hover for the count).",
                a.judgements.len(),
                short(LANE_COLUMN_PX)
            )
        } else {
            "Hover a mark for its id, class, verdict and reasons.".to_owned()
        },
        stalls.note()
    );
    let _ = write!(o, "<div class=\"legend\" id=\"lanes-legend\">");
    for (i, (name, colour, meaning)) in LANES.iter().enumerate() {
        let _ = write!(
            o,
            "<span title=\"{meaning}\"><span class=\"sw\" style=\"background:{colour}\"></span>{name} ({})</span>",
            chart.lane_counts[i]
        );
    }
    stalls.legend(o);
    let _ = writeln!(o, "</div>");
    let _ = writeln!(
        o,
        "<svg id=\"lanes\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         role=\"img\" aria-label=\"verdict lanes over arrival time\" data-aggregated=\"{}\">",
        chart.aggregate,
        w = px(LANES_WIDTH),
        h = px(chart.height)
    );
}

/// The shaded bands: warm-up, window, and after the window until the horizon.
fn bands(o: &mut String, chart: &Chart) {
    let contract = chart.contract;
    let band = |o: &mut String, from: f64, to: f64, fill: &str, label: &str| {
        let (x0, x1) = (chart.x_of(from), chart.x_of(to));
        if x1 - x0 <= 0.0 {
            return;
        }
        let _ = writeln!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\"/>",
            px(x0),
            px(LANES_TOP),
            px(x1 - x0),
            px(chart.plot_h)
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
    if contract.horizon_ms > contract.end_ms {
        band(
            o,
            contract.end_ms,
            contract.horizon_ms,
            "#f3efe4",
            "after the window, until the horizon",
        );
    }
}

/// Dashed lines at the warm-up start and end, window start and end, and the
/// horizon, each with its time in a tooltip.
fn boundaries(o: &mut String, chart: &Chart) {
    let contract = chart.contract;
    let mut bounds: Vec<(f64, &str)> = Vec::new();
    if let Some(w) = &contract.warmup {
        bounds.push((w.start_ms, "warm-up start"));
        if w.end_ms < contract.start_ms {
            bounds.push((w.end_ms, "warm-up end"));
        }
    }
    bounds.push((contract.start_ms, "window start"));
    bounds.push((contract.end_ms, "window end"));
    if contract.horizon_ms > contract.end_ms {
        bounds.push((contract.horizon_ms, "horizon"));
    }
    for (t, what) in &bounds {
        let x = chart.x_of(*t);
        let _ = writeln!(
            o,
            "<line class=\"boundary\" data-boundary=\"{what}\" data-ms=\"{}\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"><title>{what}: {} ms</title></line>",
            short(*t),
            px(LANES_TOP - 14.0),
            px(chart.axis_y),
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
}

/// Each lane's grid line, swatch, name and count; the class of each
/// sub-lane; the "no time" column's label.
fn lane_labels(o: &mut String, chart: &Chart) {
    for (i, (name, colour, _)) in LANES.iter().enumerate() {
        let y = LANES_TOP + i as f64 * chart.lane_h;
        let _ = writeln!(
            o,
            "<line class=\"grid\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>\
             <rect x=\"8\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{colour}\"/>\
             <text class=\"lane-label\" x=\"24\" y=\"{}\">{name} <tspan font-weight=\"400\">{}</tspan></text>",
            px(8.0),
            px(LANES_WIDTH - LANES_RIGHT),
            px(y + chart.lane_h / 2.0 - 5.0),
            px(y + chart.lane_h / 2.0 + 4.0),
            chart.lane_counts[i],
            y = px(y),
        );
        if chart.split {
            for s in 0..chart.subs {
                let label = chart.class_names.get(s).copied().unwrap_or("(no class)");
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
    if chart.no_time > 0 {
        let _ = writeln!(
            o,
            "<text class=\"band-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no time</text>",
            px(LANES_LEFT + NO_TIME_PX / 2.0 - 4.0),
            px(LANES_TOP - 4.0)
        );
    }
}

/// Above [`LANE_MARK_LIMIT`] rows: rows counted into columns
/// [`LANE_COLUMN_PX`] wide per lane and sub-lane, one mark per non-empty
/// column, darker for more rows.
fn column_marks(o: &mut String, a: &Analysis, chart: &Chart) {
    let subs = chart.subs;
    let columns = (LANES_WIDTH / LANE_COLUMN_PX).ceil() as usize + 1;
    let mut cells = vec![0u64; LANES.len() * subs * columns];
    for (i, j) in a.judgements.iter().enumerate() {
        let col = ((chart.x_mark(i) / LANE_COLUMN_PX).floor().max(0.0) as usize).min(columns - 1);
        let lane = lane_of(&j.verdict);
        cells[(lane * subs + chart.sub_of(j.class)) * columns + col] += 1;
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
                    px(chart.mark_y(lane, sub)),
                    px(LANE_COLUMN_PX),
                    px(MARK_PX),
                    opacity
                );
            }
        }
    }
}

/// Up to [`LANE_MARK_LIMIT`] rows: one mark per row, its id, class, verdict,
/// reasons and arrival in the tooltip.
fn row_marks(o: &mut String, a: &Analysis, chart: &Chart) {
    for (i, j) in a.judgements.iter().enumerate() {
        let lane = lane_of(&j.verdict);
        let name = LANES[lane].0;
        let id = chart
            .rows
            .get(i)
            .and_then(|row| row.id.get())
            .map_or_else(|| format!("(no usable id) /rows/{i}"), |s| s.to_string());
        let class = j
            .class
            .and_then(|c| chart.class_names.get(c).copied())
            .unwrap_or("(no class)");
        let reasons = verdict_reasons(&j.verdict, &a.trace);
        let when = chart.arrival(i).map_or_else(
            || "no arrival".to_owned(),
            |t| format!("arrival {} ms", short(t)),
        );
        let _ = writeln!(
            o,
            "<rect class=\"mark v-{name}\" data-verdict=\"{name}\" x=\"{}\" y=\"{}\" width=\"2\" height=\"{}\" fill-opacity=\"0.8\"><title>{} · {} · {name}{}{} · {when}</title></rect>",
            px(chart.x_mark(i) - 1.0),
            px(chart.mark_y(lane, chart.sub_of(j.class))),
            px(MARK_PX),
            escape(&id),
            escape(class),
            if reasons.is_empty() { "" } else { ": " },
            escape(&reasons),
        );
    }
}

/// The time axis, in seconds from the window start, and the closing `</svg>`.
fn time_axis(o: &mut String, chart: &Chart) {
    let (plot_left, plot_w, axis_y) = (chart.plot_left, chart.plot_w, chart.axis_y);
    let _ = writeln!(
        o,
        "<line class=\"axis\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>",
        px(plot_left),
        px(plot_left + plot_w),
        y = px(axis_y)
    );
    let s0 = chart.contract.start_ms;
    for v in ticks((chart.lo - s0) / 1000.0, (chart.hi - s0) / 1000.0, 10.0) {
        let x = chart.x_of(s0 + v * 1000.0);
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
}

/// How many rows sit on the edges of the axis or in the "no time" column.
fn edge_note(o: &mut String, chart: &Chart) {
    let (before, after, no_time) = (chart.before, chart.after, chart.no_time);
    if before + after + no_time > 0 {
        let _ = writeln!(
            o,
            "<p class=\"note\" id=\"lanes-edges\">{before} rows arriving more than one span before the window and {after} more than one span after the horizon \
             are drawn on the edge of the axis; {no_time} rows without a usable arrival time are drawn in the “no time” column.</p>"
        );
    }
}
