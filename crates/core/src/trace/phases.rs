//! What a phased recording and a priced deployment declare at the top of a
//! trace: the load phases with their boundaries (`phases`) and the hardware
//! the run used (`resources`). Both are optional, same-major additions
//! (docs/contract.md §10.10); a trace without them reads exactly as before.
//!
//! Phases name stretches of one open-loop schedule (`steady`, `burst`,
//! `recover`); the receipt's recovery figure measures from the end of the
//! phase named as the burst. Resources turn rates into per-GPU figures and,
//! with a price, into the cost of good work.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::trace::bounds::{MAX_ABS_TIMESTAMP_MS, MAX_ID_CHARS, MAX_SPAN_MS};
use crate::trace::{only_fields, Rejection};

/// The most GPUs a trace or a flag may declare (a guard against typos such as `8e9`).
pub const MAX_GPUS: f64 = 1e6;

/// One named stretch of the schedule, `[startMs, endMs)` on the trace's clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Phase {
    /// The phase's name (non-empty, at most 128 code points, unique in the trace).
    pub name: String,
    /// First instant of the phase (inclusive), ms.
    #[schemars(range(min = -1e15, max = 1e15))]
    pub start_ms: f64,
    /// End of the phase (exclusive), ms; greater than `startMs`.
    #[schemars(range(min = -1e15, max = 1e15))]
    pub end_ms: f64,
    /// The scheduled arrival rate of the phase, requests per second (informative).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
}

impl Phase {
    /// Whether an arrival falls in the half-open phase.
    pub fn contains(&self, t_ms: f64) -> bool {
        self.start_ms <= t_ms && t_ms < self.end_ms
    }
}

/// The hardware behind the run: how many GPUs served it and, optionally,
/// what one GPU-hour costs (in any currency; the receipt does not name one).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resources {
    /// GPUs serving the endpoint during the window (> 0; fractions allowed for shared GPUs).
    #[schemars(range(min = 0, max = 1e6))]
    pub gpus: f64,
    /// Price of one GPU-hour, or null when unknown.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub gpu_hour_cost: Option<f64>,
}

impl Resources {
    /// Checks the ranges: `gpus` in (0, 10^6], a price finite and >= 0.
    /// The message names the field as a flag user or a trace author knows it.
    pub fn check(&self) -> Result<(), ResourcesError> {
        if !(self.gpus.is_finite() && self.gpus > 0.0 && self.gpus <= MAX_GPUS) {
            return Err(ResourcesError::Gpus(self.gpus));
        }
        if let Some(p) = self.gpu_hour_cost {
            if !(p.is_finite() && p >= 0.0) {
                return Err(ResourcesError::GpuHourCost(p));
            }
        }
        Ok(())
    }
}

/// A [`Resources`] field out of its range, named as a flag user or a trace
/// author knows it.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum ResourcesError {
    /// `gpus` is not a number of GPUs in (0, 10^6].
    #[error("gpus is {0}; it must be a number of GPUs in (0, 1000000]")]
    Gpus(f64),
    /// `gpuHourCost` is not a finite price >= 0.
    #[error("gpuHourCost is {0}; it must be a finite price >= 0")]
    GpuHourCost(f64),
}

impl ResourcesError {
    /// The trace field at fault (`gpus` or `gpuHourCost`).
    pub fn field(&self) -> &'static str {
        match self {
            ResourcesError::Gpus(_) => "gpus",
            ResourcesError::GpuHourCost(_) => "gpuHourCost",
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn as_object<'v>(v: &'v Value, ptr: &str) -> Result<&'v Map<String, Value>, Rejection> {
    v.as_object()
        .ok_or_else(|| Rejection::at(ptr, format_args!("must be an object, found {}", kind(v))))
}

/// A number member: `Ok(None)` when absent or null.
fn number(obj: &Map<String, Value>, ptr: &str, key: &str) -> Result<Option<f64>, Rejection> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_f64().map(Some).ok_or_else(|| {
            Rejection::at(
                format!("{ptr}/{key}"),
                format_args!("must be a number, found {}", kind(v)),
            )
        }),
    }
}

fn instant(obj: &Map<String, Value>, ptr: &str, key: &str) -> Result<f64, Rejection> {
    let t = number(obj, ptr, key)?.ok_or_else(|| {
        Rejection::at(
            format!("{ptr}/{key}"),
            "is missing (a number of ms is required)",
        )
    })?;
    if t.abs() > MAX_ABS_TIMESTAMP_MS {
        return Err(Rejection::at(
            format!("{ptr}/{key}"),
            format_args!("is {t}, out of range: a timestamp must be within ±10^15 ms"),
        ));
    }
    Ok(t)
}

/// `phases` (absent or null: none): an array of `{name, startMs, endMs,
/// ratePerS?}` with unique non-empty names, `startMs < endMs`, at most 24 h
/// each, in time order without overlap (a phase starts at or after the
/// previous one's end).
pub fn validate_phases(v: Option<&Value>) -> Result<Vec<Phase>, Rejection> {
    let items = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(Rejection::at(
                "/phases",
                format_args!("must be an array, found {}", kind(other)),
            ))
        }
    };
    let mut out: Vec<Phase> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let ptr = format!("/phases/{i}");
        let obj = as_object(item, &ptr)?;
        only_fields(obj, &ptr, &["name", "startMs", "endMs", "ratePerS"])?;
        let name = match obj.get("name") {
            Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= MAX_ID_CHARS => {
                s.clone()
            }
            Some(Value::String(_)) => {
                return Err(Rejection::at(
                    format!("{ptr}/name"),
                    "must be a non-empty string of at most 128 characters",
                ))
            }
            Some(other) => {
                return Err(Rejection::at(
                    format!("{ptr}/name"),
                    format_args!("must be a string, found {}", kind(other)),
                ))
            }
            None => return Err(Rejection::at(format!("{ptr}/name"), "is missing")),
        };
        if out.iter().any(|p| p.name == name) {
            return Err(Rejection::at(
                format!("{ptr}/name"),
                format_args!("{name:?} names an earlier phase too (phase names are unique)"),
            ));
        }
        let start_ms = instant(obj, &ptr, "startMs")?;
        let end_ms = instant(obj, &ptr, "endMs")?;
        if end_ms <= start_ms || end_ms - start_ms > MAX_SPAN_MS {
            return Err(Rejection::at(
                format!("{ptr}/endMs"),
                format_args!(
                    "is {end_ms}; it must be after startMs ({start_ms}) and at most 24 h after it"
                ),
            ));
        }
        if let Some(prev) = out.last() {
            if start_ms < prev.end_ms {
                return Err(Rejection::at(
                    format!("{ptr}/startMs"),
                    format_args!(
                        "is {start_ms}, before the previous phase ends ({}): phases are in time order and do not overlap",
                        prev.end_ms
                    ),
                ));
            }
        }
        let rate_per_s = number(obj, &ptr, "ratePerS")?;
        if let Some(r) = rate_per_s.filter(|r| !(r.is_finite() && *r >= 0.0)) {
            return Err(Rejection::at(
                format!("{ptr}/ratePerS"),
                format_args!("is {r}; it must be a finite rate >= 0"),
            ));
        }
        out.push(Phase {
            name,
            start_ms,
            end_ms,
            rate_per_s,
        });
    }
    Ok(out)
}

/// `resources` (absent or null: none): `{gpus, gpuHourCost?}`.
pub fn validate_resources(v: Option<&Value>) -> Result<Option<Resources>, Rejection> {
    let obj = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => as_object(v, "/resources")?,
    };
    only_fields(obj, "/resources", &["gpus", "gpuHourCost"])?;
    let gpus = number(obj, "/resources", "gpus")?
        .ok_or_else(|| Rejection::at("/resources/gpus", "is missing (a number of GPUs)"))?;
    let resources = Resources {
        gpus,
        gpu_hour_cost: number(obj, "/resources", "gpuHourCost")?,
    };
    resources
        .check()
        .map_err(|e| Rejection::at(format!("/resources/{}", e.field()), e))?;
    Ok(Some(resources))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn phases_in_order_are_read_with_their_rates() {
        let v = json!([
            {"name": "steady", "startMs": 0, "endMs": 1000, "ratePerS": 10},
            {"name": "burst", "startMs": 1000, "endMs": 1500}
        ]);
        let p = validate_phases(Some(&v)).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].name, "burst");
        assert_eq!(
            (p[1].start_ms, p[1].end_ms, p[1].rate_per_s),
            (1000.0, 1500.0, None)
        );
        assert!(p[0].contains(0.0) && !p[0].contains(1000.0));
        assert_eq!(validate_phases(None).unwrap(), vec![]);
    }

    #[test]
    fn bad_phases_are_rejected_at_their_pointer() {
        let cases = [
            (json!({"name": "a"}), "/phases"),
            (
                json!([{"name": "", "startMs": 0, "endMs": 1}]),
                "/phases/0/name",
            ),
            (
                json!([{"name": "a", "startMs": 5, "endMs": 5}]),
                "/phases/0/endMs",
            ),
            (
                json!([{"name": "a", "startMs": 0, "endMs": 10}, {"name": "b", "startMs": 9, "endMs": 20}]),
                "/phases/1/startMs",
            ),
            (
                json!([{"name": "a", "startMs": 0, "endMs": 10}, {"name": "a", "startMs": 10, "endMs": 20}]),
                "/phases/1/name",
            ),
            (
                json!([{"name": "a", "startMs": 0, "endMs": 1, "rate": 3}]),
                "/phases/0/rate",
            ),
            (
                json!([{"name": "a", "startMs": 0, "endMs": 1, "ratePerS": -1}]),
                "/phases/0/ratePerS",
            ),
            (json!([{"name": "a", "endMs": 1}]), "/phases/0/startMs"),
        ];
        for (v, pointer) in cases {
            let e = validate_phases(Some(&v)).unwrap_err();
            assert_eq!(e.pointer, pointer, "{v}");
        }
    }

    #[test]
    fn resources_need_a_positive_gpu_count_and_a_non_negative_price() {
        let ok = validate_resources(Some(&json!({"gpus": 8, "gpuHourCost": 2.5}))).unwrap();
        assert_eq!(
            ok,
            Some(Resources {
                gpus: 8.0,
                gpu_hour_cost: Some(2.5)
            })
        );
        for (v, pointer) in [
            (json!({"gpus": 0}), "/resources/gpus"),
            (json!({"gpuHourCost": 1}), "/resources/gpus"),
            (
                json!({"gpus": 1, "gpuHourCost": -1}),
                "/resources/gpuHourCost",
            ),
            (json!({"gpus": 1, "price": 1}), "/resources/price"),
            (json!([1]), "/resources"),
        ] {
            assert_eq!(
                validate_resources(Some(&v)).unwrap_err().pointer,
                pointer,
                "{v}"
            );
        }
    }
}
