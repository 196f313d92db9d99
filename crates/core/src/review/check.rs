//! One criterion's line, as every gate prints it: its own module, below
//! the criteria and each family of checks (the stall checks among them), so
//! those can build lines without importing one another.

use schemars::JsonSchema;
use serde::Serialize;

/// One criterion's line.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// What is measured, e.g. `goodput/s`.
    pub name: &'static str,
    /// The measured value (null: not measurable, which fails).
    pub measured: Option<f64>,
    /// `>` or `<=`.
    pub comparison: &'static str,
    /// The limit.
    pub limit: f64,
    /// How the limit was derived, when it is not given directly.
    pub derivation: Option<String>,
    /// Whether the criterion holds.
    pub pass: bool,
    /// The class a `--class-limits` criterion judges (absent: the decision's scope).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Where a release criterion's figure comes from, or why it is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
