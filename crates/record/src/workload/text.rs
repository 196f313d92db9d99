//! Prompt text of an exact token length, made from seeded word streams.
//!
//! A prompt is a list of [`Segment`]s, each a run of words drawn by ChaCha8
//! (seeded with the run's seed) on a stream of its own: equal segments give
//! equal text, which is how shared prefixes and replayed hash blocks reach a
//! server's prefix cache. Every word is written with a leading space, so a
//! segment's text does not depend on what comes before it.
//!
//! With a tokenizer, the words are those of the filler vocabulary that the
//! tokenizer encodes as exactly one token after a space, and lengths are made
//! exact by encode → adjust → verify ([`Texts::fit`]): encode the prompt,
//! change the number of words of its last segment by the difference, and
//! repeat until the count is the target. Only the word *counts* are kept;
//! the text is rendered again from the streams when the request is sent,
//! which costs no tokenizer work on the way to the wire.
//!
//! Without a tokenizer, one word stands for one token: lengths are
//! approximate and the trace says so.

use std::sync::Arc;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::workload::WorkloadError;
use goodput_tokenizer::TokenCounter;

/// How many encode → adjust rounds [`Texts::fit`] tries before giving up.
pub const MAX_FIT_ROUNDS: usize = 64;

/// A run of `words` words from word stream `stream`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// The word stream (see [`stream`]).
    pub stream: u64,
    /// Words taken from the start of the stream.
    pub words: u32,
}

/// What a word stream is for; kept in the top bits of the stream number so
/// the kinds can never collide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// The random part of request `i`.
    Request = 0,
    /// A shared prefix group.
    Prefix = 1,
    /// A replayed hash block.
    Block = 2,
    /// A turn of a synthetic session (unused by datasets).
    Turn = 3,
}

/// The stream number of `kind` and `id` (`id` is kept to 62 bits).
pub fn stream(kind: StreamKind, id: u64) -> u64 {
    ((kind as u64) << 62) | (id & ((1 << 62) - 1))
}

/// The words, the seed, and (optionally) the tokenizer that makes lengths exact.
#[derive(Debug, Clone)]
pub struct Texts {
    seed: u64,
    words: Arc<Vec<&'static str>>,
    counter: Option<Arc<TokenCounter>>,
}

impl Texts {
    /// Words from `vocabulary`; with a tokenizer, only those it encodes as
    /// one token after a space (all of them when none qualifies, and
    /// [`Texts::fit`] still makes lengths exact, in more rounds).
    pub fn new(
        seed: u64,
        vocabulary: &[&'static str],
        counter: Option<Arc<TokenCounter>>,
    ) -> Result<Texts, WorkloadError> {
        let mut words = Vec::new();
        if let Some(c) = &counter {
            for w in vocabulary {
                if c.count(&format!(" {w}"))? == 1 {
                    words.push(*w);
                }
            }
        }
        if words.is_empty() {
            words = vocabulary.to_vec();
        }
        Ok(Texts {
            seed,
            words: Arc::new(words),
            counter,
        })
    }

    /// The tokenizer, when lengths are exact.
    pub fn counter(&self) -> Option<&TokenCounter> {
        self.counter.as_deref()
    }

    /// Appends the text of `segments` to `out`.
    pub fn render_into(&self, segments: &[Segment], out: &mut String) {
        for s in segments {
            let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
            rng.set_stream(s.stream);
            for _ in 0..s.words {
                out.push(' ');
                out.push_str(self.words[rng.random_range(0..self.words.len())]);
            }
        }
    }

    /// The text of `segments`.
    pub fn render(&self, segments: &[Segment]) -> String {
        let words: u32 = segments.iter().map(|s| s.words).sum();
        let mut out = String::with_capacity(words as usize * 7);
        self.render_into(segments, &mut out);
        out
    }

    /// Sets the word count of the last segment so that the whole text is
    /// exactly `target` tokens (encode → adjust → verify). Without a
    /// tokenizer, the last segment gets `target` minus the other segments'
    /// words (at least 0). Returns the verified token count (`None` without
    /// a tokenizer).
    pub fn fit(&self, segments: &mut [Segment], target: u32) -> Result<Option<u32>, WorkloadError> {
        let Some((last, head)) = segments.split_last_mut() else {
            return Ok(None);
        };
        let head_words: u32 = head.iter().map(|s| s.words).sum();
        last.words = target.saturating_sub(head_words);
        let Some(counter) = &self.counter else {
            return Ok(None);
        };
        let mut text = String::new();
        let mut tried = Vec::new();
        for _ in 0..MAX_FIT_ROUNDS {
            text.clear();
            self.render_into(head, &mut text);
            self.render_into(std::slice::from_ref(last), &mut text);
            let got = counter.count(&text)?;
            if got == target as usize {
                return Ok(Some(target));
            }
            tried.push(last.words);
            let next = if got > target as usize {
                let over = (got - target as usize) as u32;
                if last.words == 0 {
                    return Err(WorkloadError::InexactLength {
                        target,
                        got,
                        why: "the fixed part alone is longer",
                    });
                }
                last.words.saturating_sub(over.max(1))
            } else {
                last.words + (target as usize - got) as u32
            };
            // A jump back to a count already tried means multi-token words
            // are making the search oscillate: step by one word instead.
            last.words = if tried.contains(&next) {
                if got > target as usize {
                    last.words - 1
                } else {
                    last.words + 1
                }
            } else {
                next
            };
        }
        Err(WorkloadError::InexactLength {
            target,
            got: counter.count(&text)?,
            why: "no word count gives that many tokens",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::body::VOCABULARY;

    fn counter() -> Arc<TokenCounter> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/tokenizer/tokenizer.json"
        );
        Arc::new(TokenCounter::load(std::path::Path::new(path)).unwrap())
    }

    #[test]
    fn equal_segments_give_equal_text_and_other_streams_other_text() {
        let t = Texts::new(5, &VOCABULARY, None).unwrap();
        let a = Segment {
            stream: stream(StreamKind::Block, 9),
            words: 40,
        };
        let b = Segment {
            stream: stream(StreamKind::Block, 10),
            words: 40,
        };
        assert_eq!(t.render(&[a]), t.render(&[a]));
        assert_ne!(t.render(&[a]), t.render(&[b]));
        // A shorter run of the same stream is a prefix of the longer one.
        let short = t.render(&[Segment { words: 10, ..a }]);
        assert!(t.render(&[a]).starts_with(&short));
        assert_eq!(t.render(&[a]).split_whitespace().count(), 40);
    }

    #[test]
    fn stream_kinds_never_collide() {
        assert_ne!(
            stream(StreamKind::Request, 3),
            stream(StreamKind::Prefix, 3)
        );
        assert_eq!(
            stream(StreamKind::Block, 1 << 62),
            stream(StreamKind::Block, 0)
        );
    }

    #[test]
    fn every_filler_word_is_one_token_in_the_fixture() {
        // make_tokenizer.py asserts the same thing on the Python side.
        let t = Texts::new(0, &VOCABULARY, Some(counter())).unwrap();
        assert_eq!(t.words.len(), VOCABULARY.len());
    }

    #[test]
    fn fitted_prompts_are_exactly_the_target_length_for_many_seeds() {
        let c = counter();
        for seed in 0..40u64 {
            let t = Texts::new(seed, &VOCABULARY, Some(c.clone())).unwrap();
            for target in [1u32, 2, 7, 100, 513, 2000] {
                let mut segs = [Segment {
                    stream: stream(StreamKind::Request, seed * 31 + 1),
                    words: 0,
                }];
                assert_eq!(t.fit(&mut segs, target).unwrap(), Some(target));
                assert_eq!(c.count(&t.render(&segs)).unwrap(), target as usize);
            }
        }
    }

    #[test]
    fn a_prefix_plus_tail_is_fitted_as_a_whole_and_keeps_the_prefix() {
        let c = counter();
        let t = Texts::new(3, &VOCABULARY, Some(c.clone())).unwrap();
        let mut prefix = [Segment {
            stream: stream(StreamKind::Prefix, 0),
            words: 0,
        }];
        t.fit(&mut prefix, 64).unwrap();
        let mut segs = [
            prefix[0],
            Segment {
                stream: stream(StreamKind::Request, 1),
                words: 0,
            },
        ];
        t.fit(&mut segs, 64 + 100).unwrap();
        assert_eq!(segs[0], prefix[0]);
        let text = t.render(&segs);
        assert_eq!(c.count(&text).unwrap(), 164);
        assert!(text.starts_with(&t.render(&prefix)));
    }

    #[test]
    fn a_length_no_word_count_can_reach_is_an_error_not_a_wrong_prompt() {
        // Each of these words is 7 or 8 tokens in the fixture (see
        // make_tokenizer.py), so no text of them is 1 token long.
        const RARE: [&str; 3] = ["xylophone", "quartz", "zephyr"];
        let t = Texts::new(1, &RARE, Some(counter())).unwrap();
        let mut segs = [Segment {
            stream: 1,
            words: 0,
        }];
        let err = t.fit(&mut segs, 1).unwrap_err().to_string();
        assert!(err.contains("exactly 1 tokens"), "{err}");
    }

    #[test]
    fn without_a_tokenizer_one_word_stands_for_one_token() {
        let t = Texts::new(0, &VOCABULARY, None).unwrap();
        let mut segs = [
            Segment {
                stream: 1,
                words: 30,
            },
            Segment {
                stream: 2,
                words: 0,
            },
        ];
        assert_eq!(t.fit(&mut segs, 100).unwrap(), None);
        assert_eq!(segs[1].words, 70);
        assert_eq!(t.render(&segs).split_whitespace().count(), 100);
    }
}
