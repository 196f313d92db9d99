//! Extra request headers: `-H/--header 'Name: value'` and
//! `--header-env 'Name: ENVVAR'` (the value read from the environment, as
//! `--api-key-env` does for the key).
//!
//! A header value may be a secret (a gateway key, a tenant token). Values
//! therefore never appear in a message, a trace or a `Debug` print: errors
//! name the header, never its value; values are marked sensitive for hyper;
//! the trace records the header *names* only (`workload.headers`); and every
//! value is handed to the redaction of server error text
//! ([`crate::transport::error_text`]).
//!
//! Headers that frame or route the HTTP exchange (`Host`, `Content-Length`,
//! `Transfer-Encoding`, `Connection`, `TE`, `Upgrade`, `Keep-Alive`,
//! `Proxy-Connection`) are refused: sending them by hand would break the
//! connection handling the measurements rely on. An `Authorization` header
//! given here replaces the `Bearer` key from `--api-key-env`.

use hyper::header::{HeaderName, HeaderValue};

/// Header names the recorder will not take from the command line.
pub const REFUSED: [&str; 8] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "keep-alive",
    "proxy-connection",
];

/// One header to send with every request. `Debug` shows the name only.
#[derive(Clone)]
pub struct ExtraHeader {
    /// The name (lower case, as hyper keeps it).
    pub name: HeaderName,
    /// The value, marked sensitive.
    pub value: HeaderValue,
    /// The value as text, for redaction.
    pub secret: String,
}

impl std::fmt::Debug for ExtraHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ExtraHeader({}: <redacted>)", self.name)
    }
}

/// Why a `--header` or `--header-env` cannot be used. Each names the flag
/// and (when it is readable) the header, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// No `:` between the name and the value.
    #[error("{flag}: expected 'Name: value' (no colon found; the value is not shown)")]
    NoColon {
        /// The flag.
        flag: &'static str,
    },
    /// The name is not a valid HTTP header name.
    #[error("{flag}: `{name}` is not a valid header name")]
    BadName {
        /// The flag.
        flag: &'static str,
        /// The name as given.
        name: String,
    },
    /// The header frames or routes the exchange ([`REFUSED`]).
    #[error("{flag}: `{name}` is set by the HTTP client itself and cannot be given")]
    Refused {
        /// The flag.
        flag: &'static str,
        /// The name as given.
        name: String,
    },
    /// The value holds characters a header cannot carry.
    #[error("{flag} `{name}`: the value holds characters not allowed in a header (not shown)")]
    BadValue {
        /// The flag.
        flag: &'static str,
        /// The header's name.
        name: String,
    },
    /// `--header-env` names no variable.
    #[error("--header-env `{name}`: expected 'Name: ENVVAR' (no variable named)")]
    NoVariable {
        /// The header's name.
        name: String,
    },
    /// `--header-env`'s variable is unset or empty.
    #[error("--header-env `{name}`: the environment variable {var} is not set or empty")]
    Unset {
        /// The header's name.
        name: String,
        /// The variable.
        var: String,
    },
}

/// Splits `Name: value` into a checked name and the raw value. The error
/// names the flag and (when it is readable) the header, never the value.
fn split(text: &str, flag: &'static str) -> Result<(HeaderName, String), HeaderError> {
    let Some((name, value)) = text.split_once(':') else {
        return Err(HeaderError::NoColon { flag });
    };
    let name = name.trim();
    let parsed = HeaderName::from_bytes(name.as_bytes()).map_err(|_| HeaderError::BadName {
        flag,
        name: name.to_owned(),
    })?;
    if REFUSED.contains(&parsed.as_str()) {
        return Err(HeaderError::Refused {
            flag,
            name: name.to_owned(),
        });
    }
    Ok((parsed, value.trim().to_owned()))
}

fn header(name: HeaderName, value: String, flag: &'static str) -> Result<ExtraHeader, HeaderError> {
    let mut parsed = HeaderValue::from_str(&value).map_err(|_| HeaderError::BadValue {
        flag,
        name: name.to_string(),
    })?;
    parsed.set_sensitive(true);
    Ok(ExtraHeader {
        name,
        value: parsed,
        secret: value,
    })
}

/// Resolves every `--header` and `--header-env`, in that order, reading
/// variables through `env` (the real environment in `plan`).
pub fn resolve(
    headers: &[String],
    header_env: &[String],
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<ExtraHeader>, HeaderError> {
    let mut out = Vec::with_capacity(headers.len() + header_env.len());
    for text in headers {
        let (name, value) = split(text, "--header")?;
        out.push(header(name, value, "--header")?);
    }
    for text in header_env {
        let (name, var) = split(text, "--header-env")?;
        if var.is_empty() {
            return Err(HeaderError::NoVariable {
                name: name.to_string(),
            });
        }
        let value = env(&var)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| HeaderError::Unset {
                name: name.to_string(),
                var: var.clone(),
            })?;
        out.push(header(name, value, "--header-env")?);
    }
    Ok(out)
}

/// The header names for `workload.headers`: lower case, comma-separated, in
/// the order given (`authorization` first when the API key is sent).
pub fn names(headers: &[ExtraHeader], api_key_sent: bool) -> String {
    let mut names: Vec<&str> = Vec::with_capacity(headers.len() + 1);
    if api_key_sent {
        names.push("authorization");
    }
    names.extend(headers.iter().map(|h| h.name.as_str()));
    names.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(var: &str) -> Option<String> {
        (var == "GATEWAY_KEY").then(|| "s3cret-from-env".to_owned())
    }

    #[test]
    fn headers_and_env_headers_resolve_in_order() {
        let got = resolve(
            &["X-Tenant: team-a".into(), "x-extra:v2 ".into()],
            &["X-Gateway-Key: GATEWAY_KEY".into()],
            env,
        )
        .unwrap();
        let pairs: Vec<(&str, &str)> = got
            .iter()
            .map(|h| (h.name.as_str(), h.secret.as_str()))
            .collect();
        assert_eq!(
            pairs,
            vec![
                ("x-tenant", "team-a"),
                ("x-extra", "v2"),
                ("x-gateway-key", "s3cret-from-env")
            ]
        );
        assert!(got.iter().all(|h| h.value.is_sensitive()));
        assert_eq!(
            names(&got, true),
            "authorization,x-tenant,x-extra,x-gateway-key"
        );
    }

    #[test]
    fn no_error_and_no_debug_print_shows_a_value() {
        let value = "pa\u{7}ss-hidden";
        for (headers, envs) in [
            (vec![format!("X-Key: {value}")], vec![]),
            (vec![format!("X Key: {value}")], vec![]),
            (vec![format!("Host: {value}")], vec![]),
            (vec![format!("no-colon-{value}")], vec![]),
            (vec![], vec!["X-Key: MISSING_VAR".to_owned()]),
        ] {
            let err = resolve(&headers, &envs, env).unwrap_err().to_string();
            assert!(!err.contains("hidden"), "{err}");
        }
        let ok = resolve(&["X-Key: hidden-value".into()], &[], env).unwrap();
        assert_eq!(format!("{ok:?}"), "[ExtraHeader(x-key: <redacted>)]");
    }

    #[test]
    fn framing_headers_and_missing_variables_are_refused_by_name() {
        let err = resolve(&["Content-Length: 5".into()], &[], env)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--header: `Content-Length` is set by the HTTP client itself and cannot be given"
        );
        let err = resolve(&[], &["X-Key: NOPE".into()], env)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--header-env `x-key`: the environment variable NOPE is not set or empty"
        );
    }
}
