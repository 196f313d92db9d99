//! How the recorder reaches the server, decided once before any request:
//! TLS trust for `https://`, the extra headers, the API key, and the list of
//! secrets that must never reach a trace, a label or a message.
//!
//! What the trace learns from here (in `workload`): `tls` (`system-roots`,
//! `cacert` or `insecure`) and `insecure: true` for `https://` URLs, and
//! `headers`, the header *names* sent (`authorization` when the API key is
//! sent). Never a value, never the `--cacert` path.

use std::path::PathBuf;
use std::sync::Arc;

use hyper::Uri;

use goodput_core::trace::{Labels, Scalar};

use crate::transport::client::{HyperTransport, TransportError};
use crate::transport::error_text::Secrets;
use crate::transport::headers::{self, ExtraHeader, HeaderError};
use crate::transport::tls::{self, TlsSetupError, Trust};

/// Why the connection flags cannot be used. Messages never hold a header
/// value or the key.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// `--cacert` and `--insecure` together.
    #[error("give --cacert or --insecure, not both")]
    CacertAndInsecure,
    /// A TLS flag on an `http://` URL.
    #[error("--cacert and --insecure apply only to https:// URLs")]
    TlsOnPlainUrl,
    /// The TLS configuration could not be built.
    #[error("{0}")]
    Tls(#[from] TlsSetupError),
    /// A `--header` or `--header-env` is refused.
    #[error("{0}")]
    Header(#[from] HeaderError),
}

/// The connection settings of a recording. `Debug` never shows the key.
#[derive(Clone)]
pub struct Endpoint {
    /// The TLS client configuration (`https://` only).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// How certificates are checked (`https://` only).
    pub trust: Option<Trust>,
    /// Extra headers, values marked sensitive.
    pub headers: Vec<ExtraHeader>,
    /// The API key, if any.
    pub api_key: Option<String>,
    /// Every header value and the API key, for redaction.
    pub secrets: Secrets,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("tls", &self.tls.is_some())
            .field("trust", &self.trust)
            .field("headers", &self.headers)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("secrets", &self.secrets)
            .finish()
    }
}

/// The connection flags, as given.
#[derive(Debug, Clone, Default)]
pub struct EndpointFlags {
    /// `-H/--header 'Name: value'`.
    pub header: Vec<String>,
    /// `--header-env 'Name: ENVVAR'`.
    pub header_env: Vec<String>,
    /// `--cacert FILE`.
    pub cacert: Option<PathBuf>,
    /// `--insecure`.
    pub insecure: bool,
}

impl Endpoint {
    /// Validates the flags for `uri`, reading variables through `env` and
    /// certificates from disk. Messages never hold a header value or the key.
    pub fn from_flags(
        uri: &Uri,
        flags: &EndpointFlags,
        api_key: Option<String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Endpoint, EndpointError> {
        let https = uri.scheme_str() == Some("https");
        let trust = match (&flags.cacert, flags.insecure) {
            (Some(_), true) => return Err(EndpointError::CacertAndInsecure),
            (Some(path), false) => Trust::CaFile(path.clone()),
            (None, true) => Trust::Insecure,
            (None, false) => Trust::SystemRoots,
        };
        if !https && trust != Trust::SystemRoots {
            return Err(EndpointError::TlsOnPlainUrl);
        }
        let (tls, trust) = if https {
            let config = tls::client_config(&trust)?;
            (Some(config), Some(trust))
        } else {
            (None, None)
        };
        let headers = headers::resolve(&flags.header, &flags.header_env, env)?;
        let overrides_key = headers
            .iter()
            .any(|h| h.name == hyper::header::AUTHORIZATION);
        let api_key = api_key.filter(|k| !k.is_empty() && !overrides_key);
        let secrets = Secrets::new(
            headers
                .iter()
                .map(|h| h.secret.clone())
                .chain(api_key.clone()),
        );
        Ok(Endpoint {
            tls,
            trust,
            headers,
            api_key,
            secrets,
        })
    }

    /// A transport to `uri` with these settings.
    pub fn transport(&self, uri: Uri) -> Result<HyperTransport, TransportError> {
        HyperTransport::with_options(
            uri,
            self.api_key.as_deref(),
            &self.headers,
            self.tls.clone(),
        )
    }

    /// Adds what the trace may know about the connection to `workload`.
    pub fn describe(&self, workload: &mut Labels) {
        if let Some(trust) = &self.trust {
            workload.insert("tls".into(), Scalar::String(trust.as_str().into()));
            if *trust == Trust::Insecure {
                workload.insert("insecure".into(), Scalar::Bool(true));
            }
        }
        let names = headers::names(&self.headers, self.api_key.is_some());
        if !names.is_empty() {
            workload.insert("headers".into(), Scalar::String(names));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(header: &[&str], insecure: bool) -> EndpointFlags {
        EndpointFlags {
            header: header.iter().map(|s| s.to_string()).collect(),
            insecure,
            ..EndpointFlags::default()
        }
    }

    #[test]
    fn the_workload_gets_names_and_the_insecure_flag_never_values() {
        let uri: Uri = "https://h/v1/chat/completions".parse().unwrap();
        let e = Endpoint::from_flags(
            &uri,
            &flags(&["X-Tenant: acme-secret"], true),
            Some("sk-key".into()),
            |_| None,
        )
        .unwrap();
        let mut w = Labels::new();
        e.describe(&mut w);
        let json = serde_json::to_string(&w).unwrap();
        assert_eq!(
            json,
            r#"{"headers":"authorization,x-tenant","insecure":true,"tls":"insecure"}"#
        );
        assert!(e.secrets.occur_in("..acme-secret..") && e.secrets.occur_in("sk-key"));
        let debug = format!("{e:?}");
        assert!(
            !debug.contains("acme-secret") && !debug.contains("sk-key"),
            "{debug}"
        );
    }

    #[test]
    fn an_authorization_header_replaces_the_api_key() {
        let uri: Uri = "http://h/v1/chat/completions".parse().unwrap();
        let e = Endpoint::from_flags(
            &uri,
            &flags(&["Authorization: Token abc"], false),
            Some("sk-key".into()),
            |_| None,
        )
        .unwrap();
        assert_eq!(e.api_key, None);
        assert!(!e.secrets.occur_in("sk-key"));
        let mut w = Labels::new();
        e.describe(&mut w);
        assert_eq!(
            w.get("headers"),
            Some(&Scalar::String("authorization".into()))
        );
        assert_eq!(w.get("tls"), None);
    }

    #[test]
    fn tls_flags_on_a_plain_url_are_refused() {
        let uri: Uri = "http://h/v1".parse().unwrap();
        let err = Endpoint::from_flags(&uri, &flags(&[], true), None, |_| None)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "--cacert and --insecure apply only to https:// URLs");
    }
}
