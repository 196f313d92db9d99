//! The receipt for a person: per class and for all rows, readable at 100
//! columns. The JSON receipt is the record; this is a view of it. Class
//! names and reasons come from the trace: each is shown through
//! [`terminal`], so none can move the cursor, retitle or clear the terminal.

use goodput_core::analyze::InvalidRow;
use std::borrow::Cow;
use std::fmt::Write;

use goodput_core::receipt::tokenizer::TokenizerMismatch;
use goodput_core::receipt::{
    Block, ContractInfo, LatencyMetric, LatencySummary, Receipt, ARRIVALS_UNKNOWN_LINE,
};
use goodput_core::stats::PercentileSet;
use goodput_core::trace::ArrivalMode;
use goodput_util::escape::terminal;
use goodput_util::number::count;

/// The summary's second line for a closed-loop trace (docs/contract.md §10.2).
pub const CLOSED_LOOP_WARNING: &str = "WARNING   closed-loop workload: each request was sent \
    when an earlier one ended, so the server paced its own load; these figures are not \
    evidence that an SLA holds at any offered rate (docs/contract.md §10.2)";

/// How many invalid rows the text view lists before summarising the rest.
pub const MAX_LISTED_INVALID_ROWS: usize = 20;

/// Formats a number for people: integers plainly, others with `decimals`.
fn num(x: f64, decimals: usize) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:.decimals$}")
    }
}

pub(crate) use crate::cells::{fixed, opt, share};

fn gate(g: Option<f64>, rule: &str) -> String {
    g.map_or_else(|| "none".to_owned(), |v| format!("{rule} {}", num(v, 3)))
}

/// Top `n` entries of a reason map, largest first (ties by name).
fn top(map: &std::collections::BTreeMap<String, u64>, n: usize) -> String {
    let mut v: Vec<(&String, &u64)> = map.iter().filter(|(_, c)| **c > 0).collect();
    if v.is_empty() {
        return "none".to_owned();
    }
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut s: Vec<String> = v
        .iter()
        .take(n)
        .map(|(k, c)| format!("{} {c}", terminal(k)))
        .collect();
    if v.len() > n {
        s.push(format!("+{} more", v.len() - n));
    }
    s.join(", ")
}

/// Wraps `text` at spaces to `width` columns, indenting continuation lines.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = indent.to_owned();
        } else if !line.is_empty() && line != indent {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out
}

/// Quotes an id, cut to 48 characters so a 128-character id keeps the line
/// within 100 columns.
fn shorten_id(id: &str) -> String {
    const KEEP: usize = 48;
    if id.chars().count() <= KEEP {
        format!("{id:?}")
    } else {
        let head: String = id.chars().take(KEEP - 1).collect();
        format!("{:?}…", head)
    }
}

/// Renders the human-readable receipt: the header (what was judged, under
/// which contract and gates), one table per figure with a row per block,
/// the invalid rows, and the diagnosis.
pub fn render(receipt: &Receipt, invalid_rows: &[InvalidRow]) -> String {
    let mut o = String::new();
    let c = &receipt.contract;
    let table = Table::new(receipt);
    write_title(&mut o, receipt);
    write_trace(&mut o, receipt);
    write_contract(&mut o, c);
    write_gates(&mut o, c, table.tpot_name);
    if let Some(m) = &receipt.tokenizer_mismatch {
        let _ = writeln!(o, "{}", wrap(&tokenizer_warning(m), 100, "          "));
    }
    write_counts(&mut o, &table);
    write_rates(&mut o, &table, c.window.duration_ms);
    write_latency(&mut o, &table);
    if !c.streamed {
        let _ = writeln!(
            o,
            "(streamed: false — the responses were not streamed (embeddings): ttft and {} are \
             not applicable, only e2e is judged)",
            table.tpot_name
        );
    }
    crate::stalls::write_gaps(&mut o, receipt);
    crate::answers::write_answers(&mut o, receipt);
    crate::server_timing::write_server_timing(&mut o, receipt);
    write_littles_law(&mut o, &table);
    write_saturation(&mut o, &table);
    write_reasons(&mut o, &table);
    if let Some(q) = &receipt.quality {
        let line = crate::quality::receipt_line(q, c.intervals.confidence);
        let _ = writeln!(o, "{}", wrap(line.trim_end(), 100, "          "));
    }
    write_invalid_rows(&mut o, invalid_rows);
    o.push_str(&crate::diagnosis::sections(receipt));
    // The net under the per-string escaping: no raw control byte leaves.
    goodput_util::escape::terminal_lines(&o).into_owned()
}

/// What every table shares: its rows (`all`, then each class), the width
/// of the name column, and what the per-token metric is called.
struct Table<'a> {
    blocks: Vec<(Cow<'a, str>, &'a Block)>,
    width: usize,
    tpot_name: &'static str,
    /// The percentiles in force, one latency column each.
    percentiles: PercentileSet,
}

impl<'a> Table<'a> {
    fn new(receipt: &'a Receipt) -> Table<'a> {
        let blocks: Vec<(Cow<str>, &Block)> =
            std::iter::once((Cow::Borrowed("all"), &receipt.results.all))
                .chain(
                    receipt
                        .results
                        .classes
                        .iter()
                        .map(|(k, b)| (terminal(k), b)),
                )
                .collect();
        let width = blocks
            .iter()
            .map(|(n, _)| n.chars().count())
            .max()
            .unwrap_or(3)
            .clamp(12, 24);
        Table {
            blocks,
            width,
            tpot_name: tpot_name(&receipt.contract.tpot_label),
            percentiles: goodput_core::receipt::percentiles::in_force(&receipt.contract),
        }
    }
}

/// The short column name for the per-token metric the trace's tokens allow.
fn tpot_name(tpot_label: &str) -> &'static str {
    match tpot_label {
        "tpot" => "tpot",
        "tpot_client_tokens" => "tpot*",
        _ => "chunk",
    }
}

/// The first line, and the closed-loop warning under it when it applies.
fn write_title(o: &mut String, receipt: &Receipt) {
    let _ = writeln!(
        o,
        "goodput {} receipt ({})",
        receipt.generator.version, receipt.schema
    );
    if receipt.contract.arrival_mode == ArrivalMode::ClosedLoop {
        let _ = writeln!(o, "{}", wrap(CLOSED_LOOP_WARNING, 100, "          "));
    }
}

/// The trace's hash, size and the limits it was read under.
fn write_trace(o: &mut String, receipt: &Receipt) {
    let _ = writeln!(o, "trace     sha256 {}", receipt.trace.sha256);
    let _ = writeln!(
        o,
        "          {} bytes, {}; limits {} rows, {} bytes",
        receipt.trace.bytes,
        count(receipt.trace.rows, "row"),
        receipt.limits.max_rows,
        receipt.limits.max_bytes
    );
}

/// The contract: equality, percentile method, what a token is, and the
/// measurement window (with its warm-up).
fn write_contract(o: &mut String, c: &ContractInfo) {
    let token_note = match c.tpot_label.as_str() {
        "tpot" => "model tokens (TPOT)",
        "tpot_client_tokens" => "a client-side tokenizer's count (tpot*: per client token)",
        _ => "stream chunks (chunk cadence, not TPOT)",
    };
    let _ = writeln!(
        o,
        "contract  equality {}, {} percentiles, tokens = {}",
        c.equality, c.percentile_method, token_note
    );
    if c.arrivals_unknown.is_some() {
        let _ = writeln!(o, "          {}", ARRIVALS_UNKNOWN_LINE);
    }
    let win = &c.window;
    let mut window_line = format!(
        "          window [{}, {}) ms = {} s, horizon {} ms",
        num(win.start_ms, 3),
        num(win.end_ms, 3),
        num(win.duration_ms / 1000.0, 3),
        num(win.horizon_ms, 3)
    );
    if let Some(wu) = &c.warmup {
        let _ = write!(
            window_line,
            ", warm-up [{}, {}) ms",
            num(wu.start_ms, 3),
            num(wu.end_ms, 3)
        );
    }
    let _ = writeln!(o, "{window_line}");
}

/// One line per class: its TTFT, per-token and E2E gates.
fn write_gates(o: &mut String, c: &ContractInfo, tpot_name: &str) {
    let rule = if c.equality == "strict" { "<" } else { "<=" };
    for (i, (name, g)) in c.classes.iter().enumerate() {
        let head = if i == 0 { "gates" } else { "" };
        let default = if c.default_class.as_deref() == Some(name) {
            " (for rows without a class)"
        } else {
            ""
        };
        // The later gates are named only when declared, so a contract
        // without them reads as before.
        let mut later = String::new();
        for (key, value) in [
            ("stall", g.stall_ms),
            ("ttfa", g.ttfa_ms),
            ("token deadline", g.token_deadline_ms),
        ] {
            if value.is_some() {
                let _ = write!(later, ", {key} {}", gate(value, rule));
            }
        }
        let _ = writeln!(
            o,
            "{head:<9} {}{default}: ttft {}, {tpot_name} {}, e2e {}{later} (ms)",
            terminal(name),
            gate(g.ttft_ms, rule),
            gate(g.tpot_ms, rule),
            gate(g.e2e_ms, rule)
        );
    }
}

/// How many rows fell into each outcome.
fn write_counts(o: &mut String, t: &Table) {
    let w = t.width;
    let _ = writeln!(
        o,
        "\n{:<w$} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "COUNTS", "arrivals", "cohort", "pass", "miss", "failed", "censored", "excluded", "invalid"
    );
    for (name, b) in &t.blocks {
        let k = &b.counts;
        let _ = writeln!(
            o,
            "{name:<w$} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            k.arrivals, k.cohort, k.pass, k.miss, k.failed, k.censored, k.excluded, k.invalid
        );
    }
}

/// Goodput and the other rates, with a note on what each is per.
fn write_rates(o: &mut String, t: &Table, window_duration_ms: f64) {
    let w = t.width;
    let _ = writeln!(
        o,
        "\n{:<w$} {:>10} {:>10} {:>10} {:>11} {:>12} {:>10} {:>10}",
        "RATES /s",
        "goodput",
        "pass share",
        "offered",
        "completed",
        "output tok",
        "fail share",
        "served"
    );
    for (name, b) in &t.blocks {
        let r = &b.rates;
        let _ = writeln!(
            o,
            "{name:<w$} {:>10} {:>10} {:>10} {:>11} {:>12} {:>10} {:>10}",
            fixed(r.goodput_per_s, 3),
            share(r.pass_share),
            fixed(r.offered_per_s, 3),
            fixed(r.completed_per_s, 3),
            fixed(r.output_tokens_per_s, 1),
            share(r.failure_share),
            opt(r.served_per_s, 3)
        );
    }
    let _ = writeln!(
        o,
        "{}",
        wrap(
            &format!(
                "goodput, offered, completed and output tok are per window second ({} s; \
                 completions in the grace period count too); served is completions per second \
                 from the first to the last completion, what the server kept up with",
                num(window_duration_ms / 1000.0, 3)
            ),
            100,
            "  "
        )
    );
}

/// The summary's warning line for a tokenizer that is not the server's.
pub fn tokenizer_warning(m: &TokenizerMismatch) -> String {
    format!(
        "WARNING   tokenizer mismatch: on {} of {} rows the client's prompt count (promptTokens) \
         differs from the server's (serverPromptTokens) by more than max(2 tokens, 2 %), median \
         server - client {:+} tokens; the trace declares promptLengths: tokens, so its prompt \
         lengths are not the model's (use the model's tokenizer)",
        m.rows_off, m.rows_compared, m.median_server_minus_client
    )
}

/// Percentiles of TTFT, the per-token metric and E2E, three rows per block,
/// one column per percentile in force (`contract.percentiles`).
fn write_latency(o: &mut String, t: &Table) {
    let w = t.width;
    let mut header = format!("\n{:<w$} {:<6} {:>7}", "LATENCY ms", "metric", "n");
    for p in t.percentiles.as_slice() {
        let _ = write!(header, " {:>10}", format!("p{p}"));
    }
    let _ = writeln!(o, "{header} {:>10} {:>10}", "max", "mean");
    for (name, b) in &t.blocks {
        let rows: [(&str, LatencyMetric, &LatencySummary); 3] = [
            ("ttft", LatencyMetric::Ttft, &b.latency.ttft_ms),
            (t.tpot_name, LatencyMetric::Tpot, &b.latency.tpot_ms),
            ("e2e", LatencyMetric::E2e, &b.latency.e2e_ms),
        ];
        for (i, (metric, which, s)) in rows.iter().enumerate() {
            let label = if i == 0 { name.as_ref() } else { "" };
            let mut line = format!("{label:<w$} {metric:<6} {:>7}", s.n);
            for &p in t.percentiles.as_slice() {
                let value = b.percentile(*which, p).and_then(|(v, _)| v);
                let _ = write!(line, " {:>10}", opt(value, 1));
            }
            let _ = writeln!(o, "{line} {:>10} {:>10}", opt(s.max, 1), opt(s.mean, 1));
        }
    }
}

/// Measured against predicted concurrency, and the notes that explain a gap.
fn write_littles_law(o: &mut String, t: &Table) {
    let w = t.width;
    let _ = writeln!(
        o,
        "\n{:<w$} {:>16} {:>16} {:>8} {:>7}",
        "LITTLE'S LAW", "in flight (avg)", "λ × W", "ratio", "steady"
    );
    let mut notes = Vec::new();
    for (name, b) in &t.blocks {
        let l = &b.littles_law;
        let steady = match l.steady_state {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "—",
        };
        let _ = writeln!(
            o,
            "{name:<w$} {:>16} {:>16} {:>8} {:>7}",
            opt(l.in_flight_mean, 3),
            opt(l.predicted_in_flight, 3),
            opt(l.ratio, 2),
            steady
        );
        if let Some(note) = &l.note {
            notes.push(format!("{name}: {note}"));
        }
    }
    for note in notes {
        let _ = writeln!(o, "{}", wrap(&note, 100, "  "));
    }
}

/// Did the server keep up, and on what evidence (docs/contract.md §10.3).
fn write_saturation(o: &mut String, t: &Table) {
    let w = t.width;
    let _ = writeln!(
        o,
        "\n{:<w$} {:<12} {:>9} {:>9}",
        "SATURATION", "verdict", "offered/s", "served/s"
    );
    let mut evidence = Vec::new();
    for (name, b) in &t.blocks {
        let sat = &b.saturation;
        let _ = writeln!(
            o,
            "{name:<w$} {:<12} {:>9} {:>9}",
            sat.verdict.as_str(),
            format!("{:.2}", sat.offered_per_s),
            opt(sat.served_per_s, 2)
        );
        evidence.push(format!("{name}: {}", sat.evidence));
    }
    for line in evidence {
        let _ = writeln!(o, "{}", wrap(&line, 100, "  "));
    }
}

/// Why rows missed, failed, were invalid, censored or excluded.
fn write_reasons(o: &mut String, t: &Table) {
    let (w, tpot_name) = (t.width, t.tpot_name);
    let _ = writeln!(o, "\nREASONS");
    for (name, b) in &t.blocks {
        let r = &b.reasons;
        let mut later = String::new();
        for (key, count) in [
            ("stall", r.miss.stall),
            ("ttfa", r.miss.ttfa),
            ("no_answer", r.miss.no_answer),
        ] {
            if let Some(n) = count {
                let _ = write!(later, ", {key} {n}");
            }
        }
        let _ = writeln!(
            o,
            "{name:<w$} miss: ttft {}, {tpot_name} {}, e2e {}{later}",
            r.miss.ttft, r.miss.tpot, r.miss.e2e
        );
        let _ = writeln!(o, "{:<w$} failure: {}", "", top(&r.failure, 3));
        let _ = writeln!(o, "{:<w$} invalid: {}", "", top(&r.invalid, 3));
        let _ = writeln!(
            o,
            "{:<w$} censored: in_flight {}, completed_after_horizon {}, failed_after_horizon {} \
             (knownLate {})",
            "",
            r.censored.in_flight,
            r.censored.completed_after_horizon,
            r.censored.failed_after_horizon,
            r.censored.known_late
        );
        let _ = writeln!(
            o,
            "{:<w$} excluded: warmup {}, outside_window {}",
            "", r.exclusion.warmup, r.exclusion.outside_window
        );
    }
}

/// The first [`MAX_LISTED_INVALID_ROWS`] invalid rows with their reasons,
/// and how many more there are (nothing when every row was valid).
fn write_invalid_rows(o: &mut String, invalid_rows: &[InvalidRow]) {
    if invalid_rows.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nINVALID ROWS");
    for row in invalid_rows.iter().take(MAX_LISTED_INVALID_ROWS) {
        let id = row
            .id
            .as_deref()
            .map_or_else(|| "(no usable id)".to_owned(), shorten_id);
        let _ = writeln!(o, "/rows/{:<6} {id}: {}", row.index, row.reasons.join(", "));
    }
    if invalid_rows.len() > MAX_LISTED_INVALID_ROWS {
        let _ = writeln!(
            o,
            "… and {} more (all are listed by `--json --rows`)",
            invalid_rows.len() - MAX_LISTED_INVALID_ROWS
        );
    }
}
