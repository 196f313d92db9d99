//! `record --metrics`: the scrape plan from the flags (endpoint, interval),
//! and the sidecar the recorder streamed beside the trace, with its sha256
//! in the trace's workload. The scraping itself is the library's
//! ([`goodput_core::server_metrics`]).

use hyper::Uri;

use crate::cli::error::Error;
use goodput_core::trace::{Labels, Scalar};
use goodput_record::scrape::{MetricsEndpoint, MetricsPlan, WrittenSidecar, MIN_INTERVAL};
use goodput_record::transport::endpoint::Endpoint;
use goodput_record::transport::tls::{client_config, Trust};

use crate::cli::flags::usage;
use crate::cli::record::args::RecordArgs;

/// The most metrics endpoints one run scrapes.
pub const MAX_ENDPOINTS: usize = 8;

/// The scrape plan, or `None` without `--metrics`. The endpoints: each
/// `--metrics URL`, each `--metrics-url URL`, and for a bare `--metrics`
/// (unless `--metrics-url` names the endpoint, the older form) `/metrics`
/// on the server's origin (scheme, host and port of `server`); the same
/// endpoint twice is read once. An `https://` endpoint uses the run's TLS
/// settings (`--cacert`, `--insecure`) when the server is `https://` too,
/// else the system's roots; the run's headers and API key go only to the
/// server's own origin.
pub fn metrics_plan(
    args: &RecordArgs,
    server: &Uri,
    endpoint: &Endpoint,
) -> Result<Option<MetricsPlan>, Error> {
    if args.metrics.is_empty() {
        return Ok(None);
    }
    if args.metrics_interval < MIN_INTERVAL {
        return Err(usage(format!(
            "--metrics-interval must be at least {} ms",
            MIN_INTERVAL.as_millis()
        )));
    }
    let mut uris: Vec<Uri> = Vec::new();
    let bare_means_default = args.metrics_url.is_empty();
    for given in args.metrics.iter().chain(&args.metrics_url) {
        let uri = match given.as_str() {
            "" if bare_means_default => default_uri(server)?,
            "" => continue,
            url => parse_url(url)?,
        };
        if !uris.contains(&uri) {
            uris.push(uri);
        }
    }
    if uris.len() > MAX_ENDPOINTS {
        return Err(usage(format!(
            "at most {MAX_ENDPOINTS} metrics endpoints (--metrics) per run; {} given",
            uris.len()
        )));
    }
    let endpoints = uris
        .into_iter()
        .map(|uri| metrics_endpoint(uri, server, endpoint))
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(Some(MetricsPlan {
        endpoints,
        interval: args.metrics_interval,
    }))
}

/// A metrics URL from the command line: `http://` or `https://` with a host.
fn parse_url(url: &str) -> Result<Uri, Error> {
    let uri: Uri = url
        .parse()
        .map_err(|e| usage(format!("--metrics `{url}` is not a URL ({e})")))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
        return Err(usage(format!(
            "--metrics `{url}` must be an http:// or https:// URL with a host"
        )));
    }
    Ok(uri)
}

/// `/metrics` on the server's origin.
fn default_uri(server: &Uri) -> Result<Uri, Error> {
    let authority = server
        .authority()
        .ok_or_else(|| usage("--url has no host to scrape /metrics from"))?;
    Uri::builder()
        .scheme(server.scheme_str().unwrap_or("http"))
        .authority(authority.as_str())
        .path_and_query("/metrics")
        .build()
        .map_err(|e| usage(format!("cannot form the metrics URL: {e}")))
}

/// How to reach `uri`: TLS settings, and whether the run's credentials go.
fn metrics_endpoint(uri: Uri, server: &Uri, endpoint: &Endpoint) -> Result<MetricsEndpoint, Error> {
    let same_origin =
        uri.scheme_str() == server.scheme_str() && uri.authority() == server.authority();
    let tls = match (uri.scheme_str(), &endpoint.tls) {
        (Some("https"), Some(config)) if server.scheme_str() == Some("https") => {
            Some(config.clone())
        }
        (Some("https"), _) => {
            Some(client_config(&Trust::SystemRoots).map_err(|e| usage(format!("--metrics: {e}")))?)
        }
        _ => None,
    };
    Ok(MetricsEndpoint {
        uri,
        tls,
        credentials: same_origin,
    })
}

/// The metrics URL as the trace records it: scheme, host, port and path
/// only. User info (`user:pass@`) and the query may carry credentials, and
/// nothing secret is ever written (the same rule as header values).
pub fn public_url(uri: &Uri) -> String {
    let host = uri.host().unwrap_or_default();
    let port = uri.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
    format!(
        "{}://{host}{port}{}",
        uri.scheme_str().unwrap_or("http"),
        uri.path()
    )
}

/// Records the sidecar the run wrote beside the trace in `workload`: file
/// name, sha256 (of the file's bytes, computed as its lines were written),
/// snapshots and gaps.
pub fn record_sidecar(written: &WrittenSidecar, workload: &mut Labels) {
    let name = written
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut put = |k: &str, v: Scalar| {
        workload.insert(k.to_owned(), v);
    };
    put("metricsFile", Scalar::String(name));
    put("metricsSha256", Scalar::String(written.sha256.clone()));
    put(
        "metricsSnapshots",
        Scalar::Number(written.peaks.snapshots as f64),
    );
    put("metricsGaps", Scalar::Number(written.peaks.gaps as f64));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_metrics_url_drops_user_info_and_query() {
        let uri: Uri = "https://scraper:s3cret@vllm.internal:8443/metrics?token=abc"
            .parse()
            .unwrap();
        assert_eq!(public_url(&uri), "https://vllm.internal:8443/metrics");
        let plain: Uri = "http://127.0.0.1:8000/metrics".parse().unwrap();
        assert_eq!(public_url(&plain), "http://127.0.0.1:8000/metrics");
    }
}
