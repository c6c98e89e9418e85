//! Certificates: a small CA and a serving certificate it signs.
//!
//! The simulator, the proxy (`serve --tls-dir`) and `stalemate certs` all need the same
//! thing: a CA a client can trust (`certificate-authority-data` in a kubeconfig, `ca.crt` in
//! a pod's service-account volume) and a serving certificate whose SANs cover the address
//! the client dials. client-go's in-cluster config dials `https://$KUBERNETES_SERVICE_HOST`,
//! so an IP SAN for 127.0.0.1 is required, not just `localhost` (docs/PROTOCOL.md §F).

use std::net::IpAddr;
use std::path::Path;

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// PEM-encoded CA and serving certificate with their keys.
#[derive(Clone)]
pub struct CertBundle {
    pub ca_cert_pem: String,
    pub ca_key_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for CertBundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Keys never reach logs.
        f.debug_struct("CertBundle").finish_non_exhaustive()
    }
}

/// The names every generated serving certificate carries, whatever else is asked for.
pub const DEFAULT_SANS: &[&str] = &["127.0.0.1", "::1", "localhost"];

/// File names inside a `--tls-dir` / `certs --out` directory.
pub const CA_CERT_FILE: &str = "ca.crt";
pub const CA_KEY_FILE: &str = "ca.key";
pub const CERT_FILE: &str = "tls.crt";
pub const KEY_FILE: &str = "tls.key";

/// Generate a fresh CA (`CN=<name>-ca`) and a serving certificate (`CN=<name>`) for
/// [`DEFAULT_SANS`] plus `extra_sans` (IP addresses become IP SANs, anything else DNS SANs).
pub fn generate(name: &str, extra_sans: &[String]) -> Result<CertBundle> {
    let now = time::OffsetDateTime::now_utc();
    let validity = |p: &mut CertificateParams, years: i64| {
        p.not_before = now - time::Duration::hours(1);
        p.not_after = now + time::Duration::days(365 * years);
    };

    let ca_key = KeyPair::generate().context("generating the CA key")?;
    let mut ca = CertificateParams::default();
    ca.distinguished_name
        .push(DnType::CommonName, format!("{name}-ca"));
    ca.distinguished_name
        .push(DnType::OrganizationName, "stalemate");
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut ca, 10);
    let ca_cert = ca.self_signed(&ca_key).context("self-signing the CA")?;

    let key = KeyPair::generate().context("generating the serving key")?;
    let mut leaf = CertificateParams::default();
    leaf.distinguished_name.push(DnType::CommonName, name);
    leaf.distinguished_name
        .push(DnType::OrganizationName, "stalemate");
    leaf.is_ca = IsCa::ExplicitNoCa;
    leaf.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.use_authority_key_identifier_extension = true;
    let mut names: Vec<String> = DEFAULT_SANS.iter().map(|s| s.to_string()).collect();
    for s in extra_sans {
        if !names.contains(s) {
            names.push(s.clone());
        }
    }
    for n in &names {
        leaf.subject_alt_names.push(match n.parse::<IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(
                n.clone()
                    .try_into()
                    .with_context(|| format!("{n:?} is neither an IP address nor a DNS name"))?,
            ),
        });
    }
    validity(&mut leaf, 5);
    let issuer = Issuer::new(ca, ca_key);
    let cert = leaf
        .signed_by(&key, &issuer)
        .context("signing the serving certificate")?;

    Ok(CertBundle {
        ca_cert_pem: ca_cert.pem(),
        ca_key_pem: issuer.key().serialize_pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// A client certificate signed by `ca`'s CA, for a kubeconfig's `client-certificate-data`
/// and `client-key-data`: `CN=<user>`, `O=<group>` — how kube-apiserver's x509
/// authenticator reads a user (`--client-ca-file`; kind and kubeadm write admin
/// kubeconfigs this way). One group at most: rcgen keeps one value per attribute type.
/// Returns (certificate PEM, key PEM).
pub fn client_cert(ca: &CertBundle, user: &str, group: Option<&str>) -> Result<(String, String)> {
    let ca_key = KeyPair::from_pem(&ca.ca_key_pem).context("reading the CA key")?;
    let issuer =
        Issuer::from_ca_cert_pem(&ca.ca_cert_pem, ca_key).context("reading the CA certificate")?;
    let now = time::OffsetDateTime::now_utc();
    let key = KeyPair::generate().context("generating the client key")?;
    let mut p = CertificateParams::default();
    p.distinguished_name.push(DnType::CommonName, user);
    if let Some(g) = group {
        p.distinguished_name.push(DnType::OrganizationName, g);
    }
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    p.use_authority_key_identifier_extension = true;
    p.not_before = now - time::Duration::hours(1);
    p.not_after = now + time::Duration::days(365);
    let cert = p
        .signed_by(&key, &issuer)
        .context("signing the client certificate")?;
    Ok((cert.pem(), key.serialize_pem()))
}

impl CertBundle {
    /// Write the four PEM files into `dir` (created if missing; keys mode 0600).
    pub fn write_to(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (file, pem, secret) in [
            (CA_CERT_FILE, &self.ca_cert_pem, false),
            (CA_KEY_FILE, &self.ca_key_pem, true),
            (CERT_FILE, &self.cert_pem, false),
            (KEY_FILE, &self.key_pem, true),
        ] {
            let path = dir.join(file);
            write_file(&path, pem.as_bytes(), secret)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }
}

/// Write a file; secrets are created with mode 0600 so other users cannot read them.
pub fn write_file(path: &Path, data: &[u8], secret: bool) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let _ = secret;
    opts.open(path)?.write_all(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::pem::PemObject;

    #[test]
    fn serving_cert_verifies_against_its_ca_for_every_default_name() {
        let b = generate(
            "stalemate-test",
            &["proxy.example".into(), "10.1.2.3".into()],
        )
        .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        let ca =
            rustls::pki_types::CertificateDer::from_pem_slice(b.ca_cert_pem.as_bytes()).unwrap();
        roots.add(ca).unwrap();
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            provider,
        )
        .build()
        .unwrap();
        let leaf =
            rustls::pki_types::CertificateDer::from_pem_slice(b.cert_pem.as_bytes()).unwrap();
        for name in ["127.0.0.1", "::1", "localhost", "proxy.example", "10.1.2.3"] {
            let sn = rustls::pki_types::ServerName::try_from(name).unwrap();
            verifier
                .verify_server_cert(&leaf, &[], &sn, &[], rustls::pki_types::UnixTime::now())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let sn = rustls::pki_types::ServerName::try_from("other.example").unwrap();
        assert!(
            verifier
                .verify_server_cert(&leaf, &[], &sn, &[], rustls::pki_types::UnixTime::now())
                .is_err()
        );
    }
}
