//! `goodput record`'s flags → a validated [`Plan`], one builder per part of
//! the plan. [`plan`] calls them in the order the flags are checked, so that
//! when several flags are wrong at once the same one is reported first:
//!
//! ```text
//! Target (--url, --model) ─▶ ScheduleFlags (--phases, --replay) ─▶ window length
//!   ─▶ --gpus ─▶ Window (warm-up, grace) ─▶ --timeout ─▶ Slos ─▶ prompt source
//!   ─▶ --shard, --start-at ─▶ drawn load (rate, arrival, phases, concurrency)
//!   ─▶ Requests (workload options, then a shard's share) ─▶ run labels
//!   ─▶ connection (API key, headers, TLS) ─▶ --metrics
//!   ─▶ request body (--extra-body) ─▶ output path and spool
//! ```
//!
//! What a builder declares goes into the trace's `workload` labels. Prompt,
//! replay, dataset and tokenizer files are read here and the output path is
//! probed writable; nothing is sent.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hyper::Uri;

use crate::cli::error::Error;
use goodput_core::trace::{Equality, Gates, Labels, Phase, Resources, Scalar};
use goodput_record::run::{Load, RunConfig};
use goodput_record::schedule::phased::{phased_schedule, PhaseSpec};
use goodput_record::schedule::{burst, limited_schedule, ArrivalProcess};
use goodput_record::scrape::MetricsPlan;
use goodput_record::transport::endpoint::{
    public_url_text, split_userinfo, Endpoint, EndpointFlags, UserInfo,
};
use goodput_record::workload::body::{self, Api, BodyTemplate, PromptSource};
use goodput_record::workload::extra_body::ExtraBody;
use goodput_record::Plan;

use crate::cli::flags::{parse_slo, usage, DEFAULT_SLO};
use crate::cli::output::check_output;
use crate::cli::release::{parse_phases, ResourcesFlag};

use crate::cli::record::args::RecordArgs;
use crate::cli::record::scrape;
use crate::cli::record::shard::{parse_shard, parse_start_at, INDEX_ENV};
use crate::cli::record::workload::{self, ReplayFile};
use goodput_record::output::frame::ShardTag;

/// Refused both when drawing the load and when splitting it for a shard.
const SHARD_NEEDS_OPEN_LOOP: &str =
    "--shard splits an open-loop schedule: give --request-rate, not --max-concurrency";

/// Validates the flags into a plan, reading prompt files and checking the
/// output path; sends nothing.
pub fn plan(args: &RecordArgs) -> Result<Plan, Error> {
    let target = Target::from_args(args)?;
    let schedule = ScheduleFlags::from_args(args)?;
    let duration = window_length(args, &schedule)?;
    let resources = declared_resources(args)?;
    let window = Window::from_args(args, duration)?;
    let timeout = request_timeout(args)?;
    let slos = Slos::from_args(args)?;
    let prompts = prompt_source(args, &slos.classes)?;
    let (shard, start_at_unix_ms) = shard_and_start(args)?;

    let mut labels = Labels::new();
    let drawn = draw_load(args, &schedule, shard, &window, &mut labels)?;
    // A count limit may end the window before the duration given.
    let window = Window {
        duration: Duration::from_secs_f64(
            ((drawn.window_end_ms - window.warmup_ms()) / 1000.0).max(0.0),
        ),
        ..window
    };
    let requests = Requests {
        load: drawn.load,
        prompts,
    };
    let requests =
        requests.prepare_workload(args, schedule.replay, drawn.window_end_ms, &mut labels)?;
    let requests = requests.split_for_shard(shard, &mut labels)?;
    describe_run(
        args,
        &target,
        &window,
        &requests,
        start_at_unix_ms,
        &mut labels,
    );
    let endpoint = connection(args, &target, &mut labels)?;
    let metrics = metrics_scrape(args, &target.uri, &endpoint, &mut labels)?;
    let template = request_body(args, target.model.clone().unwrap_or_default(), &mut labels)?;
    let quality = bank_plan(args, &target.uri, &template, timeout, &mut labels)?;
    check_record_output(args)?;
    Ok(Plan {
        uri: target.uri,
        run: RunConfig {
            load: requests.load,
            window_end_ms: drawn.window_end_ms,
            grace_ms: window.grace_ms(),
            timeout,
            prompts: requests.prompts,
            template,
            max_event_bytes: usize::try_from(args.max_event_bytes).unwrap_or(usize::MAX),
            secrets: endpoint.secrets.clone(),
            loops: args.client_loops,
            max_in_flight: drawn.max_in_flight,
        },
        warmup_ms: window.warmup_ms(),
        classes: slos.classes,
        default_class: slos.default_class,
        equality: slos.equality,
        workload: labels,
        phases: drawn.phases,
        resources,
        out: args.out.clone(),
        endpoint,
        preflight: !args.no_preflight,
        model_given: target.model.is_some(),
        shard,
        start_at_unix_ms,
        metrics,
        quality,
        no_gaps: args.no_gaps,
    })
}

/// `--quality-bank`: the bank, read and checked before anything is sent (a
/// bank that does not parse is exit 2, its line and pointer named), and
/// how it goes; its file's sha256 and the phase in `labels`.
fn bank_plan(
    args: &RecordArgs,
    uri: &Uri,
    template: &goodput_record::workload::body::BodyTemplate,
    timeout: std::time::Duration,
    labels: &mut Labels,
) -> Result<Option<goodput_record::quality::BankPlan>, Error> {
    use crate::cli::record::args::QualityPhaseArg;
    use goodput_core::quality::sidecar::Placement;
    let Some(path) = &args.quality_bank else {
        return Ok(None);
    };
    if !matches!(template.api, Api::Chat | Api::Completions) {
        return Err(usage(
            "--quality-bank needs --api chat or completions (the bank's answers are read from their unstreamed responses)",
        ));
    }
    if !(args.quality_rate.is_finite() && args.quality_rate > 0.0 && args.quality_rate <= 100.0) {
        return Err(usage(
            "--quality-rate must be above 0 and at most 100 per second",
        ));
    }
    let limits = goodput_core::quality::QualityLimits::default();
    let shown = path.display().to_string();
    let bytes = goodput_util::io::read_limited(&shown, limits.max_bytes)?;
    let bank = goodput_core::quality::parse_bank(&bytes, limits)?;
    let phase = match args.quality_phase {
        QualityPhaseArg::Interleaved => Placement::Interleaved,
        QualityPhaseArg::After => Placement::After,
    };
    labels.insert(
        "qualityBankSha256".into(),
        Scalar::String(bank.sha256.clone()),
    );
    Ok(Some(goodput_record::quality::BankPlan {
        bank,
        model: template.model.clone(),
        api: template.api,
        phase,
        rate_per_s: args.quality_rate,
        timeout,
        uri: uri.clone(),
    }))
}

/// Resolves the endpoint URL: a bare base gets the --api path appended, a
/// query is kept (it goes with every request), and user info is taken off
/// (it is sent as Basic auth: [`split_userinfo`]). Messages quote the URL
/// without user info or query ([`public_url_text`]).
pub fn endpoint_uri(url: &str, api: Api) -> Result<(Uri, Option<UserInfo>), String> {
    let shown = public_url_text(url);
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("--url `{shown}` is not a URL ({e})"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => {
            return Err(format!(
                "--url `{shown}` must start with http:// or https://"
            ))
        }
    }
    if uri.host().is_none() {
        return Err(format!("--url `{shown}` has no host"));
    }
    let (uri, userinfo) = split_userinfo(&uri);
    let path = uri.path().trim_end_matches('/');
    let new_path = if path.is_empty() {
        api.default_path().to_owned()
    } else if path.ends_with("/v1") {
        format!("{path}{}", &api.default_path()[3..])
    } else {
        return Ok((uri, userinfo));
    };
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    let mut parts = uri.into_parts();
    parts.path_and_query = Some(
        format!("{new_path}{query}")
            .parse()
            .map_err(|e| format!("--url `{shown}`: {e}"))?,
    );
    let uri = Uri::from_parts(parts).map_err(|e| format!("--url `{shown}`: {e}"))?;
    Ok((uri, userinfo))
}

/// Where requests go and which model they ask for.
struct Target {
    /// The endpoint, with the `--api` path when `--url` was a bare base.
    uri: Uri,
    /// `--model` (`None`: the preflight takes the one `/v1/models` lists).
    model: Option<String>,
    /// The URL's user info, sent as Basic auth.
    userinfo: Option<UserInfo>,
}

impl Target {
    /// Checks that `--url` is given and `--model` too unless the preflight
    /// can take it from `/v1/models` (in that order), then that the URL is
    /// http:// or https:// with a host ([`endpoint_uri`]).
    fn from_args(args: &RecordArgs) -> Result<Target, Error> {
        let required = |what: &str| usage(format!("{what} is required"));
        let url = args.url.as_deref().ok_or_else(|| required("--url"))?;
        if args.model.is_none() && args.no_preflight {
            return Err(usage(
                "--model is required with --no-preflight (without it the preflight takes \
                 the model from /v1/models when the server serves exactly one)",
            ));
        }
        let model = args.model.clone();
        let (uri, userinfo) = endpoint_uri(url, args.api.into()).map_err(usage)?;
        Ok(Target {
            uri,
            model,
            userinfo,
        })
    }
}

/// The flags that decide both the window's length and the load: read
/// before the window is known, drawn once it is.
struct ScheduleFlags {
    /// `--phases`, parsed.
    phases: Option<Vec<PhaseSpec>>,
    /// `--replay`, read and checked ([`workload::read_replay`]).
    replay: Option<ReplayFile>,
}

impl ScheduleFlags {
    /// Parses `--phases`, then reads `--replay` (its kind, `--time-scale`
    /// and every line of the file).
    fn from_args(args: &RecordArgs) -> Result<ScheduleFlags, Error> {
        let phases = args
            .phases
            .as_deref()
            .map(parse_phases)
            .transpose()
            .map_err(usage)?;
        let replay = workload::read_replay(args)?;
        Ok(ScheduleFlags { phases, replay })
    }
}

/// How long the window lasts: the phases' total with `--phases`, else
/// `--duration`, else (with `--replay`) the replay's scaled span; one of
/// them is required, and the length must be above 0.
fn window_length(args: &RecordArgs, schedule: &ScheduleFlags) -> Result<Duration, Error> {
    let duration = match (&schedule.phases, args.duration, &schedule.replay) {
        (Some(p), _, _) => {
            Duration::from_secs_f64(p.iter().map(|p| p.duration_ms).sum::<f64>() / 1000.0)
        }
        (None, Some(d), _) => d,
        (None, None, Some(r)) => r.default_duration(),
        // All at once: the window lasts --timeout, the longest any request
        // may take, so every ending falls inside it.
        (None, None, None) if is_burst(args) => args.timeout,
        // Up to 24 h: the schedule's N-th arrival ends it first.
        (None, None, None) if args.num_requests.is_some() => Duration::from_secs_f64(
            ((goodput_core::trace::model::MAX_SPAN_MS - ms(args.grace)) / 1000.0).max(0.0),
        ),
        (None, None, None) => return Err(usage("give --duration (or --phases)")),
    };
    if duration.is_zero() {
        return Err(usage("--duration must be longer than 0"));
    }
    Ok(duration)
}

/// `--request-rate inf`: the whole schedule at once.
fn is_burst(args: &RecordArgs) -> bool {
    matches!(args.request_rate.as_slice(), [rate] if rate.per_s == f64::INFINITY)
}

/// `--gpus` (with its `--gpu-hour-cost`), checked; a price alone is
/// refused, being per GPU-hour.
fn declared_resources(args: &RecordArgs) -> Result<Option<Resources>, Error> {
    match args.cost.resources()? {
        None => Ok(None),
        Some(ResourcesFlag::Both(r)) => Ok(Some(r)),
        Some(ResourcesFlag::PriceOnly(_)) => Err(usage(
            "--gpu-hour-cost needs --gpus (the price is per GPU-hour)",
        )),
    }
}

/// The observation window on the trace's clock: `--warmup`, then the
/// window's length, then `--grace`.
struct Window {
    /// `--warmup`: the window starts there.
    warmup: Duration,
    /// The window's length ([`window_length`]).
    duration: Duration,
    /// `--grace`: observation goes on this long after the window ends.
    grace: Duration,
}

impl Window {
    /// Checks that the window plus the grace spans at most a day (the most
    /// a trace's window and horizon may span).
    fn from_args(args: &RecordArgs, duration: Duration) -> Result<Window, Error> {
        if ms(duration) + ms(args.grace) > goodput_core::trace::model::MAX_SPAN_MS {
            return Err(usage(
                "--duration plus --grace must be at most 24 h (a trace's window and horizon span at most a day)",
            ));
        }
        Ok(Window {
            warmup: args.warmup,
            duration,
            grace: args.grace,
        })
    }

    /// Where the window starts, ms since t0.
    fn warmup_ms(&self) -> f64 {
        ms(self.warmup)
    }

    /// Where the window ends, ms since t0, unless `--phases` say otherwise.
    fn end_ms(&self) -> f64 {
        self.warmup_ms() + ms(self.duration)
    }

    /// The grace, ms.
    fn grace_ms(&self) -> f64 {
        ms(self.grace)
    }
}

/// `--timeout`, the per-request limit: longer than 0.
fn request_timeout(args: &RecordArgs) -> Result<Duration, Error> {
    if args.timeout.is_zero() {
        return Err(usage("--timeout must be longer than 0"));
    }
    Ok(args.timeout)
}

/// The class an unstreamed API's requests are judged by without `--slo`:
/// [`DEFAULT_SLO`]'s E2E gate alone (there is no first token to time).
const DEFAULT_UNSTREAMED_SLO: &str = "default:e2e=10000";

/// Refuses a gate on token instants for an API that does not stream
/// (embeddings): no row of its trace has a first token, so a TTFT, TPOT,
/// stall or TTFA gate could never be judged (docs/contract.md §10.16).
fn refuse_token_gates(text: &str, gates: &Gates) -> Result<(), Error> {
    let token_gates = [
        ("ttft", gates.ttft_ms),
        ("tpot", gates.tpot_ms),
        ("stall", gates.stall_ms),
        ("ttfa", gates.ttfa_ms),
    ];
    match token_gates.iter().find(|(_, g)| g.is_some()) {
        Some((name, _)) => Err(usage(format!(
            "--slo `{text}`: --api embeddings is not streamed (no first token), so only an e2e \
             gate applies; drop `{name}=`"
        ))),
        None => Ok(()),
    }
}

/// The SLO classes the requests are judged by, and the equality rule.
struct Slos {
    /// Every `--slo` class by name (the default class without `--slo`).
    classes: BTreeMap<String, Gates>,
    /// The first class declared.
    default_class: String,
    /// `--equality`.
    equality: Equality,
}

impl Slos {
    /// Parses every `--slo` in order (the first bad one is reported) and
    /// refuses a class declared twice.
    fn from_args(args: &RecordArgs) -> Result<Slos, Error> {
        let mut classes = BTreeMap::new();
        let mut default_class = None;
        let streamed = Api::from(args.api).streamed();
        let slos = match (args.slo.is_empty(), streamed) {
            (true, true) => vec![DEFAULT_SLO.to_owned()],
            (true, false) => vec![DEFAULT_UNSTREAMED_SLO.to_owned()],
            (false, _) => args.slo.clone(),
        };
        for text in &slos {
            let (name, mut gates) = parse_slo(text).map_err(usage)?;
            if !streamed {
                refuse_token_gates(text, &gates)?;
            }
            gates.token_deadline_ms = token_deadline(args)?;
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
        Ok(Slos {
            classes,
            default_class,
            equality,
        })
    }
}

/// `--token-deadline-ms`: a finite number of ms > 0, written into every class.
fn token_deadline(args: &RecordArgs) -> Result<Option<f64>, Error> {
    match args.token_deadline_ms {
        Some(d) if !(d.is_finite() && d > 0.0) => Err(usage(format!(
            "--token-deadline-ms {d}: expected a number of ms > 0"
        ))),
        d => Ok(d),
    }
}

/// The prompts before any workload option: `--prompts FILE`, read now,
/// every class it names declared by an `--slo`; else random words,
/// `--random-input-len` of them (at least 1; 128 when not given).
fn prompt_source(
    args: &RecordArgs,
    classes: &BTreeMap<String, Gates>,
) -> Result<PromptSource, Error> {
    let Some(path) = &args.prompts else {
        let words = args.random_input_len.unwrap_or(128);
        if words == 0 {
            return Err(usage("--random-input-len must be at least 1"));
        }
        return Ok(PromptSource::Random {
            words,
            seed: args.seed,
        });
    };
    let list = body::load_jsonl(path).map_err(|e| usage(e.to_string()))?;
    if let Some(p) = list
        .iter()
        .find(|p| p.class.as_ref().is_some_and(|c| !classes.contains_key(c)))
    {
        return Err(usage(format!(
            "a prompt names class `{}`, which no --slo declares",
            p.class.as_deref().unwrap_or_default()
        )));
    }
    Ok(PromptSource::List(Arc::new(list)))
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

/// The load the schedule flags draw, before any workload option.
struct DrawnLoad {
    /// Open-loop arrivals or a closed loop.
    load: Load,
    /// Where the window ends, ms since t0 (the phases' end with `--phases`).
    window_end_ms: f64,
    /// The phases of a phased schedule (empty: one rate throughout).
    phases: Vec<Phase>,
    /// The cap on requests in flight of a capped open loop.
    max_in_flight: Option<u32>,
}

/// Draws the load: `--phases`, one `--request-rate`, `--max-concurrency`
/// (at least 1, and not with `--shard`) or `--replay`'s instants, checked
/// in that order; several rates are a sweep, whose points are planned one
/// by one. Declares the arrival process in `labels`.
fn draw_load(
    args: &RecordArgs,
    schedule: &ScheduleFlags,
    shard: Option<ShardTag>,
    window: &Window,
    labels: &mut Labels,
) -> Result<DrawnLoad, Error> {
    let (phases, replay) = (schedule.phases.as_deref(), schedule.replay.as_ref());
    let throughout = |load| DrawnLoad {
        load,
        window_end_ms: window.end_ms(),
        phases: Vec::new(),
        max_in_flight: None,
    };
    if args.num_requests.is_some() && args.request_rate.is_empty() {
        return Err(usage(
            "--num-requests ends an open-loop schedule: give --request-rate R (a closed loop \
             runs for --duration)",
        ));
    }
    if args.request_rate.is_empty()
        && args.max_concurrency.is_some()
        && (args.arrival.is_some() || args.burstiness.is_some())
    {
        return Err(usage(
            "--arrival and --burstiness shape an open-loop schedule: add --request-rate R \
             (with --max-concurrency C, at most C of its requests in flight)",
        ));
    }
    match (args.request_rate.as_slice(), args.max_concurrency) {
        ([], None) if phases.is_some() => {
            phased_load(args, phases.unwrap_or_default(), window, labels)
        }
        ([_], Some(0)) => Err(usage("--max-concurrency must be at least 1")),
        ([_], Some(_)) if shard.is_some() => Err(usage(
            "--shard with --max-concurrency would cap each shard on its own: record a capped \
             open loop on one machine",
        )),
        ([rate], cap) => {
            let (load, window_end_ms) = open_load(args, rate.per_s, window, labels)?;
            if let Some(c) = cap {
                labels.insert("loop".to_owned(), Scalar::String("open-capped".into()));
                labels.insert("maxConcurrency".to_owned(), Scalar::Number(f64::from(c)));
            }
            Ok(DrawnLoad {
                window_end_ms,
                max_in_flight: cap,
                ..throughout(load)
            })
        }
        ([], Some(_)) if shard.is_some() => Err(usage(SHARD_NEEDS_OPEN_LOOP)),
        ([], Some(c)) if c > 0 => {
            labels.insert("arrival".to_owned(), Scalar::String("closed".into()));
            labels.insert("maxConcurrency".to_owned(), Scalar::Number(f64::from(c)));
            Ok(throughout(Load::Closed { concurrency: c }))
        }
        ([], Some(_)) => Err(usage("--max-concurrency must be at least 1")),
        ([_, _, ..], _) => Err(usage(
            "several --request-rate values are a sweep: each point is planned on its own",
        )),
        // The replayed file's instants, shifted to the window start and scaled.
        ([], None) if replay.is_some() => {
            labels.insert("arrival".to_owned(), Scalar::String("replay".into()));
            let arrivals = replay
                .map(|r| r.replay.arrivals_ms(window.warmup_ms(), r.scale))
                .unwrap_or_default();
            Ok(throughout(Load::Open {
                arrivals_ms: Arc::new(arrivals),
            }))
        }
        _ => Err(usage(
            "give --request-rate R (open loop) or --max-concurrency C (closed loop)",
        )),
    }
}

/// `--phases` drawn from the window start: the window ends where the
/// phases do, and the phases are declared.
fn phased_load(
    args: &RecordArgs,
    specs: &[PhaseSpec],
    window: &Window,
    labels: &mut Labels,
) -> Result<DrawnLoad, Error> {
    let (process, burstiness) = arrival_process(args)?;
    let schedule = phased_schedule(process, burstiness, args.seed, window.warmup_ms(), specs)
        .map_err(|e| usage(e.to_string()))?;
    labels.insert(
        "arrival".to_owned(),
        Scalar::String(process.as_str().into()),
    );
    if process != ArrivalProcess::Constant {
        labels.insert("burstiness".to_owned(), Scalar::Number(burstiness));
    }
    Ok(DrawnLoad {
        load: Load::Open {
            arrivals_ms: Arc::new(schedule.arrivals_ms),
        },
        window_end_ms: schedule.window_end_ms,
        phases: schedule.phases,
        max_in_flight: None,
    })
}

/// One `--request-rate`, drawn over the whole window (or to its
/// `--num-requests`-th arrival: [`limited_schedule`]); `inf` is a burst at
/// t0. Returns the load and where its window ends.
fn open_load(
    args: &RecordArgs,
    rate: f64,
    window: &Window,
    labels: &mut Labels,
) -> Result<(Load, f64), Error> {
    let limit = args.num_requests.map(|n| n as usize);
    if let Some(n) = limit {
        labels.insert("numRequests".to_owned(), Scalar::Number(n as f64));
    }
    if rate == f64::INFINITY {
        return burst_load(args, limit, window, labels);
    }
    let (process, burstiness) = arrival_process(args)?;
    let (arrivals, window_end_ms) =
        limited_schedule(process, rate, burstiness, args.seed, window.end_ms(), limit)
            .map_err(|e| usage(e.to_string()))?;
    if window_end_ms <= window.warmup_ms() {
        return Err(usage(
            "--num-requests: every request arrives during --warmup, so the window would be empty",
        ));
    }
    let mut put = |k: &str, v: Scalar| {
        labels.insert(k.to_owned(), v);
    };
    put("arrival", Scalar::String(process.as_str().into()));
    put("ratePerS", Scalar::Number(rate));
    // Poisson is gamma with shape 1; constant has no burstiness.
    if process != ArrivalProcess::Constant {
        put("burstiness", Scalar::Number(burstiness));
    }
    let load = Load::Open {
        arrivals_ms: Arc::new(arrivals),
    };
    Ok((load, window_end_ms))
}

/// `--request-rate inf`: `--num-requests` arrivals all at t0 (no warm-up,
/// no arrival process), declared `arrival: "burst"`, `requestRate: "inf"`.
fn burst_load(
    args: &RecordArgs,
    limit: Option<usize>,
    window: &Window,
    labels: &mut Labels,
) -> Result<(Load, f64), Error> {
    let Some(n) = limit else {
        return Err(usage(
            "--request-rate inf sends the whole schedule at once: give --num-requests N",
        ));
    };
    if !args.warmup.is_zero() {
        return Err(usage(
            "--request-rate inf sends every request at t0: --warmup would exclude them all",
        ));
    }
    if args.arrival.is_some() || args.burstiness.is_some() {
        return Err(usage(
            "--request-rate inf has no arrival process: drop --arrival and --burstiness",
        ));
    }
    let arrivals = burst(n, 0.0).map_err(|e| usage(e.to_string()))?;
    labels.insert("arrival".to_owned(), Scalar::String("burst".into()));
    labels.insert("requestRate".to_owned(), Scalar::String("inf".into()));
    let load = Load::Open {
        arrivals_ms: Arc::new(arrivals),
    };
    Ok((load, window.end_ms()))
}

/// `--arrival` (Poisson when not given) and the gamma shape in force.
fn arrival_process(args: &RecordArgs) -> Result<(ArrivalProcess, f64), Error> {
    let process = args.arrival.map_or(ArrivalProcess::Poisson, Into::into);
    let burstiness = burstiness_for(process, args.burstiness)?;
    Ok((process, burstiness))
}

/// The gamma shape in force: `--burstiness` only with `--arrival gamma`.
fn burstiness_for(process: ArrivalProcess, given: Option<f64>) -> Result<f64, Error> {
    match (process, given) {
        (ArrivalProcess::Gamma, b) => Ok(b.unwrap_or(1.0)),
        (_, None) => Ok(1.0),
        (_, Some(_)) => Err(usage("--burstiness applies only to --arrival gamma")),
    }
}

/// What is sent: when (the load) and which prompts.
struct Requests {
    /// Open-loop arrivals, a closed loop, or sessions.
    load: Load,
    /// Where each request's prompt comes from.
    prompts: PromptSource,
}

impl Requests {
    /// The workload options (prepared prompts, `--replay`, `--dataset`
    /// sessions; checked in [`workload::plan_workload`]) replace the drawn
    /// load and prompts. Without any, the prompts go as drawn, declared by
    /// how their lengths are known: random words stand for tokens, a file's
    /// prompts are sent as they are.
    fn prepare_workload(
        self,
        args: &RecordArgs,
        replay: Option<ReplayFile>,
        window_end_ms: f64,
        labels: &mut Labels,
    ) -> Result<Requests, Error> {
        if !workload::wants_workload(args) {
            let lengths = match &self.prompts {
                PromptSource::List(_) => "file",
                _ => "approximate",
            };
            labels.insert("promptLengths".to_owned(), Scalar::String(lengths.into()));
            return Ok(self);
        }
        let planned =
            workload::plan_workload(args, self.load, self.prompts, replay, window_end_ms)?;
        labels.extend(planned.labels);
        Ok(Requests {
            load: planned.load,
            prompts: planned.prompts,
        })
    }

    /// A shard takes every N-th request of the whole plan, prompt included:
    /// prepared prompts and replayed entries are drawn for the whole
    /// schedule first, so request i gets the same prompt on whichever shard
    /// sends it. Multi-turn sessions and closed loops cannot be split.
    fn split_for_shard(
        self,
        shard: Option<ShardTag>,
        labels: &mut Labels,
    ) -> Result<Requests, Error> {
        let Some(s) = shard else {
            return Ok(self);
        };
        match self.load {
            Load::Open { arrivals_ms } => {
                let arrivals = shard_of(arrivals_ms.as_ref().clone(), s, labels);
                labels.insert("shards".to_owned(), Scalar::Number(s.count as f64));
                Ok(Requests {
                    load: Load::Open {
                        arrivals_ms: Arc::new(arrivals),
                    },
                    prompts: PromptSource::Strided {
                        inner: Box::new(self.prompts),
                        stride: s.count,
                        offset: s.index,
                    },
                })
            }
            Load::Sessions { .. } => Err(usage(
                "--shard splits a schedule request by request; multi-turn sessions \
                 (--dataset with whole conversations) cannot be split that way: \
                 record them on one machine",
            )),
            Load::Closed { .. } => Err(usage(SHARD_NEEDS_OPEN_LOOP)),
        }
    }
}

/// This shard's share of the whole seeded schedule (every shard draws all
/// of it and keeps the requests i with i mod N = K), declaring the whole
/// schedule's size and fingerprint so `merge` can check the shards agree.
fn shard_of(arrivals: Vec<f64>, s: ShardTag, labels: &mut Labels) -> Vec<f64> {
    labels.insert(
        "scheduleSize".to_owned(),
        Scalar::Number(arrivals.len() as f64),
    );
    labels.insert(
        "scheduleHash".to_owned(),
        Scalar::String(schedule_hash(&arrivals)),
    );
    arrivals
        .into_iter()
        .skip(s.index)
        .step_by(s.count)
        .collect()
}

/// A short fingerprint of a schedule, the one `merge` recomputes from the
/// merged rows' arrivals (`goodput_core::merge::schedule_hash`): shards of
/// one schedule carry the same one.
fn schedule_hash(arrivals_ms: &[f64]) -> String {
    goodput_core::merge::schedule_hash(arrivals_ms)
}

/// Declares the run in `labels` once its load and prompts are final: the
/// start instant, seed, model, API, endpoint path, request fields, prompts,
/// window, timeout, the recorder's version and (for an open loop sent by
/// several loops) `--client-loops`. Checks nothing.
fn describe_run(
    args: &RecordArgs,
    target: &Target,
    window: &Window,
    requests: &Requests,
    start_at_unix_ms: Option<f64>,
    labels: &mut Labels,
) {
    let mut put = |k: &str, v: Scalar| {
        labels.insert(k.to_owned(), v);
    };
    if let Some(t) = start_at_unix_ms {
        put("startAtUnixMs", Scalar::Number(t));
    }
    put("seed", Scalar::Number(args.seed as f64));
    // Without --model, the preflight declares the one it takes.
    if let Some(model) = &target.model {
        put("model", Scalar::String(model.clone()));
    }
    put("api", Scalar::String(Api::from(args.api).as_str().into()));
    put("endpoint", Scalar::String(target.uri.path().to_owned()));
    if let Some(n) = args.max_tokens {
        put("maxTokens", Scalar::Number(f64::from(n)));
    }
    if args.ignore_eos {
        put("ignoreEos", Scalar::Bool(true));
    }
    put("prompts", Scalar::String(requests.prompts.describe()));
    put("durationS", Scalar::Number(window.duration.as_secs_f64()));
    put("warmupS", Scalar::Number(window.warmup.as_secs_f64()));
    put("graceS", Scalar::Number(window.grace.as_secs_f64()));
    put("timeoutS", Scalar::Number(args.timeout.as_secs_f64()));
    put(
        "recorder",
        Scalar::String(format!(
            "{} {}",
            goodput_core::GENERATOR_NAME,
            goodput_core::GENERATOR_VERSION
        )),
    );
    if args.client_loops > 1 && matches!(requests.load, Load::Open { .. }) {
        put("clientLoops", Scalar::Number(args.client_loops as f64));
    }
}

/// How the server is reached: the API key (from `--api-key-env`; an empty
/// variable is no key), the headers (`-H`, `--header-env`) and the TLS
/// trust (`--cacert`, `--insecure`), checked by [`Endpoint::from_flags`].
/// Declared in `labels` by header names only: their values stay out of the
/// trace.
fn connection(args: &RecordArgs, target: &Target, labels: &mut Labels) -> Result<Endpoint, Error> {
    let api_key = std::env::var(&args.api_key_env)
        .ok()
        .filter(|k| !k.is_empty());
    let flags = EndpointFlags {
        header: args.header.clone(),
        header_env: args.header_env.clone(),
        cacert: args.cacert.clone(),
        insecure: args.insecure,
        userinfo: target.userinfo.clone(),
    };
    let endpoint = Endpoint::from_flags(&target.uri, &flags, api_key, |v| std::env::var(v).ok())
        .and_then(|e| e.for_api(args.api.into()))
        .map_err(usage)?;
    endpoint.describe(labels);
    Ok(endpoint)
}

/// `--metrics`: the scrape plan, checked by [`scrape::metrics_plan`], and
/// its public URL (no credentials) and interval in `labels`.
fn metrics_scrape(
    args: &RecordArgs,
    uri: &Uri,
    endpoint: &Endpoint,
    labels: &mut Labels,
) -> Result<Option<MetricsPlan>, Error> {
    let metrics = scrape::metrics_plan(args, uri, endpoint)?;
    if let Some(m) = &metrics {
        let urls: Vec<String> = m
            .endpoints
            .iter()
            .map(|e| scrape::public_url(&e.uri))
            .collect();
        labels.insert("metricsUrl".into(), Scalar::String(urls[0].clone()));
        if urls.len() > 1 {
            labels.insert("metricsUrls".into(), Scalar::String(urls.join(" ")));
        }
        if let Some(name) = &args.power_metric {
            labels.insert(
                crate::cli::sidecar::POWER_METRIC_LABEL.into(),
                Scalar::String(name.clone()),
            );
        }
        labels.insert(
            "metricsIntervalS".into(),
            Scalar::Number(m.interval.as_secs_f64()),
        );
    }
    Ok(metrics)
}

/// The request body: `--api`, the model, `--max-tokens`, `--ignore-eos`
/// and `--extra-body` (a JSON object that may not set a field a flag
/// already sets), the extra body going into `labels` as given.
fn request_body(
    args: &RecordArgs,
    model: String,
    labels: &mut Labels,
) -> Result<BodyTemplate, Error> {
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
        labels.insert("extraBody".into(), Scalar::String(extra.as_json().into()));
    }
    Ok(BodyTemplate {
        api: args.api.into(),
        model,
        max_tokens: args.max_tokens,
        ignore_eos: args.ignore_eos,
        extra,
        embeddings_batch: embeddings_batch(args, labels)?,
    })
}

/// `--embeddings-batch`: at least 1, only with `--api embeddings` (then
/// written to the workload as `embeddingsBatch`).
fn embeddings_batch(args: &RecordArgs, labels: &mut Labels) -> Result<u32, Error> {
    let embeddings = Api::from(args.api) == Api::Embeddings;
    let output_flag = max_tokens_flag(args).or(args.ignore_eos.then_some("--ignore-eos"));
    if let (true, Some(flag)) = (embeddings, output_flag) {
        return Err(usage(format!(
            "{flag} does not apply to --api embeddings (an embedding has no output tokens)"
        )));
    }
    if args.embeddings_batch == 0 {
        return Err(usage("--embeddings-batch must be at least 1"));
    }
    if args.embeddings_batch != 1 && !embeddings {
        return Err(usage("--embeddings-batch applies to --api embeddings only"));
    }
    if embeddings {
        labels.insert(
            "embeddingsBatch".into(),
            Scalar::Number(f64::from(args.embeddings_batch)),
        );
    }
    Ok(args.embeddings_batch)
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

/// `--out`: a regular file (or new, or a link to one), none of the run's
/// input files, writable (probed); no spool beside it (an earlier run's, to
/// recover with `record --recover` or remove first; something there that is
/// not a regular file is named for what it is); and, with `--metrics`, a
/// sidecar path that is a regular file too.
fn check_record_output(args: &RecordArgs) -> Result<(), Error> {
    let out = args.out.as_path();
    let mut inputs: Vec<&Path> = [
        &args.prompts,
        &args.tokenizer,
        &args.cacert,
        &args.quality_bank,
    ]
    .into_iter()
    .flatten()
    .map(|p| p.as_path())
    .collect();
    for pair in [&args.dataset, &args.replay].into_iter().flatten() {
        inputs.extend(pair.get(1).map(Path::new));
    }
    check_output("--out", out, &inputs)?;
    let spool = goodput_record::output::spool::spool_path(out);
    if std::fs::symlink_metadata(&spool).is_ok() {
        goodput_util::io::output_target(&spool).map_err(|source| Error::Output {
            what: "the spool".to_owned(),
            source,
        })?;
        return Err(goodput_record::output::spool::SpoolError::Exists {
            path: spool.display().to_string(),
        }
        .into());
    }
    if args.quality_bank.is_some() {
        let sidecar = goodput_record::quality_sidecar_path(out);
        goodput_util::io::check_output(&sidecar, &inputs).map_err(|source| Error::Output {
            what: "the quality sidecar".to_owned(),
            source,
        })?;
    }
    if !args.metrics.is_empty() {
        let sidecar = goodput_record::metrics_sidecar_path(out);
        goodput_util::io::check_output(&sidecar, &inputs).map_err(|source| Error::Output {
            what: "the metrics sidecar".to_owned(),
            source,
        })?;
    }
    Ok(())
}

/// A duration in ms, as the trace's clock counts.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_get_the_api_path_only_when_bare() {
        let u = |s: &str, api| endpoint_uri(s, api).map(|(u, _)| u.to_string());
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
        assert_eq!(
            u("http://h/v1?api-version=2024-06", Api::Chat),
            Ok("http://h/v1/chat/completions?api-version=2024-06".into())
        );
        assert_eq!(
            u("http://h?key=Q", Api::Completions),
            Ok("http://h/v1/completions?key=Q".into())
        );
        assert_eq!(
            u("http://h/gen?key=Q", Api::Chat),
            Ok("http://h/gen?key=Q".into())
        );
        assert!(u("ftp://h", Api::Chat).is_err());
        assert!(u("h:8000", Api::Chat).is_err());
    }

    #[test]
    fn user_info_is_taken_off_and_never_quoted() {
        let (uri, info) =
            endpoint_uri("http://alice:PASS%2F1@h:8000/gen?key=QSECRET", Api::Chat).unwrap();
        assert_eq!(uri.to_string(), "http://h:8000/gen?key=QSECRET");
        let info = info.unwrap();
        assert_eq!(
            (info.user.as_str(), info.password.as_str()),
            ("alice", "PASS/1")
        );
        let err = endpoint_uri("ftp://alice:PASSWD1@h/gen?key=QSECRET", Api::Chat).unwrap_err();
        assert_eq!(
            err,
            "--url `ftp://h/gen?…` must start with http:// or https://"
        );
        let err = endpoint_uri("http://alice:PASSWD1@h/ g?key=QSECRET", Api::Chat).unwrap_err();
        assert!(
            err.starts_with("--url `http://h/ g?…` is not a URL ("),
            "{err}"
        );
    }
}
