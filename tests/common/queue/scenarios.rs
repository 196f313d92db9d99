//! Ready-made scenarios for `common::queue` (re-exported there), a drawn
//! set for measuring false-alarm and miss rates, and a CLI runner.

use std::io::Write as _;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::{Arrivals, Gates, Observation, Phase, Scenario, Server, Tokens};

/// A Poisson scenario at 10/s with 20-token outputs and 40 ms prefill whose
/// per-token time is chosen so the load is `rho` on `server`.
pub fn at_load(seed: u64, server: Server, rho: f64, observe: Observation) -> Scenario {
    let service_ms = rho * server.slots() as f64 * 1000.0 / 10.0;
    Scenario {
        name: format!("{server:?} at rho {rho}"),
        seed,
        arrivals: Arrivals::Poisson { rate_per_s: 10.0 },
        tokens: Tokens::Fixed(20),
        prefill_ms: (40.0, 40.0),
        per_token_ms: (service_ms - 40.0) / 19.0,
        server,
        observe,
        gates: Gates {
            ttft_ms: Some(1000.0),
            tpot_ms: None,
            e2e_ms: Some(10_000.0),
        },
    }
}

/// A reported case: long outputs and no queue. 1000 slots (never all
/// busy), TTFT exactly 100 ms, 100–3000 tokens at 20 ms each, 5/s for 60 s.
pub fn long_outputs_no_queue(seed: u64, observe: Observation) -> Scenario {
    Scenario {
        name: "long outputs, no queue".into(),
        seed,
        arrivals: Arrivals::Poisson { rate_per_s: 5.0 },
        tokens: Tokens::Uniform(100, 3000),
        prefill_ms: (100.0, 100.0),
        per_token_ms: 20.0,
        server: Server::Fifo { slots: 1000 },
        observe: Observation {
            warmup_ms: 0.0,
            ..observe
        },
        gates: Gates {
            ttft_ms: Some(1000.0),
            tpot_ms: Some(50.0),
            e2e_ms: None,
        },
    }
}

/// A burst: steady 5/s for 30 s, `burst` 20/s for 10 s, `recover` 5/s for
/// 30 s (window 0–70 s, no warm-up), against a capacity of 12.5/s (2
/// slots, 160 ms per request): about 75 queue up in the burst and drain at
/// about 7.5/s, so TTFT (gate 1 s) recovers some 10 s after the burst.
pub fn burst(seed: u64, server: Server, grace_ms: f64) -> Scenario {
    let phase = |name: &str, s: f64, rate: f64| Phase {
        name: name.into(),
        duration_ms: s * 1000.0,
        rate_per_s: rate,
    };
    Scenario {
        name: format!("burst on {server:?}"),
        seed,
        arrivals: Arrivals::Phased(vec![
            phase("steady", 30.0, 5.0),
            phase("burst", 10.0, 20.0),
            phase("recover", 30.0, 5.0),
        ]),
        tokens: Tokens::Fixed(20),
        prefill_ms: (46.0, 46.0),
        per_token_ms: 6.0,
        server,
        observe: Observation {
            warmup_ms: 0.0,
            window_ms: 70_000.0,
            grace_ms,
            cut_at: None,
        },
        gates: Gates {
            ttft_ms: Some(1000.0),
            tpot_ms: None,
            e2e_ms: Some(2000.0),
        },
    }
}

/// `n` scenarios drawn from `seed`: even indices calm (ρ in 0.3–0.8), odd
/// overloaded (ρ in 1.3–3); FIFO or shared; 1–16 slots; fixed, uniform or
/// Pareto outputs; grace 0, 10 s or a cut at 70 % of a 60 s window; every
/// tenth is the long-outputs-no-queue case (calm). The mean service is at
/// most 8 s; loose gates (TTFT 2 × the longest prefill + 1 s, E2E 3 × mean
/// service + 2 s) keep calm runs mostly passing.
pub fn scenario_set(seed: u64, n: usize) -> Vec<Scenario> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|i| drawn(i, &mut rng)).collect()
}

fn drawn(i: usize, rng: &mut ChaCha8Rng) -> Scenario {
    let seed = rng.random::<u32>() as u64;
    let observe = Observation {
        grace_ms: [0.0, 10_000.0, 10_000.0][i % 3],
        cut_at: (i % 3 == 2).then_some(0.7),
        ..Observation::default()
    };
    if i % 10 == 0 {
        let s = long_outputs_no_queue(seed, observe);
        return Scenario {
            name: format!("#{i} {}", s.name),
            ..s
        };
    }
    let rho: f64 = rng.random_range(if i % 2 == 0 { 0.3..0.8 } else { 1.3..3.0 });
    let rate: f64 = rng.random_range(3.0..12.0);
    let mut slots: usize = [1, 2, 4, 8, 16][rng.random_range(0..5)];
    while slots > 1 && rho * slots as f64 * 1000.0 / rate > 8000.0 {
        slots /= 2; // a mean service of at most 8 s, short against the window
    }
    let service_ms = rho * slots as f64 * 1000.0 / rate;
    let server = if rng.random::<bool>() {
        Server::Fifo { slots }
    } else {
        Server::Shared { slots }
    };
    let tokens = match rng.random_range(0..3) {
        0 => Tokens::Fixed(rng.random_range(16..=256)),
        1 => Tokens::Uniform(10, rng.random_range(50..=400)),
        _ => Tokens::Pareto {
            min: 20.0,
            alpha: rng.random_range(1.3..2.5),
            cap: 4000,
        },
    };
    let prefill = service_ms * rng.random_range(0.1..0.3);
    let prefill_ms = if rng.random::<bool>() {
        (prefill / 2.0, prefill * 1.5)
    } else {
        (prefill, prefill)
    };
    Scenario {
        name: format!("#{i} {server:?} rho {rho:.2} at {rate:.1}/s, {tokens:?}"),
        seed,
        arrivals: Arrivals::Poisson { rate_per_s: rate },
        per_token_ms: (service_ms - prefill) / (tokens.mean() - 1.0),
        tokens,
        prefill_ms,
        server,
        observe,
        gates: Gates {
            ttft_ms: Some(2.0 * prefill_ms.1 + 1000.0),
            tpot_ms: None,
            e2e_ms: Some(3.0 * service_ms + 2000.0),
        },
    }
}

/// Writes `trace` to a temporary file and runs `goodput analyze --json` on
/// it with limits raised to fit; returns the receipt.
pub fn analyze_cli(trace: &Value, extra: &[&str]) -> Value {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(trace.to_string().as_bytes())
        .expect("write trace");
    let path = file.path().display().to_string();
    let out = super::super::goodput()
        .args([
            "analyze",
            &path,
            "--json",
            "--max-rows",
            "10000000",
            "--max-bytes",
            "4000000000",
        ])
        .args(extra)
        .output()
        .expect("spawn goodput");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the receipt is JSON")
}
