//! The receipt's intervals: hand-computed on a fixture, recorded at the level
//! asked for, verified at that level, and shown in the report.

mod common;

use clap::Parser;

/// Runs a command line in-process: (exit status, stdout or error message).
fn run(argv: &[&str]) -> (i32, String) {
    let cli = goodput::cli::Cli::try_parse_from(argv).expect("flags parse");
    let mut stdout = Vec::new();
    match goodput::cli::run(cli, &mut stdout) {
        Ok(code) => (code, String::from_utf8(stdout).expect("utf-8")),
        Err(e) => (e.exit_code(), e.message()),
    }
}

fn close(got: f64, want: f64, tol: f64) {
    assert!((got - want).abs() <= tol, "got {got}, want {want} ± {tol}");
}

#[test]
fn equality_inclusive_has_hand_computed_intervals() {
    // 5 rows in a 10 s window, 3 pass, 0 failed, 0 censored.
    let r = common::receipt("equality_inclusive.json");
    assert_eq!(r.contract.intervals.confidence, 0.95);
    assert_eq!(r.contract.intervals.share, "wilson-score");
    let all = &r.results.all;
    assert_eq!((all.counts.pass, all.counts.cohort), (3, 5));
    // Wilson 3/5: p = 0.6, z²/n = 0.7682918, denom = 1.7682918;
    // centre = (0.6 + 0.3841459) / 1.7682918 = 0.5565518;
    // half = 1.959964 × √(0.048 + 0.0384146) / 1.7682918 = 0.5761580 / 1.7682918 = 0.3258275;
    // so [0.2307243, 0.8823793].
    let pass = all.intervals.pass_share.unwrap();
    close(pass.lower, 0.230_724, 1e-6);
    close(pass.upper, 0.882_379, 1e-6);
    // 0 of 5: upper = (z²/n) / (1 + z²/n) = 0.7682918 / 1.7682918 = 0.4344825.
    let failed = all.intervals.failure_share.unwrap();
    assert_eq!(failed.lower, 0.0);
    close(failed.upper, 0.434_482_5, 1e-6);
    // Garwood for 3 passes: [0.6187, 8.7673], over 10 window seconds.
    close(all.intervals.goodput_per_s.lower, 0.061_87, 1e-5);
    close(all.intervals.goodput_per_s.upper, 0.876_73, 1e-5);
    // 5 completed values: too few even for the median (needs 6: 0.5^5 = 0.03125 > 0.025).
    let p50 = &all.intervals.ttft_ms.p50;
    assert_eq!((p50.lower, p50.upper), (None, None));
    assert!(p50.reason.as_deref().unwrap().contains("needs at least 6"));
}

#[test]
fn mixed_120_median_interval_sits_at_the_binomial_ranks() {
    // 93 completed values: Binomial(93, 0.5) has F(36) = 0.0188 <= 0.025 <
    // F(37) = 0.0307, so l = 37; F(55) = 0.9693 < 0.975 <= F(56) = 0.9812, so u = 57.
    let r = common::receipt("mixed_120.json");
    let i = &r.results.all.intervals.e2e_ms.p50;
    assert_eq!((i.lower_rank, i.upper_rank), (Some(37), Some(57)));
    assert!(i.coverage.unwrap() >= 0.95);
}

#[test]
fn the_declared_level_is_recorded_and_verify_agrees_at_it() {
    let dir = tempfile::tempdir().unwrap();
    let receipt = dir.path().join("r.json");
    let trace = common::fixture("mixed_120.json").display().to_string();
    let out = receipt.display().to_string();
    let (code, _) = run(&[
        "goodput",
        "analyze",
        &trace,
        "--confidence",
        "0.9",
        "--out",
        &out,
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&receipt).unwrap()).unwrap();
    assert_eq!(v["contract"]["intervals"]["confidence"], 0.9);
    let (code, text) = run(&["goodput", "verify", &out, &trace]);
    assert_eq!(code, 0, "{text}");
    // The receipt also stands for its trace in `compare`.
    let (code, text) = run(&[
        "goodput",
        "compare",
        &trace,
        &trace,
        "--receipt-a",
        &out,
        "--confidence",
        "0.9",
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("at 90 % confidence"), "{text}");
}

#[test]
fn a_receipt_that_does_not_verify_is_refused_by_compare() {
    let dir = tempfile::tempdir().unwrap();
    let receipt = dir.path().join("r.json");
    let trace = common::fixture("mixed_120.json").display().to_string();
    let out = receipt.display().to_string();
    let (code, _) = run(&["goodput", "analyze", &trace, "--out", &out]);
    assert_eq!(code, 0);
    let text = std::fs::read_to_string(&receipt).unwrap();
    let tampered = text.replacen("\"pass\": 62", "\"pass\": 63", 1);
    assert_ne!(text, tampered);
    std::fs::write(&receipt, tampered).unwrap();
    let (code, message) = run(&["goodput", "compare", &trace, &trace, "--receipt-b", &out]);
    assert_eq!(code, 2);
    assert!(
        message.contains("does not verify") && message.contains("/results/all/counts/pass"),
        "{message}"
    );
}

#[test]
fn a_confidence_out_of_range_is_exit_2_naming_the_flag() {
    let trace = common::fixture("mixed_120.json").display().to_string();
    for bad in ["0", "1", "0.3", "95"] {
        let (code, message) = run(&["goodput", "analyze", &trace, "--confidence", bad]);
        assert_eq!(code, 2, "{bad}");
        assert!(message.contains("--confidence"), "{message}");
    }
}

#[test]
fn the_report_shows_each_headline_figure_with_its_interval() {
    let analysis = common::analyze_fixture("equality_inclusive.json");
    let page = goodput_render::report::analysis_page::page(&analysis).unwrap();
    // 3/5 pass: 60.0 % (23.1 %–88.2 %), each bound through the shared share
    // display; 3 passes over 10 s: 0.300 (0.062–0.877).
    // In the "How sure" table each figure sits over its interval.
    assert!(
        page.contains("60.0 %<br><span class=\"muted\">(23.1 %–88.2 %)</span>"),
        "pass share"
    );
    assert!(
        page.contains("0.300<br><span class=\"muted\">(0.062–0.877)</span>"),
        "goodput"
    );
    // The headline: 0.30/s goodput with its interval, 60.0 % of the cohort.
    assert!(
        page.contains("id=\"headline-goodput\">0.30/s</div>"),
        "headline"
    );
    assert!(
        page.contains("id=\"headline-pass\">60.0 %</div>"),
        "headline"
    );
    assert!(page.contains(
        "3 of 5 cohort requests met every gate <span class=\"nw\">(23.1 %–88.2 %)</span>"
    ));
    assert!(page.contains("How sure: 95 % intervals"));
}
