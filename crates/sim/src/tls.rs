//! What stands in front of the sim's engine: TLS (`--tls-cert`,
//! `--tls-key`) and a header gate (`--require-header 'Name: value'`), so
//! the recorder's https, header and preflight paths are tested end to end
//! on 127.0.0.1.
//!
//! TLS is rustls with the ring provider, HTTP/1.1 only (no ALPN offered),
//! like the recorder. A handshake that fails just drops that connection.
//!
//! The gate answers 401 to any request without the header at the required
//! value, and its error body **echoes** the values it received for that
//! header and for `Authorization`: a careless gateway does this, and the
//! recorder's tests use it to check that no secret reaches a trace.

use std::path::Path;
use std::sync::Arc;

use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION};
use hyper::HeaderMap;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;

/// Why the sim's TLS or header settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FrontError {
    /// A PEM file could not be read or holds nothing usable.
    #[error("{flag} {path}: {message}")]
    Pem {
        /// `--tls-cert` or `--tls-key`.
        flag: &'static str,
        /// The path as given.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// rustls refused the certificate and key.
    #[error("--tls-cert/--tls-key: {0}")]
    Config(String),
    /// `--require-header` is not `Name: value`.
    #[error("--require-header: {0}")]
    Header(String),
}

/// A header every request must carry, with its exact value.
#[derive(Clone)]
pub struct RequiredHeader {
    /// The name.
    pub name: HeaderName,
    /// The value.
    pub value: HeaderValue,
}

impl std::fmt::Debug for RequiredHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RequiredHeader({}: <redacted>)", self.name)
    }
}

impl RequiredHeader {
    /// Parses `Name: value` (the value is not shown in errors).
    pub fn parse(text: &str) -> Result<RequiredHeader, FrontError> {
        let bad = |m: &str| FrontError::Header(m.to_owned());
        let (name, value) = text
            .split_once(':')
            .ok_or_else(|| bad("expected 'Name: value'"))?;
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| bad("not a valid header name"))?;
        let value = HeaderValue::from_str(value.trim())
            .map_err(|_| bad("the value holds characters not allowed in a header"))?;
        Ok(RequiredHeader { name, value })
    }

    /// `None` when `headers` carry the required value; else the error
    /// message of the 401, echoing what was received.
    pub fn refuse(&self, headers: &HeaderMap) -> Option<String> {
        let got: Vec<&HeaderValue> = headers.get_all(&self.name).iter().collect();
        if got.contains(&&self.value) {
            return None;
        }
        let shown = |v: Option<&HeaderValue>| {
            v.map_or("none".to_owned(), |v| {
                format!("\"{}\"", String::from_utf8_lossy(v.as_bytes()))
            })
        };
        Some(format!(
            "missing or wrong {} header (got {}; authorization {})",
            self.name,
            shown(got.first().copied()),
            shown(headers.get(AUTHORIZATION))
        ))
    }
}

/// The sim's TLS and header settings (none by default).
#[derive(Debug, Clone, Default)]
pub struct Front {
    /// Serve TLS with this configuration.
    pub tls: Option<Arc<ServerConfig>>,
    /// Demand this header.
    pub require_header: Option<RequiredHeader>,
}

/// A rustls server configuration from a PEM certificate chain and key.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, FrontError> {
    let pem = |flag, path: &Path, message: String| FrontError::Pem {
        flag,
        path: path.display().to_string(),
        message,
    };
    let cert_bytes = std::fs::read(cert)
        .map_err(|e| pem("--tls-cert", cert, format!("cannot read it ({e})")))?;
    let chain = CertificateDer::pem_slice_iter(&cert_bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem("--tls-cert", cert, format!("not PEM ({e})")))?;
    if chain.is_empty() {
        return Err(pem("--tls-cert", cert, "holds no PEM certificate".into()));
    }
    let key_bytes =
        std::fs::read(key).map_err(|e| pem("--tls-key", key, format!("cannot read it ({e})")))?;
    let key_der = PrivateKeyDer::from_pem_slice(&key_bytes)
        .map_err(|e| pem("--tls-key", key, format!("no PEM private key ({e})")))?;
    let config =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| FrontError::Config(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key_der)
            .map_err(|e| FrontError::Config(e.to_string()))?;
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_lets_the_exact_value_in_and_echoes_what_it_got() {
        let gate = RequiredHeader::parse("X-Key: right").unwrap();
        let mut headers = HeaderMap::new();
        assert_eq!(
            gate.refuse(&headers).as_deref(),
            Some("missing or wrong x-key header (got none; authorization none)")
        );
        headers.insert("x-key", HeaderValue::from_static("wrong"));
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer k"));
        assert_eq!(
            gate.refuse(&headers).as_deref(),
            Some("missing or wrong x-key header (got \"wrong\"; authorization \"Bearer k\")")
        );
        headers.insert("x-key", HeaderValue::from_static("right"));
        assert_eq!(gate.refuse(&headers), None);
        assert!(RequiredHeader::parse("no colon").is_err());
    }
}
