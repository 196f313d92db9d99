//! Custom percentiles, p99 gate limits, the diagnosis wording and the
//! tokenizer-mismatch warning, on small traces whose figures are worked out
//! by hand in the comments.

mod common;

use std::process::Output;

use serde_json::{json, Value};

fn goodput(args: &[&str]) -> Output {
    common::goodput().args(args).output().expect("run goodput")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Writes `trace` to a fresh file named `name` and returns its path.
fn write_trace(name: &str, trace: &Value) -> String {
    let dir = std::env::temp_dir().join(format!("goodput-words-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(trace).expect("json")).expect("write");
    path.display().to_string()
}

/// Twenty completed rows, row i (1..=20) arriving at 1000·i ms with TTFT
/// 100·i ms, 11 output tokens over 1000 ms (TPOT 100) so E2E is 100·i + 1000.
fn twenty_rows() -> Value {
    let rows: Vec<Value> = (1..=20)
        .map(|i| {
            let arrival = 1000 * i;
            let first = arrival + 100 * i;
            json!({"id": format!("r{i}"), "arrivalMs": arrival, "status": "completed",
                   "firstTokenMs": first, "completedMs": first + 1000, "outputTokens": 11})
        })
        .collect();
    json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 30000, "horizonMs": 40000},
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": 5000, "tpotMs": 200, "e2eMs": 10000}},
        "defaultClass": "chat",
        "tokens": "usage",
        "boundary": {"arrival": "scheduled", "tokens": "client"},
        "workload": {"arrival": "fixed"},
        "rows": rows
    })
}

fn receipt_json(args: &[&str]) -> Value {
    let out = goodput(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("receipt JSON")
}

#[test]
fn requested_percentiles_are_nearest_ranks_of_twenty_values() {
    let path = write_trace("twenty.json", &twenty_rows());
    let r = receipt_json(&[
        "analyze",
        &path,
        "--json",
        "--percentiles",
        "99.9,90,50,12.5,90",
    ]);
    // Sorted and de-duplicated.
    assert_eq!(r["contract"]["percentiles"], json!([12.5, 50, 90, 99.9]));
    let ttft = &r["results"]["all"]["percentiles"]["ttftMs"];
    // TTFT 100, 200, …, 2000. Nearest rank ceil(p × 20 / 100):
    // p12.5 → ceil(2.5) = 3 → 300; p50 → 10 → 1000; p90 → 18 → 1800;
    // p99.9 → ceil(19.98) = 20 → 2000.
    let values: Vec<f64> = (0..4)
        .map(|i| ttft[i]["value"].as_f64().expect("value"))
        .collect();
    assert_eq!(values, [300.0, 1000.0, 1800.0, 2000.0]);
    // p50's 95 % interval among n = 20: Binomial(20, 0.5) has F(5) = 0.0207
    // <= 0.025 < F(6) = 0.0577, so l = 6; F(13) = 0.9423 < 0.975 <= F(14) =
    // 0.9793, so u = 15: ranks 6 and 15, values 600 and 1500.
    let p50 = &ttft[1]["interval"];
    assert_eq!(
        (p50["lowerRank"].clone(), p50["upperRank"].clone()),
        (json!(6), json!(15))
    );
    assert_eq!(
        (p50["lower"].clone(), p50["upper"].clone()),
        (json!(600), json!(1500))
    );
    // p90 needs 0.9^n <= 0.025: 0.9^35 = 0.0250 is just over, 0.9^36 = 0.0225.
    let reason = ttft[2]["interval"]["reason"].as_str().expect("reason");
    assert!(reason.contains("of p90: it needs at least 36"), "{reason}");
    // E2E is TTFT + 1000: p90 → 2800.
    assert_eq!(
        r["results"]["all"]["percentiles"]["e2eMs"][2]["value"],
        json!(2800)
    );
    // The fixed fields stay as they always were: p95 → rank 19 → 1900.
    assert_eq!(r["results"]["all"]["latency"]["ttftMs"]["p95"], json!(1900));
    let text = stdout(&goodput(&[
        "analyze",
        &path,
        "--percentiles",
        "12.5,50,90,99.9",
    ]));
    let header = text
        .lines()
        .find(|l| l.starts_with("LATENCY"))
        .expect("header");
    let words: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        words,
        ["LATENCY", "ms", "metric", "n", "p12.5", "p50", "p90", "p99.9", "max", "mean"]
    );
    let ttft_row = text
        .lines()
        .skip_while(|l| !l.starts_with("LATENCY"))
        .find(|l| l.starts_with("all "))
        .expect("all row");
    assert!(
        ttft_row.contains("300.0") && ttft_row.contains("1800.0"),
        "{ttft_row}"
    );
}

#[test]
fn the_default_list_adds_only_the_recorded_list() {
    let path = write_trace("twenty-default.json", &twenty_rows());
    let r = receipt_json(&["analyze", &path, "--json"]);
    assert_eq!(r["contract"]["percentiles"], json!([50, 95, 99]));
    assert!(r["results"]["all"].get("percentiles").is_none());
    let same = receipt_json(&[
        "analyze",
        &path,
        "--json",
        "--metric-percentiles",
        "99,50,95",
    ]);
    assert_eq!(r, same);
}

#[test]
fn bad_percentile_lists_exit_2_naming_the_value() {
    let path = write_trace("twenty-bad.json", &twenty_rows());
    for (list, words) in [
        ("0", "must be above 0"),
        ("100", "must be below 100"),
        ("fast", "`fast` is not a percentile"),
        ("99.9999", "at most three decimals"),
        (
            "1,2,3,4,5,6,7,8,9,10,11",
            "11 percentiles named; at most 10",
        ),
    ] {
        let out = goodput(&["analyze", &path, "--percentiles", list]);
        assert_eq!(out.status.code(), Some(2), "{list}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(words) && err.contains("--percentiles"),
            "{list}: {err}"
        );
    }
}

#[test]
fn verify_recomputes_at_the_recorded_percentiles() {
    let path = write_trace("twenty-verify.json", &twenty_rows());
    let receipt = receipt_json(&["analyze", &path, "--json", "--percentiles", "90,99.9"]);
    let good = write_trace("receipt-90.json", &receipt);
    assert_eq!(goodput(&["verify", &good, &path]).status.code(), Some(0));
    // A receipt claiming p90 = 1700 (rank 17) does not verify.
    let mut tampered = receipt.clone();
    tampered["results"]["all"]["percentiles"]["ttftMs"][0]["value"] = json!(1700);
    let bad = write_trace("receipt-90-bad.json", &tampered);
    let out = goodput(&["verify", &bad, &path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("/results/all/percentiles/ttftMs/0/value: 1700 → 1800"));
}

#[test]
fn gate_p99_limits_are_their_own_lines() {
    // TTFT p99 → rank ceil(19.8) = 20 → 2000; E2E p99 → 3000; TPOT all 100.
    let path = write_trace("twenty-gate.json", &twenty_rows());
    let base = [
        "gate",
        path.as_str(),
        "--min-goodput",
        "0",
        "--allow-overload",
    ];
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        goodput(&args)
    };
    let ok = run(&[
        "--max-p99-ttft-ms",
        "2000",
        "--max-p99-e2e-ms",
        "3000",
        "--max-p99-tpot-ms",
        "100",
    ]);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    let text = stdout(&ok);
    for line in ["p99 ttft ms", "p99 e2e ms", "p99 tpot ms"] {
        let l = text.lines().find(|l| l.starts_with(line)).expect(line);
        assert!(l.ends_with("PASS"), "{l}");
    }
    // 1999.9 < 2000: refused, and only that line fails.
    let refused = run(&["--max-p99-ttft-ms", "1999.9", "--max-p95-ttft-ms", "1900"]);
    assert_eq!(refused.status.code(), Some(1));
    let text = stdout(&refused);
    assert!(text.contains("REFUSE: 1 of"), "{text}");
    assert!(text.contains("(p99 ttft ms)"), "{text}");
    let negative = run(&["--max-p99-e2e-ms=-1"]);
    assert_eq!(negative.status.code(), Some(2));
}

#[test]
fn compare_compares_at_the_requested_percentiles() {
    let path = write_trace("twenty-compare.json", &twenty_rows());
    let out = goodput(&["compare", &path, &path, "--json", "--percentiles", "90"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: Value = serde_json::from_slice(&out.stdout).expect("json");
    let names: Vec<&str> = c["blocks"][0]["figures"]
        .as_array()
        .expect("figures")
        .iter()
        .map(|f| f["figure"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "goodput",
            "pass_share",
            "failure_share",
            "p90_ttft",
            "p90_tpot",
            "p90_e2e"
        ]
    );
    assert_eq!(c["blocks"][0]["figures"][3]["a"], json!(1800));
    // A figure that is not compared cannot be a gate.
    let out = goodput(&["compare", &path, &path, "--fail-if-worse", "p90_ttft"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Six unfinished rows of class `chat` (TTFT gate 100 ms, window [0, 10000),
/// horizon 10000): two still in flight, four completing only at 12000, all
/// arriving at 1000 with no first token by the horizon (9000 ms > 100 ms, so
/// every one is already late), and one passing row.
#[test]
fn the_unfinished_part_adds_up_and_late_is_another_axis() {
    let mut rows = vec![json!({"id": "ok", "arrivalMs": 500, "status": "completed",
        "firstTokenMs": 550, "completedMs": 600, "outputTokens": 1})];
    for i in 0..2 {
        rows.push(json!({"id": format!("f{i}"), "arrivalMs": 1000, "status": "in_flight"}));
    }
    for i in 0..4 {
        rows.push(
            json!({"id": format!("a{i}"), "arrivalMs": 1000, "status": "completed",
            "firstTokenMs": 11000, "completedMs": 12000, "outputTokens": 2}),
        );
    }
    let trace = json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 10000, "horizonMs": 10000},
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": 100, "tpotMs": null, "e2eMs": null}},
        "defaultClass": "chat",
        "tokens": "usage",
        "boundary": {"arrival": "scheduled", "tokens": "client"},
        "workload": {"arrival": "fixed"},
        "rows": rows
    });
    let path = write_trace("unfinished.json", &trace);
    let out = goodput(&[
        "gate",
        &path,
        "--min-goodput",
        "0",
        "--max-censored-share",
        "1",
    ]);
    let line = stdout(&out)
        .lines()
        .find(|l| l.starts_with("diagnosis chat"))
        .expect("diagnosis")
        .to_owned();
    assert_eq!(
        line,
        "diagnosis chat: 6 of 7 cohort rows not passed: unfinished 6 at the horizon (2 still \
         running, 4 ended only after it; all 6 already past a TTFT or E2E gate) → unfinished rows \
         dominate: requests were still open when observation stopped, so check whether the server \
         fell behind the offered load (overload) or requests stalled"
    );
}

/// Ten rows with promptTokens 200 under `promptLengths: tokens`; `off` of
/// them report serverPromptTokens 235 (35 > max(2, 0.02 × 200 = 4)), the
/// rest 201 (within the slack).
fn tokenizer_trace(off: usize, declared: &str) -> Value {
    let rows: Vec<Value> = (0..10)
        .map(|i| {
            let server = if i < off { 235 } else { 201 };
            json!({"id": format!("t{i}"), "arrivalMs": 1000 + 100 * i, "status": "completed",
                   "firstTokenMs": 1200 + 100 * i, "completedMs": 1500 + 100 * i, "outputTokens": 4,
                   "labels": {"promptTokens": 200, "serverPromptTokens": server}})
        })
        .collect();
    json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 10000, "horizonMs": 10000},
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": 1000, "tpotMs": 200, "e2eMs": 5000}},
        "defaultClass": "chat",
        "tokens": "usage",
        "boundary": {"arrival": "scheduled", "tokens": "client"},
        "workload": {"arrival": "fixed", "promptLengths": declared},
        "rows": rows
    })
}

#[test]
fn a_tokenizer_off_on_most_rows_is_a_warning() {
    let path = write_trace("tok7.json", &tokenizer_trace(7, "tokens"));
    let r = receipt_json(&["analyze", &path, "--json"]);
    // Differences sorted: 1, 1, 1, 35 × 7; median rank ceil(50 × 10 / 100) = 5 → 35.
    assert_eq!(
        r["tokenizerMismatch"],
        json!({"rowsCompared": 10, "rowsOff": 7, "shareOff": 0.7,
               "medianServerMinusClient": 35,
               "rule": goodput_core::receipt::tokenizer::RULE})
    );
    let text = stdout(&goodput(&["analyze", &path]));
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("WARNING tokenizer mismatch: on 7 of 10 rows"),
        "{text}"
    );
    assert!(text.contains("median server - client +35 tokens"), "{text}");
    // Three of ten off is not most rows; an undeclared length is not a claim.
    for (off, declared) in [(3, "tokens"), (7, "approximate")] {
        let path = write_trace(
            &format!("tok{off}{declared}.json"),
            &tokenizer_trace(off, declared),
        );
        let r = receipt_json(&["analyze", &path, "--json"]);
        assert!(r.get("tokenizerMismatch").is_none(), "{off} {declared}");
        assert!(!stdout(&goodput(&["analyze", &path])).contains("tokenizer mismatch"));
    }
}
