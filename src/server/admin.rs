//! The admin listener (plain HTTP, loopback by default): `/metrics`, `/healthz`,
//! `/readyz`, and the control API — `GET /v1/status`, `GET|POST /v1/windows`,
//! `DELETE /v1/windows/{name}` (ends it now: held events are released), `GET
//! /v1/clients`. With `--admin-token`, the control API wants `Authorization: Bearer
//! TOKEN`; metrics and health stay open for scrapers and probes.

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
use crate::proxy::metrics::Metrics;
use crate::upstream::Upstream;

pub struct Admin {
    pub metrics: Arc<Metrics>,
    pub upstream: Upstream,
    pub gates: Arc<crate::proxy::gated::Gates>,
    /// The schedule's clients (`GET /v1/clients` lists them).
    pub clients: Arc<crate::proxy::identity::Clients>,
    pub token: Option<String>,
    pub oracles: Arc<crate::oracle::Oracles>,
}

/// Constant-time comparison, so the token cannot be guessed byte by byte from timing.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn authorized(admin: &Admin, h: &http::HeaderMap) -> bool {
    let Some(want) = &admin.token else {
        return true;
    };
    h.get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .is_some_and(|(scheme, tok)| {
            scheme.eq_ignore_ascii_case("bearer") && same(tok.trim().as_bytes(), want.as_bytes())
        })
}

/// Sum a metric family's values by the given labels.
fn sum_by(
    families: &[prometheus::proto::MetricFamily],
    name: &str,
    labels: &[&str],
) -> std::collections::BTreeMap<Vec<String>, f64> {
    let mut out = std::collections::BTreeMap::new();
    for f in families.iter().filter(|f| f.name() == name) {
        for m in f.get_metric() {
            let key: Vec<String> = labels
                .iter()
                .map(|l| {
                    m.get_label()
                        .iter()
                        .find(|p| p.name() == *l)
                        .map(|p| p.value().to_string())
                        .unwrap_or_default()
                })
                .collect();
            let v = match f.get_field_type() {
                prometheus::proto::MetricType::GAUGE => m.get_gauge().get_value(),
                _ => m.get_counter().get_value(),
            };
            *out.entry(key).or_insert(0.0) += v;
        }
    }
    out
}

fn status(admin: &Admin) -> serde_json::Value {
    let fam = admin.metrics.registry.gather();
    let streams: Vec<serde_json::Value> =
        sum_by(&fam, "stalemate_watch_streams", &["client", "resource"])
            .into_iter()
            .filter(|(_, n)| *n > 0.0)
            .map(
                |(k, n)| serde_json::json!({"client": k[0], "resource": k[1], "streams": n as i64}),
            )
            .collect();
    let held_events = sum_by(&fam, "stalemate_held_events", &[])
        .values()
        .sum::<f64>() as i64;
    let held_bytes = sum_by(&fam, "stalemate_held_bytes", &[])
        .values()
        .sum::<f64>() as i64;
    let mut v = admin.gates.engine.describe();
    v["streams"] = serde_json::json!(streams);
    v["held"] = serde_json::json!({"events": held_events, "bytes": held_bytes, "budgetUsedBytes": admin.gates.budget.used()});
    v["views"] = serde_json::json!({"bytes": admin.gates.views.bytes(), "maxBytes": admin.gates.views.max_bytes()});
    v
}

fn clients(admin: &Admin) -> serde_json::Value {
    let fam = admin.metrics.registry.gather();
    let requests = sum_by(&fam, "stalemate_requests_total", &["client"]);
    let streams = sum_by(&fam, "stalemate_watch_streams", &["client"]);
    let mut names: Vec<String> = admin.clients.names();
    names.push("other".into());
    let list: Vec<serde_json::Value> = names
        .into_iter()
        .map(|n| {
            let k = vec![n.clone()];
            serde_json::json!({
                "name": n,
                "match": admin.clients.matcher(&n),
                "requests": requests.get(&k).copied().unwrap_or(0.0) as u64,
                "watchStreams": streams.get(&k).copied().unwrap_or(0.0) as i64,
            })
        })
        .collect();
    serde_json::json!({"clients": list})
}

fn refresh_lag(admin: &Admin) {
    for (c, r, lag) in admin.gates.views.lag(tokio::time::Instant::now()) {
        admin.metrics.view_lag.with_label_values(&[&c, &r]).set(lag);
    }
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
    if path.starts_with("/v1/") && !authorized(&admin, req.headers()) {
        return json(
            StatusCode::UNAUTHORIZED,
            &serde_json::json!({"error": "the control API wants Authorization: Bearer <--admin-token>"}),
        );
    }
    match (req.method(), path.as_str()) {
        (&http::Method::GET, "/v1/status") => json(StatusCode::OK, &status(&admin)),
        (&http::Method::GET, "/v1/windows") => json(StatusCode::OK, &admin.gates.engine.describe()),
        (&http::Method::GET, "/v1/clients") => json(StatusCode::OK, &clients(&admin)),
        (&http::Method::GET, "/v1/report") => {
            let r = crate::report::Report::now(&admin.oracles, std::time::SystemTime::now());
            json(
                StatusCode::OK,
                &serde_json::to_value(&r).unwrap_or(serde_json::Value::Null),
            )
        }
        (&http::Method::POST, "/v1/windows") => open_window(&admin, req).await,
        (&http::Method::DELETE, p) if p.starts_with("/v1/windows/") => {
            match percent_decoded(&p["/v1/windows/".len()..]) {
                Some(name) => close_window(&admin, &name),
                None => json(
                    StatusCode::BAD_REQUEST,
                    &serde_json::json!({"error": "the window name in the path is not percent-encoded UTF-8"}),
                ),
            }
        }
        (&http::Method::GET, "/metrics") => metrics(&admin).await,
        (&http::Method::GET, "/healthz" | "/livez") => text(StatusCode::OK, "ok", "text/plain"),
        (&http::Method::GET, "/readyz") => readyz(&admin).await,
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: try /metrics, /healthz, /readyz, /v1/status, /v1/windows, /v1/clients or /v1/report\n",
            "text/plain",
        ),
    }
}

/// `POST /v1/windows`: a window from the body, opened now or armed for its trigger.
async fn open_window(admin: &Admin, req: Request<Incoming>) -> Response<Body> {
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
            match admin.gates.engine.submit(w) {
                Ok("opened") => json(StatusCode::CREATED, &serde_json::json!({"opened": name})),
                Ok(_) => json(StatusCode::ACCEPTED, &serde_json::json!({"armed": name})),
                Err(e) => json(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    &serde_json::json!({"error": e}),
                ),
            }
        }
    }
}

/// A path segment percent-decoded (`two%20words` → `two words`, as `stalemate ctl close`
/// sends a name); `None` when an escape is broken or the bytes are not UTF-8.
fn percent_decoded(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `DELETE /v1/windows/NAME`: the window closed or disarmed, or 404 when it is neither.
fn close_window(admin: &Admin, name: &str) -> Response<Body> {
    // Ends an open window (held events are released) and cancels an armed one,
    // so a window with a trigger can be taken back before it fires.
    let closed = admin.gates.engine.close(name);
    let disarmed = admin.gates.engine.disarm(name);
    if closed || disarmed {
        json(
            StatusCode::OK,
            &serde_json::json!({"window": name, "closed": closed, "disarmed": disarmed}),
        )
    } else {
        json(
            StatusCode::NOT_FOUND,
            &serde_json::json!({"error": format!("no open or armed window named {name:?}")}),
        )
    }
}

/// `GET /metrics`: the gauges brought up to date, then the exposition.
async fn metrics(admin: &Admin) -> Response<Body> {
    refresh_lag(admin);
    let up = matches!(admin.upstream.probe(Duration::from_secs(2)).await, Ok(c) if c < 500);
    admin.metrics.upstream_up.set(i64::from(up));
    // Sets stalemate_oracle_violations.
    let _ = admin.oracles.update_gauge(std::time::SystemTime::now());
    text(
        StatusCode::OK,
        admin.metrics.render(),
        "text/plain; version=0.0.4",
    )
}

/// `GET /readyz`: ready while the upstream answers below 500.
async fn readyz(admin: &Admin) -> Response<Body> {
    match admin.upstream.probe(Duration::from_secs(3)).await {
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

#[cfg(test)]
mod tests {
    #[test]
    fn window_names_in_paths_are_percent_decoded() {
        use super::percent_decoded as d;
        assert_eq!(d("f1").as_deref(), Some("f1"));
        assert_eq!(d("two%20words").as_deref(), Some("two words"));
        assert_eq!(d("a%2Bb%25").as_deref(), Some("a+b%"));
        assert_eq!(d("caf%C3%A9").as_deref(), Some("café"));
        assert_eq!(d("bad%2"), None);
        assert_eq!(d("bad%zz"), None);
        assert_eq!(d("%FF"), None);
    }
}
