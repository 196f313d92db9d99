//! The sessions of one run, laid out before the first send: which
//! conversation each session plays, when it starts, and which rows of the
//! trace are its turns.

use std::sync::Arc;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use goodput_core::trace::{Labels, Scalar};
use goodput_tokenizer::TokenCounter;

use crate::workload::lengths::LengthDist;
use crate::workload::sessions::dataset::{Conversation, Dataset};

/// The sessions of one run: which conversation each plays, when each
/// starts, and where its rows sit in the trace.
#[derive(Debug, Clone)]
pub struct SessionSet {
    /// The dataset.
    pub dataset: Arc<Dataset>,
    /// The order conversations are played in: session `s` plays conversation
    /// `order[s mod conversations]` (file order, or a seeded permutation for
    /// the points of a rate sweep).
    pub order: Vec<usize>,
    /// Scheduled start of each session, ms since t0 (ascending).
    pub starts_ms: Arc<Vec<f64>>,
    /// Row index of each session's first turn; one more entry at the end
    /// (the total number of rows).
    pub offsets: Vec<usize>,
    /// Think time for turns whose dataset gives none, ms.
    pub think_ms: f64,
    /// `max_tokens` of each row, when `--output-tokens` is set.
    pub max_tokens: Vec<Option<u32>>,
    /// The output length distribution the draws came from.
    pub output: Option<LengthDist>,
    /// The seed of those draws.
    pub seed: u64,
    /// Counts client-side prompt tokens, when a tokenizer is given.
    pub counter: Option<Arc<TokenCounter>>,
}

impl SessionSet {
    /// Lays out `starts_ms.len()` sessions over the dataset.
    pub fn new(
        dataset: Arc<Dataset>,
        starts_ms: Vec<f64>,
        think_ms: f64,
        output: Option<&LengthDist>,
        seed: u64,
        counter: Option<Arc<TokenCounter>>,
    ) -> SessionSet {
        let order = (0..dataset.conversations.len()).collect();
        SessionSet::laid_out(
            dataset,
            order,
            Arc::new(starts_ms),
            think_ms,
            output.copied(),
            seed,
            counter,
        )
    }

    fn laid_out(
        dataset: Arc<Dataset>,
        order: Vec<usize>,
        starts_ms: Arc<Vec<f64>>,
        think_ms: f64,
        output: Option<LengthDist>,
        seed: u64,
        counter: Option<Arc<TokenCounter>>,
    ) -> SessionSet {
        let mut offsets = Vec::with_capacity(starts_ms.len() + 1);
        let mut total = 0;
        for s in 0..starts_ms.len() {
            offsets.push(total);
            total += dataset.conversations[order[s % order.len()]].turns.len();
        }
        offsets.push(total);
        SessionSet {
            max_tokens: crate::workload::output_draws(output.as_ref(), seed, total),
            dataset,
            order,
            starts_ms,
            offsets,
            think_ms,
            output,
            seed,
            counter,
        }
    }

    /// The same sessions playing the conversations in the order drawn by
    /// `seed` (Fisher–Yates over ChaCha8 seeded with `seed`, stream 0, as
    /// for a prompt list), so the points of a rate sweep do not send the
    /// same conversations in the same order. Rows are laid out again.
    pub fn in_seeded_order(&self, seed: u64) -> SessionSet {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut order: Vec<usize> = (0..self.dataset.conversations.len()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        SessionSet::laid_out(
            self.dataset.clone(),
            order,
            self.starts_ms.clone(),
            self.think_ms,
            self.output,
            self.seed,
            self.counter.clone(),
        )
    }

    /// The index in the dataset of the conversation session `s` plays.
    pub fn conversation_index(&self, s: usize) -> usize {
        self.order[s % self.order.len()]
    }

    /// Sessions in the run.
    pub fn sessions(&self) -> usize {
        self.starts_ms.len()
    }

    /// Rows of the first `sessions` sessions.
    pub fn rows_of(&self, sessions: usize) -> usize {
        self.offsets[sessions.min(self.sessions())]
    }

    /// The conversation session `s` plays.
    pub fn conversation(&self, s: usize) -> &Conversation {
        &self.dataset.conversations[self.conversation_index(s)]
    }

    /// The (session, 0-based turn) of row `index`.
    pub fn locate(&self, index: usize) -> Option<(usize, usize)> {
        let s = self
            .offsets
            .partition_point(|&o| o <= index)
            .checked_sub(1)?;
        (s < self.sessions()).then(|| (s, index - self.offsets[s]))
    }

    /// The user text of row `index`.
    pub fn turn_text(&self, index: usize) -> &str {
        self.locate(index)
            .map_or("", |(s, k)| &self.conversation(s).turns[k].text)
    }

    /// The labels every row of (session, turn) carries.
    pub fn labels(&self, index: usize) -> Labels {
        let mut labels = Labels::new();
        if let Some((s, k)) = self.locate(index) {
            // A string, as docs/contract.md §10.4 has it: a name to group
            // by, not a quantity.
            labels.insert("session".into(), Scalar::String(s.to_string()));
            labels.insert("turn".into(), Scalar::Number((k + 1) as f64));
            labels.insert(
                "conversation".into(),
                Scalar::Number(self.conversation_index(s) as f64),
            );
        }
        if let Some(Some(n)) = self.max_tokens.get(index) {
            labels.insert(
                "requestedOutputTokens".into(),
                Scalar::Number(f64::from(*n)),
            );
        }
        labels
    }

    /// Think time before turn `k` (0-based, `k >= 1`) of session `s`, ms.
    pub fn think_before(&self, s: usize, k: usize) -> f64 {
        self.conversation(s).turns[k]
            .delay_ms
            .unwrap_or(self.think_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::sessions::dataset::Turn;

    #[test]
    fn rows_are_laid_out_session_by_session() {
        let d = Arc::new(Dataset {
            kind: "multi-turn",
            conversations: vec![
                Conversation {
                    turns: vec![
                        Turn {
                            text: "a".into(),
                            delay_ms: None
                        };
                        3
                    ],
                },
                Conversation {
                    turns: vec![
                        Turn {
                            text: "b".into(),
                            delay_ms: Some(7.0)
                        };
                        2
                    ],
                },
            ],
            sha256: String::new(),
        });
        let set = SessionSet::new(d, vec![0.0, 10.0, 20.0], 100.0, None, 0, None);
        // Sessions play conversations 0, 1, 0: 3 + 2 + 3 rows.
        assert_eq!(set.offsets, vec![0, 3, 5, 8]);
        assert_eq!(set.locate(0), Some((0, 0)));
        assert_eq!(set.locate(4), Some((1, 1)));
        assert_eq!(set.locate(7), Some((2, 2)));
        assert_eq!(set.locate(8), None);
        assert_eq!(set.rows_of(2), 5);
        assert_eq!(set.think_before(0, 1), 100.0);
        assert_eq!(set.think_before(1, 1), 7.0);
        assert_eq!(set.labels(4)["turn"], Scalar::Number(2.0));
        assert_eq!(set.labels(4)["session"], Scalar::String("1".into()));
    }

    #[test]
    fn a_sweep_point_plays_the_conversations_in_its_own_seeded_order() {
        let conversations: Vec<Conversation> = (1..=6)
            .map(|n| Conversation {
                turns: vec![
                    Turn {
                        text: format!("c{n}"),
                        delay_ms: None
                    };
                    n
                ],
            })
            .collect();
        let d = Arc::new(Dataset {
            kind: "multi-turn",
            conversations,
            sha256: String::new(),
        });
        let set = SessionSet::new(d, vec![0.0; 6], 0.0, None, 0, None);
        assert_eq!(set.order, vec![0, 1, 2, 3, 4, 5]);
        let a = set.in_seeded_order(1);
        let b = set.in_seeded_order(2);
        for s in [&a, &b] {
            let mut sorted = s.order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, set.order, "a permutation");
            // Conversation n has n turns: the layout follows the new order,
            // and each row names the file's conversation it plays.
            let mut offset = 0;
            for session in 0..6 {
                let c = s.order[session];
                assert_eq!(s.offsets[session], offset);
                assert_eq!(s.labels(offset)["conversation"], Scalar::Number(c as f64));
                assert_eq!(s.turn_text(offset), format!("c{}", c + 1));
                offset += c + 1;
            }
            assert_eq!(s.offsets[6], 21);
        }
        // 6! orders: two seeds giving the same one would be a 1-in-720 accident
        // (checked: they differ), and the same seed always gives the same.
        assert_ne!(a.order, b.order);
        assert_eq!(a.order, set.in_seeded_order(1).order);
    }
}
