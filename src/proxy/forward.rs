//! Forwarding a request to the upstream: its URI joined to the upstream's, headers
//! cleaned, watches over the HTTP/2 watch pool and everything else over this serving
//! thread's pool, connection upgrades (exec, attach, port-forward) spliced after 101.
//! Failures become the `Status` a Kubernetes client understands.

use http::{Request, Response};

use super::call::Call;
use super::headers::{is_upgrade, sanitize_request_headers};
use super::shared::Proxy;
use super::status_response::status_response;
use crate::k8s::status::ApiError;
use crate::listen::Body;
use crate::upstream::{WatchSlot, error};

/// The upstream's answer to `req`, with the watch's place on its connection; or the
/// response to give the client when the upstream could not be reached.
pub async fn forward(
    proxy: &Proxy,
    call: &Call,
    mut req: Request<Body>,
) -> Result<(Response<Body>, Option<WatchSlot>), Response<Body>> {
    let l = &call.labels;
    let upgrade = is_upgrade(req.headers());
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    let (mut parts, body) = req.into_parts();
    let uri = proxy.upstream.uri_for_request(&parts.uri).map_err(|e| {
        status_response(&ApiError::bad_request(format!(
            "cannot forward {:?}: {e}",
            parts.uri
        )))
    })?;
    sanitize_request_headers(&mut parts.headers, upgrade);
    parts.uri = uri;
    // The upstream connection's HTTP version is the client library's business.
    parts.version = http::Version::HTTP_11;
    let up_req = Request::from_parts(parts, body);

    let (sending, slot) = if l.watch && !upgrade {
        let (f, slot) = proxy.upstream.send_watch(up_req);
        (f, Some(slot))
    } else {
        (proxy.upstream.send(up_req, upgrade), None)
    };
    let mut resp = match tokio::time::timeout(proxy.header_timeout, sending).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            let err = error::to_api_error(&proxy.upstream.base.to_string(), &*e);
            tracing::warn!(verb = l.verb, resource = %l.resource, code = err.code, error = %err.message, "upstream request failed");
            return Err(status_response(&err));
        }
        Err(_) => {
            return Err(status_response(&ApiError::new(
                504,
                "Timeout",
                format!(
                    "stalemate: the upstream apiserver {} sent no response headers within {:?}",
                    proxy.upstream.base, proxy.header_timeout
                ),
            )));
        }
    };
    if resp.status() == http::StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_up) = client_upgrade
    {
        // exec / attach / port-forward: after 101, bytes flow both ways untouched.
        let upstream_up = hyper::upgrade::on(&mut resp);
        tokio::spawn(async move {
            match tokio::try_join!(client_up, upstream_up) {
                Ok((c, u)) => {
                    let mut c = hyper_util::rt::TokioIo::new(c);
                    let mut u = hyper_util::rt::TokioIo::new(u);
                    if let Err(e) = tokio::io::copy_bidirectional(&mut c, &mut u).await {
                        tracing::debug!(error = %e, "upgraded connection ended");
                    }
                }
                Err(e) => tracing::debug!(error = %e, "connection upgrade failed"),
            }
        });
    }
    Ok((resp, slot))
}
