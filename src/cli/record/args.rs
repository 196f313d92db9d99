//! The flags of `goodput record` and its `--help` epilogue.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::choices::{ApiArg, ArrivalArg};
use goodput_record::workload::lengths::{LengthDist, LengthError, MAX_LENGTH};

use crate::cli::duration::parse_duration;
use crate::cli::flags::{parse_rate, Rate};

/// Exit statuses of `goodput record`, shown in `--help`.
pub const RECORD_EXIT_HELP: &str = "\
Exit status:
  0    the trace was written (when most requests failed for one reason, the
       summary's first line says so)
  2    usage error, unreadable prompt file, the output cannot be written, or
       the preflight found the server unreachable, TLS failing, 401/403,
       404, or --model not among the models /v1/models lists (all checked before any request of the run is sent and before any
       trace is written; no partial file is ever left)
  2    also: the disk filled during the run (sending stopped at once; the spool
       written so far is kept), or the trace could not be written after it (the
       spool is kept); the message names the `record --recover` command
  130  interrupted (Ctrl-C): the first Ctrl-C stops sending and lets what is in
       flight finish (up to --grace); a second cuts it (unfinished requests are
       written in_flight); the window ends at the first, and the trace is written
       (in a rate sweep: the current point's trace; earlier points' traces stay)
  143  interrupted by SIGTERM (kill, Kubernetes, docker stop): cut at once, as a
       second Ctrl-C, the trace written
  129  the same, interrupted by SIGHUP (the terminal closed)

A rate list (--request-rate 5,10,20) is a sweep: one recording per rate, in order,
seed + index each, --out a template containing {rate}, --cooldown between points;
every point is checked before anything is sent. See docs/frontier.md.

--phases replaces --request-rate and --duration: one open-loop schedule whose
rate changes at each phase boundary (the warm-up runs at the first phase's
rate). See docs/recorder.md.

Workloads (see docs/recorder.md): --tokenizer tokenizer.json makes prompt
lengths exact model tokens; --input-tokens and --output-tokens draw lengths;
--prefix-tokens and --prefix-groups share prefixes; --replay mooncake FILE
replaces --request-rate with the file's timestamps (--time-scale F);
--dataset sharegpt FILE (or multi-turn FILE) plays whole conversations as
sessions started on the schedule, each turn waiting for the previous answer
(--think-time). Every prompt is prepared before the first request is sent,
and every option is declared in the trace's workload.

The API key is read from the environment (OPENAI_API_KEY, or --api-key-env NAME)
and is never written; neither are header values (-H, --header-env): the trace
records header names only. --extra-body and --insecure are written into the
trace's workload. Prompts are never written: rows carry their length and a
short hash. https:// goes through rustls (HTTP/1.1), trusting the system's
roots unless --cacert FILE or --insecure is given.";

/// The most distinct shared prefixes (`--prefix-groups`): each is held in
/// memory, up to [`MAX_LENGTH`] tokens long.
pub const MAX_PREFIX_GROUPS: u32 = 10_000;

/// A length (or count) flag above its bound, or not a whole number.
#[derive(Debug, thiserror::Error)]
pub enum BoundError {
    /// Not a whole number.
    #[error("`{0}` is not a whole number")]
    NotWhole(String),
    /// Above the flag's bound.
    #[error("{value} is above the bound of {bound} for {flag}")]
    Above {
        /// The flag.
        flag: &'static str,
        /// The value given.
        value: u64,
        /// The bound.
        bound: u32,
    },
}

/// Parses a whole number of at most `bound` for `flag` (zero is left to
/// the flag's own check). Every length flag of `record` is bounded, so a
/// huge value is refused here rather than aborting on an allocation.
fn bounded(flag: &'static str, bound: u32, text: &str) -> Result<u32, BoundError> {
    let value: u64 = text
        .trim()
        .parse()
        .map_err(|_| BoundError::NotWhole(text.to_owned()))?;
    u32::try_from(value)
        .ok()
        .filter(|&v| v <= bound)
        .ok_or(BoundError::Above { flag, value, bound })
}

fn parse_random_input_len(text: &str) -> Result<u32, BoundError> {
    bounded("--random-input-len", MAX_LENGTH, text)
}

fn parse_max_tokens(text: &str) -> Result<u32, BoundError> {
    bounded("--max-tokens", MAX_LENGTH, text)
}

fn parse_prefix_tokens(text: &str) -> Result<u32, BoundError> {
    bounded("--prefix-tokens", MAX_LENGTH, text)
}

fn parse_prefix_groups(text: &str) -> Result<u32, BoundError> {
    bounded("--prefix-groups", MAX_PREFIX_GROUPS, text)
}

/// Parses `--input-tokens MEAN[:STD[:MIN:MAX]]`.
fn parse_input_tokens(text: &str) -> Result<LengthDist, LengthError> {
    LengthDist::parse("--input-tokens", text)
}

/// Parses `--output-tokens MEAN[:STD[:MIN:MAX]]`.
fn parse_output_tokens(text: &str) -> Result<LengthDist, LengthError> {
    LengthDist::parse("--output-tokens", text)
}

/// The default pause between two points of a rate sweep.
pub const DEFAULT_COOLDOWN: &str = "10s";

/// Flags of `goodput record`. Names follow `vllm bench serve` where the
/// meaning is the same.
#[derive(Debug, Clone, clap::Args)]
#[command(group(clap::ArgGroup::new("load").required(true).multiple(true).args(["request_rate", "max_concurrency", "phases", "replay", "recover"])))]
#[command(group(clap::ArgGroup::new("source").args(["prompts", "dataset", "random_input_len", "input_tokens", "replay"])))]
pub struct RecordArgs {
    /// Server URL: a base (`http://host:8000`, the --api path is appended),
    /// a base ending in `/v1`, or a full endpoint URL.
    #[arg(long, value_name = "URL", required_unless_present = "recover")]
    pub url: Option<String>,
    /// The `model` field of every request; checked against /v1/models by the
    /// preflight. Without it, the one model /v1/models lists is taken (the
    /// trace says so: workload.modelFrom).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Open loop: requests per second, sent at scheduled instants whatever the server does.
    /// `inf` sends the whole schedule at once (needs --num-requests).
    /// A comma-separated list (`5,10,20,40`) is a rate sweep: one recording per
    /// rate, in order, seed + index each, `--out` a template containing `{rate}`.
    #[arg(long, value_name = "R[,R…]", value_delimiter = ',', value_parser = parse_rate)]
    pub request_rate: Vec<Rate>,
    /// Closed loop: C workers, each sending when its previous request ended
    /// (finds the throughput ceiling; its latencies are not SLA evidence).
    /// With --request-rate: the open-loop schedule, at most C requests in
    /// flight (an arrival that finds C waits for a slot, timed from its
    /// scheduled instant: the wait counts against its latencies).
    #[arg(long, value_name = "C")]
    pub max_concurrency: Option<u32>,
    /// End the schedule after N arrivals (warm-up included): the window ends
    /// where arrival N+1 would be due, or at --duration when earlier.
    #[arg(long, visible_alias = "num-prompts", value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=goodput_record::schedule::MAX_SCHEDULED as u64),
          conflicts_with_all = ["phases", "replay", "dataset", "recover"])]
    pub num_requests: Option<u64>,
    /// Length of the measurement window (after the warm-up). With --replay,
    /// the replayed span rounded up to the next whole second by default.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, required_unless_present_any = ["phases", "replay", "recover", "num_requests"], conflicts_with = "phases")]
    pub duration: Option<Duration>,
    /// Open loop in phases: `NAME:RATE/s:DURATION,…` (e.g.
    /// `steady:10/s:60s,burst:40/s:10s,recover:10/s:60s`): one seeded
    /// schedule whose rate changes at each phase boundary; the window is the
    /// phases' total length; the trace declares the phases and labels each
    /// row with its phase.
    #[arg(long, value_name = "PHASES", conflicts_with_all = ["request_rate", "max_concurrency"])]
    pub phases: Option<String>,
    /// Warm-up before the window; its arrivals are recorded and excluded.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,
    /// Arrival process of the open loop.
    #[arg(long, value_enum)]
    pub arrival: Option<ArrivalArg>,
    /// Gamma shape (only with --arrival gamma; 1 = Poisson, below 1 = burstier).
    #[arg(long, value_name = "B")]
    pub burstiness: Option<f64>,
    /// Seed of the schedule and of random prompts.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// An SLO class `NAME:ttft=MS,tpot=MS,e2e=MS[,stall=MS]` (an unnamed gate, or `none`,
    /// means no gate); repeatable; the first is the default class.
    /// Without any: `default:ttft=1000,tpot=50,e2e=10000`.
    #[arg(long = "slo", value_name = "CLASS:GATES")]
    pub slo: Vec<String>,
    /// A per-token deadline in ms written into every class (`tokenDeadlineMs`):
    /// the receipt then gives the share of token deadlines met (fluidity).
    #[arg(long, value_name = "MS")]
    pub token_deadline_ms: Option<f64>,
    /// Leave the gaps between token-carrying stream events (`gapsMs`) out of
    /// the trace: about 8 to 20 bytes per token less, and no stall gate can
    /// be judged.
    #[arg(long)]
    pub no_gaps: bool,
    /// Whether a value equal to its gate passes (inclusive) or misses (strict).
    #[arg(long, value_name = "RULE", default_value = "inclusive", value_parser = ["inclusive", "strict"])]
    pub equality: String,
    /// The API the requests speak (docs/recorder.md, "APIs"): chat,
    /// completions, responses (OpenAI Responses), messages (Anthropic
    /// Messages: the key goes in x-api-key, with anthropic-version), or
    /// embeddings (not streamed: only e2e gates apply).
    #[arg(long, value_enum, default_value_t = ApiArg::Chat)]
    pub api: ApiArg,
    /// Inputs per embeddings request (--api embeddings): the request's
    /// prompt, N times.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub embeddings_batch: u32,
    /// Prompts, one JSON string or {"prompt": …, "class": …} per line.
    #[arg(long, value_name = "FILE.jsonl")]
    pub prompts: Option<PathBuf>,
    /// Multi-turn sessions: `sharegpt FILE` (whole conversations) or
    /// `multi-turn FILE` (AIPerf's JSONL: session_id, turns[{text, delay}]).
    /// Sessions start on the open-loop schedule; each later turn waits for
    /// the previous answer plus its think time and carries the conversation
    /// so far, the model's actual replies included.
    #[arg(long, num_args = 2, value_names = ["KIND", "FILE"])]
    pub dataset: Option<Vec<String>>,
    /// Random prompts of N words (the default source, N = 128; at most
    /// 1,000,000, the bound on every length flag).
    #[arg(long, value_name = "N", value_parser = parse_random_input_len)]
    pub random_input_len: Option<u32>,
    /// `max_tokens` of every request (default: the server's; at most 1,000,000).
    #[arg(long, value_name = "N", value_parser = parse_max_tokens, conflicts_with_all = ["output_tokens", "replay"])]
    pub max_tokens: Option<u32>,
    /// A Hugging Face tokenizer.json: prompt lengths become exact model
    /// tokens, and rows carry the client's `promptTokens` (read from the
    /// file; nothing is downloaded).
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
    /// Random prompts of MEAN[:STD[:MIN:MAX]] tokens (normal, rounded,
    /// clipped, seeded); exact with --tokenizer, else one filler word per token.
    #[arg(long, value_name = "MEAN[:STD[:MIN:MAX]]", value_parser = parse_input_tokens)]
    pub input_tokens: Option<LengthDist>,
    /// Output length MEAN[:STD[:MIN:MAX]] tokens, sent as each request's
    /// `max_tokens` (add --ignore-eos so the server produces all of them).
    #[arg(long, value_name = "MEAN[:STD[:MIN:MAX]]", value_parser = parse_output_tokens)]
    pub output_tokens: Option<LengthDist>,
    /// Start every random prompt with one of --prefix-groups fixed prefixes
    /// of N tokens (seeded choice); the prompt is the prefix plus
    /// --input-tokens (or --random-input-len) more (N at most 1,000,000).
    #[arg(long, value_name = "N", value_parser = parse_prefix_tokens, conflicts_with_all = ["prompts", "dataset", "replay"])]
    pub prefix_tokens: Option<u32>,
    /// Number of distinct shared prefixes (with --prefix-tokens; default 1,
    /// at most 10,000).
    #[arg(long, value_name = "K", value_parser = parse_prefix_groups, requires = "prefix_tokens")]
    pub prefix_groups: Option<u32>,
    /// Replay a timestamped trace: `mooncake FILE` (JSONL: timestamp in ms,
    /// input_length, output_length, hash_ids of 512-token blocks). Open loop
    /// at the file's instants, shifted to the window start.
    #[arg(long, num_args = 2, value_names = ["KIND", "FILE"],
          conflicts_with_all = ["request_rate", "max_concurrency", "phases", "arrival", "burstiness"])]
    pub replay: Option<Vec<String>>,
    /// Stretch (> 1) or compress (< 1) the replayed trace's time.
    #[arg(long, value_name = "F", requires = "replay")]
    pub time_scale: Option<f64>,
    /// Think time between a session's turns when the dataset gives none.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "dataset")]
    pub think_time: Option<Duration>,
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
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = DEFAULT_COOLDOWN)]
    pub cooldown: Duration,
    /// The environment variable holding the API key.
    #[arg(long, value_name = "NAME", default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
    /// GPUs behind the endpoint and the price of a GPU-hour, declared in the trace.
    #[command(flatten)]
    pub cost: crate::cli::release::CostArgs,
    /// Never show the progress line (it is shown only when stderr is a terminal).
    #[arg(long)]
    pub no_progress: bool,
    /// Record shard K of N of the one seeded schedule: only the requests i
    /// with i mod N = K, at their scheduled instants from --start-at (which it
    /// needs). K may be `auto`: the JOB_COMPLETION_INDEX of a Kubernetes
    /// Indexed Job. Merge the shards' traces with `goodput merge`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// t0 of the schedule, shared by every shard: an RFC 3339 instant
    /// (2026-12-01T06:40:00Z) or Unix epoch seconds. Started late, the
    /// recorder sends the overdue requests at once, each with its send lag;
    /// the schedule is never shifted.
    #[arg(long, value_name = "T")]
    pub start_at: Option<String>,
    /// Turn the spool of a recording that died (`TRACE.spool`, left beside
    /// its --out) into a trace at --out: ended requests as they were,
    /// dispatched ones in flight, due ones not sent, the window cut at the
    /// last instant the spool proves. Sends nothing.
    #[arg(long, value_name = "SPOOL", conflicts_with_all = ["url", "model", "duration", "warmup", "seed", "slo", "shard", "start_at", "phases", "request_rate", "max_concurrency", "replay"])]
    pub recover: Option<PathBuf>,
    /// A header sent with every request, `'Name: value'`; repeatable. The
    /// value is never written or printed (the trace records the name).
    #[arg(short = 'H', long = "header", value_name = "'NAME: VALUE'")]
    pub header: Vec<String>,
    /// A header whose value is read from the environment variable ENVVAR,
    /// `'Name: ENVVAR'`; repeatable.
    #[arg(long = "header-env", value_name = "'NAME: ENVVAR'")]
    pub header_env: Vec<String>,
    /// A JSON object merged into every request body (`'{"temperature": 0}'`);
    /// written into the trace's workload. Keys the recorder sets are refused.
    #[arg(long, value_name = "JSON")]
    pub extra_body: Option<String>,
    /// https: trust only the PEM certificates in FILE: the server's own
    /// (self-signed) certificate, or the CA that signed it.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// https: accept any certificate (the trace says so: workload.insecure).
    #[arg(long)]
    pub insecure: bool,
    /// Skip the check of the server (GET /v1/models, else a one-token
    /// request) made before the schedule starts.
    #[arg(long)]
    pub no_preflight: bool,
    /// Scrape Prometheus metrics while recording, into a sidecar
    /// `TRACE.metrics.jsonl` beside the trace (its sha256 in the trace's
    /// workload). Alone: `/metrics` on the server's origin; with a URL: that
    /// endpoint. Give it more than once to read several at every tick (the
    /// server and, e.g., a DCGM or node exporter for --power-metric).
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "", action = clap::ArgAction::Append)]
    pub metrics: Vec<String>,
    /// A metrics endpoint instead of the server's `/metrics` (the same as
    /// `--metrics URL`; may be repeated).
    #[arg(long, value_name = "URL", requires = "metrics")]
    pub metrics_url: Vec<String>,
    /// The power series (watts) the metrics endpoints carry, declared in the
    /// trace (`workload.powerMetric`) so `analyze`, `gate` and `report`
    /// integrate it into energy per good request (default there:
    /// `DCGM_FI_DEV_POWER_USAGE`).
    #[arg(long, value_name = "NAME", requires = "metrics", value_parser = parse_metric_name)]
    pub power_metric: Option<String>,
    /// Send this quality bank (JSON Lines, docs/quality.md) beside the load,
    /// one item at a time, and write the answers to `TRACE.quality.jsonl`
    /// (its sha256 in the trace's `quality` member).
    #[arg(long, value_name = "BANK")]
    pub quality_bank: Option<std::path::PathBuf>,
    /// When the bank is sent: interleaved with the load from t0 at
    /// --quality-rate (the rest right after it), or all after it.
    #[arg(long, value_enum, default_value_t = QualityPhaseArg::Interleaved, requires = "quality_bank")]
    pub quality_phase: QualityPhaseArg,
    /// Bank items per second while interleaved.
    #[arg(
        long,
        value_name = "R",
        default_value_t = 1.0,
        requires = "quality_bank"
    )]
    pub quality_rate: f64,
    /// Time between scrapes, also each scrape's timeout (at least 100 ms).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "1s", requires = "metrics")]
    pub metrics_interval: Duration,
    /// Search the highest rate meeting --attainment (and every limit given,
    /// e.g. --max-p95-ttft-ms): from --request-rate R, double until a point
    /// falls short, then bisect; each point a full recording (`--out` a
    /// `{rate}` template, or `trace-{rate}.json` beside it). See docs/frontier.md.
    #[arg(long, requires = "request_rate", conflicts_with = "max_concurrency")]
    pub find_capacity: bool,
    /// The pass share a capacity-search point must reach (0 < share ≤ 1).
    #[arg(
        long,
        value_name = "SHARE",
        default_value_t = 0.9,
        requires = "find_capacity"
    )]
    pub attainment: f64,
    /// Stop the capacity search when (high − low) / low is at most this (`5%` or `0.05`).
    #[arg(long, value_name = "P", default_value = "5%", value_parser = parse_precision, requires = "find_capacity")]
    pub precision: f64,
    /// The limits a capacity-search point must hold besides --attainment
    /// (gate's --max-p95-ttft-ms and the like; none: the pass share alone).
    #[command(flatten)]
    pub hold: crate::cli::flags::HoldArgs,
    /// The most points a capacity search records.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 12,
        requires = "find_capacity"
    )]
    pub max_points: usize,
    /// The most bytes one SSE line or event (or a 2xx body that is not a
    /// stream) may hold; past it the request fails `event_too_large`
    /// (`body_too_large`) and its connection is dropped. Bounds memory:
    /// see docs/reliability.md.
    #[arg(long, value_name = "BYTES", default_value_t = goodput_record::exchange::sse::DEFAULT_MAX_EVENT_BYTES as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_event_bytes: u64,
    /// Event loops (threads) that send an open-loop schedule, each every
    /// N-th request on connections of its own. One loop streams over
    /// 10,000 requests/s of short answers on one core at the least CPU per
    /// token; more may help where the client has cores to spare and one
    /// loop's core is busy (see docs/recorder.md, "Connections"). Sessions
    /// and closed loops use one.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::builder::TypedValueParser::map(
              clap::value_parser!(u16).range(1..=256), usize::from))]
    pub client_loops: usize,
}

/// Parses `--precision`: a percentage (`5%`) or a fraction (`0.05`), above 0
/// and below 1.
pub fn parse_precision(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let value = match text.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map(|p| p / 100.0),
        None => text.parse::<f64>(),
    }
    .map_err(|_| format!("`{text}` is not a precision (write 5% or 0.05)"))?;
    if value > 0.0 && value < 1.0 {
        Ok(value)
    } else {
        Err(format!("`{text}` must be above 0 and below 100 %"))
    }
}

/// When the quality bank is sent (`--quality-phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum QualityPhaseArg {
    /// Beside the load, from t0, at --quality-rate; the rest right after it.
    Interleaved,
    /// All after the load has ended.
    After,
}

/// A Prometheus metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`, at most 200
/// characters): what `--power-metric` may name.
fn parse_metric_name(s: &str) -> Result<String, String> {
    let mut chars = s.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':');
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    if first_ok && rest_ok && s.len() <= 200 {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "`{s}` is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*, at most 200 characters)"
        ))
    }
}
