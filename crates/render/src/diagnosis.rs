//! The release-gate figures for a person: one diagnosis line per class
//! (counts first, then the reading), the recovery after the burst with its
//! p95 TTFT time bins, and the per-GPU and cost figures. Shared by
//! `analyze`'s text, `gate` and (as HTML) the report.

use std::fmt::Write;

use goodput_core::energy::EnergyBlock;
use goodput_core::receipt::cost::{Cost, ResourcesInfo};
use goodput_core::receipt::recovery::{ClassRecovery, Recovery};
use goodput_core::receipt::Receipt;
use goodput_core::review::diagnosis::{diagnose, ClassDiagnosis};
use goodput_util::escape::terminal;

/// Formats a number for people: integers plainly, others with `decimals`.
fn num(x: f64, decimals: usize) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:.decimals$}")
    }
}

/// A money or rate figure: four significant decimals past the leading
/// digits, trailing zeros trimmed (`0.02`, `10`, `0.005556`).
fn figure(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let magnitude = if x == 0.0 {
        0
    } else {
        x.abs().log10().floor() as i32
    };
    let decimals = (3 - magnitude).clamp(0, 12) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// A diagnosis's counts, in the order of the table in `review::diagnosis`.
/// The parts after the colon (missed, failed, unfinished) add up to the rows
/// not passed, and a part whose count is 0 is left out; inside a part, what
/// is a breakdown says so (a row counts under every metric it missed), and
/// the late unfinished rows are a count of the same rows on another axis.
pub fn counts(d: &ClassDiagnosis) -> String {
    let mut parts = Vec::new();
    let missed = d.not_passed.saturating_sub(d.failed + d.unfinished);
    if missed > 0 {
        let mut later = String::new();
        if let Some(n) = d.stall_misses {
            let _ = write!(later, ", stall {n}");
        }
        if let (Some(thinking), Some(waiting)) = (d.thinking_misses, d.waiting_misses) {
            let _ = write!(
                later,
                ", TTFA {} ({thinking} after a fast first token, {waiting} after a slow one)",
                thinking + waiting
            );
        }
        if let Some(n) = d.no_answer {
            let _ = write!(later, ", no answer {n}");
        }
        let mut part = format!(
            "{missed} missed a gate (TTFT {}, TPOT {}, E2E {}{later}; a row counts under each gate \
             it missed",
            d.ttft_misses, d.tpot_misses, d.e2e_misses
        );
        if d.e2e_only_at_least > 0 {
            let _ = write!(part, "; at least {} missed E2E alone", d.e2e_only_at_least);
        }
        part.push(')');
        parts.push(part);
    }
    if d.failed > 0 {
        let reasons: Vec<String> = d
            .failure_reasons
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        parts.push(format!("failed {} ({})", d.failed, reasons.join(", ")));
    }
    if d.unfinished > 0 {
        parts.push(unfinished(d));
    }
    format!(
        "{} of {} cohort rows not passed: {}",
        d.not_passed,
        d.cohort,
        parts.join("; ")
    )
}

/// The unfinished rows: how many were still running when observation
/// stopped and how many ended only after it (the two add up), then how many
/// of all of them were already past a TTFT or E2E gate (a different axis).
fn unfinished(d: &ClassDiagnosis) -> String {
    let n = d.unfinished;
    let all = if n == 1 {
        String::new()
    } else {
        format!("all {n} ")
    };
    let after = n.saturating_sub(d.in_flight);
    let split = match (d.in_flight, after) {
        (_, 0) => format!("{all}still running"),
        (0, _) => format!("{all}ended only after it"),
        (running, after) => format!("{running} still running, {after} ended only after it"),
    };
    let gates = if d.thinking_misses.is_some() {
        "a TTFT, TTFA or E2E gate"
    } else {
        "a TTFT or E2E gate"
    };
    let late = match d.known_late {
        0 => String::new(),
        late if late == n => format!("; {all}already past {gates}"),
        late => format!("; {late} of these {n} already past {gates}"),
    };
    format!("unfinished {n} at the horizon ({split}{late})")
}

/// One line: `diagnosis CLASS: counts → reading`.
pub fn line(d: &ClassDiagnosis) -> String {
    format!(
        "diagnosis {}: {} → {}",
        goodput_util::escape::terminal(&d.class),
        counts(d),
        d.reading()
    )
}

/// Every class's line, or nothing when no class lost a request.
pub fn render(diagnoses: &[ClassDiagnosis]) -> String {
    let mut o = String::new();
    for d in diagnoses {
        let _ = writeln!(o, "{}", line(d));
    }
    o
}

/// A class's recovery in words: the time and the evidence after it (how
/// many arrivals, how many of them missed or are undecided), or why there is
/// none.
pub fn recovery_figure(c: &ClassRecovery) -> String {
    match (c.recovery_s, c.recovered_at_ms) {
        (Some(s), Some(at)) => {
            let undecided = match c.undecided_after_recovery {
                Some(u) if u > 0 => format!(", {u} unfinished and undecided"),
                _ => String::new(),
            };
            format!(
                "recovered {} s after the burst (arrivals from {} ms on: {}, {} missed{undecided}; \
                 {} of {} arrivals after the burst missed)",
                num(s, 3),
                num(at, 3),
                c.arrivals_after_recovery.unwrap_or(0),
                c.misses_after_recovery.unwrap_or(0),
                c.misses_after_burst,
                c.arrivals_after_burst
            )
        }
        _ => format!(
            "not recovered: {}",
            c.reason.as_deref().unwrap_or("no reason recorded")
        ),
    }
}

/// The recovery block: one line per class, then its p95 TTFT bins.
pub fn recovery(r: &Recovery) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "recovery  after phase {:?} [{}, {}) ms: the first arrival of a class after its last miss \
         of the TTFT or E2E gate beyond a tolerance of {} (failed rows and unfinished rows \
         certain to miss count as misses)",
        r.burst_phase,
        num(r.burst_start_ms, 3),
        num(r.burst_end_ms, 3),
        r.tolerance
    );
    for (name, c) in &r.classes {
        let _ = writeln!(
            o,
            "  {}: {}",
            goodput_util::escape::terminal(name),
            recovery_figure(c)
        );
        if let (Some(first), Some(last)) = (c.ttft_bins.first(), c.ttft_bins.last()) {
            let width = first.end_ms - first.start_ms;
            let cells: Vec<String> = c
                .ttft_bins
                .iter()
                .map(|b| {
                    b.p95_ttft_ms
                        .map_or_else(|| "—".to_owned(), |v| num(v.round(), 0))
                })
                .collect();
            let _ = writeln!(
                o,
                "    p95 TTFT ms by arrival, {} bins of {} ms from {} ms to {} ms (— = no completion): {}",
                c.ttft_bins.len(),
                num(width, 3),
                num(first.start_ms, 3),
                num(last.end_ms, 3),
                cells.join(" ")
            );
        }
    }
    o
}

/// The per-GPU and cost figures.
pub fn cost(c: &Cost, basis: Option<&ResourcesInfo>) -> String {
    let mut o = String::new();
    let source = basis.map_or(String::new(), |b| format!(", from {}", b.source));
    let _ = writeln!(
        o,
        "per GPU   {} GPUs{source}: goodput {} req/s, good output tokens {} tok/s, \
         all output tokens {} tok/s (raw)",
        num(c.gpus, 3),
        figure(c.goodput_per_s_per_gpu),
        figure(c.good_tokens_per_s_per_gpu),
        figure(c.output_tokens_per_s_per_gpu)
    );
    if let (Some(price), Some(total)) = (c.gpu_hour_cost, c.window_cost) {
        {
            let money = |x: Option<f64>| x.map_or_else(|| "—".to_owned(), figure);
            let _ = writeln!(
                o,
                "cost      {} per GPU-hour × {} GPU-hours = {} over the window: \
                 1,000 good requests {}, 1,000,000 good output tokens {}, 1,000,000 output tokens (raw) {}",
                figure(price),
                figure(c.gpu_hours),
                figure(total),
                money(c.cost_per_1k_good_requests),
                money(c.cost_per_1m_good_tokens),
                money(c.cost_per_1m_output_tokens)
            );
        }
    }
    if let Some(note) = &c.note {
        let _ = writeln!(o, "          ({note})");
    }
    o
}

/// Every line of `text` wrapped at spaces to 100 columns; a line keeps its
/// own indentation and its continuations are indented six spaces.
fn wrapped(text: &str) -> String {
    const WIDTH: usize = 100;
    let mut o = String::new();
    for line in text.lines() {
        let body = line.trim_start_matches(' ');
        let mut current = line[..line.len() - body.len()].to_owned();
        let mut empty = true;
        for word in body.split(' ') {
            let fits = current.chars().count() + 1 + word.chars().count() <= WIDTH;
            if !empty && !fits {
                let _ = writeln!(o, "{current}");
                current = "      ".to_owned();
                empty = true;
            }
            if !empty {
                current.push(' ');
            }
            current.push_str(word);
            empty = false;
        }
        let _ = writeln!(o, "{current}");
    }
    o
}

/// The sections the text receipt ends with, wrapped to 100 columns: the diagnosis (when a class lost
/// requests), the recovery (when the trace has a burst phase), the per-GPU
/// and cost figures (when resources are in force). Empty when none applies.
pub fn sections(receipt: &Receipt) -> String {
    let mut o = String::new();
    let diagnoses = diagnose(receipt);
    if !diagnoses.is_empty() {
        let _ = writeln!(
            o,
            "\nDIAGNOSIS (from the counts above; a reading, not a measurement)"
        );
        o.push_str(&wrapped(&render(&diagnoses)));
    }
    if let Some(r) = &receipt.recovery {
        let _ = writeln!(o);
        o.push_str(&wrapped(&recovery(r)));
    }
    if let Some(c) = &receipt.cost {
        let _ = writeln!(o);
        o.push_str(&wrapped(&cost(c, receipt.contract.resources.as_ref())));
    }
    if let Some(e) = &receipt.energy {
        let _ = writeln!(o);
        o.push_str(&wrapped(&energy(e)));
    }
    o
}

/// The energy figures (docs/contract.md §10.18).
pub fn energy(e: &EnergyBlock) -> String {
    let mut o = String::new();
    let opt = |x: Option<f64>| x.map_or_else(|| "—".to_owned(), figure);
    let _ = writeln!(
        o,
        "energy    {} J over {} of {} ms ({}, {} series, {} readings, {} gaps, mean {} W): \
         {} J per good request, {} J per good output token, {} good requests per kJ",
        figure(e.joules),
        num(e.covered_ms, 0),
        num(e.window_ms, 0),
        terminal(&e.metric),
        e.series,
        e.readings,
        e.gaps,
        opt(e.mean_watts),
        opt(e.joules_per_good_request),
        opt(e.joules_per_good_output_token),
        opt(e.good_requests_per_kj),
    );
    if let Some(note) = &e.note {
        let _ = writeln!(o, "          ({note})");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::review::diagnosis::Cause;

    fn diagnosis() -> ClassDiagnosis {
        ClassDiagnosis {
            class: "chat".to_owned(),
            cohort: 20,
            not_passed: 0,
            ttft_misses: 0,
            tpot_misses: 0,
            e2e_misses: 0,
            stall_misses: None,
            thinking_misses: None,
            waiting_misses: None,
            no_answer: None,
            e2e_only_at_least: 0,
            failed: 0,
            failure_reasons: Default::default(),
            unfinished: 0,
            in_flight: 0,
            known_late: 0,
            dominant: vec![Cause::E2eOnlyMisses],
            ttft_miss_split: None,
        }
    }

    #[test]
    fn e2e_alone_and_partly_late_rows_are_named_only_when_nonzero() {
        // 5 misses (TTFT 1, E2E 5 → at least 5 − 1 − 0 = 4 missed E2E alone)
        // + 3 unfinished (1 running, 2 ended after, 2 of the 3 late) = 8.
        let d = ClassDiagnosis {
            not_passed: 8,
            ttft_misses: 1,
            e2e_misses: 5,
            e2e_only_at_least: 4,
            unfinished: 3,
            in_flight: 1,
            known_late: 2,
            ..diagnosis()
        };
        assert_eq!(
            counts(&d),
            "8 of 20 cohort rows not passed: 5 missed a gate (TTFT 1, TPOT 0, E2E 5; a row counts \
             under each gate it missed; at least 4 missed E2E alone); unfinished 3 at the horizon \
             (1 still running, 2 ended only after it; 2 of these 3 already past a TTFT or E2E gate)"
        );
        // All ended after the horizon, none late.
        let d = ClassDiagnosis {
            not_passed: 4,
            unfinished: 4,
            ..diagnosis()
        };
        assert_eq!(
            counts(&d),
            "4 of 20 cohort rows not passed: unfinished 4 at the horizon (all 4 ended only after it)"
        );
    }
}
