//! `goodput record`'s workload flags → a prepared workload: `--tokenizer`,
//! `--input-tokens`, `--output-tokens`, `--prefix-tokens`/`--prefix-groups`,
//! `--replay` (with `--time-scale`) and multi-turn `--dataset` (with
//! `--think-time`). Files are read, parsed and every prompt prepared here,
//! before anything is sent; the machinery lives in
//! [`goodput_record::workload`]. What this returns replaces the load and the
//! prompt source that [`crate::cli::record::plan::plan`] drew, and adds the `workload`
//! labels that declare it (sources by sha256, never by path or text).
//!
//! [`plan_workload`] reads the tokenizer, requires an open-loop schedule,
//! then lets the first of `--replay`, `--dataset` and `--prompts` that is
//! given decide the prompts (else they are synthetic): one method of
//! `Preparing` for each.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::error::Error;
use goodput_core::trace::{Labels, Scalar};
use goodput_record::run::Load;
use goodput_record::workload::body::{Api, PromptSource, VOCABULARY};
use goodput_record::workload::lengths::LengthDist;
use goodput_record::workload::replay::{self, Replay};
use goodput_record::workload::sessions::{self, SessionSet};
use goodput_record::workload::text::Texts;
use goodput_record::workload::{count_prompts, synthetic, PrefixSpec, SyntheticSpec};
use goodput_tokenizer::TokenCounter;

use crate::cli::flags::usage;
use crate::cli::record::args::RecordArgs;

/// The default length of random prompts when only a tokenizer or an output
/// length asks for prepared prompts (the same 128 as `--random-input-len`).
pub const DEFAULT_INPUT_TOKENS: u32 = 128;

/// Whether any workload option asks for prepared prompts or sessions.
pub fn wants_workload(args: &RecordArgs) -> bool {
    args.tokenizer.is_some()
        || args.input_tokens.is_some()
        || args.output_tokens.is_some()
        || args.prefix_tokens.is_some()
        || args.replay.is_some()
        || args.dataset.is_some()
}

/// A replay file read and checked, with its time scale.
pub struct ReplayFile {
    /// The format (`mooncake`).
    pub kind: &'static str,
    /// Its entries.
    pub replay: Replay,
    /// `--time-scale` (1 when not given).
    pub scale: f64,
}

impl ReplayFile {
    /// The window a replay needs when `--duration` is not given: its scaled
    /// span rounded up to the next whole second (so the last entry arrives
    /// strictly inside the window).
    pub fn default_duration(&self) -> Duration {
        Duration::from_secs_f64((self.replay.span_ms(self.scale) / 1000.0).floor() + 1.0)
    }
}

/// Reads `--replay KIND FILE` (and checks `--time-scale`), when given.
/// A malformed line is a usage error naming its line; nothing is sent.
pub fn read_replay(args: &RecordArgs) -> Result<Option<ReplayFile>, Error> {
    let Some(replay_args) = &args.replay else {
        return Ok(None);
    };
    let (kind, file) = kind_and_file("--replay", replay_args, &["mooncake"])?;
    let scale = args.time_scale.unwrap_or(1.0);
    if !(scale.is_finite() && scale > 0.0) {
        return Err(usage(format!(
            "--time-scale must be a positive number, not {scale}"
        )));
    }
    let replay = replay::load(Path::new(file)).map_err(|e| usage(e.to_string()))?;
    Ok(Some(ReplayFile {
        kind,
        replay,
        scale,
    }))
}

/// The planned workload: replaces the load and the prompt source that
/// `plan()` drew, and adds its labels to `workload`.
pub struct Planned {
    /// The load (open-loop arrivals, or sessions).
    pub load: Load,
    /// Where prompts come from.
    pub prompts: PromptSource,
    /// Labels for the trace's `workload`.
    pub labels: Labels,
}

/// Plans the workload options. `load` is what `plan()` drew (for
/// `--replay`, the file's instants); `window_end_ms` bounds the schedule.
/// Checked in order: the tokenizer, an open-loop load, then the options of
/// whichever of `--replay`, `--dataset`, `--prompts` or synthetic prompts
/// applies.
pub fn plan_workload(
    args: &RecordArgs,
    load: Load,
    prompts: PromptSource,
    replay_file: Option<ReplayFile>,
    window_end_ms: f64,
) -> Result<Planned, Error> {
    let mut preparing = Preparing::new(args)?;
    preparing.describe_output_lengths();
    let arrivals = open_arrivals(&load)?;
    if let Some(r) = replay_file {
        return preparing.replayed(r, load, &arrivals, window_end_ms);
    }
    if let Some(dataset_args) = &args.dataset {
        return preparing.dataset_sessions(dataset_args, &arrivals);
    }
    if args.prompts.is_some() {
        return preparing.prompt_file(load, prompts);
    }
    preparing.synthetic_prompts(load, arrivals.len())
}

/// The arrivals of an open-loop load: every workload option needs them.
fn open_arrivals(load: &Load) -> Result<Arc<Vec<f64>>, Error> {
    match load {
        Load::Open { arrivals_ms } => Ok(arrivals_ms.clone()),
        _ => Err(usage(
            "--tokenizer, --input-tokens, --output-tokens, --prefix-tokens, --replay and --dataset \
             need an open-loop schedule (--request-rate, --phases or --replay), not --max-concurrency",
        )),
    }
}

/// A workload being prepared: the flags, the token counter (`--tokenizer`)
/// and the labels declared so far. Each way of drawing prompts finishes it
/// into a [`Planned`].
struct Preparing<'a> {
    /// The flags.
    args: &'a RecordArgs,
    /// `--tokenizer`, read: lengths are then exact tokens.
    counter: Option<Arc<TokenCounter>>,
    /// The `workload` labels declared so far.
    labels: Labels,
}

impl<'a> Preparing<'a> {
    /// Reads `--tokenizer` (its sha256 declared, lengths then exact tokens);
    /// without one, lengths are declared approximate.
    fn new(args: &'a RecordArgs) -> Result<Self, Error> {
        let mut preparing = Preparing {
            args,
            counter: None,
            labels: Labels::new(),
        };
        match &args.tokenizer {
            Some(path) => {
                let c = TokenCounter::load(path).map_err(|e| usage(e.to_string()))?;
                preparing.put("tokenizerSha256", Scalar::String(c.sha256().to_owned()));
                preparing.put("promptLengths", Scalar::String("tokens".into()));
                preparing.counter = Some(Arc::new(c));
            }
            None => {
                // Lengths are counted in filler words (or a file's texts), which
                // a model's tokenizer splits its own way: say so.
                preparing.put("promptLengths", Scalar::String("approximate".into()));
            }
        }
        Ok(preparing)
    }

    /// Declares one `workload` label.
    fn put(&mut self, k: &str, v: Scalar) {
        self.labels.insert(k.to_owned(), v);
    }

    /// Declares `--output-tokens` (and whether EOS is ignored), when given.
    fn describe_output_lengths(&mut self) {
        if let Some(o) = &self.args.output_tokens {
            self.put("outputTokens", Scalar::String(o.describe()));
            self.put("ignoreEos", Scalar::Bool(self.args.ignore_eos));
        }
    }

    /// The texts prompts are drawn from (`--seed`), counted by the tokenizer.
    fn texts(&self) -> Result<Texts, Error> {
        Texts::new(self.args.seed, &VOCABULARY, self.counter.clone())
            .map_err(|e| usage(e.to_string()))
    }

    /// The workload prepared: its load, its prompts and its labels.
    fn done(self, load: Load, prompts: PromptSource) -> Planned {
        Planned {
            load,
            prompts,
            labels: self.labels,
        }
    }

    /// `--replay`: every entry must arrive inside the window; each becomes
    /// a prompt recipe of its lengths and shared blocks.
    fn replayed(
        mut self,
        r: ReplayFile,
        load: Load,
        arrivals: &[f64],
        window_end_ms: f64,
    ) -> Result<Planned, Error> {
        let outside = arrivals.iter().filter(|&&a| a >= window_end_ms).count();
        if outside > 0 {
            let need_s = r.default_duration().as_secs_f64();
            return Err(usage(format!(
                "--replay: {outside} of {} entries would arrive after the window ends; give --duration {need_s}s or more (or a smaller --time-scale)",
                r.replay.entries.len()
            )));
        }
        self.put("replay", Scalar::String(r.kind.into()));
        self.put("replaySha256", Scalar::String(r.replay.sha256.clone()));
        self.put(
            "replayEntries",
            Scalar::Number(r.replay.entries.len() as f64),
        );
        self.put("timeScale", Scalar::Number(r.scale));
        self.put(
            "replayBlockTokens",
            Scalar::Number(f64::from(replay::BLOCK_TOKENS)),
        );
        let set = r
            .replay
            .recipes(self.texts()?)
            .map_err(|e| usage(e.to_string()))?;
        Ok(self.done(load, PromptSource::Recipes(Arc::new(set))))
    }

    /// `--dataset KIND FILE`: whole conversations played as sessions, one
    /// started at each arrival; needs `--api chat` and refuses
    /// `--input-tokens` (the dataset's texts are the prompts).
    fn dataset_sessions(
        mut self,
        dataset_args: &[String],
        arrivals: &[f64],
    ) -> Result<Planned, Error> {
        let args = self.args;
        let (kind, file) = kind_and_file("--dataset", dataset_args, &["sharegpt", "multi-turn"])?;
        if Api::from(args.api) != Api::Chat {
            return Err(usage(
                "--dataset sessions need --api chat (a conversation is a list of messages)",
            ));
        }
        if args.input_tokens.is_some() {
            return Err(usage(
                "--input-tokens applies to random prompts, not to --dataset conversations",
            ));
        }
        let dataset = match kind {
            "sharegpt" => sessions::load_sharegpt(Path::new(file)),
            _ => sessions::load_multi_turn(Path::new(file)),
        }
        .map_err(|e| usage(e.to_string()))?;
        let think_ms = args.think_time.map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        self.put("promptLengths", Scalar::String("file".into()));
        self.put("dataset", Scalar::String(kind.into()));
        self.put("datasetSha256", Scalar::String(dataset.sha256.clone()));
        self.put(
            "conversations",
            Scalar::Number(dataset.conversations.len() as f64),
        );
        self.put("sessions", Scalar::Number(arrivals.len() as f64));
        self.put("thinkTimeS", Scalar::Number(think_ms / 1000.0));
        self.put("turnArrival", Scalar::String("eligible".into()));
        let set = Arc::new(SessionSet::new(
            Arc::new(dataset),
            arrivals.to_vec(),
            think_ms,
            args.output_tokens.as_ref(),
            args.seed,
            self.counter.clone(),
        ));
        Ok(self.done(
            Load::Sessions { set: set.clone() },
            PromptSource::Sessions(set),
        ))
    }

    /// `--prompts FILE` keeps its own texts: lengths are the file's (so
    /// `--input-tokens` and `--output-tokens` are refused); with a
    /// tokenizer each prompt is counted once, here, for its rows.
    fn prompt_file(mut self, load: Load, prompts: PromptSource) -> Result<Planned, Error> {
        if self.args.input_tokens.is_some() || self.args.output_tokens.is_some() {
            return Err(usage(
                "--input-tokens and --output-tokens apply to random prompts, not --prompts",
            ));
        }
        self.put("promptLengths", Scalar::String("file".into()));
        let prompts = match (&self.counter, prompts) {
            (Some(c), PromptSource::List(list)) => PromptSource::List(Arc::new(
                count_prompts(c, &list).map_err(|e| usage(e.to_string()))?,
            )),
            (_, other) => other,
        };
        Ok(self.done(load, prompts))
    }

    /// Synthetic prompts, one per arrival: input lengths from
    /// `--input-tokens` (else `--random-input-len`, else
    /// [`DEFAULT_INPUT_TOKENS`]), output lengths from `--output-tokens`, and
    /// shared prefixes from `--prefix-tokens`/`--prefix-groups` (each at
    /// least 1).
    fn synthetic_prompts(mut self, load: Load, requests: usize) -> Result<Planned, Error> {
        let args = self.args;
        let input = match (args.input_tokens, args.random_input_len) {
            (Some(d), _) => d,
            (None, Some(n)) => LengthDist::fixed(n.max(1)),
            (None, None) => LengthDist::fixed(DEFAULT_INPUT_TOKENS),
        };
        self.put("inputTokens", Scalar::String(input.describe()));
        let prefix = match (args.prefix_tokens, args.prefix_groups) {
            (Some(0), _) => return Err(usage("--prefix-tokens must be at least 1")),
            (_, Some(0)) => return Err(usage("--prefix-groups must be at least 1")),
            (Some(tokens), groups) => {
                let groups = groups.unwrap_or(1);
                self.put("prefixTokens", Scalar::Number(f64::from(tokens)));
                self.put("prefixGroups", Scalar::Number(f64::from(groups)));
                Some(PrefixSpec { tokens, groups })
            }
            (None, _) => None,
        };
        let spec = SyntheticSpec {
            input,
            output: args.output_tokens,
            prefix,
        };
        let set = synthetic(self.texts()?, &spec, args.seed, requests)
            .map_err(|e| usage(e.to_string()))?;
        Ok(self.done(load, PromptSource::Recipes(Arc::new(set))))
    }
}

/// Splits `FLAG KIND FILE`, `KIND` being one of `known`.
fn kind_and_file<'a>(
    flag: &str,
    args: &'a [String],
    known: &[&'static str],
) -> Result<(&'static str, &'a str), Error> {
    match args {
        [kind, file] => match known.iter().find(|k| **k == kind.as_str()) {
            Some(k) => Ok((k, file)),
            None => Err(usage(format!(
                "{flag} `{kind}`: known kinds are {}",
                known.join(", ")
            ))),
        },
        _ => Err(usage(format!("{flag} takes KIND FILE"))),
    }
}
