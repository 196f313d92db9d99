//! Scraping the server's metrics while a recording runs (`record
//! --metrics`): the Prometheus endpoint is read on its own task, and each
//! scrape becomes one [`MetricsLine`] of the sidecar (parsed and mapped by
//! `goodput_core::server_metrics`).
//!
//! Every interval (missed ticks are skipped, never bunched), one GET with
//! the interval as its timeout, on its own connection pool, never touching
//! the requests' transport. `https://` uses the run's TLS settings; the
//! run's headers and API key go along only to the server's own origin
//! ([`MetricsPlan::credentials`]). A failed, timed-out or unparsable scrape
//! is a line with `error` (a gap), never an error of the run. A snapshot's
//! `tMs` is the midpoint of the scrape's request and response on the
//! trace's clock.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::Uri;
use tokio::time::Instant;

use goodput_core::server_metrics::{parse_exposition, MetricsLine};

use crate::transport::client::{
    BodyError, HyperTransport, ResponseBody, SendError, TransportError,
};
use crate::transport::endpoint::Endpoint;

/// The shortest scrape interval accepted.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// The largest metrics page read.
const MAX_PAGE_BYTES: usize = 4 << 20;

/// Where and how often to scrape, and how to connect.
#[derive(Debug, Clone)]
pub struct MetricsPlan {
    /// The metrics endpoint (`http://` or `https://`).
    pub uri: Uri,
    /// Time between scrapes (at least [`MIN_INTERVAL`]); also each scrape's timeout.
    pub interval: Duration,
    /// The TLS configuration for an `https://` endpoint (the run's own
    /// trust settings when the server is `https://` too).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Whether the scrape carries the run's headers and API key: only when
    /// the endpoint is on the server's own origin (scheme, host and port),
    /// so no credential goes to another host.
    pub credentials: bool,
}

impl MetricsPlan {
    /// The scraper's own transport (its own connection pool, never the
    /// requests'), with the run's headers and key when `credentials`.
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

/// Scrapes `plan.uri` every interval through `transport` until `stop`
/// fires, pushing one line per scrape into `lines`, timestamps in ms since
/// `t0`. Runs on its own task with its own connections; nothing here can
/// delay a request.
pub async fn scrape_loop(
    plan: MetricsPlan,
    transport: HyperTransport,
    t0: Instant,
    lines: Arc<Mutex<Vec<MetricsLine>>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval_at(t0, plan.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let ms = |t: Instant| t.saturating_duration_since(t0).as_secs_f64() * 1000.0;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let sent = Instant::now();
        let page = tokio::time::timeout(plan.interval, fetch(&transport, &plan.uri)).await;
        let t_ms = goodput_core::trace::write::round_us((ms(sent) + ms(Instant::now())) / 2.0);
        let line = match page {
            Err(_) => MetricsLine::gap(t_ms, "timeout"),
            Ok(Err(why)) => MetricsLine::gap(t_ms, why.to_string()),
            Ok(Ok(text)) => match parse_exposition(&text) {
                Ok(samples) => MetricsLine::snapshot(t_ms, &samples),
                Err(e) => MetricsLine::gap(t_ms, e.to_string()),
            },
        };
        if let Ok(mut v) = lines.lock() {
            v.push(line);
        }
    }
}

/// A scrape running beside a run: its task and the signal that stops it.
pub(crate) struct Scraper {
    task: tokio::task::JoinHandle<()>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl Scraper {
    /// Starts [`scrape_loop`] on its own task: `plan.uri` through
    /// `transport`, from `t0`, into `lines`.
    pub(crate) fn start(
        plan: MetricsPlan,
        transport: HyperTransport,
        t0: Instant,
        lines: Arc<Mutex<Vec<MetricsLine>>>,
    ) -> Scraper {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(scrape_loop(plan, transport, t0, lines, stopped));
        Scraper { task, stop }
    }

    /// Stops the scraping once the run has ended.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        // A scrape in progress ends within its timeout; do not wait longer.
        if tokio::time::timeout(Duration::from_secs(1), self.task)
            .await
            .is_err()
        {
            // Still blocked: the runtime's shutdown drops it.
        }
    }
}

/// Why one scrape found no page: the sidecar line's `error` (a gap).
#[derive(Debug, thiserror::Error)]
enum ScrapeError {
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
