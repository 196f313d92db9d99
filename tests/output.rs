//! Output people (and spreadsheets) can use: the per-row table, the CSV
//! views read back with the `csv` crate, display rounding, wording.

mod common;

use std::process::Output;

use common::{fixture, goodput};

fn run(args: &[&str]) -> Output {
    goodput().args(args).output().expect("spawn goodput")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Three rows with fields that need RFC 4180 quoting (a comma and a quote in
/// an id, a line break in a label) and hand-computable figures.
const TRACE: &str = r#"{"schema":"goodput-trace/1","window":{"startMs":0,"endMs":10000},
 "equality":"inclusive","classes":{"chat":{"ttftMs":500,"tpotMs":50,"e2eMs":5000}},
 "rows":[
  {"id":"a,\"b\"","arrivalMs":1000,"status":"completed","firstTokenMs":1250,"completedMs":2250,
   "outputTokens":11,"labels":{"note":"line1\nline2","n":3}},
  {"id":"c","arrivalMs":2000,"status":"failed","reason":"http_503","endedMs":2100,"labels":{"flag":true}},
  {"id":"d","arrivalMs":3000.5,"status":"completed","firstTokenMs":3100.5,"completedMs":3500.5,"outputTokens":21}
 ]}"#;

fn write_trace(dir: &tempfile::TempDir) -> String {
    let path = dir.path().join("t.json");
    std::fs::write(&path, TRACE).unwrap();
    path.display().to_string()
}

#[test]
fn analyze_csv_reads_back_field_for_field() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["analyze", "--csv", &write_trace(&dir)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut reader = csv::Reader::from_reader(o.stdout.as_slice());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        header,
        [
            "index",
            "id",
            "class",
            "verdict",
            "reasons",
            "arrivalMs",
            "ttftMs",
            "tpotMs",
            "e2eMs",
            "outputTokens",
            "flag",
            "n",
            "note"
        ]
    );
    let rows: Vec<Vec<String>> = reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect();
    // Row 0: TTFT 1250 − 1000 = 250; TPOT (2250 − 1250) / (11 − 1) = 100 > 50 → miss on tpot;
    // E2E 2250 − 1000 = 1250.
    assert_eq!(
        rows[0],
        [
            "0",
            "a,\"b\"",
            "chat",
            "miss",
            "tpot",
            "1000",
            "250",
            "100",
            "1250",
            "11",
            "",
            "3",
            "line1\nline2"
        ]
    );
    // Row 1: failed, no latency, no tokens.
    assert_eq!(
        rows[1],
        ["1", "c", "chat", "failed", "http_503", "2000", "", "", "", "", "true", "", ""]
    );
    // Row 2: TTFT 100; TPOT (3500.5 − 3100.5) / 20 = 20; E2E 500 → pass.
    assert_eq!(
        rows[2],
        ["2", "d", "chat", "pass", "", "3000.5", "100", "20", "500", "21", "", "", ""]
    );
    assert_eq!(rows.len(), 3);
}

#[test]
fn frontier_csv_reads_back_one_line_per_trace() {
    let dir = tempfile::tempdir().unwrap();
    // A label with a comma must come back whole.
    let odd = dir.path().join("rate 1,5.json");
    std::fs::copy(fixture("mixed_120.json"), &odd).unwrap();
    let odd = odd.display().to_string();
    let two = fixture("two_classes.json").display().to_string();
    let o = run(&["frontier", "--csv", &odd, &two]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut reader = csv::Reader::from_reader(o.stdout.as_slice());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(header.len(), 15);
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let mixed = rows
        .iter()
        .find(|r| &r[column("label")] == odd.as_str())
        .expect("label read back whole");
    // mixed_120: cohort 106, 62 pass over a 60 s window → goodput 62 / 60 /s.
    assert_eq!(&mixed[column("cohort")], "106");
    assert_eq!(
        mixed[column("goodputPerS")].parse::<f64>().unwrap(),
        62.0 / 60.0
    );
    assert_eq!(
        mixed[column("offeredPerS")].parse::<f64>().unwrap(),
        106.0 / 60.0
    );
}

#[test]
fn rows_without_json_print_a_per_row_table() {
    let dir = tempfile::tempdir().unwrap();
    let text = stdout(&run(&["analyze", "--rows", &write_trace(&dir)]));
    let table = &text[text.find("\nROWS").expect("a ROWS table") + 1..];
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    let words = |l: &str| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        words(lines[1]),
        ["0", "a,\"b\"", "chat", "miss", "250", "100", "1250", "tpot"]
    );
    assert_eq!(
        words(lines[2]),
        ["1", "c", "chat", "failed", "—", "—", "—", "http_503"]
    );
    assert_eq!(
        words(lines[3]),
        ["2", "d", "chat", "pass", "100", "20", "500", "—"]
    );
    // Without --rows there is no table.
    assert!(!stdout(&run(&["analyze", &write_trace(&dir)])).contains("ROWS"));
}

#[test]
fn text_rounds_milliseconds_for_display_while_json_stays_exact() {
    // mixed_120's req-022: arrival 10192.5, first token 10477.2 → TTFT
    // 10477.2 − 10192.5 = 284.7000000000007 in doubles; the mutation pushes it
    // to its gate + 1 = 1001.
    let mixed = fixture("mixed_120.json").display().to_string();
    let text = stdout(&run(&["mutate", &mixed]));
    assert!(
        text.contains("row \"req-022\" TTFT 284.7 → 1001 ms;"),
        "{text}"
    );
    assert!(!text.contains("284.70000"), "{text}");
    let json: serde_json::Value =
        serde_json::from_slice(&run(&["analyze", &mixed, "--json", "--rows"]).stdout).unwrap();
    let row = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "req-022")
        .unwrap();
    let ttft = row["ttftMs"].as_f64().unwrap();
    assert_eq!(
        ttft,
        10477.2 - 10192.5,
        "the JSON keeps the exact difference"
    );
    assert_ne!(ttft, 284.7);
}

#[test]
fn an_empty_trace_file_is_called_empty() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("e.json");
    std::fs::write(&empty, "").unwrap();
    let o = run(&["analyze", &empty.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "rejected: the file is empty (0 bytes); a trace is one JSON object\n"
    );
    std::fs::write(&empty, " \n\t\n").unwrap();
    let o = run(&["gate", &empty.display().to_string(), "--min-goodput", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the file is empty (4 bytes of whitespace only)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn import_without_slo_says_the_gates_are_placeholders_first() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json").display().to_string();
    let vllm = fixture("import/vllm_synthetic.json").display().to_string();
    let o = run(&["import", "--from", "vllm", &vllm, "--out", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with(
            "PLACEHOLDER GATES: no --slo given, so goodput below is judged under default:"
        ),
        "{text}"
    );
    let o = run(&[
        "import",
        "--from",
        "vllm",
        &vllm,
        "--out",
        &out,
        "--slo",
        "chat:ttft=200,tpot=20,e2e=4000",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("imported vllm"), "{}", stdout(&o));
    let json: serde_json::Value = serde_json::from_slice(
        &run(&["import", "--from", "vllm", &vllm, "--out", &out, "--json"]).stdout,
    )
    .unwrap();
    assert_eq!(json["placeholderGates"], true);
}

#[test]
fn the_default_class_is_marked_without_repeating_its_name() {
    // A class named "default" that is also the defaultClass.
    let trace = r#"{"schema":"goodput-trace/1","window":{"startMs":0,"endMs":1000},
      "equality":"inclusive","defaultClass":"default",
      "classes":{"default":{"ttftMs":1,"tpotMs":null,"e2eMs":null},"b":{"ttftMs":2,"tpotMs":null,"e2eMs":null}},
      "rows":[{"id":"x","arrivalMs":0,"status":"failed","reason":"timeout"}]}"#;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, trace).unwrap();
    let text = stdout(&run(&["analyze", &path.display().to_string()]));
    assert!(!text.contains("default (default)"), "{text}");
    assert!(
        text.contains("default (for rows without a class): ttft <= 1"),
        "{text}"
    );
    // One row is one row.
    assert!(text.contains(" bytes, 1 row; limits"), "{text}");
}

/// A string that would retitle the terminal (OSC 0 … BEL), clear it
/// (CSI 2 J), hide what follows (NUL) and reverse it (U+202E), as JSON.
const HOSTILE_JSON: &str = r"\u001b]0;title\u0007\u001b[2J\u0000\u202e";

/// The raw bytes none of the text views may emit.
fn assert_no_raw_controls(what: &str, bytes: &[u8]) {
    for bad in [&b"\x1b"[..], b"\x07", b"\x00", "\u{202e}".as_bytes()] {
        assert!(
            !bytes.windows(bad.len()).any(|w| w == bad),
            "{what} emits {bad:?} raw:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

/// Two classes (one named by the hostile string) and rows whose id,
/// reason and labels hold it.
fn hostile_trace(dir: &tempfile::TempDir) -> String {
    let h = HOSTILE_JSON;
    let trace = format!(
        r#"{{"schema":"goodput-trace/1","window":{{"startMs":0,"endMs":10000}},
 "equality":"inclusive","defaultClass":"chat",
 "classes":{{"chat":{{"ttftMs":500,"tpotMs":null,"e2eMs":null}},"c{h}":{{"ttftMs":500,"tpotMs":null,"e2eMs":null}}}},
 "rows":[
  {{"id":"a{h}","class":"c{h}","arrivalMs":1000,"status":"completed","firstTokenMs":1100,"completedMs":1500,"outputTokens":5,"labels":{{"k{h}":"v{h}"}}}},
  {{"id":"b{h}","class":"c{h}","arrivalMs":2000,"status":"failed","reason":"r{h}","endedMs":2100}},
  {{"id":"c","arrivalMs":3000,"status":"completed","firstTokenMs":3100,"completedMs":3500,"outputTokens":5}}
 ]}}"#
    );
    let path = dir.path().join("hostile.json");
    std::fs::write(&path, trace).unwrap();
    path.display().to_string()
}

#[test]
fn terminal_views_show_control_and_bidi_characters_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let t = hostile_trace(&dir);
    for args in [
        vec!["analyze", &t],
        vec!["analyze", "--rows", &t],
        vec!["sweep", &t],
        vec!["compare", &t, &t],
        vec!["gate", &t, "--min-goodput", "0"],
    ] {
        let o = run(&args);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_no_raw_controls(&format!("{args:?}"), &o.stdout);
        assert_no_raw_controls(&format!("{args:?} (stderr)"), &o.stderr);
    }
    // Shown, escaped, where the name goes: the class in the tables, the id
    // and reason in the row table.
    let text = stdout(&run(&["analyze", "--rows", &t]));
    let shown = r"\u{1b}]0;title\u{7}\u{1b}[2J\u{0}\u{202e}";
    assert!(text.contains(&format!("c{shown}")), "{text}");
    assert!(text.contains(&format!("r{shown}")), "{text}");
}

#[test]
fn rejection_messages_show_trace_strings_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let h = HOSTILE_JSON;
    let shown = r"\u{1b}]0;title\u{7}\u{1b}[2J\u{0}\u{202e}";
    // A defaultClass naming no declared class, and a class key in a pointer.
    for (doc, expected) in [
        (
            format!(
                r#"{{"schema":"goodput-trace/1","window":{{"startMs":0,"endMs":1}},"equality":"inclusive",
                "defaultClass":"d{h}","classes":{{"chat":{{"ttftMs":1,"tpotMs":1,"e2eMs":1}}}},"rows":[]}}"#
            ),
            format!("rejected: /defaultClass names \"d{shown}\", which is not a declared class\n"),
        ),
        (
            format!(
                r#"{{"schema":"goodput-trace/1","window":{{"startMs":0,"endMs":1}},"equality":"inclusive",
                "classes":{{"c{h}":{{"ttftMs":1,"tpotMs":1}}}},"rows":[]}}"#
            ),
            format!(
                "rejected: /classes/c{shown}/e2eMs is missing (a gate in ms, or null for no gate)\n"
            ),
        ),
    ] {
        let path = dir.path().join("bad.json");
        std::fs::write(&path, doc).unwrap();
        let o = run(&["analyze", &path.display().to_string()]);
        assert_eq!(o.status.code(), Some(2));
        assert_no_raw_controls("rejection", &o.stderr);
        assert_eq!(stderr(&o), expected);
    }
}

/// Writes a two-class trace with the given second class name (JSON-escaped).
fn two_class_trace(dir: &tempfile::TempDir, file: &str, name_json: &str) -> String {
    let rows: Vec<String> = (0..6)
        .map(|i| {
            format!(
                r#"{{"id":"r{i}","class":"{name_json}","arrivalMs":{a},"status":"completed","firstTokenMs":{f},"completedMs":{c},"outputTokens":5}}"#,
                a = 1000 * i,
                f = 1000 * i + 100,
                c = 1000 * i + 400
            )
        })
        .collect();
    let trace = format!(
        r#"{{"schema":"goodput-trace/1","window":{{"startMs":0,"endMs":10000}},"equality":"inclusive",
 "defaultClass":"chat","classes":{{"chat":{{"ttftMs":500,"tpotMs":null,"e2eMs":null}},"{name_json}":{{"ttftMs":500,"tpotMs":null,"e2eMs":null}}}},
 "rows":[{}]}}"#,
        rows.join(",")
    );
    let path = dir.path().join(file);
    std::fs::write(&path, trace).unwrap();
    path.display().to_string()
}

/// How many times `c` occurs in `text` not preceded by a backslash.
fn unescaped(text: &str, c: u8) -> usize {
    let b = text.as_bytes();
    (0..b.len())
        .filter(|&j| b[j] == c && (j == 0 || b[j - 1] != b'\\'))
        .count()
}

#[test]
fn compare_markdown_cannot_be_forged_by_a_class_name() {
    let dir = tempfile::tempdir().unwrap();
    let forged = "x** | goodput/s | 1 | 9 | +8 | **B better beyond noise** |";
    let img = "<img src=x onerror=alert(1)>";
    for (i, name) in [forged, img].into_iter().enumerate() {
        let t = two_class_trace(&dir, &format!("t{i}.json"), name);
        let o = run(&["compare", "--markdown", &t, &t]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let md = stdout(&o);
        // No raw HTML: every `<` is escaped (`\<` renders as text).
        assert_eq!(unescaped(&md, b'<'), 0, "{md}");
        assert!(!md.contains("| **B better"), "{md}");
        // Every table line has its 6 cells: 7 pipes not escaped by `\`.
        for line in md.lines().filter(|l| l.starts_with('|')) {
            assert_eq!(unescaped(line, b'|'), 7, "forged cells in {line:?}\n{md}");
        }
    }
    // The name is still there, escaped, in the bold heading.
    let t = two_class_trace(&dir, "t0.json", forged);
    let md = stdout(&run(&["compare", "--markdown", &t, &t]));
    assert!(
        md.contains(
            r"**class x\*\* \| goodput/s \| 1 \| 9 \| +8 \| \*\*B better beyond noise\*\* \|** (cohort"
        ),
        "{md}"
    );
    let t = two_class_trace(&dir, "t1.json", img);
    let md = stdout(&run(&["compare", "--markdown", &t, &t]));
    assert!(
        md.contains(r"**class \<img src=x onerror=alert(1)\>** (cohort"),
        "{md}"
    );
}

#[test]
fn analyze_csv_cells_that_would_run_as_formulas_start_with_a_quote() {
    let dir = tempfile::tempdir().unwrap();
    let trace = r#"{"schema":"goodput-trace/1","window":{"startMs":0,"endMs":10000},
 "equality":"inclusive","classes":{"=cls":{"ttftMs":500,"tpotMs":null,"e2eMs":null}},
 "rows":[
  {"id":"=HYPERLINK(\"http://x\")","arrivalMs":1000,"status":"completed","firstTokenMs":1100,"completedMs":1500,"outputTokens":5,"labels":{"@key":"+lbl","n":-3}},
  {"id":"+cmd","arrivalMs":2000,"status":"failed","reason":"-r","endedMs":2100},
  {"id":"@SUM(A1:A9)","arrivalMs":3000,"status":"completed","firstTokenMs":3100,"completedMs":3500,"outputTokens":5},
  {"id":"-1+1","arrivalMs":4000,"status":"completed","firstTokenMs":4100,"completedMs":4500,"outputTokens":5}
 ]}"#;
    let path = dir.path().join("t.json");
    std::fs::write(&path, trace).unwrap();
    let o = run(&["analyze", "--csv", &path.display().to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut reader = csv::Reader::from_reader(o.stdout.as_slice());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(&header[10..], ["'@key", "n"]);
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let ids: Vec<&str> = rows.iter().map(|r| &r[1]).collect();
    assert_eq!(
        ids,
        [
            "'=HYPERLINK(\"http://x\")",
            "'+cmd",
            "'@SUM(A1:A9)",
            "'-1+1"
        ]
    );
    assert!(rows.iter().all(|r| &r[2] == "'=cls"));
    assert_eq!(&rows[1][4], "'-r");
    assert_eq!(&rows[0][10], "'+lbl");
    // A number we wrote is not a formula: -3 stays -3.
    assert_eq!(&rows[0][11], "-3");
}

#[test]
fn class_names_are_bounded_at_128_code_points() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let doc = |name: &str| {
        format!(
            r#"{{"schema":"goodput-trace/1","window":{{"startMs":0,"endMs":1000}},"equality":"inclusive",
 "classes":{{"{name}":{{"ttftMs":1,"tpotMs":null,"e2eMs":null}}}},
 "rows":[{{"id":"x","arrivalMs":0,"status":"failed","reason":"timeout"}}]}}"#
        )
    };
    // 128 two-byte code points (256 bytes) are accepted.
    std::fs::write(&path, doc(&"é".repeat(128))).unwrap();
    let o = run(&["analyze", &path.display().to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A row naming a 129-code-point class names no declared class.
    let row_class = doc(&"é".repeat(128)).replace(
        r#""reason":"timeout"}"#,
        &format!(r#""reason":"timeout","class":"{}"}}"#, "é".repeat(129)),
    );
    std::fs::write(&path, row_class).unwrap();
    let o = run(&["analyze", &path.display().to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("/rows/0      \"x\": unknown_class"),
        "{}",
        stdout(&o)
    );
    // 129 are rejected, naming the pointer (a `/` in the name is `~1`).
    let long = format!("a/{}", "é".repeat(127));
    std::fs::write(&path, doc(&long)).unwrap();
    let o = run(&["analyze", &path.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    // The pointer's token (`a~1` + 127 é, 130 characters) is shown cut to
    // its first 48 characters in the sentence.
    assert_eq!(
        stderr(&o),
        format!(
            "rejected: /classes/a~1{}…[130 characters] is a class name of 129 characters; at most 128 are allowed\n",
            "é".repeat(45)
        )
    );
    // A 500,000-character name: one short line, not half a megabyte.
    std::fs::write(&path, doc(&"n".repeat(500_000))).unwrap();
    let o = run(&[
        "analyze",
        &path.display().to_string(),
        "--max-bytes",
        "1000000",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!(
            "rejected: /classes/{}…[500000 characters] is a class name of 500000 characters; at most 128 are allowed\n",
            "n".repeat(48)
        )
    );
}
