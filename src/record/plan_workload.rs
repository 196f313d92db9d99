//! Planning the workload options of `goodput record` (`--tokenizer`,
//! `--input-tokens`, `--output-tokens`, `--prefix-tokens`, `--replay`,
//! multi-turn `--dataset`): flags in, a load, a prompt source and the
//! `workload` labels out. Everything is read, parsed and prepared here,
//! before anything is sent; the work itself lives in [`super::workload`].
//!
//! Kept apart from `plan()` so the two can move independently: `plan()`
//! calls [`plan_workload`] once, after the arrival schedule is drawn.

use std::path::Path;
use std::sync::Arc;

use crate::error::Error;
use crate::trace::{Labels, Scalar};

use super::request::{PromptSource, VOCABULARY};
use super::runner::Load;
use super::workload::lengths::LengthDist;
use super::workload::replay;
use super::workload::sessions::{self, SessionSet};
use super::workload::text::Texts;
use super::workload::tokenizer::TokenCounter;
use super::workload::{synthetic, PrefixSpec, SyntheticSpec, WorkloadError};
use super::RecordArgs;

/// The default length of random prompts when only a tokenizer or an output
/// length asks for prepared prompts (the same 128 as `--random-input-len`).
pub const DEFAULT_INPUT_TOKENS: u32 = 128;

fn usage(message: impl Into<String>) -> Error {
    Error::Usage(message.into())
}

fn werr(e: WorkloadError) -> Error {
    usage(e.to_string())
}

/// Whether any workload option asks for prepared prompts or sessions.
pub fn wants_workload(args: &RecordArgs) -> bool {
    args.tokenizer.is_some()
        || args.input_tokens.is_some()
        || args.output_tokens.is_some()
        || args.prefix_tokens.is_some()
        || args.replay.is_some()
        || args.dataset.is_some()
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

/// Plans the workload options. `load` is what `plan()` drew from
/// `--request-rate` (or a placeholder for `--replay`); `window_start_ms`
/// and `window_end_ms` bound the schedule.
pub fn plan_workload(
    args: &RecordArgs,
    load: Load,
    prompts: PromptSource,
    window_start_ms: f64,
    window_end_ms: f64,
) -> Result<Planned, Error> {
    let mut labels = Labels::new();
    let mut put = |k: &str, v: Scalar| {
        labels.insert(k.to_owned(), v);
    };
    let counter = match &args.tokenizer {
        Some(path) => {
            let c = TokenCounter::load(path).map_err(|e| usage(e.to_string()))?;
            put("tokenizerSha256", Scalar::String(c.sha256().to_owned()));
            put("promptLengths", Scalar::String("tokens".into()));
            Some(Arc::new(c))
        }
        None => {
            // Lengths are counted in filler words, which a model's tokenizer
            // splits its own way: say so.
            put("promptLengths", Scalar::String("approximate".into()));
            None
        }
    };
    if let Some(o) = &args.output_tokens {
        put("outputTokens", Scalar::String(o.describe()));
        put("ignoreEos", Scalar::Bool(args.ignore_eos));
    }
    let arrivals = match &load {
        Load::Open { arrivals_ms } => arrivals_ms.clone(),
        _ => {
            return Err(usage(
                "--tokenizer, --input-tokens, --output-tokens, --prefix-tokens, --replay and --dataset need an open-loop schedule (--request-rate or --replay), not --max-concurrency",
            ))
        }
    };
    let texts = |seed| Texts::new(seed, &VOCABULARY, counter.clone()).map_err(werr);

    if let Some(replay_args) = &args.replay {
        let (kind, file) = kind_and_file("--replay", replay_args, &["mooncake"])?;
        let scale = args.time_scale.unwrap_or(1.0);
        if !(scale.is_finite() && scale > 0.0) {
            return Err(usage(format!(
                "--time-scale must be a positive number, not {scale}"
            )));
        }
        let r = replay::load(Path::new(file)).map_err(werr)?;
        let arrivals = r.arrivals_ms(window_start_ms, scale);
        let last = arrivals.last().copied().unwrap_or(window_start_ms);
        if last >= window_end_ms {
            let outside = arrivals.iter().filter(|&&a| a >= window_end_ms).count();
            let need_s = ((last - window_start_ms) / 1000.0).floor() + 1.0;
            return Err(usage(format!(
                "--replay: {outside} of {} entries would arrive after the window ends; give --duration {need_s}s or more (or a smaller --time-scale)",
                r.entries.len()
            )));
        }
        put("replay", Scalar::String(kind.into()));
        put("replaySha256", Scalar::String(r.sha256.clone()));
        put("replayEntries", Scalar::Number(r.entries.len() as f64));
        put("timeScale", Scalar::Number(scale));
        put(
            "replayBlockTokens",
            Scalar::Number(f64::from(replay::BLOCK_TOKENS)),
        );
        let set = r.recipes(texts(args.seed)?).map_err(werr)?;
        return Ok(Planned {
            load: Load::Open {
                arrivals_ms: Arc::new(arrivals),
            },
            prompts: PromptSource::Recipes(Arc::new(set)),
            labels,
        });
    }

    if let Some(dataset_args) = &args.dataset {
        let (kind, file) = kind_and_file("--dataset", dataset_args, &["sharegpt", "multi-turn"])?;
        if args.api != super::request::Api::Chat {
            return Err(usage(
                "--dataset sessions need --api chat (a conversation is a list of messages)",
            ));
        }
        let dataset = match kind {
            "sharegpt" => sessions::load_sharegpt(Path::new(file)),
            _ => sessions::load_multi_turn(Path::new(file)),
        }
        .map_err(werr)?;
        let think_ms = args.think_time.map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        put("dataset", Scalar::String(kind.into()));
        put("datasetSha256", Scalar::String(dataset.sha256.clone()));
        put(
            "conversations",
            Scalar::Number(dataset.conversations.len() as f64),
        );
        put("sessions", Scalar::Number(arrivals.len() as f64));
        put("thinkTimeS", Scalar::Number(think_ms / 1000.0));
        let set = Arc::new(SessionSet::new(
            Arc::new(dataset),
            arrivals.to_vec(),
            think_ms,
            args.output_tokens.as_ref(),
            args.seed,
            counter,
        ));
        return Ok(Planned {
            load: Load::Sessions { set: set.clone() },
            prompts: PromptSource::Sessions(set),
            labels,
        });
    }

    if args.prompts.is_some() {
        // A prompt file keeps its own texts; only --tokenizer makes sense
        // with it, and it changes nothing but the declared lengths.
        if args.input_tokens.is_some() || args.output_tokens.is_some() {
            return Err(usage(
                "--input-tokens and --output-tokens apply to random prompts, not --prompts",
            ));
        }
        put("promptLengths", Scalar::String("file".into()));
        return Ok(Planned {
            load,
            prompts,
            labels,
        });
    }

    let input = match (args.input_tokens, args.random_input_len) {
        (Some(d), _) => d,
        (None, Some(n)) => LengthDist::fixed(n.max(1)),
        (None, None) => LengthDist::fixed(DEFAULT_INPUT_TOKENS),
    };
    put("inputTokens", Scalar::String(input.describe()));
    let prefix = match (args.prefix_tokens, args.prefix_groups) {
        (Some(0), _) => return Err(usage("--prefix-tokens must be at least 1")),
        (_, Some(0)) => return Err(usage("--prefix-groups must be at least 1")),
        (Some(tokens), groups) => {
            let groups = groups.unwrap_or(1);
            put("prefixTokens", Scalar::Number(f64::from(tokens)));
            put("prefixGroups", Scalar::Number(f64::from(groups)));
            Some(PrefixSpec { tokens, groups })
        }
        (None, _) => None,
    };
    let spec = SyntheticSpec {
        input,
        output: args.output_tokens,
        prefix,
    };
    let set = synthetic(texts(args.seed)?, &spec, args.seed, arrivals.len()).map_err(werr)?;
    Ok(Planned {
        load,
        prompts: PromptSource::Recipes(Arc::new(set)),
        labels,
    })
}

fn kind_and_file<'a>(
    flag: &str,
    args: &'a [String],
    known: &[&str],
) -> Result<(&'a str, &'a str), Error> {
    match args {
        [kind, file] if known.contains(&kind.as_str()) => Ok((kind, file)),
        [kind, _] => Err(usage(format!(
            "{flag} `{kind}`: known kinds are {}",
            known.join(", ")
        ))),
        _ => Err(usage(format!("{flag} takes KIND FILE"))),
    }
}
