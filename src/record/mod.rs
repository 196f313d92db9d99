//! `goodput record`: drive an OpenAI-compatible server and write an honest
//! `goodput-trace/1` document.
//!
//! Data flow:
//!
//! ```text
//! flags ─▶ Plan (validated; output path checked writable before any request)
//!       ─▶ schedule (pure, from the seed) ─▶ runner (dispatch thread + tokio)
//!       ─▶ client (the network seam) ─▶ exchange + sse (one request's ending)
//!       ─▶ row (one trace row) ─▶ trace_out (document) ─▶ write_atomic
//!       ─▶ summary (text)
//! ```
//!
//! Honesty rules: arrivals are scheduled instants and latency counts from
//! them; every scheduled request becomes exactly one row (failures are rows;
//! unfinished work is `in_flight`); the API key and prompts never reach the
//! trace; the trace is written atomically, also after Ctrl-C.

pub mod client;
pub mod duration;
pub mod exchange;
pub mod request;
pub mod row;
pub mod runner;
pub mod schedule;
pub mod sse;
pub mod summary;
pub mod sweep;
pub mod trace_out;

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hyper::Uri;

use crate::error::{Error, EXIT_OK};
use crate::render::json::to_canonical_json;
use crate::trace::{Equality, Gates, Labels, Scalar, Warmup, Window};

use self::client::{HyperTransport, Transport};
use self::duration::parse_duration;
use self::request::{Api, BodyTemplate, PromptSource};
use self::runner::{Counters, Interrupt, Load, RunConfig, RunOutcome};
use self::schedule::{open_schedule, ArrivalProcess};
use self::trace_out::{round_us, TraceDoc, TraceRow, TRACE_SCHEMA};

/// Exit statuses of `goodput record`, shown in `--help`.
pub const RECORD_EXIT_HELP: &str = "\
Exit status:
  0    the trace was written
  2    usage error, unreadable prompt file, or the output cannot be written
       (checked before any request is sent; no partial file is ever left)
  130  interrupted (Ctrl-C): scheduling stopped, unfinished requests were written
       in_flight, the window was cut at the interrupt, and the trace was written
       (in a rate sweep: the current point's trace; earlier points' traces stay)

A rate list (--request-rate 5,10,20) is a sweep: one recording per rate, in order,
seed + index each, --out a template containing {rate}, --cooldown between points;
every point is checked before anything is sent. See docs/frontier.md.

The API key is read from the environment (OPENAI_API_KEY, or --api-key-env NAME)
and is never written. Prompts are never written: rows carry their length and a
short hash. Only plain http:// URLs are supported.";

/// The gates of the class used when no `--slo` is given (the SPEC's example
/// interactive class; declare your own SLOs for real evidence).
pub const DEFAULT_SLO: &str = "default:ttft=1000,tpot=50,e2e=10000";

/// Flags of `goodput record`. Names follow `vllm bench serve` where the
/// meaning is the same.
#[derive(Debug, Clone, clap::Args)]
#[command(group(clap::ArgGroup::new("load").required(true).args(["request_rate", "max_concurrency"])))]
#[command(group(clap::ArgGroup::new("source").args(["prompts", "dataset", "random_input_len"])))]
pub struct RecordArgs {
    /// Server URL: a base (`http://host:8000`, the --api path is appended),
    /// a base ending in `/v1`, or a full endpoint URL.
    #[arg(long, value_name = "URL")]
    pub url: String,
    /// The `model` field of every request.
    #[arg(long, value_name = "NAME")]
    pub model: String,
    /// Open loop: requests per second, sent at scheduled instants whatever the server does.
    /// A comma-separated list (`5,10,20,40`) is a rate sweep: one recording per
    /// rate, in order, seed + index each, `--out` a template containing `{rate}`.
    #[arg(long, value_name = "R[,R…]", value_delimiter = ',', value_parser = parse_rate)]
    pub request_rate: Vec<Rate>,
    /// Closed loop: C workers, each sending when its previous request ended
    /// (finds the throughput ceiling; its latencies are not SLA evidence).
    #[arg(long, value_name = "C", conflicts_with_all = ["request_rate", "arrival", "burstiness"])]
    pub max_concurrency: Option<u32>,
    /// Length of the measurement window (after the warm-up).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Duration,
    /// Warm-up before the window; its arrivals are recorded and excluded.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,
    /// Arrival process of the open loop.
    #[arg(long, value_enum)]
    pub arrival: Option<ArrivalProcess>,
    /// Gamma shape (only with --arrival gamma; 1 = Poisson, below 1 = burstier).
    #[arg(long, value_name = "B")]
    pub burstiness: Option<f64>,
    /// Seed of the schedule and of random prompts.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// An SLO class `NAME:ttft=MS,tpot=MS,e2e=MS` (an unnamed gate, or `none`,
    /// means no gate); repeatable; the first is the default class.
    /// Without any: `default:ttft=1000,tpot=50,e2e=10000`.
    #[arg(long = "slo", value_name = "CLASS:GATES")]
    pub slo: Vec<String>,
    /// Whether a value equal to its gate passes (inclusive) or misses (strict).
    #[arg(long, value_name = "RULE", default_value = "inclusive", value_parser = ["inclusive", "strict"])]
    pub equality: String,
    /// Endpoint family.
    #[arg(long, value_enum, default_value_t = Api::Chat)]
    pub api: Api,
    /// Prompts, one JSON string or {"prompt": …, "class": …} per line.
    #[arg(long, value_name = "FILE.jsonl")]
    pub prompts: Option<PathBuf>,
    /// A dataset: `sharegpt FILE`.
    #[arg(long, num_args = 2, value_names = ["KIND", "FILE"])]
    pub dataset: Option<Vec<String>>,
    /// Random prompts of N words (the default source, N = 128).
    #[arg(long, value_name = "N")]
    pub random_input_len: Option<u32>,
    /// `max_tokens` of every request (default: the server's).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Ask the server to ignore end-of-sequence (a vLLM extension).
    #[arg(long)]
    pub ignore_eos: bool,
    /// Per-request timeout, counted from the scheduled arrival.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub timeout: Duration,
    /// How long to keep observing after the window ends.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "30s")]
    pub grace: Duration,
    /// Where to write the trace (atomically). In a rate sweep, a template:
    /// `{rate}` is replaced by each rate as written (`trace-{rate}.json`).
    #[arg(long, value_name = "FILE", default_value = "trace.json")]
    pub out: PathBuf,
    /// Pause between two points of a rate sweep, so the server drains.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = sweep::DEFAULT_COOLDOWN)]
    pub cooldown: Duration,
    /// The environment variable holding the API key.
    #[arg(long, value_name = "NAME", default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
    /// Never show the progress line (it is shown only when stderr is a terminal).
    #[arg(long)]
    pub no_progress: bool,
    /// The most bytes one SSE line or event (or a 2xx body that is not a
    /// stream) may hold; past it the request fails `event_too_large`
    /// (`body_too_large`) and its connection is dropped. Bounds memory:
    /// see docs/reliability.md.
    #[arg(long, value_name = "BYTES", default_value_t = sse::DEFAULT_MAX_EVENT_BYTES as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_event_bytes: u64,
}

/// One `--request-rate` value: the number, and the text as written (a sweep
/// names its output files with the text, so `2.5` stays `2.5`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// Requests per second.
    pub per_s: f64,
    /// The value as written on the command line, trimmed.
    pub text: String,
}

/// Parses one `--request-rate` value (range checks come with the schedule).
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    let text = text.trim();
    text.parse::<f64>()
        .map(|per_s| Rate {
            per_s,
            text: text.to_owned(),
        })
        .map_err(|_| format!("`{text}` is not a number of requests per second"))
}

/// A validated recording plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The endpoint.
    pub uri: Uri,
    /// The run configuration.
    pub run: RunConfig,
    /// Warm-up length, ms (the window starts there).
    pub warmup_ms: f64,
    /// SLO classes.
    pub classes: BTreeMap<String, Gates>,
    /// The default class (the first declared).
    pub default_class: String,
    /// The equality rule.
    pub equality: Equality,
    /// `workload` labels known before the run.
    pub workload: Labels,
    /// The output path.
    pub out: PathBuf,
    /// The API key, if any (never written anywhere).
    pub api_key: Option<String>,
}

impl Plan {
    fn open_loop(&self) -> bool {
        matches!(self.run.load, Load::Open { .. })
    }
}

fn usage(message: impl Into<String>) -> Error {
    Error::Usage(message.into())
}

/// Parses one `--slo NAME:ttft=MS,tpot=MS,e2e=MS`.
pub fn parse_slo(text: &str) -> Result<(String, Gates), String> {
    let (name, gates) = text
        .split_once(':')
        .ok_or_else(|| format!("--slo `{text}`: expected NAME:ttft=MS,tpot=MS,e2e=MS"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("--slo `{text}`: the class needs a name"));
    }
    let mut out = Gates {
        ttft_ms: None,
        tpot_ms: None,
        e2e_ms: None,
    };
    for part in gates.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("--slo `{text}`: `{part}` should be GATE=MS"))?;
        let value = match value.trim() {
            "none" | "null" => None,
            v => match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => Some(x),
                _ => return Err(format!("--slo `{text}`: `{v}` is not a number of ms >= 0")),
            },
        };
        let slot = match key.trim() {
            "ttft" => &mut out.ttft_ms,
            "tpot" => &mut out.tpot_ms,
            "e2e" | "e2el" => &mut out.e2e_ms,
            other => {
                return Err(format!(
                    "--slo `{text}`: unknown gate `{other}` (use ttft, tpot, e2e)"
                ))
            }
        };
        *slot = value;
    }
    Ok((name.to_owned(), out))
}

/// Resolves the endpoint URL: a bare base gets the --api path appended.
pub fn endpoint_uri(url: &str, api: Api) -> Result<Uri, String> {
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("--url `{url}` is not a URL ({e})"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => {
            return Err(format!(
                "--url `{url}`: https is not supported; record through a local plain-HTTP endpoint"
            ))
        }
        _ => return Err(format!("--url `{url}` must start with http://")),
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

/// Bytes the writability probe writes and syncs: enough that a full disk
/// (or a file-size limit smaller than a page) fails the probe, small enough
/// to cost nothing.
pub const WRITE_PROBE_BYTES: usize = 4096;

/// Fails unless a file can be created next to `path` (where the atomic write
/// will put its temporary file), [`WRITE_PROBE_BYTES`] can be written to it
/// and synced (an empty file fits on a full disk; this does not), and `path`
/// is not a directory. The probe file is removed, whatever happens.
///
/// This cannot promise that the whole trace will fit later: if the final
/// write fails, the atomic write still leaves no partial file at `path`.
pub fn check_writable(path: &Path) -> Result<(), Error> {
    let err = |source| Error::Write {
        path: path.display().to_string(),
        source,
    };
    if path.is_dir() {
        return Err(err(std::io::Error::other("it is a directory")));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut probe = tempfile::Builder::new()
        .prefix(".goodput-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(err)?;
    probe
        .write_all(&[0u8; WRITE_PROBE_BYTES])
        .and_then(|()| probe.as_file().sync_all())
        .map_err(err)
    // `probe` is deleted on drop.
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Validates the flags into a plan, reading prompt files and checking the
/// output path; sends nothing.
pub fn plan(args: &RecordArgs) -> Result<Plan, Error> {
    let uri = endpoint_uri(&args.url, args.api).map_err(usage)?;
    if args.duration.is_zero() {
        return Err(usage("--duration must be longer than 0"));
    }
    if ms(args.duration) + ms(args.grace) > crate::trace::model::MAX_SPAN_MS {
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
            request::load_jsonl(path).map_err(|e| usage(e.to_string()))?,
        ))
    } else if let Some(dataset) = &args.dataset {
        match dataset.as_slice() {
            [kind, file] if kind == "sharegpt" => PromptSource::List(Arc::new(
                request::load_sharegpt(Path::new(file)).map_err(|e| usage(e.to_string()))?,
            )),
            [kind, _] => {
                return Err(usage(format!(
                    "--dataset `{kind}`: only `sharegpt` is known"
                )))
            }
            _ => return Err(usage("--dataset takes KIND FILE")),
        }
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

    let warmup_ms = ms(args.warmup);
    let window_end_ms = warmup_ms + ms(args.duration);
    let mut workload = Labels::new();
    let mut put = |k: &str, v: Scalar| {
        workload.insert(k.to_owned(), v);
    };
    let load = match (args.request_rate.as_slice(), args.max_concurrency) {
        ([rate], None) => {
            let rate = rate.per_s;
            let process = args.arrival.unwrap_or(ArrivalProcess::Poisson);
            let burstiness = match (process, args.burstiness) {
                (ArrivalProcess::Gamma, b) => b.unwrap_or(1.0),
                (_, None) => 1.0,
                (_, Some(_)) => return Err(usage("--burstiness applies only to --arrival gamma")),
            };
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
        _ => {
            return Err(usage(
                "give --request-rate R (open loop) or --max-concurrency C (closed loop)",
            ))
        }
    };
    put("seed", Scalar::Number(args.seed as f64));
    put("model", Scalar::String(args.model.clone()));
    put("api", Scalar::String(args.api.as_str().into()));
    put("endpoint", Scalar::String(uri.path().to_owned()));
    if let Some(n) = args.max_tokens {
        put("maxTokens", Scalar::Number(f64::from(n)));
    }
    if args.ignore_eos {
        put("ignoreEos", Scalar::Bool(true));
    }
    put("prompts", Scalar::String(prompts.describe()));
    put("durationS", Scalar::Number(args.duration.as_secs_f64()));
    put("warmupS", Scalar::Number(args.warmup.as_secs_f64()));
    put("graceS", Scalar::Number(args.grace.as_secs_f64()));
    put("timeoutS", Scalar::Number(args.timeout.as_secs_f64()));
    put(
        "recorder",
        Scalar::String(format!(
            "{} {}",
            crate::GENERATOR_NAME,
            crate::GENERATOR_VERSION
        )),
    );

    let api_key = std::env::var(&args.api_key_env)
        .ok()
        .filter(|k| !k.is_empty());
    check_writable(&args.out)?;
    Ok(Plan {
        uri,
        run: RunConfig {
            load,
            window_end_ms,
            grace_ms: ms(args.grace),
            timeout: args.timeout,
            prompts,
            template: BodyTemplate {
                api: args.api,
                model: args.model.clone(),
                max_tokens: args.max_tokens,
                ignore_eos: args.ignore_eos,
            },
            max_event_bytes: usize::try_from(args.max_event_bytes).unwrap_or(usize::MAX),
        },
        warmup_ms,
        classes,
        default_class,
        equality,
        workload,
        out: args.out.clone(),
        api_key,
    })
}

/// Turns a finished run into the trace document (pure).
pub fn build_trace(plan: &Plan, outcome: &RunOutcome) -> TraceDoc {
    let open_loop = plan.open_loop();
    let tokens = row::token_mode(
        outcome
            .results
            .iter()
            .flatten()
            .map(|f| (&f.obs, &f.ending)),
    );
    let rows: Vec<TraceRow> = outcome
        .results
        .iter()
        .enumerate()
        .map(|(index, slot)| match slot {
            Some(f) => row::assemble(
                &row::RowMeta {
                    index,
                    class: f.class.clone(),
                    arrival_ms: f.arrival_ms,
                    open_loop,
                    prompt_chars: f.prompt_chars,
                    prompt_hash: f.prompt_hash.clone(),
                },
                &f.obs,
                &f.ending,
                tokens,
            ),
            None => {
                let prompt = plan.run.prompts.prompt(index);
                row::not_sent(&row::RowMeta {
                    index,
                    class: prompt.class,
                    arrival_ms: outcome.arrivals_ms.get(index).copied().unwrap_or(0.0),
                    open_loop,
                    prompt_chars: prompt.text.chars().count() as u64,
                    prompt_hash: request::prompt_hash(&prompt.text),
                })
            }
        })
        .collect();

    let start_ms = plan.warmup_ms;
    let planned_end_ms = plan.run.window_end_ms;
    let (end_ms, horizon_ms) = match outcome.interrupted_at_ms {
        // Cut the window at the interrupt: rates are per observed second and
        // nothing after the interrupt is claimed. Interrupted during warm-up,
        // the window is an empty 1 ms: no row arrives in it.
        Some(t) if t < planned_end_ms => {
            let end = if t > start_ms {
                round_us(t)
            } else {
                start_ms + 1.0
            };
            (end, end)
        }
        Some(t) => (planned_end_ms, round_us(t).max(planned_end_ms)),
        None => (planned_end_ms, planned_end_ms + plan.run.grace_ms),
    };
    let mut workload = plan.workload.clone();
    workload.insert("scheduled".into(), Scalar::Number(rows.len() as f64));
    if outcome.keep_alive_retries > 0 {
        workload.insert(
            "keepAliveRetries".into(),
            Scalar::Number(outcome.keep_alive_retries as f64),
        );
    }
    if let Some(t) = outcome.interrupted_at_ms {
        workload.insert("interrupted".into(), Scalar::Bool(true));
        workload.insert("interruptedAtMs".into(), Scalar::Number(round_us(t)));
        workload.insert(
            "plannedScheduled".into(),
            Scalar::Number(outcome.planned as f64),
        );
        workload.insert("plannedWindowEndMs".into(), Scalar::Number(planned_end_ms));
    }
    let mut boundary = Labels::new();
    let arrival = if open_loop {
        "scheduled"
    } else {
        "closed-loop"
    };
    boundary.insert("arrival".into(), Scalar::String(arrival.into()));
    boundary.insert("tokens".into(), Scalar::String("client".into()));
    boundary.insert("clock".into(), Scalar::String("monotonic".into()));
    TraceDoc {
        schema: TRACE_SCHEMA,
        window: Window {
            start_ms,
            end_ms,
            horizon_ms: Some(horizon_ms),
        },
        warmup: (start_ms > 0.0).then_some(Warmup {
            start_ms: 0.0,
            end_ms: start_ms,
        }),
        equality: plan.equality,
        classes: plan.classes.clone(),
        default_class: plan.default_class.clone(),
        tokens,
        boundary,
        workload,
        rows,
    }
}

/// Runs a plan against a transport, with `interrupt` as the Ctrl-C signal.
/// Builds its own runtime; returns the outcome (used by `run` and the tests).
pub fn execute<T: Transport>(
    plan: &Plan,
    transport: T,
    interrupt: impl FnOnce() -> Interrupt,
    progress: bool,
) -> Result<RunOutcome, Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| usage(format!("cannot start the async runtime: {e}")))?;
    let counters = Arc::new(Counters::default());
    let config = Arc::new(plan.run.clone());
    let transport = Arc::new(transport);
    let outcome = runtime.block_on(async {
        let t0 = tokio::time::Instant::now() + Duration::from_millis(5);
        let ticker = progress.then(|| tokio::spawn(progress_line(counters.clone(), t0)));
        let outcome = runner::run(transport, config, t0, counters.clone(), interrupt()).await;
        if let Some(t) = ticker {
            t.abort();
            eprint!("\r\x1b[K");
        }
        outcome
    });
    // Requests still draining a body after cancellation are dropped here.
    runtime.shutdown_timeout(Duration::from_millis(200));
    Ok(outcome)
}

async fn progress_line(counters: Arc<Counters>, t0: tokio::time::Instant) {
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tick.tick().await;
        let sent = counters.sent.load(Ordering::Relaxed);
        let completed = counters.completed.load(Ordering::Relaxed);
        let failed = counters.failed.load(Ordering::Relaxed);
        let lag_ms = counters.last_lag_us.load(Ordering::Relaxed) as f64 / 1000.0;
        let elapsed = tokio::time::Instant::now()
            .saturating_duration_since(t0)
            .as_secs_f64();
        eprint!(
            "\r\x1b[K{elapsed:7.1}s  sent {sent}  in flight {}  completed {completed}  failed {failed}  send lag {lag_ms:.3} ms",
            sent.saturating_sub(completed + failed)
        );
        let _ = std::io::stderr().flush();
    }
}

/// `goodput record`: plan, run, write the trace, print the summary; with
/// several rates, a sweep ([`sweep`]) of the same single recording.
pub fn run(args: RecordArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    if args.request_rate.len() > 1 {
        return sweep::run_sweep(args, stdout);
    }
    let plan = plan(&args)?;
    let progress = !args.no_progress && std::io::stderr().is_terminal();
    record_one(&plan, progress, stdout).map(|_| EXIT_OK)
}

/// What one recording wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Rows in the trace.
    pub rows: usize,
    /// Bytes of the trace.
    pub bytes: usize,
}

/// One recording of a validated plan: run it against the real network, write
/// the trace and the summary. A single `record` and every point of a sweep go
/// through here. Ctrl-C ends it with [`Error::Interrupted`] after writing.
pub fn record_one(plan: &Plan, progress: bool, stdout: &mut dyn Write) -> Result<Written, Error> {
    let transport =
        HyperTransport::new(plan.uri.clone(), plan.api_key.as_deref()).map_err(usage)?;
    let retries = transport.retries();
    let mut outcome = execute(
        plan,
        transport,
        || {
            Box::pin(async {
                if tokio::signal::ctrl_c().await.is_err() {
                    // No signal handling on this platform: never interrupt.
                    std::future::pending::<()>().await;
                }
            })
        },
        progress,
    )?;
    outcome.keep_alive_retries = retries.load(Ordering::Relaxed);
    write_trace(plan, &outcome, stdout)
}

/// Writes the trace atomically and the summary to `stdout`; an interrupted run
/// returns [`Error::Interrupted`] after writing (exit 130).
pub fn write_and_summarize(
    plan: &Plan,
    outcome: &RunOutcome,
    stdout: &mut dyn Write,
) -> Result<i32, Error> {
    write_trace(plan, outcome, stdout).map(|_| EXIT_OK)
}

fn write_trace(
    plan: &Plan,
    outcome: &RunOutcome,
    stdout: &mut dyn Write,
) -> Result<Written, Error> {
    let doc = build_trace(plan, outcome);
    let path = plan.out.display().to_string();
    let write_err = |source| Error::Write {
        path: path.clone(),
        source,
    };
    let bytes = to_canonical_json(&doc).map_err(|e| write_err(e.into()))?;
    crate::io::write_atomic(&plan.out, &bytes).map_err(write_err)?;
    let figures = summary::figures(&doc.rows, plan.open_loop());
    let interrupted = outcome.interrupted_at_ms.is_some();
    let text = summary::render(&figures, &path, bytes.len(), interrupted);
    crate::cli::emit(stdout, text.as_bytes())?;
    if interrupted {
        return Err(Error::Interrupted {
            path,
            rows: doc.rows.len(),
        });
    }
    Ok(Written {
        rows: doc.rows.len(),
        bytes: bytes.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_flags_parse_with_unnamed_gates_as_none() {
        assert_eq!(
            parse_slo("interactive:ttft=1000,tpot=50,e2e=10000"),
            Ok((
                "interactive".into(),
                Gates {
                    ttft_ms: Some(1000.0),
                    tpot_ms: Some(50.0),
                    e2e_ms: Some(10000.0)
                }
            ))
        );
        assert_eq!(
            parse_slo("batch:ttft=5000, tpot=none"),
            Ok((
                "batch".into(),
                Gates {
                    ttft_ms: Some(5000.0),
                    tpot_ms: None,
                    e2e_ms: None
                }
            ))
        );
        assert!(parse_slo("nocolon").is_err());
        assert!(parse_slo(":ttft=1").is_err());
        assert!(parse_slo("a:ttft=-1").is_err());
        assert!(parse_slo("a:latency=1").is_err());
        assert!(parse_slo("a:ttft=NaN").is_err());
    }

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
        assert!(u("https://h", Api::Chat).is_err());
        assert!(u("h:8000", Api::Chat).is_err());
    }

    #[test]
    fn an_unwritable_output_is_refused_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_writable(&dir.path().join("t.json")).is_ok());
        assert!(check_writable(dir.path()).is_err());
        assert!(check_writable(&dir.path().join("missing/t.json")).is_err());
        // No temporary file is left behind by the check.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
