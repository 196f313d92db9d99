//! The library's enums as command-line values. Only this layer depends on
//! clap, so each enum a flag takes is mirrored here with the same names and
//! the same help text, and converted into the library's own type.

use clap::ValueEnum;

use goodput_import::Source;
use goodput_record::schedule::ArrivalProcess;
use goodput_record::workload::body::Api;

/// Which tool wrote the source file (`import --from`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SourceArg {
    /// vLLM result JSON: `benchmark_serving.py` or `vllm bench serve` (`--save-result`), any release.
    Vllm,
    /// AIPerf `profile_export.jsonl` (one record per request).
    Aiperf,
    /// guidellm `benchmarks.json`.
    Guidellm,
}

impl From<SourceArg> for Source {
    fn from(arg: SourceArg) -> Source {
        match arg {
            SourceArg::Vllm => Source::Vllm,
            SourceArg::Aiperf => Source::Aiperf,
            SourceArg::Guidellm => Source::Guidellm,
        }
    }
}

/// How the open-loop arrival instants are spaced (`record --arrival`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    /// Exponential gaps (memoryless; the default, as in vLLM).
    Poisson,
    /// Equal gaps of 1/rate.
    Constant,
    /// Gamma gaps with shape = --burstiness (below 1: burstier than Poisson).
    Gamma,
}

impl From<ArrivalArg> for ArrivalProcess {
    fn from(arg: ArrivalArg) -> ArrivalProcess {
        match arg {
            ArrivalArg::Poisson => ArrivalProcess::Poisson,
            ArrivalArg::Constant => ArrivalProcess::Constant,
            ArrivalArg::Gamma => ArrivalProcess::Gamma,
        }
    }
}

/// Where the sim's chat/completions streams put reasoning (`sim --reasoning-field`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReasoningFieldArg {
    /// `delta.reasoning` (current vLLM).
    Reasoning,
    /// `delta.reasoning_content` (older vLLM, llama.cpp, DeepSeek).
    #[value(name = "reasoning_content")]
    ReasoningContent,
}

impl From<ReasoningFieldArg> for goodput_sim::dialect::ReasoningField {
    fn from(arg: ReasoningFieldArg) -> goodput_sim::dialect::ReasoningField {
        match arg {
            ReasoningFieldArg::Reasoning => goodput_sim::dialect::ReasoningField::Reasoning,
            ReasoningFieldArg::ReasoningContent => {
                goodput_sim::dialect::ReasoningField::ReasoningContent
            }
        }
    }
}

/// Whose timing objects the sim's finish chunks carry (`sim --server-timing`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ServerTimingArg {
    /// llama.cpp's `timings` object.
    #[value(name = "llama.cpp")]
    LlamaCpp,
    /// vLLM's per-request `metrics` object.
    Vllm,
}

/// The sim's setting for the `--server-timing` values given.
pub fn server_timing(args: &[ServerTimingArg]) -> goodput_sim::quirks::ServerTiming {
    goodput_sim::quirks::ServerTiming {
        llama_cpp: args.contains(&ServerTimingArg::LlamaCpp),
        vllm: args.contains(&ServerTimingArg::Vllm),
    }
}

/// Which API the requests speak (`record --api`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ApiArg {
    /// `/v1/chat/completions` (messages in, `delta.content` out).
    Chat,
    /// `/v1/completions` (prompt in, `text` out).
    Completions,
    /// OpenAI Responses, `/v1/responses`.
    Responses,
    /// Anthropic Messages, `/v1/messages` (the key goes in `x-api-key`).
    Messages,
    /// `/v1/embeddings` (not streamed: only E2E gates apply).
    Embeddings,
}

impl From<ApiArg> for Api {
    fn from(arg: ApiArg) -> Api {
        match arg {
            ApiArg::Chat => Api::Chat,
            ApiArg::Completions => Api::Completions,
            ApiArg::Responses => Api::Responses,
            ApiArg::Messages => Api::Messages,
            ApiArg::Embeddings => Api::Embeddings,
        }
    }
}
