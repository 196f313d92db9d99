//! The percentiles a receipt reports (`--percentiles`, docs/contract.md §7):
//! recorded in `contract.percentiles`, and, for any list other than the
//! default 50, 95, 99, given per block and metric with their intervals in
//! the block's `percentiles`. The fixed `latency` and `intervals` fields are
//! left exactly as they are, so a receipt under the default list is the
//! receipt it always was.

use crate::intervals::{quantile_interval_at, Confidence};
use crate::stats::{nearest_rank_at, sort_ascending, Percentile, PercentileSet};
use crate::trace::Trace;
use crate::verdict::Judgement;

use super::{Block, PercentileFigure, Receipt, RequestedPercentiles};

/// Records `set` in the receipt and, unless it is the default, gives every
/// block each of its percentiles with its interval (at the receipt's
/// confidence), from the same completed rows the `latency` fields summarise.
pub fn attach(receipt: &mut Receipt, trace: &Trace, judgements: &[Judgement], set: &PercentileSet) {
    receipt.contract.percentiles = set.values();
    if set.is_default() {
        for block in blocks_mut(receipt) {
            block.percentiles = None;
        }
        return;
    }
    let confidence = Confidence::new(receipt.contract.intervals.confidence).unwrap_or_default();
    let classes = trace.contract.classes.len();
    let mut per_class: Vec<Values> = (0..classes).map(|_| Values::default()).collect();
    let mut all = Values::default();
    for j in judgements {
        let Some(m) = j.verdict.measured() else {
            continue;
        };
        for values in j
            .class
            .and_then(|c| per_class.get_mut(c))
            .into_iter()
            .chain([&mut all])
        {
            values.ttft.extend(m.ttft_ms);
            values.e2e.push(m.e2e_ms);
            if let Some(t) = m.tpot_ms {
                values.tpot.push(t);
            }
        }
    }
    receipt.results.all.percentiles = Some(all.figures(set, confidence));
    for (block, values) in receipt.results.classes.values_mut().zip(per_class) {
        block.percentiles = Some(values.figures(set, confidence));
    }
}

/// The receipt's blocks: all rows, then each class.
fn blocks_mut(receipt: &mut Receipt) -> impl Iterator<Item = &mut Block> {
    std::iter::once(&mut receipt.results.all).chain(receipt.results.classes.values_mut())
}

/// One block's latency values of completed cohort rows.
#[derive(Default)]
struct Values {
    ttft: Vec<f64>,
    tpot: Vec<f64>,
    e2e: Vec<f64>,
}

impl Values {
    fn figures(mut self, set: &PercentileSet, confidence: Confidence) -> RequestedPercentiles {
        let metric = |values: &mut Vec<f64>| {
            sort_ascending(values);
            set.as_slice()
                .iter()
                .map(|&p| PercentileFigure {
                    p: p.value(),
                    value: nearest_rank_at(values, p),
                    interval: quantile_interval_at(values, p, confidence),
                })
                .collect()
        };
        RequestedPercentiles {
            ttft_ms: metric(&mut self.ttft),
            tpot_ms: metric(&mut self.tpot),
            e2e_ms: metric(&mut self.e2e),
        }
    }
}

/// The percentiles a receipt was built for (`contract.percentiles`): the
/// default 50, 95, 99 for an older receipt without the list, or one whose
/// list does not read as percentiles.
pub fn in_force(contract: &super::ContractInfo) -> PercentileSet {
    let mut values: Vec<Percentile> = contract
        .percentiles
        .iter()
        .filter_map(|v| Percentile::from_value(*v))
        .collect();
    PercentileSet::from_values(&mut values).unwrap_or_default()
}
