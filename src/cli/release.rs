//! Flags of the release-gate figures, shared by several commands: the phases
//! of `record --phases`, the recovery options (`--burst-phase`,
//! `--recovery-tolerance`) of `analyze`, `report` and `gate`, and the hardware
//! (`--gpus`, `--gpu-hour-cost`) of `record`, `analyze`, `report` and
//! `compare`. Only parsing lives here; the figures are the library's
//! (`receipt::release`).

use crate::cli::error::Error;
use goodput_core::receipt::recovery::{RecoveryOptions, DEFAULT_BURST_PHASE, DEFAULT_TOLERANCE};
use goodput_core::receipt::release::ReleaseOptions;
use goodput_core::trace::Resources;
use goodput_record::schedule::phased::PhaseSpec;

use crate::cli::duration::parse_duration;

/// Parses `--phases NAME:RATE/s:DURATION[,…]` (`/s` may be left out).
pub fn parse_phases(text: &str) -> Result<Vec<PhaseSpec>, String> {
    let mut out: Vec<PhaseSpec> = Vec::new();
    for part in text.split(',').map(str::trim) {
        let bad = |why: &str| {
            format!("--phases: `{part}` {why} (expected NAME:RATE/s:DURATION, e.g. burst:40/s:10s)")
        };
        let fields: Vec<&str> = part.split(':').map(str::trim).collect();
        let [name, rate, duration] = fields.as_slice() else {
            return Err(bad("is not three fields"));
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(bad("needs a name of letters, digits, `_` or `-`"));
        }
        if out.iter().any(|p| p.name == *name) {
            return Err(bad("repeats a phase name"));
        }
        let rate_per_s = rate
            .strip_suffix("/s")
            .unwrap_or(rate)
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|r| r.is_finite() && *r >= 0.0)
            .ok_or_else(|| bad("has no rate >= 0 requests per second"))?;
        let duration = parse_duration(duration).map_err(|e| bad(&e))?;
        if duration.is_zero() {
            return Err(bad("has a length of 0"));
        }
        out.push(PhaseSpec {
            name: (*name).to_owned(),
            rate_per_s,
            duration_ms: duration.as_secs_f64() * 1000.0,
        });
    }
    if out.iter().all(|p| p.rate_per_s == 0.0) {
        return Err("--phases: at least one phase needs a rate above 0".to_owned());
    }
    Ok(out)
}

/// The recovery options of `analyze`, `report` and `gate`.
#[derive(Debug, Clone, clap::Args)]
pub struct RecoveryArgs {
    /// The phase whose end the recovery time counts from (default `burst`;
    /// naming a phase the trace does not declare is an error).
    #[arg(long, value_name = "NAME")]
    pub burst_phase: Option<String>,
    /// Misses allowed among a class's arrivals from its recovery instant on
    /// (0: every later arrival must meet the TTFT and E2E gates).
    #[arg(long, value_name = "K", default_value_t = DEFAULT_TOLERANCE)]
    pub recovery_tolerance: u64,
    /// The removed rolling window: refused, so that an old script does not
    /// silently get a different figure.
    #[arg(
        long,
        value_name = "N",
        hide = true,
        allow_hyphen_values = true,
        num_args = 0..=1,
        default_missing_value = ""
    )]
    pub recovery_window: Option<String>,
}

impl RecoveryArgs {
    /// The library's options.
    pub fn options(&self) -> Result<RecoveryOptions, Error> {
        if self.recovery_window.is_some() {
            return Err(Error::Usage(
                "--recovery-window was removed: recovery is now the first arrival after the last \
                 miss (docs/contract.md §10.10); use --recovery-tolerance K to allow K misses after it"
                    .into(),
            ));
        }
        Ok(RecoveryOptions {
            burst_phase: self
                .burst_phase
                .clone()
                .unwrap_or_else(|| DEFAULT_BURST_PHASE.to_owned()),
            required: self.burst_phase.is_some(),
            tolerance: self.recovery_tolerance,
        })
    }
}

/// The hardware flags of `record`, `analyze`, `report` and `compare`.
#[derive(Debug, Clone, clap::Args)]
pub struct CostArgs {
    /// GPUs behind the endpoint: adds per-GPU figures (given to a reviewer
    /// command, replaces what the trace declares; recorded in the receipt).
    #[arg(long, value_name = "N")]
    pub gpus: Option<f64>,
    /// Price of one GPU-hour (any currency): adds the cost of good work. Needs --gpus
    /// (here or declared by the trace).
    #[arg(long, value_name = "PRICE")]
    pub gpu_hour_cost: Option<f64>,
}

impl CostArgs {
    /// The resources the flags give (`None`: no `--gpus`); a price without
    /// `--gpus` is kept as a price for the trace's declared GPUs.
    pub fn resources(&self) -> Result<Option<ResourcesFlag>, Error> {
        let check = |r: Resources| {
            r.check()
                .map_err(|e| Error::Usage(format!("--gpus / --gpu-hour-cost: {e}")))
        };
        match (self.gpus, self.gpu_hour_cost) {
            (None, None) => Ok(None),
            (Some(gpus), price) => {
                let r = Resources {
                    gpus,
                    gpu_hour_cost: price,
                };
                check(r)?;
                Ok(Some(ResourcesFlag::Both(r)))
            }
            (None, Some(price)) => {
                check(Resources {
                    gpus: 1.0,
                    gpu_hour_cost: Some(price),
                })?;
                Ok(Some(ResourcesFlag::PriceOnly(price)))
            }
        }
    }
}

/// What the hardware flags said.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ResourcesFlag {
    /// `--gpus` (and maybe a price).
    Both(Resources),
    /// Only `--gpu-hour-cost`: a price for the GPUs the trace declares.
    PriceOnly(f64),
}

/// The release options of a reviewer command from its flags.
pub fn release_options(
    recovery: Option<&RecoveryArgs>,
    cost: Option<&CostArgs>,
) -> Result<ReleaseOptions, Error> {
    let recovery = match recovery {
        Some(r) => r.options()?,
        None => RecoveryOptions::default(),
    };
    let (resources, price) = match cost.map(CostArgs::resources).transpose()?.flatten() {
        None => (None, None),
        Some(ResourcesFlag::Both(r)) => (Some(r), None),
        Some(ResourcesFlag::PriceOnly(p)) => (None, Some(p)),
    };
    Ok(ReleaseOptions {
        recovery,
        resources,
        price_only: price,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_read_names_rates_and_lengths() {
        let p = parse_phases("steady:10/s:60s, burst:40/s:10s,recover:10:500ms").unwrap();
        let got: Vec<(&str, f64, f64)> = p
            .iter()
            .map(|p| (p.name.as_str(), p.rate_per_s, p.duration_ms))
            .collect();
        assert_eq!(
            got,
            vec![
                ("steady", 10.0, 60_000.0),
                ("burst", 40.0, 10_000.0),
                ("recover", 10.0, 500.0)
            ]
        );
    }

    #[test]
    fn bad_phases_say_which_part_is_wrong() {
        for (text, part) in [
            ("steady:10/s", "`steady:10/s`"),
            ("a:10/s:1s,a:5/s:1s", "`a:5/s:1s`"),
            ("a:x/s:1s", "`a:x/s:1s`"),
            ("a:-1/s:1s", "`a:-1/s:1s`"),
            ("a:1/s:0s", "`a:1/s:0s`"),
            ("a b:1/s:1s", "`a b:1/s:1s`"),
            ("a:1/s:1y", "`a:1/s:1y`"),
        ] {
            let e = parse_phases(text).unwrap_err();
            assert!(e.contains(part), "{text}: {e}");
        }
        assert!(parse_phases("a:0/s:1s").unwrap_err().contains("above 0"));
    }
}
