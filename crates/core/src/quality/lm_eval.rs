//! An imported quality figure: one task's metric from an
//! lm-evaluation-harness results JSON (docs/quality.md "Importing"), so a
//! team that already evaluates elsewhere can put that number in the gate,
//! declared as imported and tied to its source file by sha256.
//!
//! The format read is the harness's own: `results.<task>` holds each metric
//! under `"<metric>,<filter>"` (e.g. `"acc,none"`,
//! `"exact_match,strict-match"`) and its standard error under
//! `"<metric>_stderr,<filter>"`, a number or the string `"N/A"` (see
//! `make_table` in lm_eval/utils.py of EleutherAI/lm-evaluation-harness,
//! which pairs `m + "_stderr" + "," + f` with each metric and prints "N/A"
//! stderrs as such). `n-samples.<task>.effective` (when present) is the
//! number of documents evaluated; `model_name` or `config.model` names the
//! model.
//!
//! The interval: the harness gives a standard error, not counts, so the
//! interval is the normal one, value ± z·stderr at the confidence level,
//! clipped to [0, 1] (`method: normal-from-stderr`); with no usable stderr
//! it is null and said so.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::intervals::{Confidence, Interval};
use crate::quality::QualityError;
use goodput_util::pointer::escape;

/// The harness name written into an imported figure.
pub const HARNESS: &str = "lm-evaluation-harness";

/// The interval method of an imported figure.
pub const METHOD: &str = "normal-from-stderr";

/// An imported quality figure (`goodput quality import lm-eval --json`,
/// read back by `gate --quality-import`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportedQuality {
    /// Always `goodput-quality-import/1`.
    pub schema: String,
    /// Always `lm-evaluation-harness`.
    pub harness: String,
    /// Lower-case hex sha256 of the results file read.
    pub source_sha256: String,
    /// The task (`results` key).
    pub task: String,
    /// The metric key as the harness writes it, `metric,filter`.
    pub metric: String,
    /// The metric's value, a share in [0, 1].
    pub value: f64,
    /// The harness's standard error, when it gave a number.
    pub stderr: Option<f64>,
    /// value ± z·stderr clipped to [0, 1]; null without a stderr.
    pub interval: Option<Interval>,
    /// The interval's two-sided confidence level.
    pub confidence: f64,
    /// Always `normal-from-stderr`.
    pub method: String,
    /// Documents evaluated (`n-samples.<task>.effective`), when given.
    pub samples: Option<u64>,
    /// The model, when the file names one.
    pub model: Option<String>,
}

fn bad(pointer: impl Into<String>, problem: impl Into<String>) -> QualityError {
    QualityError::Import {
        pointer: pointer.into(),
        problem: problem.into(),
    }
}

/// Reads one task's metric from a results file's bytes. `task` may be
/// omitted when the file holds one task, `metric` when the task has one
/// metric; a metric without a filter (`acc`) means `acc,none`.
pub fn import(
    bytes: &[u8],
    task: Option<&str>,
    metric: Option<&str>,
    confidence: Confidence,
) -> Result<ImportedQuality, QualityError> {
    let doc: Value =
        serde_json::from_slice(bytes).map_err(|e| bad("", format!("is not JSON ({e})")))?;
    let results = doc
        .get("results")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            bad(
                "/results",
                "is missing or not an object: not a results file",
            )
        })?;
    let task = pick_task(results, task)?;
    let here = format!("/results/{}", escape(task));
    let block = results[task]
        .as_object()
        .ok_or_else(|| bad(here.as_str(), "is not an object"))?;
    let metric = pick_metric(block, &here, metric)?;
    let at = format!("{here}/{}", escape(&metric));
    let value = block[&metric]
        .as_f64()
        .ok_or_else(|| bad(at.as_str(), "is not a number"))?;
    if !(0.0..=1.0).contains(&value) {
        return Err(bad(
            at,
            format!("is {value}: a quality gate needs a share in [0, 1] (accuracy, exact match), not this metric"),
        ));
    }
    let stderr = stderr_of(block, &here, &metric)?;
    let interval = stderr.map(|se| {
        let half = confidence.z() * se;
        Interval {
            lower: (value - half).max(0.0),
            upper: (value + half).min(1.0),
        }
    });
    Ok(ImportedQuality {
        schema: crate::quality::IMPORT_SCHEMA.to_owned(),
        harness: HARNESS.to_owned(),
        source_sha256: crate::trace::sha256_hex(bytes),
        task: task.to_owned(),
        metric,
        value,
        stderr,
        interval,
        confidence: confidence.level(),
        method: METHOD.to_owned(),
        samples: doc
            .pointer(&format!("/n-samples/{}/effective", escape(task)))
            .and_then(Value::as_u64),
        model: model_of(&doc),
    })
}

/// Reads back an imported figure written by `goodput quality import`
/// (`gate --quality-import`): its schema tag checked, every field typed.
pub fn read_imported(bytes: &[u8]) -> Result<ImportedQuality, QualityError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let q: ImportedQuality =
        serde_path_to_error::deserialize(&mut de).map_err(|e| QualityError::ImportRecord {
            pointer: crate::merge::pointer(e.path()),
            problem: e.inner().to_string(),
        })?;
    if q.schema != crate::quality::IMPORT_SCHEMA || !(0.0..=1.0).contains(&q.value) {
        return Err(QualityError::ImportRecord {
            pointer: "/schema".to_owned(),
            problem: format!(
                "is {:?} with value {}: not a {} record of a share",
                q.schema,
                q.value,
                crate::quality::IMPORT_SCHEMA
            ),
        });
    }
    Ok(q)
}

fn pick_task<'m>(
    results: &'m Map<String, Value>,
    task: Option<&str>,
) -> Result<&'m str, QualityError> {
    let names = || results.keys().cloned().collect::<Vec<_>>().join(", ");
    match task {
        Some(t) => results
            .get_key_value(t)
            .map(|(k, _)| k.as_str())
            .ok_or_else(|| {
                bad(
                    "/results",
                    format!("has no task {t:?} (tasks: {})", names()),
                )
            }),
        None if results.len() == 1 => Ok(results.keys().next().map_or("", String::as_str)),
        None => Err(bad(
            "/results",
            format!(
                "holds {} tasks: name one with --task ({})",
                results.len(),
                names()
            ),
        )),
    }
}

/// The metric keys of a task block: `metric,filter` keys whose metric is
/// not a `_stderr`.
fn metric_keys(block: &Map<String, Value>) -> Vec<&str> {
    block
        .keys()
        .filter(|k| {
            k.split_once(',')
                .is_some_and(|(m, _)| !m.ends_with("_stderr"))
        })
        .map(String::as_str)
        .collect()
}

fn pick_metric(
    block: &Map<String, Value>,
    here: &str,
    metric: Option<&str>,
) -> Result<String, QualityError> {
    let keys = metric_keys(block);
    match metric {
        Some(m) => {
            let key = if m.contains(',') {
                m.to_owned()
            } else {
                format!("{m},none")
            };
            if keys.contains(&key.as_str()) {
                Ok(key)
            } else {
                Err(bad(
                    here,
                    format!("has no metric {key:?} (metrics: {})", keys.join(", ")),
                ))
            }
        }
        None if keys.len() == 1 => Ok(keys[0].to_owned()),
        None => Err(bad(
            here,
            format!(
                "has {} metrics: name one with --metric ({})",
                keys.len(),
                keys.join(", ")
            ),
        )),
    }
}

/// `<metric>_stderr,<filter>`: a number >= 0, or "N/A" / absent (none).
fn stderr_of(
    block: &Map<String, Value>,
    here: &str,
    metric: &str,
) -> Result<Option<f64>, QualityError> {
    let (m, f) = metric.split_once(',').unwrap_or((metric, "none"));
    let key = format!("{m}_stderr,{f}");
    match block.get(&key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s == "N/A" => Ok(None),
        Some(v) => match v.as_f64() {
            Some(se) if se.is_finite() && se >= 0.0 => Ok(Some(se)),
            _ => Err(bad(
                format!("{here}/{}", escape(&key)),
                "must be a number >= 0 or \"N/A\"",
            )),
        },
    }
}

fn model_of(doc: &Value) -> Option<String> {
    doc.get("model_name")
        .or_else(|| doc.pointer("/config/model"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped like a results file of lm-evaluation-harness 0.4: two tasks,
    /// `metric,filter` keys with `_stderr` companions, an "N/A" stderr,
    /// n-samples and config.
    const RESULTS: &str = r#"{
      "results": {
        "arc_easy": {"alias": "arc_easy", "acc,none": 0.8, "acc_stderr,none": 0.01,
                     "acc_norm,none": 0.75, "acc_norm_stderr,none": 0.0125},
        "gsm8k": {"alias": "gsm8k", "exact_match,strict-match": 0.62,
                  "exact_match_stderr,strict-match": "N/A"}
      },
      "versions": {"arc_easy": 1.0, "gsm8k": 3.0},
      "n-shot": {"arc_easy": 0, "gsm8k": 5},
      "n-samples": {"arc_easy": {"original": 2376, "effective": 2376},
                    "gsm8k": {"original": 1319, "effective": 1319}},
      "config": {"model": "local-completions", "model_args": "model=m"},
      "model_name": "m"
    }"#;

    fn ci95() -> Confidence {
        Confidence::new(0.95).unwrap()
    }

    #[test]
    fn a_metric_and_its_stderr_make_a_normal_interval() {
        let q = import(RESULTS.as_bytes(), Some("arc_easy"), Some("acc"), ci95()).unwrap();
        assert_eq!(
            (q.metric.as_str(), q.value, q.stderr),
            ("acc,none", 0.8, Some(0.01))
        );
        // 0.8 ± 1.959964 × 0.01 = 0.8 ± 0.0195996 → [0.7804004, 0.8195996].
        let i = q.interval.unwrap();
        assert!((i.lower - 0.780_400_4).abs() < 1e-7, "{i:?}");
        assert!((i.upper - 0.819_599_6).abs() < 1e-7, "{i:?}");
        assert_eq!(q.samples, Some(2376));
        assert_eq!(q.model.as_deref(), Some("m"));
        assert_eq!(
            q.source_sha256,
            crate::trace::sha256_hex(RESULTS.as_bytes())
        );
    }

    #[test]
    fn an_na_stderr_gives_no_interval_and_a_filter_is_named_in_full() {
        let q = import(RESULTS.as_bytes(), Some("gsm8k"), None, ci95()).unwrap();
        assert_eq!(q.metric, "exact_match,strict-match");
        assert_eq!((q.value, q.stderr, q.interval), (0.62, None, None));
    }

    #[test]
    fn an_ambiguous_or_unknown_choice_is_refused_with_the_choices() {
        let e = import(RESULTS.as_bytes(), None, None, ci95()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "lm-eval results, /results: holds 2 tasks: name one with --task (arc_easy, gsm8k)"
        );
        let e = import(RESULTS.as_bytes(), Some("arc_easy"), None, ci95()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "lm-eval results, /results/arc_easy: has 2 metrics: name one with --metric (acc,none, acc_norm,none)"
        );
        let e = import(RESULTS.as_bytes(), Some("mmlu"), None, ci95()).unwrap_err();
        assert!(e.to_string().contains("has no task \"mmlu\""), "{e}");
        let e = import(
            br#"{"results":{"t":{"perplexity,none":12.5}}}"#,
            None,
            None,
            ci95(),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("lm-eval results, /results/t/perplexity,none: is 12.5"),
            "{e}"
        );
        let e = import(b"[]", None, None, ci95()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("lm-eval results, /results: is missing"),
            "{e}"
        );
    }
}
