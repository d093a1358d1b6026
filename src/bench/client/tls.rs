//! TLS for `https://` endpoints (rustls with the ring provider): the system's roots and the
//! webpki roots, a private CA from `--ca-cert`, or no verification at all with `--insecure`
//! (self-signed test servers; the run records it).
//!
//! A server whose certificate is itself in `--ca-cert` (a self-signed certificate made with
//! `openssl req -x509`, often CA:TRUE) is accepted as `curl --cacert` accepts it: that exact
//! certificate, its host name and its validity dates checked. Path validation alone refuses
//! it (`CaUsedAsEndEntity`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_rustls::TlsConnector;

pub use crate::format::TlsVerification;

/// How the server's certificate is checked.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// PEM file of a private CA, trusted besides the usual roots.
    pub ca_cert: Option<PathBuf>,
    /// Accept any certificate.
    pub insecure: bool,
}

impl TlsOptions {
    /// What the run records about the certificate check of an https endpoint.
    pub fn verification(&self) -> TlsVerification {
        match (self.insecure, &self.ca_cert) {
            (true, _) => TlsVerification::NotVerified,
            (false, Some(_)) => TlsVerification::PrivateCa,
            (false, None) => TlsVerification::PublicRoots,
        }
    }

    pub fn connector(&self) -> Result<TlsConnector> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .context("setting up TLS")?;
        let check = if self.insecure {
            CertCheck::AcceptAny
        } else {
            let pinned = match &self.ca_cert {
                Some(path) => ca_certificates(path)?,
                None => Vec::new(),
            };
            let roots = WebPkiServerVerifier::builder_with_provider(Arc::new(self.roots()?), provider.clone())
                .build()
                .context("setting up TLS")?;
            CertCheck::RootsOrPinned { roots, pinned }
        };
        let verifier = Arc::new(Verifier { check, provider });
        let mut config = builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth();
        // The client speaks HTTP/1.1 only.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsConnector::from(Arc::new(config)))
    }

    fn roots(&self) -> Result<RootCertStore> {
        let mut roots = RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        // The system's roots where it has them (a corporate CA installed there, say); a
        // machine without any still has the webpki roots.
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        if let Some(path) = &self.ca_cert {
            for cert in ca_certificates(path)? {
                roots
                    .add(cert)
                    .with_context(|| format!("--ca-cert {}: a certificate is not a usable CA", path.display()))?;
            }
        }
        Ok(roots)
    }
}

/// The most a `--ca-cert` file may hold (a bundle of every public root is about 250 KB).
const MAX_CA_FILE_BYTES: u64 = 4 << 20;

/// Every certificate of a PEM file; an error names the file. Read as data files are: a
/// regular file of bounded size (a FIFO would block forever, `/dev/zero` never ends).
fn ca_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let bytes = crate::fsutil::read_regular_file(path, MAX_CA_FILE_BYTES)
        .with_context(|| format!("--ca-cert {}: cannot read it", path.display()))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .with_context(|| format!("--ca-cert {}: not a PEM certificate file", path.display()))?;
    if certs.is_empty() {
        bail!("--ca-cert {}: no certificate in it (expected PEM, -----BEGIN CERTIFICATE-----)", path.display());
    }
    Ok(certs)
}

/// The name the certificate must carry: a DNS name or an IP address (`[::1]` without its
/// brackets).
pub fn server_name(host: &str) -> Result<ServerName<'static>> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string())
        .with_context(|| format!("{host:?} is not a host name a certificate can carry"))
}

/// How the server's certificate is checked: the usual path validation, except for a
/// certificate listed in `--ca-cert` itself; or (`--insecure`) not at all. Signatures are
/// checked either way, so the connection is encrypted to whoever answered.
#[derive(Debug)]
struct Verifier {
    check: CertCheck,
    provider: Arc<CryptoProvider>,
}

#[derive(Debug)]
enum CertCheck {
    RootsOrPinned { roots: Arc<WebPkiServerVerifier>, pinned: Vec<CertificateDer<'static>> },
    AcceptAny,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match &self.check {
            CertCheck::AcceptAny => Ok(ServerCertVerified::assertion()),
            CertCheck::RootsOrPinned { pinned, .. } if pinned.iter().any(|c| c.as_ref() == end_entity.as_ref()) => {
                check_pinned(end_entity, server_name, now)
            }
            CertCheck::RootsOrPinned { roots, .. } => {
                roots.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// A certificate the user listed: trusted as it is, if it names this host and is valid now.
/// (The handshake's signature, checked separately, proves the server holds its key.)
fn check_pinned(
    cert: &CertificateDer<'_>,
    name: &ServerName<'_>,
    now: UnixTime,
) -> Result<ServerCertVerified, rustls::Error> {
    use rustls::CertificateError;
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).map_err(|_| CertificateError::BadEncoding)?;
    let validity = parsed.validity();
    let now = now.as_secs() as i64;
    if now < validity.not_before.timestamp() {
        return Err(CertificateError::NotValidYet.into());
    }
    if now > validity.not_after.timestamp() {
        return Err(CertificateError::Expired.into());
    }
    let ee = webpki::EndEntityCert::try_from(cert).map_err(|_| CertificateError::BadEncoding)?;
    ee.verify_is_valid_for_subject_name(name).map_err(|_| CertificateError::NotValidForName)?;
    Ok(ServerCertVerified::assertion())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verification_follows_the_flags() {
        assert_eq!(TlsOptions::default().verification(), TlsVerification::PublicRoots);
        let ca = TlsOptions { ca_cert: Some("ca.pem".into()), insecure: false };
        assert_eq!(ca.verification(), TlsVerification::PrivateCa);
        assert_eq!(TlsOptions { insecure: true, ..ca }.verification(), TlsVerification::NotVerified);
        assert!(server_name("[::1]").is_ok());
        assert!(server_name("gpu-box.internal").is_ok());
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let e = TlsOptions { ca_cert: Some(path.clone()), insecure: false }.connector().err().unwrap();
        assert!(format!("{e:#}").contains("no certificate in it"), "{e:#}");
        let e =
            TlsOptions { ca_cert: Some(dir.path().join("missing.pem")), insecure: false }.connector().err().unwrap();
        assert!(format!("{e:#}").contains("missing.pem: cannot read it"), "{e:#}");
    }

    #[test]
    fn a_ca_file_that_is_no_regular_file_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("ca.fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for path in [fifo, "/dev/zero".into(), dir.path().to_path_buf()] {
            let e = TlsOptions { ca_cert: Some(path.clone()), insecure: false }.connector().err().unwrap();
            assert!(format!("{e:#}").contains("cannot read it"), "{}: {e:#}", path.display());
        }
        let big = dir.path().join("big.pem");
        std::fs::write(&big, vec![b'A'; (MAX_CA_FILE_BYTES + 1) as usize]).unwrap();
        let e = TlsOptions { ca_cert: Some(big), insecure: false }.connector().err().unwrap();
        assert!(format!("{e:#}").contains("more than"), "{e:#}");
    }
}
