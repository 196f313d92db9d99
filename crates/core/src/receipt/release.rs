//! The release-gate additions of a receipt, attached after the counts:
//! recovery after the burst phase ([`crate::receipt::recovery`]) and the per-GPU and
//! cost figures ([`crate::receipt::cost`]) with the resources in force recorded in
//! the contract.
//!
//! Every analysis attaches them with the default options (the trace's own
//! `burst` phase and declared resources); a command given `--burst-phase`,
//! `--recovery-tolerance`, `--gpus` or `--gpu-hour-cost` attaches them again
//! with its options, which replaces the defaults. Pure: no I/O.

use crate::trace::{Resources, Trace};
use crate::verdict::Judgement;

use crate::receipt::cost::{cost, ResourcesInfo};
use crate::receipt::recovery::{recovery, RecoveryError, RecoveryOptions};
use crate::receipt::Receipt;

/// What a reviewer command asked of the release figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReleaseOptions {
    /// How recovery is measured.
    pub recovery: RecoveryOptions,
    /// `--gpus` (with its price, if any): replaces what the trace declares.
    pub resources: Option<Resources>,
    /// `--gpu-hour-cost` alone: a price for the GPUs the trace declares.
    pub price_only: Option<f64>,
}

/// Why the release figures cannot be attached (a usage error).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReleaseError {
    /// The recovery options do not fit the trace.
    #[error(transparent)]
    Recovery(#[from] RecoveryError),
    /// A price was given but no GPU count is known.
    #[error("--gpu-hour-cost needs --gpus: the trace declares no resources")]
    PriceWithoutGpus,
}

/// The resources in force: the options' GPUs, else the trace's (with the
/// options' price when only a price was given).
pub fn resources_in_force(
    trace: &Trace,
    options: &ReleaseOptions,
) -> Result<Option<ResourcesInfo>, ReleaseError> {
    let declared = trace.contract.resources;
    let info = |r: Resources, source: &str| ResourcesInfo {
        gpus: r.gpus,
        gpu_hour_cost: r.gpu_hour_cost,
        source: source.to_owned(),
    };
    Ok(match (options.resources, options.price_only, declared) {
        (Some(r), _, _) => Some(info(r, "options")),
        (None, Some(price), Some(d)) => Some(info(
            Resources {
                gpus: d.gpus,
                gpu_hour_cost: Some(price),
            },
            "trace+options",
        )),
        (None, Some(_), None) => return Err(ReleaseError::PriceWithoutGpus),
        (None, None, Some(d)) => Some(info(d, "trace")),
        (None, None, None) => None,
    })
}

/// Sets the receipt's `recovery`, `contract.resources` and `cost` from the
/// trace, its judgements and `options` (replacing what was there).
pub fn attach(
    receipt: &mut Receipt,
    trace: &Trace,
    judgements: &[Judgement],
    options: &ReleaseOptions,
) -> Result<(), ReleaseError> {
    receipt.recovery = recovery(trace, judgements, &options.recovery)?;
    let resources = resources_in_force(trace, options)?;
    receipt.cost = resources.as_ref().map(|r| {
        cost(
            &receipt.results.all,
            r.resources(),
            trace.contract.window_s(),
        )
    });
    receipt.contract.resources = resources;
    Ok(())
}
