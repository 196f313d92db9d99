//! The Prometheus text parser of `record --metrics` fed arbitrary bytes: it
//! never panics, every sample it accepts has a valid metric name, and a
//! snapshot of what it read survives the sidecar's round trip line for line.
#![no_main]

use goodput_core::server_metrics::{parse_exposition, parse_sidecar, sidecar_bytes, MetricsLine};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(samples) = parse_exposition(text) else {
        return;
    };
    for s in &samples {
        let mut chars = s.name.chars();
        let first = chars.next().expect("a sample has a name");
        assert!(first.is_ascii_alphabetic() || first == '_' || first == ':');
        assert!(chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'));
    }
    let lines = vec![MetricsLine::snapshot(1.5, &samples), MetricsLine::gap(2.5, "x")];
    let back = parse_sidecar(&sidecar_bytes(&lines)).expect("the sidecar reads back");
    assert_eq!(back.len(), 2);
    assert_eq!(back[0].raw, lines[0].raw);
});
