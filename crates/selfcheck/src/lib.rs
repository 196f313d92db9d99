//! Invariants that must hold for *every* input, checked by the fuzz targets
//! (`fuzz/`) and replayed by the tests on every input the fuzzers ever kept
//! (`fuzz/regressions/`). "No panic" is not enough: a receipt whose counts do
//! not add up, that changes between two runs, or a stream parser whose events
//! depend on how the bytes arrived, is a failure too.
//!
//! Each check returns `Err` with the broken invariant ([`Violation`], whose
//! text is a sentence naming it); the fuzz targets turn that into a crash,
//! the tests into a failure.

mod violation;

pub use violation::{CountRule, Violation};

use goodput_core::analyze::{analyze_bytes, Analysis, AnalyzeOptions};
use goodput_core::receipt::{Block, Receipt};
use goodput_core::review::sensitivity::{sweep, SweepEntry, SweepPlan, DEFAULT_FACTORS};
use goodput_core::review::verify::{read_receipt, verify};
use goodput_core::trace::Limits;
use goodput_record::exchange::sse::{classify, EventTooLarge, SseParser, DEFAULT_MAX_EVENT_BYTES};
use goodput_render::text;
use goodput_util::json::to_canonical_json;

/// Limits the checks run under: the defaults' row count raised so generated
/// inputs exercise large-row paths, bytes bounded so one input stays cheap.
pub const FUZZ_LIMITS: Limits = Limits {
    max_rows: 10_000,
    max_bytes: 1 << 20,
};

fn counts_add_up(name: &str, b: &Block) -> Result<(), Violation> {
    let c = b.counts;
    let r = &b.reasons;
    let broken = |rule: CountRule, state: String| {
        Err(Violation::Counts {
            block: name.to_owned(),
            rule,
            state,
        })
    };
    if c.pass + c.miss + c.failed + c.censored != c.cohort {
        return broken(CountRule::CohortSplit, format!("{c:?}"));
    }
    if c.cohort + c.excluded + c.invalid != c.arrivals {
        return broken(CountRule::ArrivalSplit, format!("{c:?}"));
    }
    let failures: u64 = r.failure.values().sum();
    let censored =
        r.censored.in_flight + r.censored.completed_after_horizon + r.censored.failed_after_horizon;
    let excluded = r.exclusion.warmup + r.exclusion.outside_window;
    let missed = [
        r.miss.ttft,
        r.miss.tpot,
        r.miss.e2e,
        r.miss.stall.unwrap_or(0),
    ];
    let rule = if failures != c.failed || censored != c.censored || excluded != c.excluded {
        Some(CountRule::ReasonCounts)
    } else if r.censored.known_late > c.censored || missed.iter().any(|m| *m > c.miss) {
        Some(CountRule::MoreReasonsThanRows)
    } else if c.miss > 0 && missed.iter().sum::<u64>() < c.miss {
        Some(CountRule::MissWithoutMetric)
    } else if r.invalid.values().any(|n| *n > c.invalid) || (c.invalid > 0) == r.invalid.is_empty()
    {
        Some(CountRule::InvalidReasons)
    } else {
        None
    };
    match rule {
        Some(rule) => broken(rule, format!("{c:?} {r:?}")),
        None => Ok(()),
    }
}

/// Trace bytes → full analysis, rendering, sweep and verification of the
/// trace's own receipt (see [`verifies`]). Returns the receipt when
/// the trace was accepted, `None` when it was rejected with a proper one-line
/// message.
pub fn check_trace_bytes(bytes: &[u8]) -> Result<Option<Receipt>, Violation> {
    let options = AnalyzeOptions {
        limits: FUZZ_LIMITS,
        rows: true,
        strict: false,
    };
    let analysis = match analyze_bytes(bytes, options) {
        Ok(a) => a,
        Err(rejection) => {
            let line = rejection.to_string();
            if line.is_empty() || line.contains('\n') {
                return Err(Violation::RejectionNotOneLine(line));
            }
            return Ok(None);
        }
    };
    let receipt = &analysis.receipt;
    blocks_add_up(&analysis)?;
    analyses_agree(receipt, bytes, options)?;
    let _ = text::render(receipt, &analysis.invalid_rows());
    let plan = SweepPlan::one_at_a_time(None, &DEFAULT_FACTORS).map_err(Violation::Sweep)?;
    let entries = sweep(&analysis.trace, &analysis.judgements, &plan).map_err(Violation::Sweep)?;
    match entries.first() {
        Some(declared) if declared.pass == receipt.results.all.counts.pass => {}
        _ => return Err(Violation::SweepDisagrees),
    }
    every_receipt_verifies(receipt, entries, bytes, options)?;
    Ok(Some(analysis.receipt))
}

/// Every block's counts add up, the receipt has one verdict per row, and the
/// classes hold no more rows than `all`.
fn blocks_add_up(analysis: &Analysis) -> Result<(), Violation> {
    let receipt = &analysis.receipt;
    counts_add_up("all", &receipt.results.all)?;
    for (name, block) in &receipt.results.classes {
        counts_add_up(name, block)?;
    }
    let rows = receipt.rows.as_ref().map_or(0, Vec::len);
    if rows as u64 != receipt.results.all.counts.arrivals || rows != analysis.trace.rows.len() {
        return Err(Violation::RowVerdicts {
            verdicts: rows,
            rows: analysis.trace.rows.len(),
        });
    }
    let class_sum: u64 = receipt
        .results
        .classes
        .values()
        .map(|b| b.counts.arrivals)
        .sum();
    if class_sum > receipt.results.all.counts.arrivals {
        return Err(Violation::ClassesExceedAll);
    }
    Ok(())
}

/// A second analysis of the same bytes renders the same receipt.
fn analyses_agree(
    receipt: &Receipt,
    bytes: &[u8],
    options: AnalyzeOptions,
) -> Result<(), Violation> {
    let first = to_canonical_json(receipt).map_err(Violation::Unrenderable)?;
    let again = analyze_bytes(bytes, options).map_err(Violation::SecondAnalysisRejected)?;
    let second = to_canonical_json(&again.receipt).map_err(Violation::SecondUnrenderable)?;
    if first != second {
        return Err(Violation::AnalysesDiffer);
    }
    Ok(())
}

/// A reviewer must be able to check every honest receipt: the receipt as
/// written, read back and recomputed from the same bytes, says VERIFIED,
/// with per-row verdicts and raised limits (`receipt`), with an embedded
/// sweep, and plain under the default limits when those admit the trace.
fn every_receipt_verifies(
    receipt: &Receipt,
    entries: Vec<SweepEntry>,
    bytes: &[u8],
    options: AnalyzeOptions,
) -> Result<(), Violation> {
    verifies("with --rows and raised limits", receipt, bytes)?;
    let plain = AnalyzeOptions {
        rows: false,
        ..options
    };
    let mut swept = analyze_bytes(bytes, plain)
        .map_err(Violation::RowlessAnalysisRejected)?
        .receipt;
    swept.sweep = Some(entries);
    verifies("with --sweep", &swept, bytes)?;
    let defaults = AnalyzeOptions {
        limits: Limits::default(),
        ..plain
    };
    if let Ok(analysis) = analyze_bytes(bytes, defaults) {
        verifies("plain, default limits", &analysis.receipt, bytes)?;
    }
    Ok(())
}

/// The receipt, written as `goodput analyze --out` writes it, read back as
/// `goodput verify` reads it and recomputed from `bytes`: no difference.
pub fn verifies(what: &str, receipt: &Receipt, bytes: &[u8]) -> Result<(), Violation> {
    let written = to_canonical_json(receipt).map_err(Violation::Unrenderable)?;
    let claimed = read_receipt(&written).map_err(|error| Violation::OwnReceiptUnreadable {
        what: what.to_owned(),
        error,
    })?;
    let report = verify(&claimed, bytes);
    if report.agrees() {
        return Ok(());
    }
    let first: Vec<String> = report
        .differences
        .iter()
        .take(3)
        .map(|d| format!("{}: {:?} vs {:?}", d.path, d.receipt, d.recomputed))
        .collect();
    Err(Violation::NotVerified {
        what: what.to_owned(),
        differences: report.differences.len(),
        recompute_failed: report.recompute_failed.clone(),
        first,
        sha256_matches: report.sha256_matches,
    })
}

/// A fuzz input for the importers: the first byte picks the tool (vLLM,
/// AIPerf, guidellm), the rest is the file. An input a tool cannot read must
/// be refused with one line naming the place; an input it reads must become
/// a trace the analyzer accepts (an importer never writes a document the
/// analyzer would reject) and whose analysis holds every invariant above.
pub fn check_import_input(data: &[u8]) -> Result<(), Violation> {
    use goodput_import::{pipeline, ImportOptions, PipelineError, Source};
    let source = match data.first().copied().unwrap_or(0) % 3 {
        0 => Source::Vllm,
        1 => Source::Aiperf,
        _ => Source::Guidellm,
    };
    let file = data.get(1..).unwrap_or(&[]);
    match pipeline(source, file, &ImportOptions::default(), None) {
        Ok(outcome) => {
            let _ = goodput_render::import::render(&outcome.comparison, "trace.json", 0, "");
            if outcome.imported.trace.rows.len() as u64 <= FUZZ_LIMITS.max_rows
                && outcome.trace_bytes.len() as u64 <= FUZZ_LIMITS.max_bytes
            {
                check_trace_bytes(&outcome.trace_bytes)?;
            }
            Ok(())
        }
        Err(refusal @ PipelineError::Import { .. }) => {
            let line = refusal.to_string();
            if line.is_empty() || line.contains('\n') {
                return Err(Violation::ImportErrorNotOneLine(line));
            }
            Ok(())
        }
        Err(other) => Err(Violation::ImportFailsLater {
            importer: source.name(),
            error: other,
        }),
    }
}

/// A fuzz input for [`check_sse_split`]: the first byte is the number of cuts
/// (at most 15 are used), then two little-endian bytes per cut position, then
/// the stream bytes. Any byte string is a valid input.
pub fn check_sse_input(data: &[u8]) -> Result<(), Violation> {
    let n = usize::from(data.first().copied().unwrap_or(0) % 16);
    let rest = data.get(1..).unwrap_or(&[]);
    let cut_bytes = (2 * n).min(rest.len());
    let cuts: Vec<usize> = rest[..cut_bytes]
        .chunks(2)
        .map(|c| usize::from(c[0]) | usize::from(c.get(1).copied().unwrap_or(0)) << 8)
        .collect();
    check_sse_split(&rest[cut_bytes..], &cuts)
}

/// The bounds [`check_sse_split`] runs the parser under: the default, and
/// two small ones that fuzz inputs (a few KiB) reach, so that where the
/// parser stops is checked as well as what it emits.
pub const SSE_CHECK_LIMITS: [usize; 3] = [DEFAULT_MAX_EVENT_BYTES, 64, 8];

/// The SSE parser's events, their classification, and whether it stopped at
/// its bound, for `bytes` fed whole and fed in the pieces cut at `cuts`
/// (positions, taken modulo the length), under each of [`SSE_CHECK_LIMITS`].
pub fn check_sse_split(bytes: &[u8], cuts: &[usize]) -> Result<(), Violation> {
    let mut positions: Vec<usize> = cuts
        .iter()
        .map(|c| {
            if bytes.is_empty() {
                0
            } else {
                c % (bytes.len() + 1)
            }
        })
        .collect();
    positions.sort_unstable();
    let mut parts = Vec::with_capacity(positions.len() + 1);
    let mut start = 0;
    for p in positions {
        parts.push(&bytes[start..p]);
        start = p;
    }
    parts.push(&bytes[start..]);
    for limit in SSE_CHECK_LIMITS {
        let (whole, whole_end) = sse_events(limit, &[bytes]);
        let (split, split_end) = sse_events(limit, &parts);
        if whole != split || whole_end != split_end {
            return Err(Violation::SseSplit {
                limit,
                whole: whole.len(),
                whole_end,
                split: split.len(),
                split_end,
            });
        }
    }
    Ok(())
}

type SseEvents = Vec<(Vec<u8>, bool, String)>;

fn sse_events(limit: usize, parts: &[&[u8]]) -> (SseEvents, Result<(), EventTooLarge>) {
    let mut parser = SseParser::with_limit(limit);
    let mut out = Vec::new();
    let mut end = Ok(());
    for part in parts {
        end = parser.push(part, |e| {
            out.push((e.data.to_vec(), e.error, format!("{:?}", classify(e))));
        });
    }
    (out, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_of(trace: &str) -> Block {
        let options = AnalyzeOptions {
            limits: FUZZ_LIMITS,
            rows: false,
            strict: false,
        };
        analyze_bytes(trace.as_bytes(), options)
            .expect("accepted")
            .receipt
            .results
            .all
    }

    const TRACE: &str = r#"{"schema":"goodput-trace/1","window":{"startMs":0,"endMs":1000},
        "equality":"inclusive","classes":{"c":{"ttftMs":10,"tpotMs":null,"e2eMs":null}},
        "rows":[{"id":"a","arrivalMs":0,"status":"completed","firstTokenMs":20,"completedMs":30,"outputTokens":1},
                {"id":"b","arrivalMs":1,"status":"failed","reason":"timeout"}]}"#;

    #[test]
    fn a_consistent_block_passes() {
        counts_add_up("all", &block_of(TRACE)).unwrap();
    }

    #[test]
    fn the_checks_catch_counts_that_do_not_add_up() {
        let mut b = block_of(TRACE);
        b.counts.pass += 1;
        assert!(counts_add_up("all", &b)
            .unwrap_err()
            .to_string()
            .contains("!= cohort"));
        let mut b = block_of(TRACE);
        b.counts.arrivals += 1;
        assert!(counts_add_up("all", &b)
            .unwrap_err()
            .to_string()
            .contains("!= arrivals"));
        let mut b = block_of(TRACE);
        b.reasons.failure.clear();
        assert!(counts_add_up("all", &b)
            .unwrap_err()
            .to_string()
            .contains("reason counts"));
        let mut b = block_of(TRACE);
        b.reasons.miss.ttft = 0;
        assert!(counts_add_up("all", &b)
            .unwrap_err()
            .to_string()
            .contains("without a missed metric"));
    }

    #[test]
    fn verification_catches_a_receipt_one_ulp_off() {
        let options = AnalyzeOptions {
            limits: FUZZ_LIMITS,
            rows: false,
            strict: false,
        };
        let mut receipt = analyze_bytes(TRACE.as_bytes(), options).unwrap().receipt;
        verifies("plain", &receipt, TRACE.as_bytes()).unwrap();
        // Two cohort rows in a one-second window: 2 per second, one ULP off.
        let rate = &mut receipt.results.all.rates.offered_per_s;
        assert_eq!(*rate, 2.0);
        *rate = f64::from_bits(rate.to_bits() + 1);
        let broken = verifies("plain", &receipt, TRACE.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(broken.contains("1 differences"), "{broken}");
        assert!(
            broken.contains("/results/all/rates/offeredPerS"),
            "{broken}"
        );
    }

    #[test]
    fn an_sse_event_at_the_bound_and_one_byte_over_split_anywhere() {
        // Under the bound of 64: a 64-byte line, then a 65-byte one.
        let at = format!("data: {}\n\n", "a".repeat(58));
        let over = format!("data: {}\n\n", "b".repeat(59));
        let stream = format!("{at}{over}data: c\n\n");
        let bytes = stream.as_bytes();
        for cut in 0..=bytes.len() {
            check_sse_split(bytes, &[cut]).unwrap();
            check_sse_split(bytes, &[cut, cut + 1, 66, 67]).unwrap();
        }
        // What the check compares: one event, then the stop.
        let (events, end) = sse_events(64, &[bytes]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].0, "a".repeat(58).into_bytes());
        assert_eq!(end, Err(EventTooLarge { limit: 64 }));
        let (events, end) = sse_events(DEFAULT_MAX_EVENT_BYTES, &[bytes]);
        assert_eq!((events.len(), end), (3, Ok(())));
    }

    #[test]
    fn the_sse_input_format_takes_any_bytes() {
        for data in [&b""[..], b"\x00", b"\x0f\xff", b"\x03\x01\x00data: x\n\n"] {
            check_sse_input(data).unwrap();
        }
    }
}
