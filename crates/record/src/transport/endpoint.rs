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

use hyper::header::{HeaderName, HeaderValue};

use crate::transport::client::{HyperTransport, TransportError};
use crate::workload::body::Api;

/// The header Anthropic Messages reads the API key from.
pub const X_API_KEY: &str = "x-api-key";
/// The header naming the Messages API version.
pub const ANTHROPIC_VERSION_HEADER: &str = "anthropic-version";
/// The Messages API version the recorder speaks (its events, docs/recorder.md "APIs").
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
use crate::transport::error_text::Secrets;
use crate::transport::headers::{self, ExtraHeader, HeaderError};
use crate::transport::secret_forms;
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
    /// `--url` has user info (sent as Basic auth) and another credential.
    #[error(
        "--url has user info (sent as HTTP Basic auth) and {other} gives a credential too: give one of them"
    )]
    UserinfoConflict {
        /// The other credential's flag.
        other: &'static str,
    },
    /// The user info would not fit in an `Authorization` header.
    #[error("the user info of --url holds characters not allowed in a header (not shown)")]
    BadUserinfo,
    /// The API key would not fit in an `x-api-key` header.
    #[error("the API key contains characters not allowed in a header")]
    BadApiKey,
}

/// The `user:password` of a `--url`, percent-decoded. `Debug` shows neither.
#[derive(Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// The user.
    pub user: String,
    /// The password (empty when none was given).
    pub password: String,
}

impl std::fmt::Debug for UserInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UserInfo(<redacted>)")
    }
}

impl UserInfo {
    /// `user:password`, as HTTP Basic encodes it.
    pub fn credentials(&self) -> String {
        format!("{}:{}", self.user, self.password)
    }
}

/// Splits the user info (`user:password@`) off `uri`: the URI without it,
/// and the user info percent-decoded (`None` when there is none). Hyper
/// never sends user info, so it is taken off here and sent as Basic auth.
pub fn split_userinfo(uri: &Uri) -> (Uri, Option<UserInfo>) {
    let Some(authority) = uri.authority() else {
        return (uri.clone(), None);
    };
    let Some((info, host)) = authority.as_str().rsplit_once('@') else {
        return (uri.clone(), None);
    };
    let (user, password) = info.split_once(':').unwrap_or((info, ""));
    let decode = |t: &str| secret_forms::percent_decode(t, false).unwrap_or_else(|| t.to_owned());
    let info = UserInfo {
        user: decode(user),
        password: decode(password),
    };
    let mut parts = uri.clone().into_parts();
    parts.authority = host.parse().ok();
    let stripped = Uri::from_parts(parts).unwrap_or_else(|_| uri.clone());
    (stripped, Some(info))
}

/// `uri` as every message prints it: scheme, host, port and path, and `?…`
/// for a query, whose values may be credentials (user info is never shown:
/// [`split_userinfo`] takes it off before anything prints a URL).
pub fn public_url(uri: &Uri) -> String {
    let host = uri.host().unwrap_or_default();
    let port = uri.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
    let query = if uri.query().is_some() { "?…" } else { "" };
    format!(
        "{}://{host}{port}{}{query}",
        uri.scheme_str().unwrap_or("http"),
        uri.path()
    )
}

/// A `--url` as a message may quote it, before it is known to parse: the
/// text without user info (`…@` after the scheme) and without a query
/// (`?…`), so a malformed URL's credentials never reach a message either.
pub fn public_url_text(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let rest = match rest[..authority_end].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    match rest.split_once('?') {
        Some((before, _)) => format!("{scheme}{before}?…"),
        None => format!("{scheme}{rest}"),
    }
}

/// The values of `uri`'s query, raw and percent-decoded (`+` as a space):
/// any may be a credential (`?key=…`, `?sig=…`), so all are secrets.
pub fn query_values(uri: &Uri) -> Vec<String> {
    let Some(query) = uri.query() else {
        return Vec::new();
    };
    let mut values = Vec::new();
    for pair in query.split('&') {
        let value = pair.split_once('=').map_or(pair, |(_, v)| v);
        values.push(value.to_owned());
        if let Some(decoded) = secret_forms::percent_decode(value, true) {
            values.push(decoded);
        }
    }
    values
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
    /// The user info of `--url` ([`split_userinfo`]), sent as Basic auth.
    pub userinfo: Option<UserInfo>,
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
        let mut headers = headers::resolve(&flags.header, &flags.header_env, env)?;
        let overrides_key = headers
            .iter()
            .any(|h| h.name == hyper::header::AUTHORIZATION);
        let api_key = api_key.filter(|k| !k.is_empty() && !overrides_key);
        if let Some(info) = &flags.userinfo {
            headers.push(userinfo_header(info, overrides_key, api_key.is_some())?);
        }
        let userinfo = flags
            .userinfo
            .iter()
            .flat_map(|i| secret_forms::pieces_of_credentials(&i.credentials()));
        let secrets = Secrets::of_credentials(
            headers.iter().map(|h| h.secret.as_str()),
            api_key
                .clone()
                .into_iter()
                .chain(userinfo)
                .chain(query_values(uri)),
        );
        Ok(Endpoint {
            tls,
            trust,
            headers,
            api_key,
            secrets,
        })
    }

    /// Fits the connection to `api`. Anthropic Messages takes its key in
    /// `x-api-key`, not `Authorization: Bearer`: the same key (from the
    /// same variable, never shown) moves there unless an `x-api-key`
    /// `--header` is given, and `anthropic-version:` [`ANTHROPIC_VERSION`]
    /// goes with every request unless one is given. Every other API keeps
    /// the Bearer key.
    pub fn for_api(mut self, api: Api) -> Result<Endpoint, EndpointError> {
        if api != Api::Messages {
            return Ok(self);
        }
        let given = |headers: &[ExtraHeader], name: &str| headers.iter().any(|h| h.name == name);
        if let Some(key) = self.api_key.take() {
            if !given(&self.headers, X_API_KEY) {
                let mut value =
                    HeaderValue::from_str(&key).map_err(|_| EndpointError::BadApiKey)?;
                value.set_sensitive(true);
                self.headers.push(ExtraHeader {
                    name: HeaderName::from_static(X_API_KEY),
                    value,
                    secret: key,
                });
            }
        }
        if !given(&self.headers, ANTHROPIC_VERSION_HEADER) {
            self.headers.push(ExtraHeader {
                name: HeaderName::from_static(ANTHROPIC_VERSION_HEADER),
                value: HeaderValue::from_static(ANTHROPIC_VERSION),
                secret: ANTHROPIC_VERSION.to_owned(),
            });
        }
        Ok(self)
    }

    /// A transport to `uri` with these settings (`uri` keeps its query: it
    /// goes with every request).
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

/// `Authorization: Basic base64(user:password)` for the user info of
/// `--url`; refused beside an `Authorization` header or an API key, since
/// only one credential can be sent.
fn userinfo_header(
    info: &UserInfo,
    authorization_header: bool,
    api_key: bool,
) -> Result<ExtraHeader, EndpointError> {
    if authorization_header {
        return Err(EndpointError::UserinfoConflict {
            other: "an Authorization --header",
        });
    }
    if api_key {
        return Err(EndpointError::UserinfoConflict {
            other: "the API key (--api-key-env)",
        });
    }
    let secret = format!(
        "Basic {}",
        secret_forms::base64_encode(info.credentials().as_bytes())
    );
    let mut value =
        hyper::header::HeaderValue::from_str(&secret).map_err(|_| EndpointError::BadUserinfo)?;
    value.set_sensitive(true);
    Ok(ExtraHeader {
        name: hyper::header::AUTHORIZATION,
        value,
        secret,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_moves_the_key_to_x_api_key_and_names_the_version() {
        let uri: Uri = "http://h/v1/messages".parse().unwrap();
        let plain = |h: &[&str]| {
            Endpoint::from_flags(&uri, &flags(h, false), Some("sk-1".into()), |_| None).unwrap()
        };
        let e = plain(&[]).for_api(Api::Messages).unwrap();
        assert_eq!(e.api_key, None, "no Bearer");
        let pairs: Vec<(&str, &str)> = e
            .headers
            .iter()
            .map(|h| (h.name.as_str(), h.value.to_str().unwrap()))
            .collect();
        assert_eq!(
            pairs,
            [("x-api-key", "sk-1"), ("anthropic-version", "2023-06-01")]
        );
        assert!(e.headers[0].value.is_sensitive());
        assert!(format!("{e:?}").find("sk-1").is_none());
        // A given version wins; chat keeps the Bearer key untouched.
        let e = plain(&["anthropic-version: 2024-01-01"])
            .for_api(Api::Messages)
            .unwrap();
        let names: Vec<&str> = e.headers.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["anthropic-version", "x-api-key"]);
        let e = plain(&[]).for_api(Api::Chat).unwrap();
        assert_eq!((e.api_key.as_deref(), e.headers.len()), (Some("sk-1"), 0));
    }

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

    fn alice() -> Option<UserInfo> {
        Some(UserInfo {
            user: "alice".into(),
            password: "PASSWD1".into(),
        })
    }

    #[test]
    fn user_info_is_sent_as_basic_auth_and_its_parts_are_secrets() {
        let uri: Uri = "http://h/gen?key=QSECRET&api-version=2024%2F06"
            .parse()
            .unwrap();
        let flags = EndpointFlags {
            userinfo: alice(),
            ..EndpointFlags::default()
        };
        let e = Endpoint::from_flags(&uri, &flags, None, |_| None).unwrap();
        // base64("alice:PASSWD1") = "YWxpY2U6UEFTU1dEMQ==".
        assert_eq!(e.headers.len(), 1);
        assert_eq!(e.headers[0].name, hyper::header::AUTHORIZATION);
        assert_eq!(
            e.headers[0].value.to_str().unwrap(),
            "Basic YWxpY2U6UEFTU1dEMQ=="
        );
        assert!(e.headers[0].value.is_sensitive());
        for echo in [
            "PASSWD1",
            "alice:PASSWD1",
            "alice",
            "YWxpY2U6UEFTU1dEMQ",
            "QSECRET",
            "2024%2F06",
            r"2024\/06",
        ] {
            assert!(e.secrets.occur_in(echo), "{echo}");
        }
        let mut w = Labels::new();
        e.describe(&mut w);
        assert_eq!(
            w.get("headers"),
            Some(&Scalar::String("authorization".into()))
        );
        assert_eq!(format!("{:?}", alice().unwrap()), "UserInfo(<redacted>)");
    }

    #[test]
    fn user_info_beside_another_credential_is_refused_naming_both() {
        let uri: Uri = "http://h/gen".parse().unwrap();
        let mut flags = flags(&["Authorization: Bearer X1234"], false);
        flags.userinfo = alice();
        let err = Endpoint::from_flags(&uri, &flags, None, |_| None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--url has user info (sent as HTTP Basic auth) and an Authorization --header \
             gives a credential too: give one of them"
        );
        flags.header.clear();
        let err = Endpoint::from_flags(&uri, &flags, Some("sk-key".into()), |_| None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("and the API key (--api-key-env) gives"),
            "{err}"
        );
    }

    #[test]
    fn urls_print_without_user_info_or_query() {
        let uri: Uri = "http://alice:PASSWD1@h:8000/gen?key=QSECRET"
            .parse()
            .unwrap();
        let (stripped, info) = split_userinfo(&uri);
        assert_eq!(stripped.to_string(), "http://h:8000/gen?key=QSECRET");
        assert_eq!(info, alice());
        assert_eq!(public_url(&stripped), "http://h:8000/gen?…");
        assert_eq!(public_url(&"https://h/v1".parse().unwrap()), "https://h/v1");
        assert_eq!(
            public_url_text("http://alice:PASSWD1@h/gen?key=QSECRET"),
            "http://h/gen?…"
        );
        assert_eq!(public_url_text("alice:pw@h?k=v"), "h?…");
        assert_eq!(public_url_text("http://h/a@b"), "http://h/a@b");
    }
}
