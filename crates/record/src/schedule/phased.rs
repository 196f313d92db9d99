//! Phased open-loop schedules: `steady:10/s:60s,burst:40/s:10s,recover:10/s:60s`
//! is still one seeded schedule, with an arrival rate that is constant within
//! each phase and changes at the phase boundaries.
//!
//! The schedule is drawn in *operational time* — the expected number of
//! arrivals so far, `Λ(t) = ∫ λ` — and mapped back to clock time through the
//! piecewise-linear inverse of `Λ` (the time-rescaling construction of a
//! non-homogeneous process). In operational time the processes are the usual
//! ones at rate 1:
//! - `constant`: arrivals at `s = 0, 1, 2, …`;
//! - `poisson`: unit-mean exponential gaps;
//! - `gamma`: gamma gaps with shape `B` and scale `1/B` (mean 1, CV `1/√B`).
//!
//! So within a phase of rate `R` the gaps are exactly what `--request-rate R`
//! draws, and a gap that straddles a boundary is split in proportion to the
//! two rates. A phase of rate 0 is a pause (no arrivals). The warm-up, when
//! there is one, runs at the first phase's rate and is not a phase. The
//! generator is ChaCha8 seeded with `seed_from_u64(seed)`, as in
//! [`crate::schedule`].

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp1, Gamma};

use goodput_core::trace::write::TraceRow;
use goodput_core::trace::{Phase, Scalar};

use crate::schedule::{ArrivalProcess, ScheduleError, MAX_SCHEDULED};

/// The row label that names a row's phase.
pub const PHASE_LABEL: &str = "phase";

/// One phase as asked for: a name, a rate and a length.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseSpec {
    /// The phase's name (unique in the schedule).
    pub name: String,
    /// Arrivals per second during the phase (0: a pause).
    pub rate_per_s: f64,
    /// Length of the phase, ms (> 0).
    pub duration_ms: f64,
}

/// A phased schedule: every send instant, and the phases as the trace declares them.
#[derive(Clone, Debug, PartialEq)]
pub struct PhasedSchedule {
    /// Send instants in ms after t0, ascending, all before `window_end_ms`.
    pub arrivals_ms: Vec<f64>,
    /// The phases on the trace's clock: the first starts at the window start.
    pub phases: Vec<Phase>,
    /// Warm-up plus every phase's length: where the window ends.
    pub window_end_ms: f64,
}

/// A stretch of constant rate: `[start_ms, end_ms)` at `rate_per_s`, with
/// `lambda_start` expected arrivals before it.
struct Segment {
    start_ms: f64,
    end_ms: f64,
    rate_per_s: f64,
    lambda_start: f64,
}

impl Segment {
    fn lambda_end(&self) -> f64 {
        self.lambda_start + self.rate_per_s * (self.end_ms - self.start_ms) / 1000.0
    }
}

/// Builds the schedule of `phases` after a warm-up of `warmup_ms` (at the
/// first phase's rate).
pub fn phased_schedule(
    process: ArrivalProcess,
    burstiness: f64,
    seed: u64,
    warmup_ms: f64,
    phases: &[PhaseSpec],
) -> Result<PhasedSchedule, ScheduleError> {
    let first = phases.first().ok_or(ScheduleError::BadRate(0.0))?;
    if let Some(p) = phases
        .iter()
        .find(|p| !(p.rate_per_s.is_finite() && p.rate_per_s >= 0.0))
    {
        return Err(ScheduleError::BadRate(p.rate_per_s));
    }
    if phases.iter().all(|p| p.rate_per_s == 0.0) {
        return Err(ScheduleError::BadRate(0.0));
    }
    if !(burstiness.is_finite() && burstiness > 0.0) {
        return Err(ScheduleError::BadBurstiness(burstiness));
    }
    let mut segments = Vec::with_capacity(phases.len() + 1);
    let mut declared = Vec::with_capacity(phases.len());
    let mut lambda = 0.0;
    let mut t = 0.0;
    let mut push = |segments: &mut Vec<Segment>, t: &mut f64, len_ms: f64, rate: f64| {
        let s = Segment {
            start_ms: *t,
            end_ms: *t + len_ms,
            rate_per_s: rate,
            lambda_start: lambda,
        };
        lambda = s.lambda_end();
        *t = s.end_ms;
        segments.push(s);
    };
    if warmup_ms > 0.0 {
        push(&mut segments, &mut t, warmup_ms, first.rate_per_s);
    }
    for p in phases {
        let start_ms = t;
        push(&mut segments, &mut t, p.duration_ms, p.rate_per_s);
        declared.push(Phase {
            name: p.name.clone(),
            start_ms,
            end_ms: t,
            rate_per_s: Some(p.rate_per_s),
        });
    }
    let total = segments.last().map_or(0.0, Segment::lambda_end);
    if total > MAX_SCHEDULED as f64 * 0.9 {
        return Err(ScheduleError::TooMany);
    }
    let operational = operational_instants(process, burstiness, seed, total)?;
    let arrivals_ms = operational
        .into_iter()
        .filter_map(|s| clock_time(&segments, s))
        .collect();
    Ok(PhasedSchedule {
        arrivals_ms,
        phases: declared,
        window_end_ms: t,
    })
}

/// Arrival instants in operational time, all `< total`.
fn operational_instants(
    process: ArrivalProcess,
    burstiness: f64,
    seed: u64,
    total: f64,
) -> Result<Vec<f64>, ScheduleError> {
    let mut out = Vec::with_capacity(total.ceil() as usize + 16);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let gamma = Gamma::new(burstiness, 1.0 / burstiness)
        .map_err(|_| ScheduleError::BadBurstiness(burstiness))?;
    let mut s: f64 = 0.0;
    let mut i = 0u64;
    loop {
        let next = match process {
            // Multiply instead of accumulating, so no rounding drift builds up.
            ArrivalProcess::Constant => i as f64,
            ArrivalProcess::Poisson => {
                let gap: f64 = Exp1.sample(&mut rng);
                s + gap
            }
            ArrivalProcess::Gamma => s + gamma.sample(&mut rng),
        };
        if next >= total {
            return Ok(out);
        }
        if out.len() >= MAX_SCHEDULED {
            return Err(ScheduleError::TooMany);
        }
        out.push(next);
        s = next;
        i += 1;
    }
}

/// The clock instant at which `Λ` reaches `s`: inside the first segment of
/// positive rate whose `[Λ start, Λ end)` holds `s` (pauses are skipped).
fn clock_time(segments: &[Segment], s: f64) -> Option<f64> {
    segments
        .iter()
        .filter(|seg| seg.rate_per_s > 0.0)
        .find(|seg| seg.lambda_start <= s && s < seg.lambda_end())
        .map(|seg| {
            let t = seg.start_ms + (s - seg.lambda_start) * 1000.0 / seg.rate_per_s;
            // Rounding can land a hair past the segment; keep it inside.
            t.min(seg.end_ms).max(seg.start_ms)
        })
        .filter(|&t| segments.last().is_some_and(|last| t < last.end_ms))
}

/// Labels every row whose arrival falls in a phase with that phase's name
/// (`labels.phase`); warm-up rows and rows outside every phase stay unlabelled.
pub fn label_rows(rows: &mut [TraceRow], phases: &[Phase]) {
    if phases.is_empty() {
        return;
    }
    for row in rows {
        if let Some(p) = phases.iter().find(|p| p.contains(row.arrival_ms)) {
            row.labels
                .insert(PHASE_LABEL.to_owned(), Scalar::String(p.name.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, rate: f64, s: f64) -> PhaseSpec {
        PhaseSpec {
            name: name.into(),
            rate_per_s: rate,
            duration_ms: s * 1000.0,
        }
    }

    #[test]
    fn constant_phases_space_arrivals_by_each_phase_rate() {
        // Operational time: steady 1 s at 4/s holds s = 0..4 at 0, 250, 500,
        // 750 ms; the burst (8/s for 0.5 s) holds s in [4, 8): 1000 + (s−4)·125
        // = 1000, 1125, 1250, 1375; recover (2/s for 1 s) holds s in [8, 10):
        // 1500 + (s−8)·500 = 1500, 2000.
        let s = phased_schedule(
            ArrivalProcess::Constant,
            1.0,
            0,
            0.0,
            &[
                spec("steady", 4.0, 1.0),
                spec("burst", 8.0, 0.5),
                spec("recover", 2.0, 1.0),
            ],
        )
        .unwrap();
        assert_eq!(
            s.arrivals_ms,
            vec![0.0, 250.0, 500.0, 750.0, 1000.0, 1125.0, 1250.0, 1375.0, 1500.0, 2000.0]
        );
        assert_eq!(s.window_end_ms, 2500.0);
        let bounds: Vec<(f64, f64)> = s.phases.iter().map(|p| (p.start_ms, p.end_ms)).collect();
        assert_eq!(
            bounds,
            vec![(0.0, 1000.0), (1000.0, 1500.0), (1500.0, 2500.0)]
        );
        assert_eq!(s.phases[1].rate_per_s, Some(8.0));
    }

    #[test]
    fn a_straddling_gap_is_split_in_proportion_and_a_pause_has_no_arrivals() {
        // A warm-up of 500 ms at the first rate (3/s) holds Λ in [0, 1.5):
        // s = 0, 1 at 0 and 333.3 ms. Phase a (3/s, 500..1500 ms) holds Λ in
        // [1.5, 4.5): s = 2, 3, 4 at 500 + (s − 1.5)·1000/3. The pause
        // (1500..2500 ms) holds nothing. Phase b (2/s, 2500..3500 ms) holds
        // Λ in [4.5, 6.5): s = 5, 6 at 2500 + (s − 4.5)·500 = 2750, 3250.
        let s = phased_schedule(
            ArrivalProcess::Constant,
            1.0,
            0,
            500.0,
            &[
                spec("a", 3.0, 1.0),
                spec("pause", 0.0, 1.0),
                spec("b", 2.0, 1.0),
            ],
        )
        .unwrap();
        let want = [
            0.0,
            1000.0 / 3.0,
            500.0 + 0.5 * 1000.0 / 3.0,
            500.0 + 1.5 * 1000.0 / 3.0,
            500.0 + 2.5 * 1000.0 / 3.0,
            2750.0,
            3250.0,
        ];
        assert_eq!(s.arrivals_ms.len(), want.len(), "{:?}", s.arrivals_ms);
        for (got, want) in s.arrivals_ms.iter().zip(want) {
            assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        }
        assert_eq!(s.phases[0].start_ms, 500.0);
        assert!(s.arrivals_ms.iter().all(|t| !(1500.0..2500.0).contains(t)));
    }

    #[test]
    fn poisson_phases_keep_each_phase_mean_rate_and_the_seed_fixes_the_draw() {
        let phases = [spec("low", 20.0, 100.0), spec("high", 200.0, 100.0)];
        let a = phased_schedule(ArrivalProcess::Poisson, 1.0, 9, 0.0, &phases).unwrap();
        let b = phased_schedule(ArrivalProcess::Poisson, 1.0, 9, 0.0, &phases).unwrap();
        assert_eq!(a, b);
        let low = a.arrivals_ms.iter().filter(|t| **t < 100_000.0).count() as f64;
        let high = a.arrivals_ms.len() as f64 - low;
        // Counts are Poisson(2000) and Poisson(20000): ±5 standard deviations.
        assert!((low - 2000.0).abs() < 5.0 * 2000f64.sqrt(), "{low}");
        assert!((high - 20_000.0).abs() < 5.0 * 20_000f64.sqrt(), "{high}");
        assert!(a.arrivals_ms.windows(2).all(|w| w[0] <= w[1]));
        assert!(a.arrivals_ms.iter().all(|t| *t < 200_000.0));
    }

    #[test]
    fn rows_get_the_name_of_the_phase_they_arrived_in() {
        let phases = vec![
            Phase {
                name: "steady".into(),
                start_ms: 100.0,
                end_ms: 200.0,
                rate_per_s: None,
            },
            Phase {
                name: "burst".into(),
                start_ms: 200.0,
                end_ms: 300.0,
                rate_per_s: None,
            },
        ];
        let row = |t: f64| {
            TraceRow::new(
                "r".into(),
                t,
                goodput_core::trace::write::RowStatus::InFlight,
                Default::default(),
            )
        };
        let mut rows = vec![row(50.0), row(100.0), row(199.9), row(200.0), row(300.0)];
        label_rows(&mut rows, &phases);
        let names: Vec<Option<&Scalar>> = rows.iter().map(|r| r.labels.get(PHASE_LABEL)).collect();
        let s = |n: &str| Some(Scalar::String(n.into()));
        assert_eq!(
            names,
            vec![
                None,
                s("steady").as_ref(),
                s("steady").as_ref(),
                s("burst").as_ref(),
                None
            ]
        );
    }

    #[test]
    fn all_pauses_or_bad_rates_are_refused() {
        assert!(
            phased_schedule(ArrivalProcess::Poisson, 1.0, 0, 0.0, &[spec("p", 0.0, 1.0)]).is_err()
        );
        assert!(phased_schedule(
            ArrivalProcess::Poisson,
            1.0,
            0,
            0.0,
            &[spec("p", -1.0, 1.0)]
        )
        .is_err());
        assert_eq!(
            phased_schedule(
                ArrivalProcess::Constant,
                1.0,
                0,
                0.0,
                &[spec("p", 1e9, 60.0)]
            ),
            Err(ScheduleError::TooMany)
        );
    }
}
