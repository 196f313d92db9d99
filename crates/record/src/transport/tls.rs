//! `https://` for the recorder: which certificates it trusts, and the
//! connector that puts rustls (ring provider, no OpenSSL, no C toolchain
//! beyond what ring itself builds) between hyper and the TCP socket.
//!
//! Trust, in order of preference:
//! - the system's roots (the default), read by `rustls-native-certs` from
//!   the operating system's store (`/etc/ssl/certs` and friends on Linux;
//!   `SSL_CERT_FILE` / `SSL_CERT_DIR` override it);
//! - `--cacert FILE`: the PEM certificates in FILE, and only those, each
//!   trusted two ways ([`CaFileVerifier`]): as the server's own certificate
//!   (pinned: the certificate the server presents is, byte for byte, one in
//!   FILE — a self-signed server, whatever its CA flag; its name is still
//!   checked, and the handshake signature must be made with its key), or
//!   as a CA that signed the server's certificate (the usual chain check,
//!   dates and name included);
//! - `--insecure`: any certificate is accepted (handshake signatures are
//!   still checked, so the peer holds the key of what it presented). The
//!   trace says so (`workload.insecure: true`).
//!
//! HTTP/1.1 only: no ALPN is offered, so every server speaks HTTP/1.1 to
//! us, and a connection carries one request at a time exactly as over plain
//! http. HTTP/2 multiplexing would change what a connection, a keep-alive
//! retry and a send lag mean, and would make http and https runs of the same
//! server incomparable.
//!
//! A failed handshake is a [`TlsFailure`], split into `tls_certificate`
//! (the server's certificate was not trusted: unknown issuer, expired, wrong
//! name…) and `tls_handshake` (anything else: no common protocol, a plain
//! HTTP server on the port, the connection closed mid-handshake).

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::net::TcpStream;

/// Which server certificates the recorder trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// The operating system's root certificates.
    SystemRoots,
    /// Only the PEM certificates in this file (`--cacert`).
    CaFile(PathBuf),
    /// Any certificate (`--insecure`).
    Insecure,
}

impl Trust {
    /// The name written into `workload.tls`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Trust::SystemRoots => "system-roots",
            Trust::CaFile(_) => "cacert",
            Trust::Insecure => "insecure",
        }
    }
}

/// Why a TLS client configuration could not be built (before any request).
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// `--cacert` could not be read or holds no usable certificate.
    #[error("--cacert {path}: {message}")]
    CaFile {
        /// The path as given.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The system store holds no certificate rustls can use.
    #[error("no usable root certificate in the system store; give --cacert FILE (or --insecure)")]
    NoSystemRoots,
    /// rustls refused the configuration (should not happen with ring).
    #[error("cannot set up TLS: {0}")]
    Config(String),
}

/// Why a TLS handshake failed; the row reason is [`TlsFailure::reason`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsFailure {
    /// The server's certificate was not trusted.
    #[error("TLS certificate not trusted: {0}")]
    Certificate(String),
    /// The handshake failed for another reason.
    #[error("TLS handshake failed: {0}")]
    Handshake(String),
}

impl TlsFailure {
    /// The trace `reason`: `tls_certificate` or `tls_handshake`.
    pub fn reason(&self) -> &'static str {
        match self {
            TlsFailure::Certificate(_) => "tls_certificate",
            TlsFailure::Handshake(_) => "tls_handshake",
        }
    }

    /// Classifies the error tokio-rustls returns from a handshake.
    pub fn from_io(e: &io::Error) -> TlsFailure {
        match e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            // Our own verifier's words ([`CaFileVerifier`]), as it wrote them.
            Some(rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other))) => {
                TlsFailure::Certificate(other.0.to_string())
            }
            Some(
                tls @ (rustls::Error::InvalidCertificate(_)
                | rustls::Error::NoCertificatesPresented
                | rustls::Error::UnsupportedNameType),
            ) => TlsFailure::Certificate(tls.to_string()),
            Some(tls) => TlsFailure::Handshake(tls.to_string()),
            None => TlsFailure::Handshake(e.to_string()),
        }
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls client configuration for `trust` (reads `--cacert` or the
/// system store once, before any request).
pub fn client_config(trust: &Trust) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsSetupError::Config(e.to_string()))?;
    let config = match trust {
        Trust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth(),
        Trust::SystemRoots => builder
            .with_root_certificates(system_roots()?)
            .with_no_client_auth(),
        Trust::CaFile(path) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(CaFileVerifier::new(path, provider)?))
            .with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

fn system_roots() -> Result<RootCertStore, TlsSetupError> {
    // Unreadable individual entries of the store are skipped, as curl does.
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(TlsSetupError::NoSystemRoots);
    }
    Ok(roots)
}

/// The certificates in a PEM file: every `CERTIFICATE` block, each of
/// which must parse; at least one.
pub fn ca_file_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let err = |message: String| TlsSetupError::CaFile {
        path: path.display().to_string(),
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| err(format!("cannot read it ({e})")))?;
    let mut certs = Vec::new();
    for (i, cert) in CertificateDer::pem_slice_iter(&bytes).enumerate() {
        certs.push(cert.map_err(|e| err(format!("certificate {}: not PEM ({e})", i + 1)))?);
    }
    if certs.is_empty() {
        return Err(err(
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    Ok(certs)
}

/// Why a chain check failed, when the failure is that no CA in the file
/// signed the certificate (unknown issuer, a bad signature, or the
/// certificate is itself a CA presented as the server's: webpki's
/// `CaUsedAsEndEntity`); `None` for any other failure (dates, name…).
fn not_signed_by_a_ca(e: &rustls::Error) -> Option<String> {
    use rustls::CertificateError as C;
    match e {
        rustls::Error::InvalidCertificate(c @ (C::UnknownIssuer | C::BadSignature)) => {
            Some(format!("{c:?}"))
        }
        rustls::Error::InvalidCertificate(C::Other(other))
            if other.0.to_string().contains("CaUsedAsEndEntity") =>
        {
            Some(other.0.to_string())
        }
        _ => None,
    }
}

/// `--cacert FILE`: the presented certificate is trusted when it is one of
/// FILE's (pinned, byte for byte DER; its name is checked, not its dates or
/// CA flag: the pin is the trust) or when a CA in FILE signed it (rustls'
/// own chain check). Either way the handshake signature must verify with
/// the presented certificate's key. A refusal says which case failed and
/// what to pass instead.
#[derive(Debug)]
pub struct CaFileVerifier {
    /// FILE as given, for messages.
    file: String,
    /// Every certificate in FILE, DER.
    pinned: Vec<CertificateDer<'static>>,
    /// The chain check over FILE's certificates that can be trust anchors
    /// (`None`: none can).
    chain: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl CaFileVerifier {
    /// Reads FILE ([`ca_file_certificates`]); a certificate that cannot be a
    /// trust anchor is still pinned.
    pub fn new(path: &Path, provider: Arc<CryptoProvider>) -> Result<Self, TlsSetupError> {
        let pinned = ca_file_certificates(path)?;
        let mut roots = RootCertStore::empty();
        let _ = roots.add_parsable_certificates(pinned.iter().cloned());
        let chain = if roots.is_empty() {
            None
        } else {
            let built = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots),
                provider.clone(),
            )
            .build()
            .map_err(|e| TlsSetupError::Config(e.to_string()))?;
            Some(built)
        };
        Ok(CaFileVerifier {
            file: path.display().to_string(),
            pinned,
            chain,
            provider,
        })
    }

    /// A refusal in our own words (shown as they are: [`TlsFailure::from_io`]).
    fn refuse(message: String) -> rustls::Error {
        #[derive(Debug)]
        struct Words(String);
        impl std::fmt::Display for Words {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl std::error::Error for Words {}
        rustls::Error::InvalidCertificate(rustls::CertificateError::Other(rustls::OtherError(
            Arc::new(Words(message)),
        )))
    }

    /// The pinned case: the presented certificate is one of FILE's; only its
    /// name is left to check.
    fn verify_pinned(
        &self,
        end_entity: &CertificateDer<'_>,
        server_name: &ServerName<'_>,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_name(&parsed, server_name).map_err(|e| {
            Self::refuse(format!(
                "the server's certificate is the one in {} but not for the name it was \
                 reached by ({e}): reach it by a name the certificate holds",
                self.file
            ))
        })?;
        Ok(ServerCertVerified::assertion())
    }
}

impl ServerCertVerifier for CaFileVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self
            .pinned
            .iter()
            .any(|p| p.as_ref() == end_entity.as_ref())
        {
            return self.verify_pinned(end_entity, server_name);
        }
        let not_signed = |why: String| {
            Self::refuse(format!(
                "the server's certificate is not in {} and not signed by a CA in it ({why}): \
                 pass the server's own certificate or the CA that signed it",
                self.file
            ))
        };
        let Some(chain) = &self.chain else {
            return Err(not_signed("no certificate in it can be a CA".into()));
        };
        chain
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .map_err(|e| match not_signed_by_a_ca(&e) {
                Some(why) => not_signed(why),
                None => Self::refuse(format!(
                    "the server's certificate is signed by a CA in {} but not valid: {e}",
                    self.file
                )),
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// `--insecure`: any certificate chain and name, but the handshake signature
/// must still be made with the key of the presented certificate.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A connection: plain TCP for `http://`, TLS over TCP for `https://`.
#[derive(Debug)]
pub enum Stream {
    /// Plain TCP.
    Plain(TokioIo<TcpStream>),
    /// TLS over TCP.
    Tls(Box<TokioIo<tokio_rustls::client::TlsStream<TcpStream>>>),
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        match self {
            Stream::Plain(s) => s.connected(),
            // The TCP socket's facts (addresses, for the keep-alive race).
            Stream::Tls(s) => s.inner().get_ref().0.connected(),
        }
    }
}

impl Read for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl Write for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }
}

/// hyper's connector: TCP through [`HttpConnector`], then a TLS handshake
/// when the URI is `https://`. A handshake failure is a boxed
/// [`TlsFailure`], so the client can tell it from a TCP failure.
#[derive(Clone, Debug)]
pub struct Connector {
    http: HttpConnector,
    tls: Option<Arc<ClientConfig>>,
}

impl Connector {
    /// A connector; `tls` is needed only for `https://` URIs.
    pub fn new(tls: Option<Arc<ClientConfig>>) -> Connector {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.enforce_http(false);
        Connector { http, tls }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a URI's host cannot be a TLS server name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{host}` is not a TLS server name ({reason})")]
pub struct ServerNameError {
    /// The host (brackets of an IPv6 literal removed).
    pub host: String,
    /// What rustls said.
    pub reason: String,
}

/// The TLS server name of a URI's host (brackets of an IPv6 literal removed).
pub fn server_name(uri: &Uri) -> Result<ServerName<'static>, ServerNameError> {
    let host = uri.host().unwrap_or_default();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    ServerName::try_from(host.to_owned()).map_err(|e| ServerNameError {
        host: host.to_owned(),
        reason: e.to_string(),
    })
}

impl tower_service::Service<Uri> for Connector {
    type Response = Stream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        tower_service::Service::<Uri>::poll_ready(&mut self.http, cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let https = uri.scheme_str() == Some("https");
        let tls = match (https, &self.tls) {
            (false, _) => None,
            (true, Some(tls)) => Some((tls.clone(), server_name(&uri))),
            (true, None) => {
                return Box::pin(async {
                    Err(
                        TlsFailure::Handshake("no TLS configuration for an https URL".into())
                            .into(),
                    )
                })
            }
        };
        let tcp = tower_service::Service::<Uri>::call(&mut self.http, uri);
        Box::pin(async move {
            let tcp = tcp.await?;
            let Some((tls, name)) = tls else {
                return Ok(Stream::Plain(tcp));
            };
            let name = name.map_err(|e| TlsFailure::Handshake(e.to_string()))?;
            let tls = tokio_rustls::TlsConnector::from(tls);
            match tls.connect(name, tcp.into_inner()).await {
                Ok(stream) => Ok(Stream::Tls(Box::new(TokioIo::new(stream)))),
                Err(e) => Err(TlsFailure::from_io(&e).into()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_errors_are_told_from_other_handshake_errors() {
        let expired = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::Expired),
        );
        assert_eq!(TlsFailure::from_io(&expired).reason(), "tls_certificate");
        let unknown = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        assert_eq!(TlsFailure::from_io(&unknown).reason(), "tls_certificate");
        let garbage = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
        );
        assert_eq!(TlsFailure::from_io(&garbage).reason(), "tls_handshake");
        let eof = io::Error::new(io::ErrorKind::UnexpectedEof, "tls handshake eof");
        assert_eq!(TlsFailure::from_io(&eof).reason(), "tls_handshake");
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let err = ca_file_certificates(&path).unwrap_err().to_string();
        assert!(err.starts_with("--cacert "), "{err}");
        assert!(
            err.contains("ca.pem") && err.contains("no PEM certificate"),
            "{err}"
        );
        let missing = ca_file_certificates(&dir.path().join("missing.pem")).unwrap_err();
        assert!(missing.to_string().contains("cannot read it"), "{missing}");
    }

    #[test]
    fn ipv6_hosts_lose_their_brackets_for_the_server_name() {
        let uri: Uri = "https://[::1]:8443/v1".parse().unwrap();
        assert_eq!(
            server_name(&uri).unwrap(),
            ServerName::IpAddress(std::net::Ipv6Addr::LOCALHOST.into())
        );
        let uri: Uri = "https://api.example.com/v1".parse().unwrap();
        assert_eq!(server_name(&uri).unwrap().to_str(), "api.example.com");
    }
}
