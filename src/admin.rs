//! The admin listener (plain HTTP, loopback by default): `/metrics`, `/healthz`,
//! `/readyz`, and the control API — `GET /v1/status`, `GET|POST /v1/windows`,
//! `DELETE /v1/windows/{name}` (ends it now: held events are released).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

use crate::listen::Body;
use crate::listen::body::full;
use crate::metrics::Metrics;
use crate::upstream::Upstream;

pub struct Admin {
    pub metrics: Arc<Metrics>,
    pub upstream: Upstream,
    pub engine: Arc<crate::schedule::engine::Engine>,
}

fn json(code: StatusCode, v: &serde_json::Value) -> Response<Body> {
    text(code, v.to_string(), "application/json")
}

fn text(code: StatusCode, body: impl Into<Bytes>, content_type: &'static str) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = code;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    r
}

async fn handle(admin: Arc<Admin>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_string();
    match (req.method(), path.as_str()) {
        (&http::Method::GET, "/v1/status" | "/v1/windows") => {
            json(StatusCode::OK, &admin.engine.describe())
        }
        (&http::Method::POST, "/v1/windows") => {
            use http_body_util::BodyExt;
            let body = match http_body_util::Limited::new(req.into_body(), 1 << 20)
                .collect()
                .await
            {
                Ok(b) => b.to_bytes(),
                Err(e) => {
                    return json(
                        StatusCode::BAD_REQUEST,
                        &serde_json::json!({"error": format!("reading the body: {e}")}),
                    );
                }
            };
            let text_body = String::from_utf8_lossy(&body);
            match crate::schedule::Window::parse(&text_body) {
                Err(e) => json(
                    StatusCode::BAD_REQUEST,
                    &serde_json::json!({"error": e.to_string()}),
                ),
                Ok(w) => {
                    let name = w.name.clone();
                    match admin.engine.open(w) {
                        Ok(()) => json(StatusCode::CREATED, &serde_json::json!({"opened": name})),
                        Err(e) => json(
                            StatusCode::UNPROCESSABLE_ENTITY,
                            &serde_json::json!({"error": e}),
                        ),
                    }
                }
            }
        }
        (&http::Method::DELETE, p) if p.starts_with("/v1/windows/") => {
            let name = &p["/v1/windows/".len()..];
            if admin.engine.close(name) {
                json(StatusCode::OK, &serde_json::json!({"closed": name}))
            } else {
                json(
                    StatusCode::NOT_FOUND,
                    &serde_json::json!({"error": format!("no open window named {name:?}")}),
                )
            }
        }
        (&http::Method::GET, "/metrics") => text(
            StatusCode::OK,
            admin.metrics.render(),
            "text/plain; version=0.0.4",
        ),
        (&http::Method::GET, "/healthz" | "/livez") => text(StatusCode::OK, "ok", "text/plain"),
        (&http::Method::GET, "/readyz") => match admin.upstream.probe(Duration::from_secs(3)).await
        {
            Ok(code) if code < 500 => text(StatusCode::OK, "ok", "text/plain"),
            Ok(code) => text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("upstream answered {code}\n"),
                "text/plain",
            ),
            Err(e) => text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("upstream unreachable: {e}\n"),
                "text/plain",
            ),
        },
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: try /metrics, /healthz or /readyz\n",
            "text/plain",
        ),
    }
}

/// Serve the admin endpoints until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    admin: Arc<Admin>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        let (tcp, _) = tokio::select! {
            _ = &mut shutdown => return,
            a = listener.accept() => match a {
                Ok(x) => x,
                Err(_) => { tokio::time::sleep(Duration::from_millis(50)).await; continue; }
            },
        };
        let admin = admin.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let a = admin.clone();
                async move { Ok::<_, Infallible>(handle(a, req).await) }
            });
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}
