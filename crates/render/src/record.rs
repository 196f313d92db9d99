//! The recorder's closing text: what the run did, whether the client kept
//! up, and the exact command that analyzes the trace (or, after a rate sweep,
//! draws its frontier). Pure: figures in, text out; the command-line layer
//! prints it.

use std::fmt::Write as _;

use goodput_core::receipt::{Saturation, SaturationVerdict};
use goodput_core::server_metrics::Peaks;
use goodput_core::trace::{Limits, TokenCount};
use goodput_record::output::summary::{ClientCondition, Figures, ScheduleDraw, MIN_ARRIVAL_RATIO};
use goodput_record::Written;
use goodput_util::number::count;

use crate::sensitivity::short;

/// Quotes a path for a POSIX shell when it needs it.
pub(crate) fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The exact `goodput analyze` command for a trace of `rows` rows and `bytes`
/// bytes, raising the limits only when the defaults would refuse it.
pub fn analyze_command(path: &str, rows: usize, bytes: usize) -> String {
    let mut cmd = format!("goodput analyze {}", shell_quote(path));
    if rows as u64 > Limits::DEFAULT_MAX_ROWS || bytes as u64 > Limits::DEFAULT_MAX_BYTES {
        let _ = write!(cmd, " --max-rows {rows} --max-bytes {bytes}");
    }
    cmd
}

/// What the closing text says beyond the run's own figures: the gates the
/// send lag is weighed against, and the trace's saturation verdict.
#[derive(Clone, Copy, Debug, Default)]
pub struct Judged<'a> {
    /// The smallest declared TTFT or E2E gate, ms (the send-lag limit is 1 % of it, at least 1 ms).
    pub smallest_gate_ms: Option<f64>,
    /// The `all` block's saturation figures, when the trace was analyzed.
    pub saturation: Option<&'a Saturation>,
    /// The peaks of the `--metrics` sidecar, and its path.
    pub server: Option<(&'a str, Peaks)>,
}

/// One client condition, with its figure, for people.
pub fn client_condition(c: &ClientCondition) -> String {
    match *c {
        ClientCondition::SlowArrivals {
            achieved_per_s,
            scheduled_per_s,
        } => format!(
            "achieved arrivals {achieved_per_s:.2}/s were {:.1} % of the {scheduled_per_s:.2}/s scheduled (under {:.0} %)",
            100.0 * achieved_per_s / scheduled_per_s,
            MIN_ARRIVAL_RATIO * 100.0
        ),
        ClientCondition::NotSent { count } => {
            format!("{count} due requests were never sent")
        }
        ClientCondition::SendLag { p99_ms, limit_ms } => format!(
            "p99 send lag {p99_ms:.3} ms was over {limit_ms:.3} ms (1 % of the smallest TTFT or E2E gate, at least 1 ms)"
        ),
    }
}

/// The warning and saturation lines: which side limited the run, and why.
fn bottleneck(s: &mut String, f: &Figures, judged: &Judged) {
    let conditions = f.client_conditions(judged.smallest_gate_ms);
    if !conditions.is_empty() {
        let list: Vec<String> = conditions.iter().map(client_condition).collect();
        let _ = writeln!(
            s,
            "warning: the client distorted the measurement: {}; lower the rate or give the recorder more CPU",
            list.join("; ")
        );
    }
    if let Some(sat) = judged.saturation {
        let _ = writeln!(
            s,
            "  saturation: {}: {}",
            sat.verdict.as_str(),
            sat.evidence
        );
        if sat.verdict == SaturationVerdict::Overloaded {
            let _ = writeln!(
                s,
                "the server was the bottleneck: it served {} of the offered load",
                sat.served_per_s.map_or_else(
                    || "less than".to_owned(),
                    |served| format!("{:.0} %", 100.0 * served / sat.offered_per_s)
                )
            );
        }
    }
}

/// The `next:` line for `command` (which already carries `--max-rows R
/// --max-bytes B` when `raised` is `Some((R, B))`), and, when the limits had
/// to be raised, a second line showing the other way: the two variables
/// exported once, for this and every later command on the trace.
fn next_lines(command: &str, raised: Option<(u64, u64)>) -> String {
    let mut s = format!("next: {command}\n");
    if let Some((rows, bytes)) = raised {
        let flags = format!(" --max-rows {rows} --max-bytes {bytes}");
        let _ = writeln!(
            s,
            "  or: export {}={rows} {}={bytes}; {}",
            Limits::ROWS_VARIABLE,
            Limits::BYTES_VARIABLE,
            command.replacen(&flags, "", 1)
        );
    }
    s
}

/// The recorder's `next:` line(s) for a trace of `rows` rows and `bytes`
/// bytes: the analyze command, and the same limits as variables when the
/// defaults would refuse the trace.
pub fn analyze_next(path: &str, rows: usize, bytes: usize) -> String {
    let raised = (rows as u64 > Limits::DEFAULT_MAX_ROWS
        || bytes as u64 > Limits::DEFAULT_MAX_BYTES)
        .then_some((rows as u64, bytes as u64));
    next_lines(&analyze_command(path, rows, bytes), raised)
}

/// The summary text; `tokens` is what the trace's `outputTokens` count
/// (model tokens from `usage`, or stream chunks when the server sent none).
/// When more than half of the rows failed for one reason, the first line
/// says so, with the server's most frequent `errorText` for it. `judged`
/// adds the client-bottleneck warning, the saturation verdict and the
/// server metrics' peaks.
pub fn render(
    f: &Figures,
    path: &str,
    bytes: usize,
    interrupted: Option<&Interruption>,
    tokens: TokenCount,
    judged: &Judged,
) -> String {
    let mut s = String::new();
    dominant_failure(&mut s, f);
    wrote(&mut s, f, path, bytes, interrupted.is_some());
    if let Some(i) = interrupted {
        s.push_str(&interruption_line(i, f.in_flight));
    }
    outcomes(&mut s, f, tokens);
    failures(&mut s, f);
    send_lag(&mut s, f);
    answers(&mut s, f);
    token_checks(&mut s, f);
    arrival_rate(&mut s, f);
    drawn_schedule(&mut s, f);
    server_metrics(&mut s, judged);
    bottleneck(&mut s, f, judged);
    s.push_str(&analyze_next(path, f.rows, bytes));
    // The net under the per-string escaping: no raw control byte leaves.
    goodput_util::escape::terminal_lines(&s).into_owned()
}

/// The first line when more than half of the rows failed for one reason,
/// with the server's most frequent `errorText` for it.
fn dominant_failure(s: &mut String, f: &Figures) {
    if let Some(d) = &f.dominant_failure {
        let _ = write!(
            s,
            "most requests failed: {} of {} rows ended {}",
            d.rows, f.rows, d.reason
        );
        if let Some(text) = &d.text {
            let _ = write!(s, " (server said: \"{text}\")");
        }
        let _ = writeln!(s);
    }
}

/// How an interrupt ended a recording, for its summary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interruption {
    /// When sending stopped (a first Ctrl-C) or the run was cut, ms since t0.
    pub at_ms: f64,
    /// The drain after a first Ctrl-C (`None`: the run was cut at once).
    pub drain: Option<goodput_record::run::Drain>,
}

/// The line under `interrupted; wrote …`: where sending stopped and what
/// became of the requests in flight then (`cut` rows are left in flight).
pub fn interruption_line(i: &Interruption, cut: usize) -> String {
    use goodput_record::run::DrainEnd;
    let at_s = short(i.at_ms / 1000.0);
    let Some(d) = i.drain else {
        return format!(
            "  cut at {at_s} s: {} in flight written in_flight\n",
            count(cut as u64, "request")
        );
    };
    let finished = (d.in_flight as usize).saturating_sub(cut);
    let ended_s = short(d.ended_ms / 1000.0);
    let how = match d.end {
        DrainEnd::Finished => String::new(),
        DrainEnd::GraceEnded => format!(" (the grace period ran out at {ended_s} s)"),
        DrainEnd::Cut => format!(" (a second Ctrl-C cut the rest at {ended_s} s)"),
    };
    format!(
        "  stopped sending at {at_s} s on Ctrl-C; {} in flight finished, {cut} cut{how}\n",
        count(finished as u64, "request")
    )
}

/// What was written where, and whether the run was cut short.
fn wrote(s: &mut String, f: &Figures, path: &str, bytes: usize, interrupted: bool) {
    let _ = writeln!(
        s,
        "{} {} to {} ({} bytes)",
        if interrupted {
            "interrupted; wrote"
        } else {
            "wrote"
        },
        count(f.rows as u64, "row"),
        path,
        bytes
    );
}

/// How the requests ended, and the output counted in what `tokens` says.
fn outcomes(s: &mut String, f: &Figures, tokens: TokenCount) {
    let failed: usize = f.failed.values().sum();
    let _ = write!(
        s,
        "  sent {}, completed {}, failed {}, in flight {}",
        f.sent, f.completed, failed, f.in_flight
    );
    if f.not_sent > 0 {
        let _ = write!(s, " (never sent {})", f.not_sent);
    }
    match tokens {
        TokenCount::Usage => {
            let _ = writeln!(s, "; {}", count(f.output_tokens, "output token"));
        }
        TokenCount::Chunks => {
            let _ = writeln!(
                s,
                "; {} (no usage reported: outputTokens counts chunks, not tokens)",
                count(f.output_tokens, "stream chunk")
            );
        }
        TokenCount::ClientTokenizer => {
            let _ = writeln!(
                s,
                "; {} (counted by a client-side tokenizer)",
                count(f.output_tokens, "output token")
            );
        }
    }
}

/// The failures by reason, when there were any.
fn failures(s: &mut String, f: &Figures) {
    if !f.failed.is_empty() {
        let list: Vec<String> = f.failed.iter().map(|(r, n)| format!("{r} {n}")).collect();
        let _ = writeln!(s, "  failures: {}", list.join(", "));
    }
}

/// TTFA p50 beside TTFT p50, the reasoning share and the rows that never
/// answered, when the model reasoned (`summary::Answers`).
fn answers(s: &mut String, f: &Figures) {
    let Some(a) = &f.answers else {
        return;
    };
    let ms = |x: Option<f64>| x.map_or_else(|| "—".to_owned(), |x| format!("{x:.3} ms"));
    let _ = write!(
        s,
        "  first answer: TTFT p50 {}, TTFA p50 {}",
        ms(a.ttft_p50_ms),
        ms(a.ttfa_p50_ms)
    );
    if let Some((reasoning, output)) = a.reasoning {
        let share = if output > 0 {
            reasoning as f64 / output as f64
        } else {
            0.0
        };
        let _ = write!(
            s,
            "; reasoning {reasoning} of {} ({})",
            count(output, "output token"),
            goodput_util::figures::percent(share, 1)
        );
    }
    if a.no_answer > 0 {
        let _ = write!(
            s,
            "; {} completed without an answer (reasoning used the output budget)",
            count(a.no_answer as u64, "row")
        );
    }
    s.push('\n');
}

/// How late the client sent requests against their schedule.
fn send_lag(s: &mut String, f: &Figures) {
    let capped = f.cap_wait_ms.is_some();
    if let Some((p50, p99, max)) = f.send_lag_ms {
        let _ = writeln!(
            s,
            "  send lag{}: p50 {p50:.3} ms, p99 {p99:.3} ms, max {max:.3} ms",
            if capped {
                " (less the wait for a slot)"
            } else {
                ""
            }
        );
    }
    if let Some((p50, p99, max)) = f.cap_wait_ms {
        let _ = writeln!(
            s,
            "  wait for a slot (--max-concurrency, in the latencies): p50 {p50:.3} ms, p99 {p99:.3} ms, max {max:.3} ms"
        );
    }
}

/// The server's prompt-token counts against the client's, and how many
/// completions stopped short of their requested length.
fn token_checks(s: &mut String, f: &Figures) {
    let t = &f.tokens;
    if let Some((min, mean, max)) = t.server_minus_client {
        let _ = writeln!(
            s,
            "  prompt tokens: server = client on {} of {} rows; server − client min {min}, mean {mean:.2}, max {max}",
            t.equal, t.compared
        );
        if goodput_core::receipt::tokenizer::flagged(t.off as u64, t.compared as u64) {
            let _ = writeln!(
                s,
                "  WARNING tokenizer mismatch: on {} of {} rows server and client differ by more \
                 than max(2 tokens, 2 %): --tokenizer is not the server's, so the prompt lengths \
                 are not the model's",
                t.off, t.compared
            );
        }
    }
    if t.requested > 0 {
        let _ = writeln!(
            s,
            "  output tokens: {} of {} completed rows stopped short of their requested length",
            t.short, t.requested
        );
    }
}

/// The arrival rate achieved against the one scheduled.
fn arrival_rate(s: &mut String, f: &Figures) {
    if let Some((achieved, scheduled)) = f.arrival_rates_per_s {
        let _ = writeln!(
            s,
            "  arrival rate: achieved {achieved:.2}/s of {scheduled:.2}/s scheduled ({})",
            goodput_util::figures::percent(achieved / scheduled, 1)
        );
    }
}

/// The seeded schedule's count against the asked rate, when it is beyond
/// the noise of the draw (the rule is `summary`'s module docs): "the drawn
/// schedule holds 19 requests in 15 s, 36.7 % under the 30 expected at
/// 2/s: beyond Poisson noise (±11 at 95 %); another --seed draws another
/// schedule".
fn drawn_schedule(s: &mut String, f: &Figures) {
    let Some(d) = f.schedule.filter(ScheduleDraw::beyond_noise) else {
        return;
    };
    let (n, expected) = (d.scheduled as f64, d.expected());
    let side = if n < expected { "under" } else { "over" };
    let noise = if d.gamma {
        format!(
            "the noise of gamma arrivals of burstiness {}",
            short(d.burstiness)
        )
    } else {
        "Poisson noise".to_owned()
    };
    let _ = writeln!(
        s,
        "  schedule: the drawn schedule holds {} in {} s, {} {side} the {} expected at {}/s: \
         beyond {noise} (±{:.0} at 95 %); another --seed draws another schedule",
        count(d.scheduled as u64, "request"),
        short(d.window_s),
        goodput_util::figures::percent_short((n - expected).abs() / expected, None),
        short(expected),
        short(d.rate_per_s),
        d.band()
    );
}

/// The `--metrics` sidecar: where it went, how complete it is, its peaks.
fn server_metrics(s: &mut String, judged: &Judged) {
    if let Some((path, p)) = &judged.server {
        let _ = writeln!(
            s,
            "  server metrics: {}, {} → {path}; {}",
            count(p.snapshots as u64, "snapshot"),
            count(p.gaps as u64, "failed scrape"),
            crate::report::peak_clause(p)
        );
    }
}

/// The `goodput frontier` command for the traces written, raising the limits
/// only when the defaults would refuse the largest trace.
pub fn frontier_command(written: &[(String, Written)]) -> String {
    frontier_command_and_limits(written).0
}

/// The recorder's `next:` line(s) after a rate sweep: the frontier command,
/// and the same limits as variables when the defaults would refuse a trace.
pub fn frontier_next(written: &[(String, Written)]) -> String {
    let (command, raised) = frontier_command_and_limits(written);
    next_lines(&command, raised)
}

fn frontier_command_and_limits(written: &[(String, Written)]) -> (String, Option<(u64, u64)>) {
    let mut cmd = "goodput frontier".to_owned();
    for (path, _) in written {
        cmd.push(' ');
        cmd.push_str(&shell_quote(path));
    }
    let rows = written.iter().map(|(_, w)| w.rows).max().unwrap_or(0) as u64;
    let bytes = written.iter().map(|(_, w)| w.bytes).max().unwrap_or(0) as u64;
    let raised =
        (rows > Limits::DEFAULT_MAX_ROWS || bytes > Limits::DEFAULT_MAX_BYTES).then(|| {
            (
                rows.max(Limits::DEFAULT_MAX_ROWS),
                bytes.max(Limits::DEFAULT_MAX_BYTES),
            )
        });
    if let Some((rows, bytes)) = raised {
        cmd.push_str(&format!(" --max-rows {rows} --max-bytes {bytes}"));
    }
    cmd.push_str(" --svg frontier.svg");
    (cmd, raised)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use goodput_record::output::summary::DominantFailure;

    fn figures(not_sent: usize) -> Figures {
        Figures {
            tokens: Default::default(),
            rows: 10,
            sent: 10 - not_sent,
            completed: 7,
            failed: BTreeMap::from([("timeout".to_owned(), 2)]),
            in_flight: 1,
            not_sent,
            output_tokens: 70,
            send_lag_ms: Some((0.1, 0.5, 0.75)),
            cap_wait_ms: None,
            arrival_rates_per_s: Some((10.0, 10.0)),
            dominant_failure: None,
            schedule: None,
            answers: None,
        }
    }

    #[test]
    fn the_answer_line_sets_ttfa_beside_ttft_with_the_reasoning_share() {
        let mut f = figures(0);
        f.answers = Some(goodput_record::output::summary::Answers {
            ttft_p50_ms: Some(12.5),
            ttfa_p50_ms: Some(62.25),
            no_answer: 2,
            reasoning: Some((40, 160)),
        });
        let mut s = String::new();
        answers(&mut s, &f);
        // 40 / 160 = 25 %.
        assert_eq!(
            s,
            "  first answer: TTFT p50 12.500 ms, TTFA p50 62.250 ms; reasoning 40 of 160 output \
             tokens (25.0 %); 2 rows completed without an answer (reasoning used the output budget)\n"
        );
        f.answers = None;
        let mut s = String::new();
        answers(&mut s, &f);
        assert_eq!(s, "");
    }

    #[test]
    fn a_reason_shared_by_most_rows_comes_first_with_the_servers_words() {
        let mut f = figures(0);
        f.failed = BTreeMap::from([("http_401".to_owned(), 6)]);
        f.dominant_failure = Some(DominantFailure {
            reason: "http_401".into(),
            rows: 6,
            text: Some("bad key".into()),
        });
        let text = render(
            &f,
            "t.json",
            10,
            None,
            TokenCount::Usage,
            &Judged::default(),
        );
        assert!(
            text.starts_with(
                "most requests failed: 6 of 10 rows ended http_401 (server said: \"bad key\")\nwrote 10 rows"
            ),
            "{text}"
        );
        f.dominant_failure.as_mut().unwrap().text = None;
        let text = render(
            &f,
            "t.json",
            10,
            None,
            TokenCount::Usage,
            &Judged::default(),
        );
        assert!(
            text.starts_with("most requests failed: 6 of 10 rows ended http_401\nwrote 10 rows"),
            "{text}"
        );
    }

    #[test]
    fn a_punctual_run_reads_as_figures_and_the_next_command() {
        assert_eq!(
            render(
                &figures(0),
                "t.json",
                1234,
                None,
                TokenCount::Usage,
                &Judged::default()
            ),
            "wrote 10 rows to t.json (1234 bytes)\n\
             \x20 sent 10, completed 7, failed 2, in flight 1; 70 output tokens\n\
             \x20 failures: timeout 2\n\
             \x20 send lag: p50 0.100 ms, p99 0.500 ms, max 0.750 ms\n\
             \x20 arrival rate: achieved 10.00/s of 10.00/s scheduled (100.0 %)\n\
             next: goodput analyze t.json\n"
        );
    }

    #[test]
    fn unsent_requests_and_an_interrupt_are_said() {
        let text = render(
            &figures(1),
            "t.json",
            10,
            Some(&Interruption {
                at_ms: 1234.5,
                drain: None,
            }),
            TokenCount::Usage,
            &Judged::default(),
        );
        assert!(text.starts_with("interrupted; wrote 10 rows"), "{text}");
        assert!(
            text.contains("\n  cut at 1.234 s: 1 request in flight written in_flight\n"),
            "{text}"
        );
        assert!(text.contains("(never sent 1)"), "{text}");
        assert!(
            text.contains(
                "warning: the client distorted the measurement: 1 due requests were never sent; lower"
            ),
            "{text}"
        );
    }

    #[test]
    fn lag_is_weighed_against_the_gates_and_an_overload_is_the_servers() {
        let mut f = figures(0);
        f.send_lag_ms = Some((0.5, 2.2, 3.0));
        // 2.2 ms against a 1,000 ms gate (limit 10 ms): no warning.
        let calm = Judged {
            smallest_gate_ms: Some(1000.0),
            ..Judged::default()
        };
        assert!(!render(&f, "t.json", 1, None, TokenCount::Usage, &calm).contains("warning"));
        // Against a 50 ms gate the limit is 1 ms: named with both figures.
        let tight = Judged {
            smallest_gate_ms: Some(50.0),
            ..Judged::default()
        };
        assert!(render(&f, "t.json", 1, None, TokenCount::Usage, &tight).contains(
            "warning: the client distorted the measurement: p99 send lag 2.200 ms was over 1.000 ms"
        ));
        let sat = Saturation {
            offered_per_s: 40.0,
            served_per_s: Some(20.0),
            served_span_ms: Some(14_000.0),
            in_flight_at_start: Some(0),
            in_flight_at_end: Some(200),
            in_flight_growth_per_s: Some(20.0),
            bins: None,
            completions_in_window: None,
            served_in_window_per_s: None,
            queueing: None,
            verdict: SaturationVerdict::Overloaded,
            evidence: "in flight grew 0 → 200".to_owned(),
        };
        let text = render(
            &f,
            "t.json",
            1,
            None,
            TokenCount::Usage,
            &Judged {
                smallest_gate_ms: Some(1000.0),
                saturation: Some(&sat),
                server: Some((
                    "t.metrics.jsonl",
                    Peaks {
                        waiting: Some(212.0),
                        running: Some(4.0),
                        kv_usage: Some(1.0),
                        kv_usage_mean: Some(1.0),
                        snapshots: 15,
                        gaps: 1,
                        ..Peaks::default()
                    },
                )),
            },
        );
        assert!(
            text.contains(
                "  server metrics: 15 snapshots, 1 failed scrape → t.metrics.jsonl; \
                 peak waiting 212, running 4, KV use 100 %.\n"
            ),
            "{text}"
        );
        assert!(!text.contains("warning"), "{text}");
        assert!(
            text.contains(
                "  saturation: overloaded: in flight grew 0 → 200\n\
                 the server was the bottleneck: it served 50 % of the offered load\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_schedule_drawn_beyond_its_noise_is_said_with_both_counts() {
        let with = |scheduled: usize, burstiness: f64, gamma: bool| {
            let mut f = figures(0);
            f.schedule = Some(ScheduleDraw {
                scheduled,
                window_s: 15.0,
                rate_per_s: 2.0,
                burstiness,
                gamma,
            });
            render(&f, "t.json", 1, None, TokenCount::Usage, &Judged::default())
        };
        // 19 of λT = 30: 11/30 = 36.7 % under, band 1.96 × √30 = 10.74 → ±11.
        let text = with(19, 1.0, false);
        assert!(
            text.contains(
                "  arrival rate: achieved 10.00/s of 10.00/s scheduled (100.0 %)\n\
                 \x20 schedule: the drawn schedule holds 19 requests in 15 s, 36.7 % under \
                 the 30 expected at 2/s: beyond Poisson noise (±11 at 95 %); another --seed \
                 draws another schedule\n"
            ),
            "{text}"
        );
        // 20 of 30 is within ±10.74: no line.
        assert!(!with(20, 1.0, false).contains("schedule:"));
        // Gamma B = 0.25: band 1.96 × √120 = 21.47; 55 is 25 over (83.3 %).
        let text = with(55, 0.25, true);
        assert!(
            text.contains(
                "55 requests in 15 s, 83.3 % over the 30 expected at 2/s: beyond the noise \
                 of gamma arrivals of burstiness 0.25 (±21 at 95 %)"
            ),
            "{text}"
        );
        assert!(!with(19, 0.25, true).contains("schedule:"));
    }

    #[test]
    fn one_row_is_a_row_and_chunks_are_not_called_tokens() {
        let mut one = figures(0);
        one.rows = 1;
        one.output_tokens = 1;
        let text = render(
            &one,
            "t.json",
            10,
            None,
            TokenCount::Chunks,
            &Judged::default(),
        );
        assert!(text.starts_with("wrote 1 row to t.json"), "{text}");
        assert!(
            text.contains(
                "; 1 stream chunk (no usage reported: outputTokens counts chunks, not tokens)\n"
            ),
            "{text}"
        );
        assert!(!text.contains("output token"), "{text}");
        let text = render(
            &one,
            "t.json",
            10,
            None,
            TokenCount::Usage,
            &Judged::default(),
        );
        assert!(text.contains("; 1 output token\n"), "{text}");
    }

    #[test]
    fn the_analyze_command_raises_limits_only_when_needed() {
        assert_eq!(
            analyze_command("trace.json", 500, 65_536),
            "goodput analyze trace.json"
        );
        assert_eq!(
            analyze_command("my trace.json", 501, 1000),
            "goodput analyze 'my trace.json' --max-rows 501 --max-bytes 1000"
        );
        assert_eq!(
            analyze_command("t.json", 3, 65_537),
            "goodput analyze t.json --max-rows 3 --max-bytes 65537"
        );
    }

    #[test]
    fn the_next_line_shows_raised_limits_as_flags_and_as_variables() {
        assert_eq!(
            analyze_next("t.json", 500, 65_536),
            "next: goodput analyze t.json\n"
        );
        assert_eq!(
            analyze_next("my trace.json", 501, 1000),
            "next: goodput analyze 'my trace.json' --max-rows 501 --max-bytes 1000\n\
             \x20 or: export GOODPUT_MAX_ROWS=501 GOODPUT_MAX_BYTES=1000; goodput analyze 'my trace.json'\n"
        );
        let big = Written {
            rows: 2400,
            bytes: 700_000,
        };
        assert_eq!(
            frontier_next(&[("a.json".into(), big)]),
            "next: goodput frontier a.json --max-rows 2400 --max-bytes 700000 --svg frontier.svg\n\
             \x20 or: export GOODPUT_MAX_ROWS=2400 GOODPUT_MAX_BYTES=700000; \
             goodput frontier a.json --svg frontier.svg\n"
        );
    }

    #[test]
    fn the_frontier_command_raises_limits_only_for_large_traces() {
        let small = Written {
            rows: 10,
            bytes: 1000,
        };
        let big = Written {
            rows: 2400,
            bytes: 700_000,
        };
        assert_eq!(
            frontier_command(&[("a.json".into(), small), ("b c.json".into(), small)]),
            "goodput frontier a.json 'b c.json' --svg frontier.svg"
        );
        assert_eq!(
            frontier_command(&[("a.json".into(), small), ("b.json".into(), big)]),
            "goodput frontier a.json b.json --max-rows 2400 --max-bytes 700000 --svg frontier.svg"
        );
    }

    #[test]
    fn a_drained_interrupt_says_what_finished_and_what_was_cut() {
        use goodput_record::run::{Drain, DrainEnd};
        let drained = |end, in_flight| Interruption {
            at_ms: 12_300.0,
            drain: Some(Drain {
                in_flight,
                ended_ms: 12_900.0,
                end,
            }),
        };
        assert_eq!(
            interruption_line(&drained(DrainEnd::Finished, 14), 0),
            "  stopped sending at 12.3 s on Ctrl-C; 14 requests in flight finished, 0 cut\n"
        );
        assert_eq!(
            interruption_line(&drained(DrainEnd::Cut, 14), 5),
            "  stopped sending at 12.3 s on Ctrl-C; 9 requests in flight finished, 5 cut \
             (a second Ctrl-C cut the rest at 12.9 s)\n"
        );
        assert_eq!(
            interruption_line(&drained(DrainEnd::GraceEnded, 1), 1),
            "  stopped sending at 12.3 s on Ctrl-C; 0 requests in flight finished, 1 cut \
             (the grace period ran out at 12.9 s)\n"
        );
    }
}
