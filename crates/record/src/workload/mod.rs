//! Realistic workloads: token-accurate prompt lengths, length distributions,
//! shared prefixes, trace replay and multi-turn sessions.
//!
//! Everything here is prepared before the first request is sent: a
//! [`RecipeSet`] holds, for every scheduled request, the word segments of its
//! prompt (already fitted to the exact token count when a tokenizer is
//! given), its `max_tokens` and its labels. The runner renders the text from
//! the segments when it sends, which costs microseconds and no tokenizer work,
//! so preparing prompts cannot disturb the schedule.
//!
//! Modules: [`text`] (word streams and exact fitting, counted by
//! [`goodput_tokenizer`]'s `tokenizer.json`), [`lengths`]
//! (`MEAN[:STD[:MIN:MAX]]`), [`replay`] (mooncake traces), [`sessions`]
//! (multi-turn datasets and their layout; the run loop plays them),
//! [`accounting`] (client vs server token counts in the written rows).

pub mod accounting;
pub mod body;
pub mod extra_body;
pub mod lengths;
pub mod prompt;
pub mod replay;
pub mod sessions;
pub mod text;

/// The tokenizer lives below both the recorder and the sim.
use std::path::Path;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use goodput_core::trace::{Labels, Scalar};

use self::lengths::LengthDist;
use self::text::{stream, Segment, StreamKind, Texts};
use crate::workload::prompt::Prompt;
use goodput_tokenizer::TokenCounter;

/// Why a workload cannot be prepared.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The tokenizer could not be loaded or failed on a prompt.
    #[error(transparent)]
    Tokenizer(#[from] goodput_tokenizer::TokenizerError),
    /// No word count reaches the asked length with this tokenizer.
    #[error("cannot make a prompt of exactly {target} tokens ({why}; got {got})")]
    InexactLength {
        /// The length asked for.
        target: u32,
        /// The count of the last attempt.
        got: usize,
        /// Why it stopped.
        why: &'static str,
    },
    /// A line or entry of an input file is not what its format says.
    #[error("{path}:{line}: {message}")]
    Bad {
        /// The path as given.
        path: String,
        /// 1-based line (JSONL) or entry number (JSON arrays).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file holds nothing usable.
    #[error("{0} holds no usable entry")]
    Empty(String),
    /// The file is larger than its limit ([`MAX_INPUT_BYTES`],
    /// [`MAX_DATASET_BYTES`]); nothing past the limit was read.
    #[error("{path} is larger than {limit} bytes, the limit on a {flag} file")]
    TooLarge {
        /// The path as given.
        path: String,
        /// The flag that named it.
        flag: &'static str,
        /// The limit in force.
        limit: u64,
    },
}

/// The largest `--prompts` or `--replay` file `record` reads: 256 MiB, far
/// more prompts or entries than a run sends, while a FIFO, a device
/// (`/dev/zero`) or a runaway file is refused once the limit is passed
/// instead of read without bound. A regular file over it is refused from
/// its size, before reading.
pub const MAX_INPUT_BYTES: u64 = 256 << 20;

/// The largest `--dataset` file: 1 GiB, room for the largest public
/// dataset in common use (ShareGPT V3, ~650 MB); refused the same way.
pub const MAX_DATASET_BYTES: u64 = 1 << 30;

/// Reads an input file of `record` (named by `flag`) within `limit` bytes.
pub(crate) fn read_input(
    path: &Path,
    flag: &'static str,
    limit: u64,
) -> Result<Vec<u8>, WorkloadError> {
    let shown = path.display().to_string();
    goodput_util::io::read_limited(&shown, limit).map_err(|e| match e {
        goodput_util::io::ReadError::Io { source, .. } => WorkloadError::Io {
            path: shown.clone(),
            source,
        },
        goodput_util::io::ReadError::TooLarge { .. } => WorkloadError::TooLarge {
            path: shown.clone(),
            flag,
            limit,
        },
    })
}

/// One request's prompt, prepared: its segments and what goes with them.
#[derive(Debug, Clone, PartialEq)]
pub struct Recipe {
    /// The prompt's word segments, in order.
    pub segments: Vec<Segment>,
    /// The verified client-side token count (with a tokenizer).
    pub prompt_tokens: Option<u32>,
    /// `max_tokens` of this request, when the workload sets one.
    pub max_tokens: Option<u32>,
    /// The shared-prefix group, when prefixes are used.
    pub prefix_group: Option<u32>,
}

/// Every scheduled request's recipe, and the word streams to render them.
#[derive(Debug, Clone)]
pub struct RecipeSet {
    /// The words and the tokenizer.
    pub texts: Texts,
    /// One recipe per scheduled request, by index.
    pub recipes: Vec<Recipe>,
}

/// What a request carries besides its text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extras {
    /// `max_tokens` for this request (overrides the template's).
    pub max_tokens: Option<u32>,
    /// Row labels known before sending (`promptTokens`,
    /// `requestedOutputTokens`, `prefixGroup`, `session`, `turn`…).
    pub labels: Labels,
}

impl RecipeSet {
    /// The prompt text of request `index` (rendered from its segments).
    pub fn text(&self, index: usize) -> String {
        self.recipes
            .get(index)
            .map(|r| self.texts.render(&r.segments))
            .unwrap_or_default()
    }

    /// The extras of request `index`.
    pub fn extras(&self, index: usize) -> Extras {
        let Some(r) = self.recipes.get(index) else {
            return Extras::default();
        };
        let mut labels = Labels::new();
        if let Some(n) = r.prompt_tokens {
            labels.insert("promptTokens".into(), Scalar::Number(f64::from(n)));
        }
        if let Some(n) = r.max_tokens {
            labels.insert("requestedOutputTokens".into(), Scalar::Number(f64::from(n)));
        }
        if let Some(g) = r.prefix_group {
            labels.insert("prefixGroup".into(), Scalar::Number(f64::from(g)));
        }
        Extras {
            max_tokens: r.max_tokens,
            labels,
        }
    }
}

/// Shared prefixes: `groups` fixed prefixes of `tokens` tokens each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixSpec {
    /// Tokens of each prefix.
    pub tokens: u32,
    /// Number of distinct prefixes.
    pub groups: u32,
}

/// One prompt to prepare: its segments (the last one is fitted), the token
/// count to fit to, and what goes with it.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptPlan {
    /// The segments; the last one's word count is set by fitting.
    pub segments: Vec<Segment>,
    /// The prompt's length, tokens (words without a tokenizer).
    pub target: u32,
    /// The shared-prefix group, when prefixes are used.
    pub prefix_group: Option<u32>,
    /// `max_tokens`, when the workload sets one.
    pub max_tokens: Option<u32>,
}

/// What the synthetic (random-text) workload asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticSpec {
    /// Length of the random part of each prompt.
    pub input: LengthDist,
    /// Output length (sent as `max_tokens`), when set.
    pub output: Option<LengthDist>,
    /// Shared prefixes, when set (prompt = prefix + random part).
    pub prefix: Option<PrefixSpec>,
}

/// Seeded streams of the synthetic draws (fixed, so a seed means the same
/// workload in every version that keeps them).
const INPUT_STREAM: u64 = 11;
const OUTPUT_STREAM: u64 = 12;
const PREFIX_CHOICE_STREAM: u64 = 13;

/// The per-request `max_tokens` of `count` requests, drawn from `output`.
pub fn output_draws(output: Option<&LengthDist>, seed: u64, count: usize) -> Vec<Option<u32>> {
    match output {
        Some(d) => d
            .draws(seed, OUTPUT_STREAM, count)
            .into_iter()
            .map(Some)
            .collect(),
        None => vec![None; count],
    }
}

/// Prepares `count` synthetic requests (random text, optional prefixes),
/// fitting every prompt to its exact length when `texts` has a tokenizer.
pub fn synthetic(
    texts: Texts,
    spec: &SyntheticSpec,
    seed: u64,
    count: usize,
) -> Result<RecipeSet, WorkloadError> {
    let inputs = spec.input.draws(seed, INPUT_STREAM, count);
    let outputs = output_draws(spec.output.as_ref(), seed, count);
    // Each prefix is fitted once, alone, to exactly its length.
    let mut prefixes = Vec::new();
    let mut choice = ChaCha8Rng::seed_from_u64(seed);
    choice.set_stream(PREFIX_CHOICE_STREAM);
    if let Some(p) = spec.prefix {
        for g in 0..p.groups {
            let mut seg = [Segment {
                stream: stream(StreamKind::Prefix, u64::from(g)),
                words: 0,
            }];
            texts.fit(&mut seg, p.tokens)?;
            prefixes.push(seg[0]);
        }
    }
    let plans: Vec<PromptPlan> = (0..count)
        .map(|i| {
            let tail = Segment {
                stream: stream(StreamKind::Request, i as u64),
                words: 0,
            };
            match spec.prefix {
                Some(p) => {
                    let g = choice.random_range(0..p.groups);
                    PromptPlan {
                        segments: vec![prefixes[g as usize], tail],
                        target: p.tokens + inputs[i],
                        prefix_group: Some(g),
                        max_tokens: outputs[i],
                    }
                }
                None => PromptPlan {
                    segments: vec![tail],
                    target: inputs[i],
                    prefix_group: None,
                    max_tokens: outputs[i],
                },
            }
        })
        .collect();
    let recipes = fit_all(&texts, plans)?;
    Ok(RecipeSet { texts, recipes })
}

/// Fits every planned prompt (segments, target, group, max_tokens), on all
/// cores: with a tokenizer this is the only expensive step, and it happens
/// before the first send.
pub fn fit_all(texts: &Texts, plans: Vec<PromptPlan>) -> Result<Vec<Recipe>, WorkloadError> {
    par_map(plans, texts.counter().is_some(), |mut p| {
        let prompt_tokens = texts.fit(&mut p.segments, p.target)?;
        Ok(Recipe {
            segments: p.segments,
            prompt_tokens,
            max_tokens: p.max_tokens,
            prefix_group: p.prefix_group,
        })
    })
}

/// The prompts of a list with their token counts filled in (`--prompts`
/// with `--tokenizer`), counted on all cores before the first send.
pub fn count_prompts(
    counter: &TokenCounter,
    prompts: &[Prompt],
) -> Result<Vec<Prompt>, WorkloadError> {
    par_map(prompts.to_vec(), true, |p| {
        let n = counter.count(&p.text)?;
        Ok(Prompt {
            tokens: Some(u32::try_from(n).unwrap_or(u32::MAX)),
            ..p
        })
    })
}

/// `f` over `items`, in order, split over every core when `parallel` (else
/// on this thread); the first error wins.
fn par_map<T: Send, U: Send>(
    items: Vec<T>,
    parallel: bool,
    f: impl Fn(T) -> Result<U, WorkloadError> + Sync,
) -> Result<Vec<U>, WorkloadError> {
    let threads = if parallel {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        1
    };
    if threads == 1 {
        return items.into_iter().map(f).collect();
    }
    let chunk = items.len().div_ceil(threads).max(1);
    let mut items = items;
    let mut parts: Vec<Vec<T>> = Vec::new();
    while items.len() > chunk {
        let rest = items.split_off(chunk);
        parts.push(items);
        items = rest;
    }
    parts.push(items);
    let f = &f;
    let done: Vec<Result<Vec<U>, WorkloadError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = parts
            .into_iter()
            .map(|part| scope.spawn(move || part.into_iter().map(f).collect()))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(WorkloadError::Tokenizer(
                        goodput_tokenizer::TokenizerError::Encode(
                            "a preparation thread panicked".into(),
                        ),
                    ))
                })
            })
            .collect()
    });
    let mut out = Vec::new();
    for part in done {
        out.extend(part?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::body::VOCABULARY;
    use std::sync::Arc;

    fn counter() -> Arc<TokenCounter> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/tokenizer/tokenizer.json"
        );
        Arc::new(TokenCounter::load(std::path::Path::new(path)).unwrap())
    }

    #[test]
    fn synthetic_prompts_have_their_drawn_lengths_exactly() {
        let c = counter();
        let texts = Texts::new(8, &VOCABULARY, Some(c.clone())).unwrap();
        let spec = SyntheticSpec {
            input: LengthDist::parse("--input-tokens", "200:60:20:400").unwrap(),
            output: Some(LengthDist::fixed(16)),
            prefix: None,
        };
        let set = synthetic(texts, &spec, 8, 300).unwrap();
        let drawn = spec.input.draws(8, INPUT_STREAM, 300);
        for (i, want) in drawn.iter().enumerate() {
            assert_eq!(
                c.count(&set.text(i)).unwrap(),
                *want as usize,
                "request {i}"
            );
            assert_eq!(set.recipes[i].prompt_tokens, Some(*want));
            assert_eq!(set.extras(i).max_tokens, Some(16));
        }
    }

    #[test]
    fn prefixed_prompts_start_with_their_groups_prefix_and_groups_are_all_used() {
        let c = counter();
        let texts = Texts::new(2, &VOCABULARY, Some(c.clone())).unwrap();
        let spec = SyntheticSpec {
            input: LengthDist::fixed(50),
            output: None,
            prefix: Some(PrefixSpec {
                tokens: 128,
                groups: 4,
            }),
        };
        let set = synthetic(texts.clone(), &spec, 2, 200).unwrap();
        let mut seen = [0usize; 4];
        for i in 0..200 {
            let g = set.recipes[i].prefix_group.unwrap();
            seen[g as usize] += 1;
            let prefix = texts.render(&set.recipes[i].segments[..1]);
            assert_eq!(c.count(&prefix).unwrap(), 128);
            let text = set.text(i);
            assert!(text.starts_with(&prefix));
            assert_eq!(c.count(&text).unwrap(), 178);
            assert_eq!(
                set.extras(i).labels["prefixGroup"],
                Scalar::Number(f64::from(g))
            );
        }
        // 200 uniform choices among 4: each group expects 50 (sd ≈ 6.1).
        assert!(seen.iter().all(|&n| (25..=75).contains(&n)), "{seen:?}");
        // The four prefixes differ.
        let first: Vec<String> = (0..4u64)
            .map(|g| {
                texts.render(&[Segment {
                    stream: stream(StreamKind::Prefix, g),
                    words: 20,
                }])
            })
            .collect();
        assert!(first
            .iter()
            .enumerate()
            .all(|(i, a)| first[i + 1..].iter().all(|b| a != b)));
    }
}
