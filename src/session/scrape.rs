//! One GET of a controller's Prometheus metrics on loopback (`--idle-url`): plain HTTP, as
//! controller-runtime serves them by default, or HTTPS with any certificate, as
//! kube-controller-manager serves them on its secure port with the self-signed one it
//! makes itself (`--authorization-always-allow-paths=/metrics` lets an anonymous GET
//! through). The certificate is not checked — there is nothing to check it against —
//! so HTTPS is read from a loopback address only.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use http_body_util::BodyExt;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

/// GET `url` within `within`; its body as text.
pub async fn get(url: &str, within: Duration) -> Result<String> {
    let uri: http::Uri = url
        .parse()
        .with_context(|| format!("{url:?} is not a URL"))?;
    let tls = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => bail!("only http:// and https:// are read (a controller's metrics on loopback)"),
    };
    let host = uri.host().unwrap_or("127.0.0.1").to_string();
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    if tls && !is_loopback(&host) {
        bail!("https:// is read from a loopback address only (its certificate is not checked)");
    }
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let call = async {
        let stream = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
        if tls {
            let name = ServerName::try_from(host.clone())?;
            let stream = connector()?.connect(name, stream).await?;
            fetch(stream, &host, port, &path).await
        } else {
            fetch(stream, &host, port, &path).await
        }
    };
    let (status, body) = tokio::time::timeout(within, call)
        .await
        .map_err(|_| anyhow::anyhow!("no answer within {within:?}"))??;
    if !status.is_success() {
        bail!("answered {status}");
    }
    Ok(body)
}

async fn fetch<S>(
    stream: S,
    host: &str,
    port: u16,
    path: &str,
) -> Result<(http::StatusCode, String)>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let req = http::Request::get(path)
        .header(http::header::HOST, format!("{host}:{port}"))
        .body(http_body_util::Empty::<bytes::Bytes>::new())?;
    let resp = sender.send_request(req).await?;
    let status = resp.status();
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn connector() -> Result<tokio_rustls::TlsConnector> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// Any certificate, its handshake signatures still checked (a loopback peer's own).
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
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
        dss: &rustls::DigitallySignedStruct,
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
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HTTPS on loopback with a certificate nothing vouches for (kube-controller-manager's
    /// self-signed one) is read; HTTP too; anything else is refused with a reason.
    #[tokio::test]
    async fn metrics_are_read_over_http_and_https_on_loopback() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let certs = crate::k8s::certs::generate("kube-controller-manager", &[]).unwrap();
        let tls = crate::listen::tls::server_config(
            certs.cert_pem.as_bytes(),
            certs.key_pem.as_bytes(),
            "test",
        )
        .unwrap();
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (c, _) = l.accept().await.unwrap();
            let mut c = tokio_rustls::TlsAcceptor::from(tls)
                .accept(c)
                .await
                .unwrap();
            let mut buf = [0u8; 1024];
            let _ = c.read(&mut buf).await;
            let body = "workqueue_depth{name=\"a\"} 0\n";
            let resp = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = c.write_all(resp.as_bytes()).await;
            let _ = c.shutdown().await;
        });
        let url = format!("https://127.0.0.1:{port}/metrics");
        let text = get(&url, Duration::from_secs(5)).await.unwrap();
        assert_eq!(text, "workqueue_depth{name=\"a\"} 0\n");
        let far = get("https://192.0.2.1:443/metrics", Duration::from_secs(1)).await;
        assert!(format!("{:#}", far.unwrap_err()).contains("loopback"));
        let ftp = get("ftp://127.0.0.1/metrics", Duration::from_secs(1)).await;
        assert!(format!("{:#}", ftp.unwrap_err()).contains("only http"));
    }
}
