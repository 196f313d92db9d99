//! `goodput sim`: check the flags into a [`SimConfig`], bind, print the
//! address and serve until Ctrl-C.

use std::io::Write;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::cli::choices::{ReasoningFieldArg, ServerTimingArg};
use crate::cli::error::Error;
use goodput_sim::engine::EngineParams;
use goodput_sim::fault::{check_faults, parse_fault, Fault};
use goodput_sim::http::SimStats;
use goodput_sim::quirks::StreamQuirks;
use goodput_sim::tls::{self, Front, RequiredHeader};
use goodput_sim::{serve_with, SimConfig};
use goodput_tokenizer::TokenCounter;

use crate::cli::exit::EXIT_OK;

/// Exit statuses of `goodput sim`, shown in `--help`.
pub const SIM_EXIT_HELP: &str = "\
Exit status:
  0  stopped by Ctrl-C
  2  usage error, unreadable --tls-cert/--tls-key, or the address cannot be bound

Capacity at a full batch B is B / (decode-step-ms + B x decode-ms-per-seq) tokens per ms.
A lone request sees TTFT = prefill + decode-step-ms + decode-ms-per-seq and
TPOT = decode-step-ms + decode-ms-per-seq.

Stream quirks (--close-after-response, --usage-before-last-token, --tokens-per-chunk,
--no-done, --no-finish-reason, --no-usage) reproduce behaviours of real servers that
a recorder must survive; see docs/recorder.md.

--tls-cert FILE --tls-key FILE serve https (rustls, HTTP/1.1). --require-header
'Name: value' answers 401 to any request without it; the 401 body echoes the
values received (to test that a recorder keeps secrets out of its traces).";

/// Flags of `goodput sim`.
#[derive(Debug, Clone, clap::Args)]
pub struct SimArgs {
    /// Address to bind (loopback by default).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to bind (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Most sequences decoding at once.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_batch: usize,
    /// Prefill cost per 1,000 prompt tokens, ms.
    #[arg(long, value_name = "F", default_value_t = 20.0)]
    pub prefill_ms_per_1k_tokens: f64,
    /// Fixed cost of one decode step, ms.
    #[arg(long, value_name = "F", default_value_t = 8.0)]
    pub decode_step_ms: f64,
    /// Extra decode-step cost per running sequence, ms.
    #[arg(long, value_name = "F", default_value_t = 0.25)]
    pub decode_ms_per_seq: f64,
    /// Output length: MEAN or MEAN:STD tokens (normal, rounded, at least 1; capped by max_tokens).
    #[arg(long, value_name = "MEAN[:STD]", default_value = "128:32", value_parser = parse_output_tokens)]
    pub output_tokens: (f64, f64),
    /// A fault KIND:RATE (http500, http429, disconnect, malformed, stall); repeatable.
    #[arg(long = "fault", value_name = "KIND:RATE", value_parser = parse_fault)]
    pub faults: Vec<Fault>,
    /// Seed of output lengths and fault draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The model name listed by /v1/models (requests may name any model).
    #[arg(long, default_value = "sim")]
    pub model_name: String,
    /// Another model name /v1/models lists after --model-name; repeatable.
    #[arg(long = "served-model", value_name = "NAME")]
    pub served_model: Vec<String>,
    /// Close the TCP connection after every streamed response, without
    /// announcing it (no `Connection: close`): the client learns at its next
    /// use of the connection.
    #[arg(long)]
    pub close_after_response: bool,
    /// Send the usage chunk one step before the last token (with a 1-token
    /// output: just before it), instead of after the finish chunk.
    #[arg(long)]
    pub usage_before_last_token: bool,
    /// Put N tokens in each content chunk (the last chunk may hold fewer);
    /// a chunk goes out when its N-th token is made.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub tokens_per_chunk: u32,
    /// End streams without `data: [DONE]` (the body just ends).
    #[arg(long)]
    pub no_done: bool,
    /// End streams without a chunk carrying `finish_reason`.
    #[arg(long)]
    pub no_finish_reason: bool,
    /// Never send a usage chunk in a stream, even when asked with
    /// `stream_options.include_usage`.
    #[arg(long)]
    pub no_usage: bool,
    /// Add N tokens to every prompt's `usage.prompt_tokens`, as a chat
    /// template does on a real server (a client tokenizer then counts fewer).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub template_tokens: u32,
    /// Pause before every N-th token of each stream (the N-th, 2N-th, …)
    /// for --stall-ms: stalls a recording must find where they were put.
    #[arg(long, value_name = "N", requires = "stall_ms", value_parser = clap::value_parser!(u32).range(1..))]
    pub stall_every: Option<u32>,
    /// How long each --stall-every pause lasts, ms (at most 600,000).
    #[arg(long, value_name = "S", requires = "stall_every", value_parser = clap::value_parser!(u64).range(0..=600_000))]
    pub stall_ms: Option<u64>,
    /// Count prompt tokens with this Hugging Face tokenizer.json (each message's
    /// content, summed; no chat template) instead of whitespace-separated words.
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<std::path::PathBuf>,
    /// Serve https with this PEM certificate chain (with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// The first N output tokens of every stream are reasoning ("thinking"):
    /// chat and completions send them in --reasoning-field, Responses as
    /// response.reasoning_text.delta, Messages as thinking_delta; the usage
    /// counts them (Messages inside output_tokens). An output of N tokens or
    /// fewer never answers.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub reasoning_tokens: u32,
    /// The chat/completions delta member of reasoning text.
    #[arg(long, value_enum, default_value_t = ReasoningFieldArg::Reasoning)]
    pub reasoning_field: ReasoningFieldArg,
    /// Numbers per /v1/embeddings vector.
    #[arg(long, value_name = "N", default_value_t = goodput_sim::quirks::DEFAULT_EMBEDDING_DIM, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub embedding_dim: u32,
    /// Put the engine's own timing in every chat/completions finish chunk, as
    /// llama.cpp (`timings`) and/or vLLM (`metrics`) do, from the queue wait
    /// and admitting step the engine measured: `--server-timing llama.cpp,vllm`.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "SERVER")]
    pub server_timing: Vec<ServerTimingArg>,
    /// Corrupt the answers of this share of prompts (0–1), chosen by the
    /// prompt's hash so the same prompts every run (docs/quality.md, "The
    /// sim"): to test a quality gate.
    #[arg(long, value_name = "F", default_value_t = 0.0, value_parser = parse_share)]
    pub corrupt_answers: f64,
    /// Answer 401 to any request (but /health) without this header, `'Name: value'`.
    #[arg(long, value_name = "'NAME: VALUE'")]
    pub require_header: Option<String>,
}

/// The TLS and header settings of `goodput sim`'s flags.
pub fn front_from_args(args: &SimArgs) -> Result<Front, Error> {
    let usage = |e: tls::FrontError| Error::Usage(e.to_string());
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls::server_config(cert, key).map_err(usage)?),
        _ => None,
    };
    let require_header = args
        .require_header
        .as_deref()
        .map(RequiredHeader::parse)
        .transpose()
        .map_err(usage)?;
    Ok(Front {
        tls,
        require_header,
    })
}

/// Parses `MEAN[:STD]`.
pub fn parse_output_tokens(text: &str) -> Result<(f64, f64), String> {
    let (mean, std) = match text.split_once(':') {
        Some((m, s)) => (m, s),
        None => (text, "0"),
    };
    let number = |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
    };
    match (number(mean), number(std)) {
        (Some(m), Some(s)) if m >= 1.0 => Ok((m, s)),
        _ => Err(format!(
            "`{text}`: expected MEAN[:STD] with MEAN >= 1 and STD >= 0"
        )),
    }
}

/// The sim configuration of the flags, validated.
pub fn config_from(args: &SimArgs) -> Result<SimConfig, Error> {
    let usage = |m: String| Error::Usage(m);
    check_faults(&args.faults).map_err(|e| usage(e.to_string()))?;
    if args.max_batch == 0 {
        return Err(usage("--max-batch must be at least 1".into()));
    }
    for (name, v) in [
        ("--prefill-ms-per-1k-tokens", args.prefill_ms_per_1k_tokens),
        ("--decode-step-ms", args.decode_step_ms),
        ("--decode-ms-per-seq", args.decode_ms_per_seq),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(usage(format!("{name} must be a number of ms >= 0")));
        }
    }
    let tokenizer = match &args.tokenizer {
        Some(path) => Some(Arc::new(
            TokenCounter::load(path).map_err(|e| usage(e.to_string()))?,
        )),
        None => None,
    };
    Ok(SimConfig {
        tokenizer,
        engine: EngineParams {
            max_batch: args.max_batch,
            prefill_ms_per_1k_tokens: args.prefill_ms_per_1k_tokens,
            decode_step_ms: args.decode_step_ms,
            decode_ms_per_seq: args.decode_ms_per_seq,
        },
        output_tokens: args.output_tokens,
        faults: args.faults.clone(),
        seed: args.seed,
        model_name: args.model_name.clone(),
        also_served: args.served_model.clone(),
        quirks: StreamQuirks {
            close_after_response: args.close_after_response,
            usage_before_last_token: args.usage_before_last_token,
            tokens_per_chunk: args.tokens_per_chunk.max(1),
            no_done: args.no_done,
            no_finish_reason: args.no_finish_reason,
            no_usage: args.no_usage,
            template_tokens: args.template_tokens,
            stall_every: args.stall_every.unwrap_or(0),
            stall_ms: args.stall_ms.unwrap_or(0),
            reasoning_tokens: args.reasoning_tokens,
            reasoning_field: args.reasoning_field.into(),
            embedding_dim: args.embedding_dim,
            server_timing: crate::cli::choices::server_timing(&args.server_timing),
            corrupt_answers: args.corrupt_answers,
        },
    })
}

/// `goodput sim`: bind, print the address, serve until Ctrl-C.
pub fn run(args: SimArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let config = config_from(&args)?;
    let front = front_from_args(&args)?;
    let scheme = if front.tls.is_some() { "https" } else { "http" };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Usage(format!("cannot start the async runtime: {e}")))?;
    let asked = format!("{}:{}", args.host, args.port);
    let listener = runtime
        .block_on(TcpListener::bind(asked.as_str()))
        .map_err(|source| Error::Listen {
            addr: asked.clone(),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| Error::Listen {
        addr: asked,
        source,
    })?;
    let p = config.engine;
    let line = format!(
        "goodput sim listening on {scheme}://{addr} (max batch {}, prefill {} ms/1k tokens, decode step {} ms + {} ms/seq, \
         output {}:{} tokens, ceiling {:.0} tokens/s{})\n",
        p.max_batch,
        p.prefill_ms_per_1k_tokens,
        p.decode_step_ms,
        p.decode_ms_per_seq,
        config.output_tokens.0,
        config.output_tokens.1,
        p.full_batch_tokens_per_s(),
        match config.quirks.describe() {
            q if q.is_empty() => String::new(),
            q => format!("; quirks: {q}"),
        }
    );
    let _ = stdout
        .write_all(line.as_bytes())
        .and_then(|()| stdout.flush());
    runtime.block_on(serve_with(
        listener,
        config,
        front,
        Arc::new(SimStats::default()),
        async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        },
    ));
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(EXIT_OK)
}

/// A share between 0 and 1.
fn parse_share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("`{s}` is not a share between 0 and 1")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_token_flags_parse() {
        assert_eq!(parse_output_tokens("64"), Ok((64.0, 0.0)));
        assert_eq!(parse_output_tokens("128:32"), Ok((128.0, 32.0)));
        assert!(parse_output_tokens("0").is_err());
        assert!(parse_output_tokens("a:b").is_err());
    }
}
