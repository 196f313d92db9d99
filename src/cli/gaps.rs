//! The stall flags of `goodput gate` (docs/contract.md §10.15).

use goodput_core::review::gap_gate::GapLimits;

/// `--max-stall-ms` and `--max-p99-gap-ms`.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct GapArgs {
    /// Most the largest gap between token-carrying events of any judged row
    /// may be, ms (fails when no row carries gapsMs).
    #[arg(long, value_name = "MS")]
    pub max_stall_ms: Option<f64>,
    /// Most the p99 of the judged rows' pooled gaps may be, ms (fails when
    /// no row carries gapsMs).
    #[arg(long, value_name = "MS")]
    pub max_p99_gap_ms: Option<f64>,
}

impl GapArgs {
    /// The limits the gate checks.
    pub fn limits(self) -> GapLimits {
        GapLimits {
            max_stall_ms: self.max_stall_ms,
            max_p99_gap_ms: self.max_p99_gap_ms,
        }
    }
}
