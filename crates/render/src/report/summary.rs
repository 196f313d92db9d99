//! The summary tables: counts, rates and Little's law per block, the
//! saturation verdicts, then the latency percentiles per block.

use std::fmt::Write;

use crate::report::html::{block_row_start, blocks, escape, tpot_name};
use crate::text::{fixed, opt, share};
use goodput_core::receipt::{LatencyMetric, LatencySummary, Receipt};
use goodput_core::stats::{Percentile, PercentileSet};

/// The summary section: the counts-and-rates table, then the latency table.
pub(super) fn section(o: &mut String, r: &Receipt) {
    counts_and_rates(o, r);
    latency(o, r);
}

/// Per block: row counts, rates and shares, Little's law; its notes below.
fn counts_and_rates(o: &mut String, r: &Receipt) {
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
    saturation(o, r);
}

/// Per block: the saturation verdict and its evidence (docs/contract.md §10.3).
fn saturation(o: &mut String, r: &Receipt) {
    let items: Vec<String> = blocks(r)
        .into_iter()
        .map(|(name, b)| {
            let s = &b.saturation;
            format!(
                "<li data-verdict=\"{v}\"><b>{}</b>: <b>{v}</b> ({} offered/s, {} served/s): {}</li>",
                escape(name.unwrap_or("all rows")),
                fixed(s.offered_per_s, 2),
                opt(s.served_per_s, 2),
                escape(&s.evidence),
                v = s.verdict.as_str(),
            )
        })
        .collect();
    let _ = writeln!(
        o,
        "<p class=\"note\">Saturation: did the server keep up with the offered load? Served/s is completions \
         per second from the first to the last completion.</p>\n<ul class=\"notes\" id=\"saturation\">\n{}\n</ul>",
        items.join("\n")
    );
}

/// Per block: n and the nearest-rank percentiles in force
/// (`contract.percentiles`, default p50, p95, p99) of TTFT, TPOT and E2E.
fn latency(o: &mut String, r: &Receipt) {
    let tp = tpot_name(r);
    let percentiles = goodput_core::receipt::percentiles::in_force(&r.contract);
    let span = percentiles.as_slice().len() + 1;
    let mut cols = "<th class=\"first\">n</th>".to_owned();
    for p in percentiles.as_slice() {
        let _ = write!(cols, "<th>p{p}</th>");
    }
    let _ = writeln!(
        o,
        "<h3>Latency, ms</h3>\n<p class=\"note\">Completed cohort rows (pass and miss), nearest-rank percentiles; \
         {tp} over rows with more than one output token. — means no such rows.</p>\n\
         <div class=\"scroll\">\n<table id=\"latency\">\n<thead>\n\
         <tr><th class=\"name\"></th><th class=\"group\" colspan=\"{span}\">TTFT</th><th class=\"group\" colspan=\"{span}\">{tp}</th>\
         <th class=\"group\" colspan=\"{span}\">E2E</th></tr>\n<tr><th class=\"name\">block</th>{cols}{cols}{cols}</tr>\n</thead>\n<tbody>"
    );
    for (name, b) in blocks(r) {
        o.push_str(&block_row_start(name));
        for (metric, which, s) in [
            ("ttft", LatencyMetric::Ttft, &b.latency.ttft_ms),
            ("tpot", LatencyMetric::Tpot, &b.latency.tpot_ms),
            ("e2e", LatencyMetric::E2e, &b.latency.e2e_ms),
        ] {
            latency_cells(
                o,
                metric,
                s,
                |p| b.percentile(which, p).and_then(|(v, _)| v),
                &percentiles,
            );
        }
        let _ = writeln!(o, "</tr>");
    }
    let _ = writeln!(o, "</tbody>\n</table>\n</div>\n</section>");
}

fn latency_cells(
    o: &mut String,
    metric: &str,
    s: &LatencySummary,
    value: impl Fn(Percentile) -> Option<f64>,
    percentiles: &PercentileSet,
) {
    let _ = write!(
        o,
        "<td class=\"first\" data-col=\"{metric}-n\">{}</td>",
        s.n
    );
    for &p in percentiles.as_slice() {
        let v = value(p);
        let p = format!("p{p}");
        let _ = write!(o, "<td data-col=\"{metric}-{p}\">{}</td>", opt(v, 1));
    }
}
