//! The recorder's closing text: what the run did, whether the client kept
//! up, and the exact command that analyzes the trace (or, after a rate sweep,
//! draws its frontier). Pure: figures in, text out; the command-line layer
//! prints it.

use std::fmt::Write as _;

use crate::record::summary::{Figures, MAX_P99_SEND_LAG_MS, MIN_ARRIVAL_RATIO};
use crate::record::Written;
use crate::render::number::count;
use crate::trace::{Limits, TokenCount};

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
/// says so, with the server's most frequent `errorText` for it.
pub fn render(
    f: &Figures,
    path: &str,
    bytes: usize,
    interrupted: bool,
    tokens: TokenCount,
) -> String {
    let mut s = String::new();
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
    if !f.failed.is_empty() {
        let list: Vec<String> = f.failed.iter().map(|(r, n)| format!("{r} {n}")).collect();
        let _ = writeln!(s, "  failures: {}", list.join(", "));
    }
    if let Some((p50, p99, max)) = f.send_lag_ms {
        let _ = writeln!(
            s,
            "  send lag: p50 {p50:.3} ms, p99 {p99:.3} ms, max {max:.3} ms"
        );
    }
    if let Some((achieved, scheduled)) = f.arrival_rates_per_s {
        let _ = writeln!(
            s,
            "  arrival rate: achieved {achieved:.2}/s of {scheduled:.2}/s scheduled ({})",
            crate::render::figures::percent(achieved / scheduled, 1)
        );
    }
    if f.client_bound() {
        let _ = writeln!(
            s,
            "warning: the client could not keep the schedule (p99 send lag over {MAX_P99_SEND_LAG_MS} ms, \
             achieved arrivals under {:.0} % of the schedule, or requests never sent); the client, not \
             the server, was the bottleneck — lower the rate or give the recorder more CPU",
            MIN_ARRIVAL_RATIO * 100.0
        );
    }
    s.push_str(&analyze_next(path, f.rows, bytes));
    s
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
    use crate::record::summary::DominantFailure;

    fn figures(not_sent: usize) -> Figures {
        Figures {
            rows: 10,
            sent: 10 - not_sent,
            completed: 7,
            failed: BTreeMap::from([("timeout".to_owned(), 2)]),
            in_flight: 1,
            not_sent,
            output_tokens: 70,
            send_lag_ms: Some((0.1, 0.5, 0.75)),
            arrival_rates_per_s: Some((10.0, 10.0)),
            dominant_failure: None,
        }
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
        let text = render(&f, "t.json", 10, false, TokenCount::Usage);
        assert!(
            text.starts_with(
                "most requests failed: 6 of 10 rows ended http_401 (server said: \"bad key\")\nwrote 10 rows"
            ),
            "{text}"
        );
        f.dominant_failure.as_mut().unwrap().text = None;
        let text = render(&f, "t.json", 10, false, TokenCount::Usage);
        assert!(
            text.starts_with("most requests failed: 6 of 10 rows ended http_401\nwrote 10 rows"),
            "{text}"
        );
    }

    #[test]
    fn a_punctual_run_reads_as_figures_and_the_next_command() {
        assert_eq!(
            render(&figures(0), "t.json", 1234, false, TokenCount::Usage),
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
        let text = render(&figures(1), "t.json", 10, true, TokenCount::Usage);
        assert!(text.starts_with("interrupted; wrote 10 rows"), "{text}");
        assert!(text.contains("(never sent 1)"), "{text}");
        assert!(text.contains("warning: the client"), "{text}");
    }

    #[test]
    fn one_row_is_a_row_and_chunks_are_not_called_tokens() {
        let mut one = figures(0);
        one.rows = 1;
        one.output_tokens = 1;
        let text = render(&one, "t.json", 10, false, TokenCount::Chunks);
        assert!(text.starts_with("wrote 1 row to t.json"), "{text}");
        assert!(
            text.contains(
                "; 1 stream chunk (no usage reported: outputTokens counts chunks, not tokens)\n"
            ),
            "{text}"
        );
        assert!(!text.contains("output token"), "{text}");
        let text = render(&one, "t.json", 10, false, TokenCount::Usage);
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
}
