//! `goodput record`'s flags → a validated [`Plan`]: endpoint, schedule,
//! prompts, SLO classes, workload labels, API key, headers, TLS trust,
//! `--extra-body`, the preflight switch; the output path is probed
//! writable. Nothing is sent.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use hyper::Uri;

use crate::cli::error::Error;
use goodput_core::trace::{Equality, Labels, Scalar};
use goodput_record::run::{Load, RunConfig};
use goodput_record::schedule::phased::phased_schedule;
use goodput_record::schedule::{open_schedule, ArrivalProcess};
use goodput_record::transport::endpoint::{Endpoint, EndpointFlags};
use goodput_record::workload::body::{self, Api, BodyTemplate, PromptSource};
use goodput_record::workload::extra_body::ExtraBody;
use goodput_record::Plan;

use crate::cli::flags::{parse_slo, usage, DEFAULT_SLO};
use crate::cli::output::check_writable;
use crate::cli::release::{parse_phases, ResourcesFlag};

use crate::cli::record::args::RecordArgs;
use crate::cli::record::shard::{parse_shard, parse_start_at, INDEX_ENV};
use crate::cli::record::workload;
use goodput_record::output::frame::ShardTag;
use sha2::{Digest, Sha256};

/// Resolves the endpoint URL: a bare base gets the --api path appended.
pub fn endpoint_uri(url: &str, api: Api) -> Result<Uri, String> {
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("--url `{url}` is not a URL ({e})"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err(format!("--url `{url}` must start with http:// or https://")),
    }
    if uri.host().is_none() {
        return Err(format!("--url `{url}` has no host"));
    }
    let path = uri.path().trim_end_matches('/');
    let new_path = if path.is_empty() {
        api.default_path().to_owned()
    } else if path.ends_with("/v1") {
        format!("{path}{}", &api.default_path()[3..])
    } else {
        return Ok(uri);
    };
    let mut parts = uri.into_parts();
    parts.path_and_query = Some(
        new_path
            .parse()
            .map_err(|e| format!("--url `{url}`: {e}"))?,
    );
    Uri::from_parts(parts).map_err(|e| format!("--url `{url}`: {e}"))
}

/// The gamma shape in force: `--burstiness` only with `--arrival gamma`.
fn burstiness_for(process: ArrivalProcess, given: Option<f64>) -> Result<f64, Error> {
    match (process, given) {
        (ArrivalProcess::Gamma, b) => Ok(b.unwrap_or(1.0)),
        (_, None) => Ok(1.0),
        (_, Some(_)) => Err(usage("--burstiness applies only to --arrival gamma")),
    }
}

/// The flag that makes the recorder set `max_tokens`, if any (then
/// `--extra-body` may not set it too).
fn max_tokens_flag(args: &RecordArgs) -> Option<&'static str> {
    if args.max_tokens.is_some() {
        Some("--max-tokens")
    } else if args.output_tokens.is_some() {
        Some("--output-tokens")
    } else if args.replay.is_some() {
        Some("--replay")
    } else {
        None
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Validates the flags into a plan, reading prompt files and checking the
/// output path; sends nothing.
pub fn plan(args: &RecordArgs) -> Result<Plan, Error> {
    let required = |what: &str| usage(format!("{what} is required"));
    let url = args.url.as_deref().ok_or_else(|| required("--url"))?;
    let model = args.model.clone().ok_or_else(|| required("--model"))?;
    let uri = endpoint_uri(url, args.api.into()).map_err(usage)?;
    let phases = args
        .phases
        .as_deref()
        .map(parse_phases)
        .transpose()
        .map_err(usage)?;
    let replay = workload::read_replay(args)?;
    let duration = match (&phases, args.duration, &replay) {
        (Some(p), _, _) => {
            Duration::from_secs_f64(p.iter().map(|p| p.duration_ms).sum::<f64>() / 1000.0)
        }
        (None, Some(d), _) => d,
        (None, None, Some(r)) => r.default_duration(),
        (None, None, None) => return Err(usage("give --duration (or --phases)")),
    };
    if duration.is_zero() {
        return Err(usage("--duration must be longer than 0"));
    }
    let resources = match args.cost.resources()? {
        None => None,
        Some(ResourcesFlag::Both(r)) => Some(r),
        Some(ResourcesFlag::PriceOnly(_)) => {
            return Err(usage(
                "--gpu-hour-cost needs --gpus (the price is per GPU-hour)",
            ))
        }
    };
    if ms(duration) + ms(args.grace) > goodput_core::trace::model::MAX_SPAN_MS {
        return Err(usage(
            "--duration plus --grace must be at most 24 h (a trace's window and horizon span at most a day)",
        ));
    }
    if args.timeout.is_zero() {
        return Err(usage("--timeout must be longer than 0"));
    }
    let mut classes = BTreeMap::new();
    let mut default_class = None;
    let slos = if args.slo.is_empty() {
        vec![DEFAULT_SLO.to_owned()]
    } else {
        args.slo.clone()
    };
    for text in &slos {
        let (name, gates) = parse_slo(text).map_err(usage)?;
        if classes.insert(name.clone(), gates).is_some() {
            return Err(usage(format!("--slo: class `{name}` is declared twice")));
        }
        default_class.get_or_insert(name);
    }
    let default_class = default_class.unwrap_or_else(|| "default".to_owned());
    let equality = match args.equality.as_str() {
        "strict" => Equality::Strict,
        _ => Equality::Inclusive,
    };

    let prompts = if let Some(path) = &args.prompts {
        PromptSource::List(Arc::new(
            body::load_jsonl(path).map_err(|e| usage(e.to_string()))?,
        ))
    } else {
        let words = args.random_input_len.unwrap_or(128);
        if words == 0 {
            return Err(usage("--random-input-len must be at least 1"));
        }
        PromptSource::Random {
            words,
            seed: args.seed,
        }
    };
    if let PromptSource::List(list) = &prompts {
        if let Some(p) = list
            .iter()
            .find(|p| p.class.as_ref().is_some_and(|c| !classes.contains_key(c)))
        {
            return Err(usage(format!(
                "a prompt names class `{}`, which no --slo declares",
                p.class.as_deref().unwrap_or_default()
            )));
        }
    }

    let (shard, start_at_unix_ms) = shard_and_start(args)?;
    let warmup_ms = ms(args.warmup);
    let mut window_end_ms = warmup_ms + ms(duration);
    let mut declared_phases = Vec::new();
    let mut workload = Labels::new();
    let mut put = |k: &str, v: Scalar| {
        workload.insert(k.to_owned(), v);
    };
    let load =
        match (args.request_rate.as_slice(), args.max_concurrency) {
            ([], None) if phases.is_some() => {
                let specs = phases.as_deref().unwrap_or_default();
                let process = args.arrival.map_or(ArrivalProcess::Poisson, Into::into);
                let burstiness = burstiness_for(process, args.burstiness)?;
                let schedule = phased_schedule(process, burstiness, args.seed, warmup_ms, specs)
                    .map_err(|e| usage(e.to_string()))?;
                put("arrival", Scalar::String(process.as_str().into()));
                if process != ArrivalProcess::Constant {
                    put("burstiness", Scalar::Number(burstiness));
                }
                window_end_ms = schedule.window_end_ms;
                declared_phases = schedule.phases;
                Load::Open {
                    arrivals_ms: Arc::new(schedule.arrivals_ms),
                }
            }
            ([rate], None) => {
                let rate = rate.per_s;
                let process = args.arrival.map_or(ArrivalProcess::Poisson, Into::into);
                let burstiness = burstiness_for(process, args.burstiness)?;
                let arrivals = open_schedule(process, rate, burstiness, args.seed, window_end_ms)
                    .map_err(|e| usage(e.to_string()))?;
                put("arrival", Scalar::String(process.as_str().into()));
                put("ratePerS", Scalar::Number(rate));
                // Poisson is gamma with shape 1; constant has no burstiness.
                if process != ArrivalProcess::Constant {
                    put("burstiness", Scalar::Number(burstiness));
                }
                Load::Open {
                    arrivals_ms: Arc::new(arrivals),
                }
            }
            ([], Some(_)) if shard.is_some() => return Err(usage(
                "--shard splits an open-loop schedule: give --request-rate, not --max-concurrency",
            )),
            ([], Some(c)) if c > 0 => {
                put("arrival", Scalar::String("closed".into()));
                put("maxConcurrency", Scalar::Number(f64::from(c)));
                Load::Closed { concurrency: c }
            }
            ([], Some(_)) => return Err(usage("--max-concurrency must be at least 1")),
            ([_, _, ..], None) => {
                return Err(usage(
                    "several --request-rate values are a sweep: each point is planned on its own",
                ))
            }
            // The replayed file's instants, shifted to the window start and scaled.
            ([], None) if replay.is_some() => {
                put("arrival", Scalar::String("replay".into()));
                Load::Open {
                    arrivals_ms: Arc::new(
                        replay
                            .as_ref()
                            .map(|r| r.replay.arrivals_ms(warmup_ms, r.scale))
                            .unwrap_or_default(),
                    ),
                }
            }
            _ => {
                return Err(usage(
                    "give --request-rate R (open loop) or --max-concurrency C (closed loop)",
                ))
            }
        };
    // Workload options (prepared prompts, replay, sessions): see `workload`.
    let (load, prompts) = if workload::wants_workload(args) {
        let planned = workload::plan_workload(args, load, prompts, replay, window_end_ms)?;
        for (k, v) in planned.labels {
            put(&k, v);
        }
        (planned.load, planned.prompts)
    } else {
        // Random words stand for tokens; a file's prompts are sent as they are.
        let lengths = match &prompts {
            PromptSource::List(_) => "file",
            _ => "approximate",
        };
        put("promptLengths", Scalar::String(lengths.into()));
        (load, prompts)
    };
    // A shard takes every N-th request of the whole plan, prompt included:
    // prepared prompts and replayed entries are drawn for the whole schedule
    // first, so request i gets the same prompt on whichever shard sends it.
    let (load, prompts) =
        match (shard, load) {
            (None, load) => (load, prompts),
            (Some(s), Load::Open { arrivals_ms }) => {
                let arrivals = shard_of(arrivals_ms.as_ref().clone(), shard, &mut put);
                put("shards", Scalar::Number(s.count as f64));
                (
                    Load::Open {
                        arrivals_ms: Arc::new(arrivals),
                    },
                    PromptSource::Strided {
                        inner: Box::new(prompts),
                        stride: s.count,
                        offset: s.index,
                    },
                )
            }
            (Some(_), Load::Sessions { .. }) => {
                return Err(usage(
                    "--shard splits a schedule request by request; multi-turn sessions \
                 (--dataset with whole conversations) cannot be split that way: \
                 record them on one machine",
                ))
            }
            (Some(_), Load::Closed { .. }) => return Err(usage(
                "--shard splits an open-loop schedule: give --request-rate, not --max-concurrency",
            )),
        };
    if let Some(t) = start_at_unix_ms {
        put("startAtUnixMs", Scalar::Number(t));
    }
    put("seed", Scalar::Number(args.seed as f64));
    put("model", Scalar::String(model.clone()));
    put("api", Scalar::String(Api::from(args.api).as_str().into()));
    put("endpoint", Scalar::String(uri.path().to_owned()));
    if let Some(n) = args.max_tokens {
        put("maxTokens", Scalar::Number(f64::from(n)));
    }
    if args.ignore_eos {
        put("ignoreEos", Scalar::Bool(true));
    }
    put("prompts", Scalar::String(prompts.describe()));
    put("durationS", Scalar::Number(duration.as_secs_f64()));
    put("warmupS", Scalar::Number(args.warmup.as_secs_f64()));
    put("graceS", Scalar::Number(args.grace.as_secs_f64()));
    put("timeoutS", Scalar::Number(args.timeout.as_secs_f64()));
    put(
        "recorder",
        Scalar::String(format!(
            "{} {}",
            goodput_core::GENERATOR_NAME,
            goodput_core::GENERATOR_VERSION
        )),
    );

    let api_key = std::env::var(&args.api_key_env)
        .ok()
        .filter(|k| !k.is_empty());
    // Connection settings and request fields (values of headers stay out of
    // the trace; the extra body goes in).
    let flags = EndpointFlags {
        header: args.header.clone(),
        header_env: args.header_env.clone(),
        cacert: args.cacert.clone(),
        insecure: args.insecure,
    };
    let endpoint =
        Endpoint::from_flags(&uri, &flags, api_key, |v| std::env::var(v).ok()).map_err(usage)?;
    endpoint.describe(&mut workload);
    let metrics = crate::cli::record::scrape::metrics_plan(args, &uri, &endpoint)?;
    if let Some(m) = &metrics {
        workload.insert(
            "metricsUrl".into(),
            Scalar::String(crate::cli::record::scrape::public_url(&m.uri)),
        );
        workload.insert(
            "metricsIntervalS".into(),
            Scalar::Number(m.interval.as_secs_f64()),
        );
    }
    let extra = match &args.extra_body {
        Some(text) => ExtraBody::parse(
            text,
            max_tokens_flag(args),
            args.ignore_eos.then_some("--ignore-eos"),
        )
        .map_err(usage)?,
        None => ExtraBody::default(),
    };
    if !extra.is_empty() {
        workload.insert("extraBody".into(), Scalar::String(extra.as_json().into()));
    }
    check_writable(&args.out)?;
    let spool = goodput_record::output::spool::spool_path(&args.out);
    if spool.exists() {
        return Err(goodput_record::output::spool::SpoolError::Exists {
            path: spool.display().to_string(),
        }
        .into());
    }
    if args.client_loops > 1 && matches!(load, Load::Open { .. }) {
        workload.insert(
            "clientLoops".into(),
            Scalar::Number(args.client_loops as f64),
        );
    }
    Ok(Plan {
        uri,
        run: RunConfig {
            load,
            window_end_ms,
            grace_ms: ms(args.grace),
            timeout: args.timeout,
            prompts,
            template: BodyTemplate {
                api: args.api.into(),
                model,
                max_tokens: args.max_tokens,
                ignore_eos: args.ignore_eos,
                extra,
            },
            max_event_bytes: usize::try_from(args.max_event_bytes).unwrap_or(usize::MAX),
            secrets: endpoint.secrets.clone(),
            loops: args.client_loops,
        },
        warmup_ms,
        classes,
        default_class,
        equality,
        workload,
        phases: declared_phases,
        resources,
        out: args.out.clone(),
        endpoint,
        preflight: !args.no_preflight,
        shard,
        start_at_unix_ms,
        metrics,
    })
}

/// `--shard` and `--start-at`, checked together (a shard needs the shared
/// start); K = `auto` reads the Indexed Job's index from the environment.
fn shard_and_start(args: &RecordArgs) -> Result<(Option<ShardTag>, Option<f64>), Error> {
    let index_env = std::env::var(INDEX_ENV).ok();
    let shard = args
        .shard
        .as_deref()
        .map(|s| parse_shard(s, index_env.as_deref()))
        .transpose()
        .map_err(usage)?;
    let start = args
        .start_at
        .as_deref()
        .map(parse_start_at)
        .transpose()
        .map_err(usage)?;
    if shard.is_some() && start.is_none() {
        return Err(usage(
            "--shard needs --start-at T, the instant every shard counts the schedule from",
        ));
    }
    Ok((shard, start))
}

/// This shard's share of the whole seeded schedule (every shard draws all
/// of it and keeps the requests i with i mod N = K), declaring the whole
/// schedule's size and fingerprint so `merge` can check the shards agree.
fn shard_of(
    arrivals: Vec<f64>,
    shard: Option<ShardTag>,
    put: &mut impl FnMut(&str, Scalar),
) -> Vec<f64> {
    let Some(s) = shard else {
        return arrivals;
    };
    put("scheduleSize", Scalar::Number(arrivals.len() as f64));
    put("scheduleHash", Scalar::String(schedule_hash(&arrivals)));
    arrivals
        .into_iter()
        .skip(s.index)
        .step_by(s.count)
        .collect()
}

/// A short fingerprint of a schedule (sha256 of its instants' bits, 12 hex
/// digits): shards of one schedule carry the same one, which `merge` checks.
fn schedule_hash(arrivals_ms: &[f64]) -> String {
    let mut h = Sha256::new();
    for a in arrivals_ms {
        h.update(a.to_bits().to_le_bytes());
    }
    h.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_get_the_api_path_only_when_bare() {
        let u = |s: &str, api| endpoint_uri(s, api).map(|u| u.to_string());
        assert_eq!(
            u("http://h:8000", Api::Chat),
            Ok("http://h:8000/v1/chat/completions".into())
        );
        assert_eq!(
            u("http://h:8000/", Api::Completions),
            Ok("http://h:8000/v1/completions".into())
        );
        assert_eq!(
            u("http://h/v1", Api::Chat),
            Ok("http://h/v1/chat/completions".into())
        );
        assert_eq!(
            u("http://h/custom/gen", Api::Chat),
            Ok("http://h/custom/gen".into())
        );
        assert_eq!(
            u("https://h", Api::Chat),
            Ok("https://h/v1/chat/completions".into())
        );
        assert!(u("ftp://h", Api::Chat).is_err());
        assert!(u("h:8000", Api::Chat).is_err());
    }
}
