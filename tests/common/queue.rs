//! A small discrete-event queue simulator whose truth is known by
//! construction: it turns a [`Scenario`] (arrivals, output lengths, prefill
//! and decode times, a server discipline, how the run was observed) into a
//! `goodput-trace/1` document and the [`Truth`] beside it (is the server
//! overloaded, when did it really recover after a burst), so tests of the
//! time verdicts can compare the analyzer with facts instead of with itself.
//!
//! Times are ms from instant 0 (the warm-up start). Every draw comes from
//! one ChaCha8 stream seeded by `Scenario::seed`: a scenario is one trace.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

// Unused in the test crates that only share `common`.
#[allow(unused_imports)]
pub use scenarios::*;

mod scenarios;

/// How requests arrive, from instant 0 up to the planned window end.
#[derive(Clone, Debug)]
pub enum Arrivals {
    /// Poisson arrivals at `rate_per_s` (exponential gaps).
    Poisson { rate_per_s: f64 },
    /// A piecewise-constant Poisson rate: phases laid end to end from 0 and
    /// declared in the trace's `phases` (a burst phase is named `burst`).
    /// Past the last phase nothing arrives.
    Phased(Vec<Phase>),
    /// Hand-placed arrival instants (ms, ascending).
    At(Vec<f64>),
}

/// One stretch of a phased schedule.
#[derive(Clone, Debug)]
pub struct Phase {
    pub name: String,
    pub duration_ms: f64,
    pub rate_per_s: f64,
}

/// The output length of each request, in tokens (always >= 1).
#[derive(Clone, Debug)]
pub enum Tokens {
    /// Every request writes exactly this many.
    Fixed(u32),
    /// Uniform on `lo..=hi`.
    Uniform(u32, u32),
    /// Heavy-tailed: `floor(min(X, cap))` with `X` Pareto of scale `min`
    /// (>= 1) and shape `alpha`: a few requests write far more than most.
    Pareto { min: f64, alpha: f64, cap: u32 },
}

impl Tokens {
    fn sample(&self, rng: &mut ChaCha8Rng) -> u32 {
        match *self {
            Tokens::Fixed(n) => n,
            Tokens::Uniform(lo, hi) => rng.random_range(lo..=hi),
            Tokens::Pareto { min, alpha, cap } => {
                let u = 1.0 - rng.random::<f64>(); // (0, 1]
                (min / u.powf(1.0 / alpha)).min(cap as f64).floor().max(1.0) as u32
            }
        }
    }

    /// The exact mean: for Pareto `E[floor(min(X, cap))] = Σ_{k=1..cap}
    /// P(X >= k)`, so the load of a scenario is known without sampling.
    pub fn mean(&self) -> f64 {
        match *self {
            Tokens::Fixed(n) => n as f64,
            Tokens::Uniform(lo, hi) => (lo as f64 + hi as f64) / 2.0,
            Tokens::Pareto { min, alpha, cap } => (1..=cap)
                .map(|k| (min / k as f64).powf(alpha).min(1.0))
                .sum(),
        }
    }
}

/// The server discipline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Server {
    /// `slots` parallel slots served first come, first served: a request
    /// waits for a free slot, its first token comes `prefill` after it
    /// starts, then its tokens stream at `per_token_ms` each.
    Fifo { slots: usize },
    /// Admits everything (continuous batching): up to `slots` requests run
    /// at full speed; with `n > slots` running, each progresses at
    /// `slots / n`, so under overload every stream slows down and the first
    /// token comes after the request's prefill work, done at the shared pace.
    Shared { slots: usize },
}

impl Server {
    /// The slot count `c` of either discipline.
    pub fn slots(self) -> usize {
        match self {
            Server::Fifo { slots } | Server::Shared { slots } => slots,
        }
    }
}

/// How the run was observed.
#[derive(Clone, Debug)]
pub struct Observation {
    /// The warm-up `[0, warmup_ms)`; the window starts where it ends.
    pub warmup_ms: f64,
    /// The planned window length.
    pub window_ms: f64,
    /// Observation continues this long after the window end (the horizon).
    pub grace_ms: f64,
    /// An interrupted run (Ctrl-C): cut at this fraction of the window.
    /// Window end and horizon both become the cut instant, and requests
    /// scheduled after it were never sent, as the recorder writes it.
    pub cut_at: Option<f64>,
}

impl Default for Observation {
    /// 10 s warm-up, a 60 s window, 10 s grace, not cut.
    fn default() -> Self {
        Observation {
            warmup_ms: 10_000.0,
            window_ms: 60_000.0,
            grace_ms: 10_000.0,
            cut_at: None,
        }
    }
}

/// The gates of the trace's only class, `chat` (`equality: inclusive`).
#[derive(Clone, Debug)]
pub struct Gates {
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
}

/// Everything that makes one simulated run.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Free text for messages.
    pub name: String,
    pub seed: u64,
    pub arrivals: Arrivals,
    pub tokens: Tokens,
    /// Prefill time (ms) uniform on `lo..=hi` per request (`lo == hi`: fixed).
    pub prefill_ms: (f64, f64),
    /// Decode time per output token after the first (ms).
    pub per_token_ms: f64,
    pub server: Server,
    pub observe: Observation,
    pub gates: Gates,
}

/// One request as the simulated server really served it (true values,
/// also past the horizon).
#[derive(Clone, Debug)]
pub struct Served {
    pub arrival_ms: f64,
    pub prefill_ms: f64,
    pub tokens: u32,
    pub first_token_ms: f64,
    pub completed_ms: f64,
    /// It waited for a slot (FIFO) or ran below full speed at some moment
    /// (shared server).
    pub delayed: bool,
    /// Index into the phases, for a phased schedule.
    pub phase: Option<usize>,
}

/// What is true of a scenario by construction.
#[derive(Clone, Debug)]
pub struct Truth {
    /// Mean arrival rate over the observed window, per second (for `At`,
    /// the arrivals in the window per window second).
    pub offered_per_s: f64,
    /// Mean service (work) time: mean prefill + (mean tokens − 1) × per token.
    pub mean_service_ms: f64,
    /// `slots / mean service`, per second.
    pub capacity_per_s: f64,
    /// `offered / capacity`.
    pub rho: f64,
    /// `rho > 1`.
    pub overloaded: bool,
    /// Scheduled requests that were delayed (see [`Served::delayed`]).
    pub delayed: usize,
    /// For a schedule with a phase named `burst`.
    pub recovery: Option<Recovery>,
}

/// The true recovery after the burst, judged on true values with the
/// scenario's TTFT and E2E gates (inclusive) over the window's arrivals at
/// or after the burst's end.
#[derive(Clone, Debug)]
pub struct Recovery {
    pub burst_end_ms: f64,
    /// The arrival of the first request after the last miss (every later
    /// arrival met the gates); `burst_end_ms` when none missed; `None`
    /// when the last arrival missed or none arrived after the burst.
    pub recovered_at_ms: Option<f64>,
    /// The arrival of the last request that missed a gate, if any.
    pub last_miss_ms: Option<f64>,
    pub arrivals_after_burst: usize,
}

/// A simulated run: every scheduled request, the trace, the truth.
pub struct Run {
    pub requests: Vec<Served>,
    pub trace: Value,
    pub truth: Truth,
}

/// Simulates a scenario. Deterministic for its seed.
pub fn simulate(s: &Scenario) -> Run {
    let mut rng = ChaCha8Rng::seed_from_u64(s.seed);
    let planned_end = s.observe.warmup_ms + s.observe.window_ms;
    let arrivals = arrival_instants(&s.arrivals, planned_end, &mut rng);
    let (lo, hi) = s.prefill_ms;
    let mut requests: Vec<Served> = arrivals
        .into_iter()
        .map(|(arrival_ms, phase)| Served {
            arrival_ms,
            prefill_ms: if lo < hi {
                rng.random_range(lo..=hi)
            } else {
                lo
            },
            tokens: s.tokens.sample(&mut rng),
            first_token_ms: f64::NAN, // set by the server
            completed_ms: f64::NAN,
            delayed: false,
            phase,
        })
        .collect();
    // The whole planned schedule is served; a cut only stops observing (and
    // sending: later arrivals cannot change what happened before them).
    match s.server {
        Server::Fifo { slots } => fifo(&mut requests, slots, s.per_token_ms),
        Server::Shared { slots } => shared(&mut requests, slots, s.per_token_ms),
    }
    let planned = requests.len();
    let (end, _) = ends(&s.observe);
    requests.retain(|r| r.arrival_ms < end);
    let truth = truth(s, &requests);
    let trace = trace(s, &requests, planned);
    Run {
        requests,
        trace,
        truth,
    }
}

/// `(window end, horizon)` as observed; a cut instant is rounded to 1 µs,
/// as the recorder writes it.
pub fn ends(o: &Observation) -> (f64, f64) {
    let end = o.warmup_ms + o.window_ms;
    match o.cut_at {
        Some(f) => {
            let cut = ((o.warmup_ms + f * o.window_ms) * 1000.0).round() / 1000.0;
            (cut, cut)
        }
        None => (end, end + o.grace_ms),
    }
}

fn arrival_instants(a: &Arrivals, end: f64, rng: &mut ChaCha8Rng) -> Vec<(f64, Option<usize>)> {
    let mut out = Vec::new();
    // Exponential gaps; restarting at a phase boundary is exact (memoryless).
    let mut poisson = |(from, to): (f64, f64), rate: f64, phase: Option<usize>| {
        let mut t = from - (1.0 - rng.random::<f64>()).ln() * 1000.0 / rate;
        while t < to.min(end) {
            out.push((t, phase));
            t -= (1.0 - rng.random::<f64>()).ln() * 1000.0 / rate;
        }
    };
    match a {
        Arrivals::Poisson { rate_per_s } => poisson((0.0, end), *rate_per_s, None),
        Arrivals::Phased(phases) => {
            for (i, (p, span)) in phases.iter().zip(spans(phases)).enumerate() {
                poisson(span, p.rate_per_s, Some(i));
            }
        }
        Arrivals::At(v) => out.extend(v.iter().filter(|&&t| t < end).map(|&t| (t, None))),
    }
    out
}

/// Each phase's `[start, end)`, laid end to end from 0.
fn spans(phases: &[Phase]) -> Vec<(f64, f64)> {
    let mut from = 0.0;
    let span = |p: &Phase| {
        let start = from;
        from += p.duration_ms;
        (start, from)
    };
    phases.iter().map(span).collect()
}

/// FIFO over `slots` slots: each request, in arrival order, takes the slot
/// that frees first (exact M/G/c first-come-first-served).
fn fifo(requests: &mut [Served], slots: usize, per_token_ms: f64) {
    let mut free = vec![0.0_f64; slots];
    for r in requests.iter_mut() {
        let (k, at) = free
            .iter()
            .copied()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("at least one slot");
        let start = r.arrival_ms.max(at);
        r.delayed = at > r.arrival_ms;
        r.first_token_ms = start + r.prefill_ms;
        r.completed_ms = r.first_token_ms + (r.tokens - 1) as f64 * per_token_ms;
        free[k] = r.completed_ms;
    }
}

/// The shared server, event by event: between events every running request
/// progresses at `min(1, slots / n)` ms of work per ms; the next event is
/// the next arrival or the earliest crossing of a running request's next
/// threshold (its prefill work, then its whole work) at the current share.
fn shared(requests: &mut [Served], slots: usize, per_token_ms: f64) {
    let work = |r: &Served| r.prefill_ms + (r.tokens - 1) as f64 * per_token_ms;
    let (mut t, mut next) = (0.0_f64, 0);
    let mut running: Vec<(usize, f64, bool)> = Vec::new(); // (index, work done, first token seen)
    while next < requests.len() || !running.is_empty() {
        let share = (slots as f64 / running.len().max(1) as f64).min(1.0);
        let threshold = |&(i, _, seen): &(usize, f64, bool)| {
            if seen {
                work(&requests[i])
            } else {
                requests[i].prefill_ms
            }
        };
        let to_event = running
            .iter()
            .map(|j| (threshold(j) - j.1).max(0.0) / share)
            .fold(f64::INFINITY, f64::min);
        let to_arrival = requests
            .get(next)
            .map_or(f64::INFINITY, |r| r.arrival_ms - t);
        let dt = to_event.min(to_arrival);
        t += dt;
        for j in running.iter_mut() {
            j.1 += dt * share;
        }
        if to_arrival <= to_event {
            running.push((next, 0.0, false));
            next += 1;
            if running.len() > slots {
                running.iter().for_each(|j| requests[j.0].delayed = true);
            }
        }
        settle(requests, &mut running, t, work);
    }
}

/// Records the thresholds crossed at `t` (within rounding of the work
/// sums) and removes the finished requests.
fn settle(
    requests: &mut [Served],
    running: &mut Vec<(usize, f64, bool)>,
    t: f64,
    work: impl Fn(&Served) -> f64,
) {
    let reached = |done: f64, target: f64| done >= target - 1e-9 * target.max(1.0);
    running.retain_mut(|(i, done, seen)| {
        let r = &mut requests[*i];
        if !*seen && reached(*done, r.prefill_ms) {
            *seen = true;
            r.first_token_ms = t;
        }
        let finished = *seen && reached(*done, work(r));
        if finished {
            r.completed_ms = t;
        }
        !finished
    });
}

fn truth(s: &Scenario, requests: &[Served]) -> Truth {
    let (end, _) = ends(&s.observe);
    let start = s.observe.warmup_ms;
    let offered_per_s = match &s.arrivals {
        Arrivals::Poisson { rate_per_s } => *rate_per_s,
        Arrivals::Phased(phases) => {
            let overlap = |(a, b): (f64, f64)| (b.min(end) - a.max(start)).max(0.0);
            let spans = spans(phases).into_iter().map(overlap);
            let expected: f64 = phases
                .iter()
                .zip(spans)
                .map(|(p, o)| p.rate_per_s * o)
                .sum();
            expected / (end - start)
        }
        Arrivals::At(_) => {
            let n = requests.iter().filter(|r| r.arrival_ms >= start).count();
            n as f64 * 1000.0 / (end - start)
        }
    };
    let mean_prefill = (s.prefill_ms.0 + s.prefill_ms.1) / 2.0;
    let mean_service_ms = mean_prefill + (s.tokens.mean() - 1.0) * s.per_token_ms;
    let capacity_per_s = s.server.slots() as f64 * 1000.0 / mean_service_ms;
    let rho = offered_per_s / capacity_per_s;
    Truth {
        offered_per_s,
        mean_service_ms,
        capacity_per_s,
        rho,
        overloaded: rho > 1.0,
        delayed: requests.iter().filter(|r| r.delayed).count(),
        recovery: recovery(s, requests, end),
    }
}

fn recovery(s: &Scenario, requests: &[Served], end: f64) -> Option<Recovery> {
    let Arrivals::Phased(phases) = &s.arrivals else {
        return None;
    };
    let burst = phases.iter().position(|p| p.name == "burst")?;
    let burst_end_ms = spans(phases)[burst].1;
    let meets = |r: &Served| {
        s.gates
            .ttft_ms
            .is_none_or(|g| r.first_token_ms - r.arrival_ms <= g)
            && s.gates
                .e2e_ms
                .is_none_or(|g| r.completed_ms - r.arrival_ms <= g)
    };
    let after: Vec<&Served> = requests
        .iter()
        .filter(|r| r.arrival_ms >= burst_end_ms && r.arrival_ms < end)
        .collect();
    let last_miss = after.iter().rposition(|r| !meets(r));
    let recovered_at_ms = match last_miss {
        None if after.is_empty() => None,
        None => Some(burst_end_ms),
        Some(i) => after.get(i + 1).map(|r| r.arrival_ms),
    };
    Some(Recovery {
        burst_end_ms,
        recovered_at_ms,
        last_miss_ms: last_miss.map(|i| after[i].arrival_ms),
        arrivals_after_burst: after.len(),
    })
}

/// The `goodput-trace/1` document of a run, as the recorder would write it.
fn trace(s: &Scenario, requests: &[Served], planned: usize) -> Value {
    let o = &s.observe;
    let (end, horizon) = ends(o);
    let phases = match &s.arrivals {
        Arrivals::Phased(p) => p.as_slice(),
        _ => &[],
    };
    let rows: Vec<Value> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| row(i, r, horizon, r.phase.map(|p| phases[p].name.as_str())))
        .collect();
    let mut doc = json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": o.warmup_ms, "endMs": end, "horizonMs": horizon},
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": s.gates.ttft_ms, "tpotMs": s.gates.tpot_ms, "e2eMs": s.gates.e2e_ms}},
        "tokens": "usage",
        "boundary": {"arrival": "scheduled", "tokens": "client"},
        "workload": workload(s, requests.len(), planned),
    });
    if o.warmup_ms > 0.0 {
        doc["warmup"] = json!({"startMs": 0.0, "endMs": o.warmup_ms});
    }
    if !phases.is_empty() {
        let phase = |(p, (a, b)): (&Phase, _)| json!({"name": p.name, "startMs": a, "endMs": b, "ratePerS": p.rate_per_s});
        doc["phases"] = phases.iter().zip(spans(phases)).map(phase).collect();
    }
    doc["rows"] = Value::Array(rows);
    doc
}

/// A row: `completed` when it ended by the horizon, else `in_flight` with
/// its first token only when that came by the horizon.
fn row(i: usize, r: &Served, horizon: f64, phase: Option<&str>) -> Value {
    let (id, arrival) = (format!("r{i}"), r.arrival_ms);
    let mut row = if r.completed_ms <= horizon {
        json!({"id": id, "arrivalMs": arrival, "status": "completed", "firstTokenMs": r.first_token_ms,
               "completedMs": r.completed_ms, "outputTokens": r.tokens})
    } else if r.first_token_ms <= horizon {
        json!({"id": id, "arrivalMs": arrival, "status": "in_flight", "firstTokenMs": r.first_token_ms})
    } else {
        json!({"id": id, "arrivalMs": arrival, "status": "in_flight"})
    };
    if let Some(p) = phase {
        row["labels"] = json!({ "phase": p });
    }
    row
}

/// The workload labels, with the recorder's members of an interrupted run.
fn workload(s: &Scenario, scheduled: usize, planned: usize) -> Value {
    let mut w = json!({
        "arrival": if matches!(s.arrivals, Arrivals::At(_)) { "explicit" } else { "poisson" },
        "seed": s.seed,
        "scheduled": scheduled,
        "server": match s.server { Server::Fifo { .. } => "fifo", Server::Shared { .. } => "shared" },
        "slots": s.server.slots(),
    });
    if let Arrivals::Poisson { rate_per_s } = s.arrivals {
        w["ratePerS"] = json!(rate_per_s);
    }
    if s.observe.cut_at.is_some() {
        let (cut, _) = ends(&s.observe);
        w["interrupted"] = json!(true);
        w["interruptedAtMs"] = json!(cut);
        w["plannedScheduled"] = json!(planned);
        w["plannedWindowEndMs"] = json!(s.observe.warmup_ms + s.observe.window_ms);
    }
    w
}
