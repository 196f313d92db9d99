//! `goodput sim`: a simulated LLM engine behind an OpenAI-compatible HTTP API,
//! for dry runs of `goodput record` and as the real HTTP peer of its tests.
//!
//! ```text
//! http (routes, SSE bodies, faults) ─▶ driver (real-time task) ─▶ engine (pure step model)
//! ```
//!
//! The engine is a continuous-batching model (see [`engine`]); past its
//! capacity, offered load only lengthens the queue, so completions flatten
//! while TTFT climbs — the knee a load test is meant to find.
//!
//! The library takes a plain [`SimConfig`]; the flags, the "listening on"
//! line and the exit status of `goodput sim` are `cli::sim`'s.

pub mod answer;
pub mod dialect;
pub mod driver;
pub mod engine;
pub mod exposition;
pub mod fault;
pub mod http;
pub mod quirks;
pub mod tls;

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;

use self::engine::EngineParams;
use self::fault::Fault;
use self::http::{AppState, SimStats};
use self::quirks::StreamQuirks;
use self::tls::Front;

/// Everything the sim needs besides the socket.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Engine cost model.
    pub engine: EngineParams,
    /// Output length mean and standard deviation.
    pub output_tokens: (f64, f64),
    /// Faults.
    pub faults: Vec<Fault>,
    /// Seed.
    pub seed: u64,
    /// Listed model name (the first of `/v1/models`).
    pub model_name: String,
    /// More names `/v1/models` lists after it (`--served-model`), so a
    /// client's check of the served models can be tried against several.
    pub also_served: Vec<String>,
    /// How streamed responses are shaped (all off by default).
    pub quirks: StreamQuirks,
    /// Counts prompt tokens, when given (else words are counted).
    pub tokenizer: Option<Arc<goodput_tokenizer::TokenCounter>>,
}

/// Serves on `listener` until `shutdown` resolves. Must run inside a tokio runtime.
pub async fn serve(
    listener: TcpListener,
    config: SimConfig,
    stats: Arc<SimStats>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    serve_with(listener, config, Front::default(), stats, shutdown).await;
}

/// [`serve`], behind TLS and a header gate when `front` says so.
pub async fn serve_with(
    listener: TcpListener,
    config: SimConfig,
    front: Front,
    stats: Arc<SimStats>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let acceptor = front.tls.map(tokio_rustls::TlsAcceptor::from);
    let state = Arc::new(AppState {
        engine: driver::spawn_engine(config.engine),
        faults: config.faults,
        output_tokens: config.output_tokens,
        model_name: config.model_name,
        also_served: config.also_served,
        quirks: config.quirks,
        tokenizer: config.tokenizer,
        rng: Mutex::new(ChaCha8Rng::seed_from_u64(config.seed)),
        next_id: AtomicU64::new(0),
        stats,
        require_header: front.require_header,
    });
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of file descriptors and the like: keep serving the rest.
                Err(_) => continue,
            },
            () = &mut shutdown => return,
        };
        let _ = stream.set_nodelay(true);
        state
            .stats
            .connections
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let state = state.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            match acceptor {
                None => serve_connection(stream, state).await,
                Some(acceptor) => {
                    // A failed handshake only loses that connection.
                    if let Ok(tls) = acceptor.accept(stream).await {
                        serve_connection(tls, state).await;
                    }
                }
            }
        });
    }
}

/// One HTTP/1.1 connection, plain or TLS.
async fn serve_connection<I>(io: I, state: Arc<AppState>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // With --close-after-response, a streamed body signals its end
    // here and the connection shuts down once that response is out.
    let closer = state
        .quirks
        .close_after_response
        .then(|| Arc::new(tokio::sync::Notify::new()));
    let body_closer = closer.clone();
    let service = service_fn(move |req| http::handle(state.clone(), req, body_closer.clone()));
    let conn = http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    // A client that goes away mid-response is normal here.
    match closer {
        None => {
            let _ = conn.await;
        }
        Some(closer) => {
            tokio::select! {
                _ = conn.as_mut() => {}
                () = closer.notified() => {
                    // The head already went out with keep-alive, so
                    // no `Connection: close` is sent: the close is
                    // silent, as with a proxy that drops idle sockets.
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        }
    }
}

/// A sim running on its own thread and runtime, on 127.0.0.1 and a free
/// port: for tests and benchmarks. Dropping it stops it.
#[derive(Debug)]
pub struct SimServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its counters.
    pub stats: Arc<SimStats>,
    /// `https` or `http`.
    scheme: &'static str,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SimServer {
    /// Starts a sim with `worker_threads` runtime threads.
    pub fn start(config: SimConfig, worker_threads: usize) -> std::io::Result<SimServer> {
        SimServer::start_with(config, Front::default(), worker_threads)
    }

    /// [`SimServer::start`] behind TLS and a header gate when `front` says so.
    pub fn start_with(
        config: SimConfig,
        front: Front,
        worker_threads: usize,
    ) -> std::io::Result<SimServer> {
        let scheme = if front.tls.is_some() { "https" } else { "http" };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(worker_threads.max(1))
            .enable_all()
            .build()?;
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0"))?;
        let addr = listener.local_addr()?;
        let stats = Arc::new(SimStats::default());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serve_stats = stats.clone();
        let thread = std::thread::Builder::new()
            .name("goodput-sim".into())
            .spawn(move || {
                runtime.block_on(serve_with(listener, config, front, serve_stats, async {
                    let _ = stopped.await;
                }));
                runtime.shutdown_timeout(std::time::Duration::from_millis(100));
            })?;
        Ok(SimServer {
            addr,
            stats,
            scheme,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The base URL, `http://127.0.0.1:PORT` (`https://` behind TLS).
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
