//! rustls server configuration from PEM files, with the ring provider only.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The crypto provider every TLS config in stalemate uses (ring; no aws-lc build).
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server config for `cert_pem` (leaf first, then any intermediates) and `key_pem`,
/// TLS 1.2 and 1.3, advertising `h2` and `http/1.1` over ALPN. `what` names the source
/// in errors ("--tls-cert", "the generated certificate").
pub fn server_config(
    cert_pem: &[u8],
    key_pem: &[u8],
    what: &str,
) -> Result<Arc<rustls::ServerConfig>> {
    server_config_with_client_ca(cert_pem, key_pem, None, what)
}

/// [`server_config`] that also asks for client certificates signed by `client_ca_pem`,
/// as kube-apiserver's `--client-ca-file` does: a certificate is optional (a client may
/// authenticate with a token instead), but one that does not verify fails the handshake.
pub fn server_config_with_client_ca(
    cert_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: Option<&[u8]>,
    what: &str,
) -> Result<Arc<rustls::ServerConfig>> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .with_context(|| format!("{what}: not a PEM certificate chain"))?;
    if certs.is_empty() {
        bail!("{what}: no certificate found in the PEM data");
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .with_context(|| format!("{what}: no usable private key (PKCS#8, PKCS#1 or SEC1 PEM)"))?;
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .context("TLS protocol versions")?;
    let builder = match client_ca_pem {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(ca) {
                roots
                    .add(c.with_context(|| format!("{what}: the client CA is not PEM"))?)
                    .with_context(|| format!("{what}: the client CA is not usable"))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider(),
            )
            .allow_unauthenticated()
            .build()
            .with_context(|| format!("{what}: the client CA"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut cfg = builder
        .with_single_cert(certs, key)
        .with_context(|| format!("{what}: the key does not match the certificate"))?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}
