//! Scraping the server's metrics while a recording runs (`record
//! --metrics`): the Prometheus endpoint is read on its own thread and event
//! loop, and each scrape becomes one [`MetricsLine`] of the sidecar (parsed
//! and mapped by `goodput_core::server_metrics`), appended to the file as
//! it comes ([`SidecarFile`]). Raw series are bounded per scrape
//! ([`MAX_RAW_SERIES`]) and carry no credential: the run's secrets are
//! redacted from their keys and credential-looking label values replaced.
//!
//! Every interval (missed ticks are skipped, never bunched), one GET with
//! the interval as its timeout, on its own connection pool, never touching
//! the requests' transport. `https://` uses the run's TLS settings; the
//! run's headers and API key go along only to the server's own origin
//! ([`MetricsPlan::credentials`]). A failed, timed-out or unparsable scrape
//! is a line with `error` (a gap), never an error of the run. A snapshot's
//! `tMs` is the midpoint of the scrape's request and response on the
//! trace's clock.

mod sidecar;

use std::sync::Arc;
use std::time::Duration;

use hyper::Uri;
use tokio::time::Instant;

use goodput_core::server_metrics::{parse_exposition, MetricsLine};

use crate::error::RecordError;
use crate::transport::client::{
    BodyError, HyperTransport, ResponseBody, SendError, TransportError,
};
use crate::transport::endpoint::Endpoint;
use crate::transport::error_text::{Secrets, REDACTED};

pub use self::sidecar::{SidecarFile, WrittenSidecar};

/// The shortest scrape interval accepted.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// The largest metrics page read.
const MAX_PAGE_BYTES: usize = 4 << 20;

/// Where and how often to scrape, and how to connect: one or more
/// endpoints (the server's, and e.g. a DCGM or node exporter beside it),
/// all read at every tick into the one sidecar.
#[derive(Debug, Clone)]
pub struct MetricsPlan {
    /// The endpoints, in the order given (a sidecar line's `source` is the
    /// place of its endpoint here, when there are several).
    pub endpoints: Vec<MetricsEndpoint>,
    /// Time between scrapes (at least [`MIN_INTERVAL`]); also each scrape's timeout.
    pub interval: Duration,
}

/// One metrics endpoint and how to reach it.
#[derive(Debug, Clone)]
pub struct MetricsEndpoint {
    /// The metrics endpoint (`http://` or `https://`).
    pub uri: Uri,
    /// The TLS configuration for an `https://` endpoint (the run's own
    /// trust settings when the server is `https://` too).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Whether the scrape carries the run's headers and API key: only when
    /// the endpoint is on the server's own origin (scheme, host and port),
    /// so no credential goes to another host.
    pub credentials: bool,
}

impl MetricsEndpoint {
    /// The scraper's own transport for this endpoint (its own connection
    /// pool, never the requests'), with the run's headers and key when
    /// `credentials`.
    pub fn transport(&self, endpoint: &Endpoint) -> Result<HyperTransport, TransportError> {
        if self.credentials {
            HyperTransport::with_options(
                self.uri.clone(),
                endpoint.api_key.as_deref(),
                &endpoint.headers,
                self.tls.clone(),
            )
        } else {
            HyperTransport::with_options(self.uri.clone(), None, &[], self.tls.clone())
        }
    }
}

impl MetricsPlan {
    /// Every endpoint's transport, in order.
    pub fn transports(&self, endpoint: &Endpoint) -> Result<Vec<HyperTransport>, TransportError> {
        self.endpoints
            .iter()
            .map(|e| e.transport(endpoint))
            .collect()
    }
}

/// The most raw series one scrape keeps in the sidecar's `raw` (the first
/// distinct ones in page order; the line counts the rest in `rawDropped`).
/// A vLLM page has a few hundred; this bounds what one hostile page can add
/// to the sidecar, while the mapped series still read the whole page.
pub const MAX_RAW_SERIES: usize = 2000;

/// Label names whose values are taken for credentials and never written
/// (compared lowercased; `key` alone or any name containing one of these).
const CREDENTIAL_LABELS: [&str; 8] = [
    "auth",
    "token",
    "secret",
    "passw",
    "credential",
    "api_key",
    "apikey",
    "cookie",
];

/// Whether a label looks like it carries a credential: its name (above) or
/// a value that starts with an auth scheme (`Bearer …`, `Basic …`).
fn looks_like_credential(name: &str, value: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let value = value.trim_start().to_ascii_lowercase();
    name == "key"
        || name.ends_with("_key")
        || CREDENTIAL_LABELS.iter().any(|c| name.contains(c))
        || ["bearer ", "basic ", "token "]
            .iter()
            .any(|s| value.starts_with(s))
}

/// One scrape's sidecar line: the page parsed, the run's secrets redacted
/// from every raw series key and credential-looking label values replaced
/// by [`REDACTED`], at most [`MAX_RAW_SERIES`] raw series; a gap's text is
/// redacted too (a parse error quotes the page).
fn scrape_line(t_ms: f64, page: Result<String, ScrapeError>, secrets: &Secrets) -> MetricsLine {
    let text = match page {
        Ok(text) => text,
        Err(why) => return MetricsLine::gap(t_ms, secrets.redact(&why.to_string())),
    };
    match parse_exposition(&text) {
        Ok(mut samples) => {
            drop(text);
            for sample in &mut samples {
                for (name, value) in sample.labels.iter_mut() {
                    if looks_like_credential(name, value) {
                        *value = REDACTED.to_owned();
                    }
                }
            }
            MetricsLine::snapshot_bounded(t_ms, &samples, MAX_RAW_SERIES, &|key| {
                secrets.redact(key)
            })
        }
        Err(e) => MetricsLine::gap(t_ms, secrets.redact(&e.to_string())),
    }
}

/// Scrapes every endpoint of `plan` every interval, each through its
/// transport (`transports[i]` for `plan.endpoints[i]`), until `stop` fires,
/// appending one line per scrape to `sidecar` (in endpoint order within a
/// tick, each marked with its endpoint when there are several),
/// timestamps in ms since `t0`. The endpoints of a tick are fetched at
/// once, so a slow exporter does not shift the server's readings. Runs on
/// the scraper's own thread and event loop ([`Scraper`]), so neither the
/// fetch nor the parse of a large page can delay a send. A failed write of
/// the sidecar ends it.
async fn scrape_loop(
    plan: MetricsPlan,
    transports: Vec<HyperTransport>,
    t0: Instant,
    sidecar: &mut SidecarFile,
    secrets: &Secrets,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval_at(t0, plan.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let ms = |t: Instant| t.saturating_duration_since(t0).as_secs_f64() * 1000.0;
    let several = plan.endpoints.len() > 1;
    while !sidecar.has_failed() {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let fetches: Vec<_> = plan
            .endpoints
            .iter()
            .zip(&transports)
            .map(|(e, t)| {
                let (uri, transport, interval) = (e.uri.clone(), t.clone(), plan.interval);
                tokio::spawn(async move {
                    let sent = Instant::now();
                    let page = tokio::time::timeout(interval, fetch(&transport, &uri)).await;
                    (
                        sent,
                        Instant::now(),
                        page.unwrap_or(Err(ScrapeError::Timeout)),
                    )
                })
            })
            .collect();
        for (i, fetch) in fetches.into_iter().enumerate() {
            let done = tokio::select! {
                done = fetch => done,
                _ = stop.changed() => return,
            };
            let Ok((sent, got, page)) = done else {
                continue;
            };
            let t_ms = goodput_core::trace::write::round_us((ms(sent) + ms(got)) / 2.0);
            let source = several.then_some(i as u32);
            sidecar.push(&scrape_line(t_ms, page, secrets).from_source(source));
        }
    }
}

/// A scrape running beside a run: its own thread with its own
/// current-thread event loop (the run's loop is one thread too: a page
/// parsed there moved the p99 send lag from 0.26 to 40 ms), and the signal
/// that stops it.
pub(crate) struct Scraper {
    thread: std::thread::JoinHandle<Result<WrittenSidecar, RecordError>>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl Scraper {
    /// Starts [`scrape_loop`] on its own thread: `plan`'s endpoints through
    /// `transports`, from `t0`, into `sidecar`, redacting `secrets`.
    pub(crate) fn start(
        plan: MetricsPlan,
        transports: Vec<HyperTransport>,
        t0: Instant,
        mut sidecar: SidecarFile,
        secrets: Secrets,
    ) -> Result<Scraper, RecordError> {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("goodput-scrape".into())
            .spawn(move || {
                yield_to_the_send_loop();
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(RecordError::Runtime)?;
                runtime.block_on(scrape_loop(
                    plan,
                    transports,
                    t0,
                    &mut sidecar,
                    &secrets,
                    stopped,
                ));
                // Connections still open are dropped with the runtime.
                runtime.shutdown_background();
                sidecar.finish()
            })
            .map_err(RecordError::Runtime)?;
        Ok(Scraper { thread, stop })
    }

    /// Stops the scraping once the run has ended (a scrape in progress is
    /// abandoned) and closes the sidecar.
    pub(crate) fn stop(self) -> Result<WrittenSidecar, RecordError> {
        let _ = self.stop.send(true);
        self.thread.join().unwrap_or_else(|_| {
            Err(RecordError::Runtime(std::io::Error::other(
                "the metrics scraper's thread panicked",
            )))
        })
    }
}

/// The nice value of the scraper's thread: the lowest priority, so on a
/// machine with no core to spare a page's parse waits for the send loop
/// rather than the send loop for it (a late scrape is a gap in the sidecar;
/// a late send would be lag in every row's latency).
const SCRAPER_NICE: libc::c_int = 19;

/// Lowers the calling thread's priority to [`SCRAPER_NICE`] (on Linux, a
/// thread's nice value is its own). A failure leaves it as it was: the
/// scrape still runs, only without the precedence.
fn yield_to_the_send_loop() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority take and return plain integers and
    // touch no memory of this process.
    unsafe {
        let tid = libc::gettid();
        let _ = libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, SCRAPER_NICE);
    }
}

/// Why one scrape found no page: the sidecar line's `error` (a gap).
#[derive(Debug, thiserror::Error)]
enum ScrapeError {
    /// No page within the interval.
    #[error("timeout")]
    Timeout,
    /// The GET could not be sent or got no response head.
    #[error("request failed: {}", send_error_text(.0))]
    Request(SendError),
    /// A non-2xx response.
    #[error("HTTP {0}")]
    Status(u16),
    /// The body broke off.
    #[error("body: {}", .0 .0)]
    Body(BodyError),
    /// The page passed [`MAX_PAGE_BYTES`].
    #[error("the page is larger than {max} bytes", max = MAX_PAGE_BYTES)]
    TooLarge,
    /// The page is not text.
    #[error("the page is not UTF-8")]
    NotUtf8,
}

/// One GET of the metrics page, read up to [`MAX_PAGE_BYTES`].
async fn fetch(transport: &HyperTransport, uri: &Uri) -> Result<String, ScrapeError> {
    let (head, mut body) = transport
        .get(uri.clone())
        .await
        .map_err(ScrapeError::Request)?;
    if !(200..300).contains(&head.status) {
        return Err(ScrapeError::Status(head.status));
    }
    let mut page = Vec::new();
    while let Some(chunk) = body.next_frame().await.map_err(ScrapeError::Body)? {
        if page.len() + chunk.len() > MAX_PAGE_BYTES {
            return Err(ScrapeError::TooLarge);
        }
        page.extend_from_slice(&chunk);
    }
    String::from_utf8(page).map_err(|_| ScrapeError::NotUtf8)
}

/// A send error in a few words (no header value can be in it: the texts
/// come from the connection, never from the request).
fn send_error_text(e: &SendError) -> String {
    match e {
        SendError::Refused => "connection refused".to_owned(),
        SendError::Connect(why) => format!("cannot connect: {why}"),
        SendError::Disconnected(why) => format!("disconnected: {why}"),
        SendError::Tls(failure) => format!("TLS: {}", failure.reason()),
        SendError::HeadTooLarge => "response head too large".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> Secrets {
        Secrets::new(["Bearer SECRET123".to_owned(), "XKEY789".to_owned()])
    }

    #[test]
    fn raw_series_carry_no_secret_of_the_run_nor_credential_labels() {
        let page = "vllm:num_requests_running{auth=\"Bearer SECRET123\",key=\"XKEY789\"} 3\n\
                    vllm:num_requests_waiting{model_name=\"XKEY789-m\"} 2\n\
                    up{session=\"Bearer abc\"} 1\n";
        let line = scrape_line(10.0, Ok(page.to_owned()), &secrets());
        let keys: Vec<&str> = line.raw.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                r#"up{session="[redacted]"}"#,
                r#"vllm:num_requests_running{auth="[redacted]",key="[redacted]"}"#,
                r#"vllm:num_requests_waiting{model_name="[redacted]-m"}"#,
            ]
        );
        // The mapped series are read from the page as it was.
        assert_eq!(line.mapped.running, Some(3.0));
        assert_eq!(line.mapped.waiting, Some(2.0));
        let json = String::from_utf8(goodput_core::server_metrics::sidecar_line(&line)).unwrap();
        assert!(
            !json.contains("SECRET123") && !json.contains("XKEY789"),
            "{json}"
        );
    }

    #[test]
    fn a_parse_error_quoting_a_secret_is_redacted() {
        let line = scrape_line(1.0, Ok("m XKEY789\n".to_owned()), &secrets());
        assert_eq!(
            line.error.as_deref(),
            Some("metrics line 1: `[redacted]` is not a number")
        );
    }

    #[test]
    fn one_page_keeps_at_most_max_raw_series() {
        let page: String = (0..MAX_RAW_SERIES + 5)
            .map(|i| format!("s{{i=\"{i}\"}} 1\n"))
            .collect();
        let line = scrape_line(1.0, Ok(page), &Secrets::default());
        assert_eq!(line.raw.len(), MAX_RAW_SERIES);
        assert_eq!(line.raw_dropped, 5);
        // The first ones in page order are kept.
        assert!(line.raw.contains_key(r#"s{i="0"}"#));
        assert!(!line
            .raw
            .contains_key(&format!("s{{i=\"{}\"}}", MAX_RAW_SERIES)));
    }
}
