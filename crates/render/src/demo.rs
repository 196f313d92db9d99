//! The words of `goodput demo`: what it is about to do, the answer the
//! sweep gave, and the commands that do the same against a real server.
//!
//! The answer is read off the [`Frontier`] alone (its capacity and the first
//! point past it), so it says exactly what `goodput frontier` says, in one
//! sentence a new user can act on.

use goodput_core::frontier::{Capacity, Frontier, FrontierPoint};
use goodput_util::escape::terminal;
use goodput_util::figures::percent;

/// What the demo runs, as the opening lines and the closing commands need it.
#[derive(Clone, Debug)]
pub struct DemoSetup {
    /// The sim's base URL.
    pub url: String,
    /// The offered rates as given (`4,8,12,16`).
    pub rates: String,
    /// Each rate's window as given (`5s`).
    pub duration: String,
    /// The `--slo` the traces declare.
    pub slo: String,
    /// The folder written into.
    pub dir: String,
    /// The sim's output tokens/s at a full batch.
    pub full_batch_tokens_per_s: f64,
    /// The sim's batch slots.
    pub max_batch: usize,
    /// The sim's mean output length, tokens.
    pub mean_output_tokens: f64,
}

/// A rate for people: one decimal, `.0` dropped (`11.3`, `8`).
fn rate(x: f64) -> String {
    let s = format!("{x:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_owned)
}

/// The lines printed before the sweep starts.
pub fn opening(setup: &DemoSetup) -> String {
    let ceiling = setup.full_batch_tokens_per_s / setup.mean_output_tokens;
    format!(
        "goodput demo: a simulated LLM server (goodput sim: {} batch slots, {} output tokens a \
         request on average, about {} requests/s at a full batch) on {}\n\
         sweep: open-loop Poisson arrivals at {} requests/s, {} each, every request judged by \
         --slo '{}' (ms)\n\
         writing into {}/ (one trace per rate, record.log, frontier.svg, report.html)\n\n",
        setup.max_batch,
        rate(setup.mean_output_tokens),
        rate(ceiling),
        terminal(&setup.url),
        terminal(&setup.rates),
        terminal(&setup.duration),
        terminal(&setup.slo),
        terminal(&setup.dir),
    )
}

/// The first point above the capacity whose pass share is under the
/// target: the rate the answer's "past that" describes. None when every
/// rate held.
pub fn first_past_capacity(f: &Frontier) -> Option<&FrontierPoint> {
    let meets = |p: &FrontierPoint| p.pass_share.is_some_and(|s| s >= f.attainment);
    let floor = match &f.capacity {
        Capacity::AtLeast { .. } => return None,
        Capacity::Interpolated { meets, .. } => meets.offered_per_s,
        Capacity::Limited { held, .. } => held.offered_per_s,
        Capacity::NoneHolds { .. } | Capacity::NoneMeets { .. } => f64::NEG_INFINITY,
    };
    f.points
        .iter()
        .find(|p| p.offered_per_s > floor && !meets(p))
}

/// The answer: the capacity at the gates, what happened at the first rate
/// past it, and at the highest rate tested (`top`, with its saturation
/// verdict as the receipt names it), when that is another rate.
pub fn answer(
    f: &Frontier,
    past: Option<&FrontierPoint>,
    top: Option<(&FrontierPoint, &str)>,
) -> String {
    let target = percent(f.attainment, 0);
    let head = match &f.capacity {
        Capacity::Interpolated { offered_per_s, .. } => format!(
            "this server holds {}/s at your gates ({target} of requests passing every gate)",
            rate(*offered_per_s)
        ),
        Capacity::Limited { offered_per_s, .. } => format!(
            "this server holds {}/s at your gates and limits",
            rate(*offered_per_s)
        ),
        Capacity::AtLeast { offered_per_s, .. } => format!(
            "this server holds at least {}/s at your gates: every rate tested kept {target} \
             passing; try higher rates",
            rate(*offered_per_s)
        ),
        Capacity::NoneHolds { .. } | Capacity::NoneMeets { .. } => {
            format!("no rate tested kept {target} of requests passing every gate; try lower rates")
        }
    };
    let mut text = format!("\nanswer: {head}.");
    if let Some(p) = past {
        text += &format!(
            " Past that, at {}/s offered, {} passed (goodput {}/s).",
            rate(p.offered_per_s),
            p.pass_share
                .map_or("no request".to_owned(), |s| percent(s, 0)),
            rate(p.goodput_per_s),
        );
    }
    if let Some((p, verdict)) = top {
        let served = p.served_per_s.unwrap_or(p.completed_per_s);
        text += &format!(
            " At {}/s offered the server served {}/s: {}.",
            rate(p.offered_per_s),
            rate(served),
            saturation_words(verdict)
        );
    }
    text + "\n"
}

/// A saturation verdict in a reader's words.
fn saturation_words(verdict: &str) -> &'static str {
    match verdict {
        "overloaded" => "overloaded, requests queued faster than they were served",
        "steady" => "the server kept pace, but its requests missed their gates",
        _ => "the overload test was inconclusive (report.html says why)",
    }
}

/// Where the files went and the commands that do the same on a real server.
pub fn closing(setup: &DemoSetup, reported: &str) -> String {
    let dir = terminal(&setup.dir);
    format!(
        "\nwritten: {dir}/trace-RATE.json (one per rate), {dir}/frontier.svg, \
         {dir}/report.html (of {}), {dir}/record.log\n\n\
         the same against your server (vLLM, SGLang, TGI, llama.cpp: any OpenAI-compatible URL):\n  \
         goodput record --url http://HOST:8000 --model MODEL --request-rate 1,2,4,8 \\\n    \
         --duration 60s --slo 'chat:ttft=500,tpot=50' --metrics --out 'trace-{{rate}}.json'\n  \
         export GOODPUT_MAX_ROWS=100000 GOODPUT_MAX_BYTES=100000000   # a 60 s run is past the 500-row default\n  \
         goodput frontier trace-*.json --svg frontier.svg\n  \
         goodput report trace-8.json --out report.html\n",
        terminal(reported)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_with_one_decimal_at_most() {
        assert_eq!(rate(11.349), "11.3");
        assert_eq!(rate(8.0), "8");
        assert_eq!(rate(7.96), "8");
    }
}
