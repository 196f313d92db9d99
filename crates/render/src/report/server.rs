//! The server panels: what the server said about itself while the run lasted
//! (the `record --metrics` sidecar), drawn under the verdict lanes on the
//! same time axis: requests waiting, requests running and KV-cache use, one
//! panel each, with the peak of each series named. A failed scrape (a gap)
//! breaks the line; nothing is interpolated across it. With several
//! engines, waiting and running are their sums and KV-cache use is the
//! fullest engine's (whether any engine ran out of cache), the mean across
//! engines named beside its peak when it differs. When the sidecar holds a
//! power series (the receipt's `energy.metric`, else DCGM's
//! `DCGM_FI_DEV_POWER_USAGE`, summed over GPUs), a fourth panel draws it in
//! watts (docs/contract.md §10.18).

use std::fmt::Write;

use crate::report::lanes::{time_axis_of, TimeAxis, CHART_WIDTH};
use crate::report::svg::{px, ticks};
use crate::sensitivity::short;
use goodput_core::analyze::Analysis;
use goodput_core::server_metrics::{peaks, MetricsLine};
use goodput_util::number::count;

/// Height of one panel's plot, SVG pixels.
const PANEL_H: f64 = 60.0;
/// Vertical room per panel (plot, label and gap).
const PANEL_STEP: f64 = 84.0;

/// One series: its title, how to read a value, and its unit.
struct Series {
    title: &'static str,
    pick: fn(&MetricsLine) -> Option<f64>,
    percent: bool,
}

const SERIES: [Series; 3] = [
    Series {
        title: "requests waiting (queue)",
        pick: |l| l.mapped.waiting,
        percent: false,
    },
    Series {
        title: "requests running",
        pick: |l| l.mapped.running,
        percent: false,
    },
    Series {
        title: "KV-cache use",
        pick: |l| l.mapped.kv_fullest(),
        percent: true,
    },
];

/// The section, or nothing without a sidecar. The SVG has the lanes'
/// width and plot edges, so the two scale alike and a time lines up.
pub(super) fn section(o: &mut String, a: &Analysis, lines: Option<&[MetricsLine]>) {
    let Some(lines) = lines else {
        return;
    };
    let p = peaks(lines);
    let _ = writeln!(
        o,
        "<section id=\"server\">\n<h2>Server metrics</h2>\n<p class=\"note\">What the server reported \
         while the run lasted ({}, {} shown as breaks), on the verdict lanes' \
         time axis. {}</p>",
        count(p.snapshots as u64, "snapshot"),
        count(p.gaps as u64, "failed scrape"),
        peak_text(&p)
    );
    let axis = time_axis_of(a);
    let metric = a
        .receipt
        .energy
        .as_ref()
        .map_or(goodput_core::energy::DEFAULT_POWER_METRIC, |e| {
            e.metric.as_str()
        });
    let power = |l: &MetricsLine| goodput_core::energy::power_watts(l, metric);
    let with_power = lines.iter().any(|l| power(l).is_some());
    let panels = SERIES.len() + usize::from(with_power);
    let height = 20.0 + PANEL_STEP * panels as f64 + 30.0;
    let _ = writeln!(
        o,
        "<svg id=\"server-metrics\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"server metrics over time\">",
        w = px(CHART_WIDTH),
        h = px(height)
    );
    for (k, series) in SERIES.iter().enumerate() {
        let look = (series.title, series.percent);
        panel(
            o,
            lines,
            &series.pick,
            look,
            &axis,
            20.0 + PANEL_STEP * k as f64,
        );
    }
    if with_power {
        let top = 20.0 + PANEL_STEP * SERIES.len() as f64;
        panel(o, lines, &power, ("power (W)", false), &axis, top);
    }
    let bottom = 20.0 + PANEL_STEP * panels as f64 - 24.0 + 4.0;
    for v in ticks(
        (axis.lo - axis.start_ms) / 1000.0,
        (axis.hi - axis.start_ms) / 1000.0,
        10.0,
    ) {
        let x = px(axis.x_of(axis.start_ms + v * 1000.0));
        let _ = writeln!(
            o,
            "<text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px(bottom + 12.0),
            short(v)
        );
    }
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">s from the window start</text>\n</svg>\n</section>",
        px(axis.plot_left + axis.plot_w / 2.0),
        px(bottom + 28.0)
    );
}

/// "peak waiting 212, running 4, KV use 100 %." (series the server lacks
/// are left out), lower-case for the middle of a line such as the CLI's
/// `server metrics: peak waiting 212, …`. KV use is the fullest engine's;
/// when the mean across engines peaked lower, it is named too: "KV use 80 %
/// (fullest engine; mean across engines 70 %)".
pub fn peak_clause(p: &goodput_core::server_metrics::Peaks) -> String {
    let mut parts = Vec::new();
    let odd = &p.implausible;
    if let Some(o) = odd.waiting {
        parts.push(format!("waiting {}", implausible(o, COUNT_RULE)));
    } else if let Some(w) = p.waiting {
        parts.push(format!("waiting {}", short(w)));
    }
    if let Some(o) = odd.running {
        parts.push(format!("running {}", implausible(o, COUNT_RULE)));
    } else if let Some(r) = p.running {
        parts.push(format!("running {}", short(r)));
    }
    if let Some(o) = odd.kv_usage {
        parts.push(format!("KV use {}", implausible(o, "not a fraction 0–1")));
    } else if let Some(k) = p.kv_usage {
        // Never `100 %` for a use that is not full (the shared display rule).
        let share = |x: f64| goodput_util::figures::percent_short(x.clamp(0.0, 1.0), None);
        let mut kv = format!("KV use {}", share(k));
        if let Some(mean) = p.kv_usage_mean.filter(|m| share(*m) != share(k)) {
            kv.push_str(&format!(
                " (fullest engine; mean across engines {})",
                share(mean)
            ));
        }
        parts.push(kv);
    }
    if parts.is_empty() {
        "the server exposed none of the mapped series.".to_owned()
    } else {
        format!("peak {}.", parts.join(", "))
    }
}

/// [`peak_clause`] as a sentence of its own, capitalised: "Peak waiting 212, …".
pub fn peak_text(p: &goodput_core::server_metrics::Peaks) -> String {
    let clause = peak_clause(p);
    let mut chars = clause.chars();
    chars.next().map_or_else(String::new, |c| {
        c.to_uppercase().chain(chars).collect::<String>()
    })
}

/// What a count must be (`goodput_core::server_metrics::MAX_PLAUSIBLE_COUNT`).
const COUNT_RULE: &str = "not a whole count 0–1e9";

/// "implausible (1e308 in 1 snapshot, not a whole count 0–1e9)": a value
/// no server reports, named instead of shown as a figure. Large and tiny
/// magnitudes are written with an exponent, never as hundreds of digits.
fn implausible(o: goodput_core::server_metrics::Odd, rule: &str) -> String {
    let v = o.value;
    let shown = if v != 0.0 && !(1e-3..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        short(v)
    };
    format!(
        "implausible ({shown} in {}, {rule})",
        count(o.snapshots as u64, "snapshot")
    )
}

/// One panel: label, frame, the series as polylines broken at gaps; a
/// series no snapshot carried says "not reported by the server's metrics"
/// instead of an empty frame.
fn panel(
    o: &mut String,
    lines: &[MetricsLine],
    pick: &dyn Fn(&MetricsLine) -> Option<f64>,
    (title, percent): (&str, bool),
    axis: &TimeAxis,
    top: f64,
) {
    let values: Vec<f64> = lines.iter().filter_map(pick).collect();
    let max = if percent {
        1.0
    } else {
        values.iter().copied().fold(1.0_f64, f64::max)
    };
    let y_of = |v: f64| top + PANEL_H - (v.clamp(0.0, max) / max) * PANEL_H;
    let label_max = if percent {
        "100 %".to_owned()
    } else {
        short(max)
    };
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{label_max}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>",
        px(axis.plot_left - 40.0),
        px(top + PANEL_H / 2.0 + 4.0),
        title,
        px(axis.plot_left - 4.0),
        px(top + 10.0),
        px(axis.plot_left - 4.0),
        px(top + PANEL_H)
    );
    let _ = writeln!(
        o,
        "<rect class=\"band\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
        px(axis.plot_left),
        px(top),
        px(axis.plot_w),
        px(PANEL_H)
    );
    if values.is_empty() {
        let _ = writeln!(
            o,
            "<text class=\"no-gate not-reported\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">not reported by the server's metrics</text>",
            px(axis.plot_left + axis.plot_w / 2.0),
            px(top + PANEL_H / 2.0 + 4.0)
        );
        return;
    }
    let mut run: Vec<String> = Vec::new();
    let flush = |o: &mut String, run: &mut Vec<String>| {
        if !run.is_empty() {
            let _ = writeln!(
                o,
                "<polyline fill=\"none\" stroke=\"#0072B2\" stroke-width=\"1.5\" points=\"{}\"/>",
                run.join(" ")
            );
            run.clear();
        }
    };
    for line in lines {
        match (line.error.is_none(), pick(line)) {
            (true, Some(v)) if v.is_finite() => {
                run.push(format!("{},{}", px(axis.x_of(line.t_ms)), px(y_of(v))));
            }
            _ => flush(o, &mut run),
        }
    }
    flush(o, &mut run);
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::server_metrics::Peaks;

    fn kv(max: f64, mean: f64) -> Peaks {
        Peaks {
            kv_usage: Some(max),
            kv_usage_mean: Some(mean),
            snapshots: 1,
            ..Peaks::default()
        }
    }

    #[test]
    fn kv_use_is_the_fullest_engines_with_the_mean_when_it_differs() {
        // Two engines each at 60 %: 60 %, not the 100 % their sum clamped to.
        assert_eq!(peak_text(&kv(0.6, 0.6)), "Peak KV use 60 %.");
        // Engines at 80 % and 60 %: the fullest, and the mean 70 % beside it.
        assert_eq!(
            peak_text(&kv(0.8, 0.7)),
            "Peak KV use 80 % (fullest engine; mean across engines 70 %)."
        );
        // An older sidecar's kvUsage alone stands for both.
        let old = Peaks {
            kv_usage_mean: None,
            ..kv(0.5, 0.0)
        };
        assert_eq!(peak_text(&old), "Peak KV use 50 %.");
    }

    #[test]
    fn implausible_values_are_named_not_shown_as_figures() {
        use goodput_core::server_metrics::parse_sidecar;
        // A queue of 1e308 (309 digits as a figure), a KV use of 5.0 (the
        // clamp's "100 %"), a running count of 4 that stays a figure.
        let sidecar =
            b"{\"tMs\":100,\"waiting\":1e308,\"running\":4,\"kvUsage\":5.0,\"kvUsageMax\":5.0}\n";
        let p = goodput_core::server_metrics::peaks(&parse_sidecar(sidecar).unwrap());
        assert_eq!(
            peak_text(&p),
            "Peak waiting implausible (1e308 in 1 snapshot, not a whole count 0–1e9), \
             running 4, KV use implausible (5 in 1 snapshot, not a fraction 0–1)."
        );
    }
}
