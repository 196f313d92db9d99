//! The stalls on the verdict lanes: each row that missed its stall gate
//! (docs/contract.md §10.15) gets a bar in the miss lane over the instant
//! its largest gap happened, from the stream event before the gap to the
//! one after, with the row, the gap and its place in the stream in a
//! tooltip.
//!
//! The lanes place rows at their arrival; a stall happens later, between
//! two events of the stream: at `firstTokenMs + gapsMs[0] + … +
//! gapsMs[k − 1]` to that plus `gapsMs[k]`, `k` the row's `maxGapIndex`.
//! The lanes draw these bars with their own time axis (the caller passes
//! its scale), so this module knows nothing of the chart around it.
//!
//! Bounded like the lanes: at most [`STALL_MARK_LIMIT`] bars, the largest
//! stalls first, the rest counted in a note.

use std::fmt::Write;

use crate::report::html::escape;
use crate::report::svg::px;
use crate::sensitivity::short;
use goodput_core::analyze::Analysis;
use goodput_core::receipt::gaps::largest_gap;
use goodput_core::verdict::Verdict;

/// Most stall bars on the lanes; above it only the largest stalls are drawn
/// (ties by row order) and a note counts the rest.
pub const STALL_MARK_LIMIT: usize = 500;
/// The bars' colour: Okabe–Ito blue, not a red. A red would read as the
/// miss lane's vermillion to a red-blind reader; the bar's shape (flat
/// and wide where the marks are thin and tall) repeats the difference.
const STALL_COLOUR: &str = "#0072B2";
/// Height of a bar, at the foot of its sub-lane's marks: the upper part of
/// the miss marks it crosses stays visible.
const STALL_BAR_PX: f64 = 4.0;
/// A bar is at least this wide, so a short stall on a long axis shows.
const MIN_STALL_PX: f64 = 2.0;

/// One row's largest stall.
struct Stall {
    /// The row's position in the trace.
    row: usize,
    class: Option<usize>,
    /// The gap, ms, and its 0-based position in `gapsMs`.
    gap_ms: f64,
    index: usize,
    /// When the gap began, ms (the event before it).
    from_ms: f64,
}

/// The stalls to draw, and how many rows missed their stall gate.
pub(super) struct Stalls {
    marked: Vec<Stall>,
    missed: usize,
}

impl Stalls {
    /// The largest stall of every row that missed on `stall`, in row order
    /// (at most [`STALL_MARK_LIMIT`] of them).
    pub(super) fn of(a: &Analysis) -> Stalls {
        let mut marked: Vec<Stall> = a
            .judgements
            .iter()
            .enumerate()
            .filter(|(_, j)| matches!(&j.verdict, Verdict::Miss(_, m) if m.stall))
            .filter_map(|(i, j)| {
                let row = a.trace.rows.get(i)?;
                let gaps = row.gaps_ms.get()?;
                let (gap_ms, index) = largest_gap(gaps)?;
                let before: f64 = gaps[..index].iter().sum();
                Some(Stall {
                    row: i,
                    class: j.class,
                    gap_ms,
                    index,
                    from_ms: row.first_token_ms.value()? + before,
                })
            })
            .collect();
        let missed = marked.len();
        if missed > STALL_MARK_LIMIT {
            marked.sort_by(|x, y| y.gap_ms.total_cmp(&x.gap_ms).then(x.row.cmp(&y.row)));
            marked.truncate(STALL_MARK_LIMIT);
            marked.sort_by_key(|s| s.row);
        }
        Stalls { marked, missed }
    }

    /// Whether there is no stall to draw (then the lanes are as without gaps).
    pub(super) fn is_empty(&self) -> bool {
        self.marked.is_empty()
    }

    /// The sentence of the lanes' note on the bars (empty without stalls).
    pub(super) fn note(&self) -> &'static str {
        if self.is_empty() {
            ""
        } else {
            " A blue bar in the miss lane is the largest stall of a row that missed its stall gate, drawn when it \
             happened (from the stream event before the gap to the one after), not at the arrival; hover it for the \
             row, the gap and where it sat in the stream."
        }
    }

    /// The legend entry (nothing without stalls).
    pub(super) fn legend(&self, o: &mut String) {
        if self.is_empty() {
            return;
        }
        let _ = write!(
            o,
            "<span id=\"stall-legend\" title=\"a row's largest gap between stream events, over its class's stall gate\">\
             <span class=\"sw\" style=\"background:{STALL_COLOUR};height:4px;width:18px;vertical-align:3px\"></span>\
             largest stall of a row over its stall gate ({})</span>",
            self.missed
        );
    }

    /// The bars, inside the lanes' SVG: `x_of` is the lanes' time scale, `y_of`
    /// the top of a mark in the miss lane for a row's class, `mark_h` the
    /// marks' height.
    pub(super) fn marks(
        &self,
        o: &mut String,
        a: &Analysis,
        x_of: impl Fn(f64) -> f64,
        y_of: impl Fn(Option<usize>) -> f64,
        mark_h: f64,
    ) {
        let class_names: Vec<&str> = a
            .trace
            .contract
            .classes
            .keys()
            .map(String::as_str)
            .collect();
        for s in &self.marked {
            let to_ms = s.from_ms + s.gap_ms;
            let (x0, x1) = (x_of(s.from_ms), x_of(to_ms));
            let id = a
                .trace
                .rows
                .get(s.row)
                .and_then(|row| row.id.get())
                .map_or_else(
                    || format!("(no usable id) /rows/{}", s.row),
                    |s| s.to_string(),
                );
            let class = s
                .class
                .and_then(|c| class_names.get(c).copied())
                .unwrap_or("(no class)");
            let _ = writeln!(
                o,
                "<rect class=\"stall-mark\" data-row=\"{}\" data-gap-ms=\"{}\" data-gap-index=\"{}\" data-from-ms=\"{}\" \
                 x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{STALL_COLOUR}\" fill-opacity=\"0.85\">\
                 <title>{} · {} · stall {} ms between events {} and {} of the stream (event 0 is the first token), \
                 from {} ms to {} ms</title></rect>",
                s.row,
                short(s.gap_ms),
                s.index,
                short(s.from_ms),
                px(x0),
                px(y_of(s.class) + mark_h - STALL_BAR_PX),
                px((x1 - x0).max(MIN_STALL_PX)),
                px(STALL_BAR_PX),
                escape(&id),
                escape(class),
                short(s.gap_ms),
                s.index,
                s.index + 1,
                short(s.from_ms),
                short(to_ms),
            );
        }
    }

    /// Under the chart: how many stalls were left out (nothing when none was).
    pub(super) fn cap_note(&self, o: &mut String) {
        if self.missed > self.marked.len() {
            let _ = writeln!(
                o,
                "<p class=\"note\" id=\"stalls-capped\">{} rows missed their stall gate; the {} largest stalls are marked \
                 (ties by row order).</p>",
                self.missed,
                self.marked.len()
            );
        }
    }
}
