//! The HTML report in a real browser: headless Chromium opens the page of
//! `fixtures/mixed_120.json` with a `record --metrics` sidecar beside it
//! (queue and running counts, no KV-cache series) at 1,280 × 900 px and
//! checks that the page is no wider than the window, that no table needs
//! its own scroll bar, that the browser logs no console error, and saves a
//! screenshot of the first screen to `target/tmp/report-browser/`. The page
//! of the same trace with gaps and stall gates added (gap histograms, stall
//! bars on the lanes) is measured the same way.
//!
//! The measurement runs on a copy of the page with one inline script added
//! (the page itself allows none): it writes `document.documentElement
//! .scrollWidth`, each scroll box that scrolls and every error caught by
//! `window.onerror` into a `<pre>`, which `--dump-dom` prints. A second copy
//! with deliberately broken CSS shows the measurement does catch overflow.
//!
//! Skipped, with the reason printed, only where no Chromium is installed
//! (`.ci/run` installs it).

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// The window the page must fit.
const WIDTH: u32 = 1280;
/// The longest one Chromium run may take before it is stopped.
const BROWSER_BOUND: Duration = Duration::from_secs(120);

/// The browser to use: `GOODPUT_CHROMIUM`, else the first of the usual
/// names found on `PATH` (or at `/usr/bin/chromium`).
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("GOODPUT_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome", "chrome"] {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    Some(PathBuf::from("/usr/bin/chromium")).filter(|p| p.is_file())
}

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-browser");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs Chromium headless on `page` with `extra` flags and a fresh profile;
/// returns (stdout, stderr). Stopped after [`BROWSER_BOUND`].
fn browse(browser: &Path, page: &Path, profile: &Path, extra: &[&str]) -> (String, String) {
    let _ = std::fs::remove_dir_all(profile);
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            &format!("--user-data-dir={}", profile.display()),
            &format!("--window-size={WIDTH},900"),
        ])
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > BROWSER_BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {BROWSER_BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (reader.join().unwrap(), err_reader.join().unwrap())
}

/// The trace `mixed_120.json` with a sidecar beside it: scrapes every 5 s
/// from 0 to 75 s, the queue rising to 8 and falling back, 4 running, one
/// failed scrape at 40 s, and no KV-cache series at all. Returns the trace.
fn trace_with_sidecar(dir: &Path) -> PathBuf {
    let waiting = [0, 1, 2, 3, 5, 8, 6, 4, -1, 2, 1, 0, 0, 0, 0, 0];
    let mut sidecar = String::new();
    for (k, w) in waiting.iter().enumerate() {
        let t = k as f64 * 5000.0;
        if *w < 0 {
            sidecar.push_str(&format!("{{\"tMs\":{t},\"error\":\"timeout\"}}\n"));
        } else {
            sidecar.push_str(&format!("{{\"tMs\":{t},\"waiting\":{w},\"running\":4}}\n"));
        }
    }
    let sha: String = Sha256::digest(sidecar.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    std::fs::write(dir.join("mixed.metrics.jsonl"), &sidecar).unwrap();
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(common::fixture("mixed_120.json")).unwrap()).unwrap();
    doc["workload"]["metricsFile"] = "mixed.metrics.jsonl".into();
    doc["workload"]["metricsSha256"] = sha.into();
    let trace = dir.join("mixed.json");
    std::fs::write(&trace, serde_json::to_vec(&doc).unwrap()).unwrap();
    trace
}

/// The page with the measuring script: the CSP gains `script-src
/// 'unsafe-inline'` (for this copy only), an error hook goes first in the
/// head, the measurement last in the body.
fn instrumented(html: &str) -> String {
    let csp = "default-src 'none'; style-src 'unsafe-inline'";
    assert!(html.contains(csp), "the page's CSP changed");
    let hook = "<script>window.__errors=[];window.onerror=function(m){window.__errors.push(String(m));};</script>";
    let measure = "<script>window.addEventListener('load',function(){\
        var d=document.documentElement,lines=['scrollWidth '+d.scrollWidth,'clientWidth '+d.clientWidth];\
        document.querySelectorAll('.scroll').forEach(function(e){\
          if(e.scrollWidth>e.clientWidth){var t=e.querySelector('table');\
            lines.push('scrolls '+(t&&t.id||'?')+' '+e.scrollWidth+' > '+e.clientWidth);}});\
        window.__errors.forEach(function(m){lines.push('error '+m);});\
        var p=document.createElement('pre');p.id='measure';p.textContent=lines.join('\\n');\
        document.body.appendChild(p);});</script>";
    html.replacen(csp, &format!("{csp}; script-src 'unsafe-inline'"), 1)
        .replacen("<style>", &format!("{hook}\n<style>"), 1)
        .replacen("</body>", &format!("{measure}\n</body>"), 1)
}

/// What the measuring script found.
#[derive(Debug)]
struct Measure {
    scroll_width: u32,
    client_width: u32,
    /// Scroll boxes whose table is wider than the box: `summary 1379 > 1233`.
    scrolling: Vec<String>,
    /// Errors `window.onerror` caught.
    errors: Vec<String>,
}

fn measure(browser: &Path, dir: &Path, name: &str, html: &str) -> Measure {
    let page = dir.join(format!("{name}.measure.html"));
    std::fs::write(&page, instrumented(html)).unwrap();
    let (dom, _) = browse(
        browser,
        &page,
        &dir.join(format!("profile-{name}")),
        &["--virtual-time-budget=5000", "--dump-dom"],
    );
    let start = dom
        .find("<pre id=\"measure\">")
        .unwrap_or_else(|| panic!("no measurement in the dumped DOM:\n{dom}"));
    let body = &dom[start + "<pre id=\"measure\">".len()..];
    let body = &body[..body.find("</pre>").unwrap()];
    let mut m = Measure {
        scroll_width: 0,
        client_width: 0,
        scrolling: Vec::new(),
        errors: Vec::new(),
    };
    for line in body.lines() {
        let (key, rest) = line.split_once(' ').unwrap();
        match key {
            "scrollWidth" => m.scroll_width = rest.parse().unwrap(),
            "clientWidth" => m.client_width = rest.parse().unwrap(),
            "scrolls" => m.scrolling.push(rest.replace("&gt;", ">")),
            _ => m.errors.push(rest.to_owned()),
        }
    }
    m
}

/// Console errors Chromium logged (`--enable-logging=stderr`): lines of
/// the page's console (`CONSOLE`), uncaught exceptions and refused loads.
fn console_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("Refused to"))
        .collect()
}

#[test]
fn the_report_fits_1280_px_with_no_console_error_in_chromium() {
    let Some(browser) = chromium() else {
        println!(
            "skipped: no Chromium found (GOODPUT_CHROMIUM, chromium, chromium-browser, \
             google-chrome on PATH, /usr/bin/chromium); .ci/run installs it"
        );
        return;
    };
    let dir = out_dir();
    let trace = trace_with_sidecar(&dir);
    let html_path = dir.join("mixed_120.html");
    let out = common::goodput()
        .args(["report", trace.to_str().unwrap(), "--out"])
        .arg(&html_path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // Queue 0 … 8 … 0 and 4 running, no KV series: the peaks, lower-case.
    assert!(
        stdout.contains("server metrics: peak waiting 8, running 4.\n"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    // The KV panel says why it is empty.
    assert!(html.contains(">not reported by the server's metrics</text>"));

    let m = measure(&browser, &dir, "mixed_120", &html);
    println!("chromium {}: {m:?}", browser.display());
    assert!(m.client_width > 0 && m.client_width <= WIDTH, "{m:?}");
    assert!(
        m.scroll_width <= m.client_width,
        "the page is wider than the {WIDTH} px window: {m:?}"
    );
    assert!(m.scrolling.is_empty(), "a table is cut off: {m:?}");
    assert!(m.errors.is_empty(), "script errors: {m:?}");

    // The page as written (no script added): a screenshot, and the console.
    let shot = dir.join("mixed_120-1280.png");
    let _ = std::fs::remove_file(&shot);
    let (_, stderr) = browse(
        &browser,
        &html_path,
        &dir.join("profile-shot"),
        &[
            "--enable-logging=stderr",
            "--v=0",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    let errors = console_errors(&stderr);
    assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000);
    println!("screenshot: {}", shot.display());
}

/// `mixed_120.json` with streams that stall: every completed row gets
/// `outputTokens − 1` gaps filling its stream, equal but for every fourth
/// row, where the middle gap is a stall of 40 % of the stream (at most
/// 1.5 s) and the others share the rest; `interactive` gates stalls at
/// 200 ms with a 50 ms token deadline, `batch` at 1000 ms. So both classes
/// have a gap histogram and the lanes stall bars. Every completed row but
/// each seventh also answers a tenth of its stream after its first token,
/// and `interactive` declares a 2 s TTFA gate: the widest gates, reasons and
/// intervals tables the page draws, and a TTFA histogram per class.
fn stalled_trace(dir: &Path) -> PathBuf {
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(common::fixture("mixed_120.json")).unwrap()).unwrap();
    doc["classes"]["interactive"]["stallMs"] = 200.into();
    doc["classes"]["interactive"]["tokenDeadlineMs"] = 50.into();
    doc["classes"]["batch"]["stallMs"] = 1000.into();
    doc["classes"]["interactive"]["ttfaMs"] = 2000.into();
    // Rounded down to the µs, so the gaps never sum past the stream.
    let floor_us = |x: f64| (x * 1000.0).floor() / 1000.0;
    let mut completed = 0usize;
    for row in doc["rows"].as_array_mut().unwrap() {
        if row["status"] != "completed" {
            continue;
        }
        let k = row["outputTokens"].as_u64().unwrap() as usize - 1;
        let span = row["completedMs"].as_f64().unwrap() - row["firstTokenMs"].as_f64().unwrap();
        let mut gaps = vec![floor_us(span / k.max(1) as f64); k];
        if completed % 4 == 0 && k >= 2 {
            let stall = floor_us((span * 0.4).min(1500.0));
            gaps = vec![floor_us((span - stall) / (k - 1) as f64); k];
            gaps[k / 2] = stall;
        }
        row["gapsMs"] = gaps.into();
        if completed % 7 != 6 {
            let first = row["firstTokenMs"].as_f64().unwrap();
            row["firstAnswerMs"] = floor_us(first + span / 10.0).into();
        }
        completed += 1;
    }
    let trace = dir.join("stalled.json");
    std::fs::write(&trace, serde_json::to_vec(&doc).unwrap()).unwrap();
    trace
}

#[test]
fn the_report_of_a_stalled_run_fits_1280_px_in_chromium() {
    let Some(browser) = chromium() else {
        println!("skipped: no Chromium found; .ci/run installs it");
        return;
    };
    let dir = out_dir();
    let trace = stalled_trace(&dir);
    let html_path = dir.join("stalled.html");
    let out = common::goodput()
        .args([
            "report",
            trace.to_str().unwrap(),
            "--max-bytes",
            "1000000",
            "--out",
        ])
        .arg(&html_path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    // What this page is for: both gap histograms and some stall bars.
    assert_eq!(html.matches("data-metric=\"gap\"").count(), 2);
    assert!(html.contains("class=\"stall-mark\""));
    assert_eq!(html.matches("data-metric=\"ttfa\"").count(), 2);
    assert!(html.contains("<th>miss: TTFA</th><th>miss: no answer</th>"));
    let m = measure(&browser, &dir, "stalled", &html);
    println!("chromium {}: {m:?}", browser.display());
    assert!(m.client_width > 0 && m.client_width <= WIDTH, "{m:?}");
    assert!(
        m.scroll_width <= m.client_width,
        "the page is wider than the {WIDTH} px window: {m:?}"
    );
    assert!(m.scrolling.is_empty(), "a table is cut off: {m:?}");
    assert!(m.errors.is_empty(), "script errors: {m:?}");
}

#[test]
fn the_measurement_catches_a_page_wider_than_the_window() {
    let Some(browser) = chromium() else {
        println!("skipped: no Chromium found; .ci/run installs it");
        return;
    };
    let dir = out_dir();
    let analysis = common::analyze_fixture("mixed_120.json");
    let html = goodput_render::report::analysis_page::page(&analysis).unwrap();
    // Broken on purpose: the scroll boxes no longer scroll and charts keep
    // 1,500 px; the page must then measure wider than the window and the
    // summary table no longer fits its box.
    let broken = html.replacen(
        "</style>",
        "svg{min-width:1500px}.scroll{overflow-x:visible}table{min-width:1400px}\n</style>",
        1,
    );
    let m = measure(&browser, &dir, "broken", &broken);
    println!("broken page: {m:?}");
    assert!(m.scroll_width >= 1500, "{m:?}");
    assert!(
        m.scrolling.iter().any(|s| s.starts_with("summary ")),
        "{m:?}"
    );
    // And the console scan catches what the page's policy blocks: an inline
    // script is refused, and Chromium logs it as a console message.
    let page = dir.join("blocked-script.html");
    std::fs::write(
        &page,
        html.replacen("</body>", "<script>document.title='x'</script></body>", 1),
    )
    .unwrap();
    let (_, stderr) = browse(
        &browser,
        &page,
        &dir.join("profile-blocked"),
        &["--enable-logging=stderr", "--v=0", "--dump-dom"],
    );
    assert!(!console_errors(&stderr).is_empty(), "{stderr}");
}
