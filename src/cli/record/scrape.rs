//! `record --metrics`: the scrape plan from the flags (endpoint, interval),
//! and the sidecar the recorder streamed beside the trace, with its sha256
//! in the trace's workload. The scraping itself is the library's
//! ([`goodput_core::server_metrics`]).

use hyper::Uri;

use crate::cli::error::Error;
use goodput_core::trace::{Labels, Scalar};
use goodput_record::scrape::{MetricsPlan, WrittenSidecar, MIN_INTERVAL};
use goodput_record::transport::endpoint::Endpoint;
use goodput_record::transport::tls::{client_config, Trust};

use crate::cli::flags::usage;
use crate::cli::record::args::RecordArgs;

/// The scrape plan, or `None` without `--metrics`. The default endpoint is
/// `/metrics` on the server's origin (scheme, host and port of `server`).
/// An `https://` endpoint uses the run's TLS settings (`--cacert`,
/// `--insecure`) when the server is `https://` too, else the system's
/// roots; the run's headers and API key go only to the server's own origin.
pub fn metrics_plan(
    args: &RecordArgs,
    server: &Uri,
    endpoint: &Endpoint,
) -> Result<Option<MetricsPlan>, Error> {
    if !args.metrics {
        return Ok(None);
    }
    if args.metrics_interval < MIN_INTERVAL {
        return Err(usage(format!(
            "--metrics-interval must be at least {} ms",
            MIN_INTERVAL.as_millis()
        )));
    }
    let uri = match &args.metrics_url {
        Some(url) => {
            let uri: Uri = url
                .parse()
                .map_err(|e| usage(format!("--metrics-url `{url}` is not a URL ({e})")))?;
            if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
                return Err(usage(format!(
                    "--metrics-url `{url}` must be an http:// or https:// URL with a host"
                )));
            }
            uri
        }
        None => {
            let authority = server
                .authority()
                .ok_or_else(|| usage("--url has no host to scrape /metrics from"))?;
            Uri::builder()
                .scheme(server.scheme_str().unwrap_or("http"))
                .authority(authority.as_str())
                .path_and_query("/metrics")
                .build()
                .map_err(|e| usage(format!("cannot form the metrics URL: {e}")))?
        }
    };
    let same_origin =
        uri.scheme_str() == server.scheme_str() && uri.authority() == server.authority();
    let tls = match (uri.scheme_str(), &endpoint.tls) {
        (Some("https"), Some(config)) if server.scheme_str() == Some("https") => {
            Some(config.clone())
        }
        (Some("https"), _) => Some(
            client_config(&Trust::SystemRoots).map_err(|e| usage(format!("--metrics-url: {e}")))?,
        ),
        _ => None,
    };
    Ok(Some(MetricsPlan {
        uri,
        interval: args.metrics_interval,
        tls,
        credentials: same_origin,
    }))
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
