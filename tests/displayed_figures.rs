//! What a person reads must not contradict the record: a share or a limit
//! is never rounded onto 100 %, 0 % or the figure it is compared with.
//! Every expected string below is worked out by hand from the counts.

mod common;

use common::analyze_generated;
use goodput_core::review::gate::{Check, Decision};

/// `pass` passing rows then `failed` failed rows, one per 10 ms, in a window
/// that holds them all (gates: ttft 100 ms).
fn trace(pass: usize, failed: usize) -> String {
    let rows: Vec<String> = (0..pass + failed)
        .map(|i| {
            let a = i * 10;
            if i < pass {
                format!(
                    r#"{{"id":"r{i}","arrivalMs":{a},"status":"completed","firstTokenMs":{},"completedMs":{},"outputTokens":2}}"#,
                    a + 5,
                    a + 8
                )
            } else {
                format!(r#"{{"id":"r{i}","arrivalMs":{a},"status":"failed","reason":"http_503"}}"#)
            }
        })
        .collect();
    format!(
        r#"{{"schema":"goodput-trace/1","window":{{"startMs":0,"endMs":{}}},"equality":"inclusive","classes":{{"c":{{"ttftMs":100,"tpotMs":null,"e2eMs":null}}}},"rows":[{}]}}"#,
        (pass + failed) * 10,
        rows.join(",")
    )
}

#[test]
fn a_share_that_is_not_exactly_one_or_zero_never_reads_100_or_0_percent() {
    // 2,499 pass and 1 failed of 2,500: pass share 0.9996 = 99.96 %, failure
    // share 0.0004 = 0.04 %. One decimal would say 100.0 % and 0.0 %.
    let analysis = analyze_generated(trace(2499, 1).as_bytes());
    let rates = &analysis.receipt.results.all.rates;
    assert_eq!(
        (rates.pass_share, rates.failure_share),
        (Some(0.9996), Some(0.0004))
    );

    let text = goodput_render::text::render(&analysis.receipt, &[]);
    let line = text
        .lines()
        .find(|l| l.starts_with("all ") && l.contains('%'))
        .expect("the rates line of all rows");
    assert!(
        line.contains("99.96 %") && line.contains("0.04 %"),
        "{line}"
    );
    assert!(
        !text.contains("100.0 %") && !text.contains(" 0.0 %"),
        "{text}"
    );

    let page = goodput_render::report::analysis_page::page(&analysis).expect("report");
    assert!(
        page.contains(r#"data-col="passShare">99.96 %<"#),
        "passShare cell"
    );
    assert!(
        page.contains(r#"data-col="failureShare">0.04 %<"#),
        "failureShare cell"
    );
    // The censored share is exactly 0 and may say so.
    assert!(page.contains(r#"data-col="censoredShare">0.0 %<"#));
    // The intervals table too (each figure over its interval): Wilson 95 %
    // for 2,499 of 2,500 is 0.997738–0.999929, for 1 of 2,500 0.0000706–0.00226.
    assert!(
        page.contains(
            r#"data-col="passShare">99.96 %<br><span class="muted">(99.8 %–99.99 %)</span><"#
        ),
        "passShare interval cell"
    );
    assert!(
        page.contains(
            r#"data-col="failureShare">0.04 %<br><span class="muted">(0.01 %–0.2 %)</span><"#
        ),
        "failureShare interval cell"
    );
    // And the headline's class table, on one line.
    assert!(
        page.contains(r#"data-col="passShare">99.96 % (99.8 %–99.99 %)<"#),
        "headline class cell"
    );
    assert!(
        !page.contains("100.0 %"),
        "no share of 2,499/2,500 reads 100.0 %"
    );
}

#[test]
fn exact_ones_and_zeros_keep_their_short_form() {
    // 10 of 10 pass: pass share exactly 1 → "100.0 %", failure share 0 → "0.0 %".
    let analysis = analyze_generated(trace(10, 0).as_bytes());
    let text = goodput_render::text::render(&analysis.receipt, &[]);
    let line = text
        .lines()
        .find(|l| l.starts_with("all ") && l.contains('%'))
        .expect("the rates line of all rows");
    assert!(line.contains("100.0 %") && line.contains("0.0 %"), "{line}");
}

fn decision(measured: f64, limit: f64, pass: bool) -> Decision {
    Decision {
        class: None,
        trace_sha256: "0".repeat(64),
        checks: vec![Check {
            name: "failure share",
            measured: Some(measured),
            comparison: "<=",
            limit,
            derivation: None,
            pass,
            class: None,
            note: None,
        }],
        arrival: goodput_core::review::gate::ArrivalCheck {
            mode: goodput_core::trace::ArrivalMode::OpenLoop,
            closed_loop_allowed: false,
            max_concurrency: None,
            pass: true,
        },
        overload: goodput_core::review::gate::OverloadCheck {
            verdict: goodput_core::receipt::SaturationVerdict::Steady,
            overload_allowed: false,
            pass: true,
        },
        admit: pass,
        arrivals_unknown: None,
        diagnosis: Vec::new(),
    }
}

#[test]
fn gate_never_shows_a_failing_share_equal_to_its_limit() {
    // 0.050040 = 5.004 %, over the 5 % ceiling: two decimals would print
    // "5.00 % <= 5.00 % FAIL"; three keep them apart.
    let out = goodput_render::gate::render(&decision(0.050040, 0.05, false));
    let line = out.lines().nth(1).expect("the check line");
    assert!(
        line.contains("5.004 %") && line.contains("<= 5.000 %"),
        "{line}"
    );
    assert!(line.ends_with("FAIL"), "{line}");
    // On the limit exactly, the usual two decimals.
    let out = goodput_render::gate::render(&decision(0.05, 0.05, true));
    let line = out.lines().nth(1).expect("the check line");
    assert!(
        line.contains("5.00 %") && line.contains("<= 5.00 %"),
        "{line}"
    );
}

#[test]
fn the_frontier_never_rounds_a_share_onto_its_target() {
    // One rate, 2,249 pass of 2,500 (251 failed): pass share 0.8996, below
    // the 90 % target. One decimal would read 90.0 % and "best 90 %".
    let analysis = analyze_generated(trace(2249, 251).as_bytes());
    assert_eq!(analysis.receipt.results.all.rates.pass_share, Some(0.8996));
    let f = goodput_core::frontier::frontier(&[("t.json".to_owned(), analysis.receipt)], None, 0.9)
        .expect("frontier");
    let text = goodput_render::frontier::text(&f);
    assert!(
        text.contains("no rate tested met pass share ≥ 90 % (best 89.96 %)"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.ends_with("t.json"))
        .expect("the point's row");
    assert!(row.contains("89.96 %") && !row.contains("90.0"), "{row}");
    let md = goodput_render::frontier::markdown(&f);
    assert!(md.contains("| 89.96 % ("), "{md}");
}
