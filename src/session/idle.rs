//! `--idle-url`: the controller's own word on whether it is idle. client-go's and
//! controller-runtime's workqueues export `workqueue_depth` (items waiting) and
//! `workqueue_unfinished_work_seconds` (work in progress) on the controller's Prometheus
//! endpoint; a run may end quiet only when every queue's depth and unfinished work are
//! 0. An item waiting on a requeue timer sits in the queue's delay heap, which neither
//! counts: the quiet period (at least twice the longest gap between the controller's
//! writes in the reference runs, for explore) is what covers it.
//!
//! The URL may name the run's metrics port as `$STALEMATE_METRICS_PORT` (the session
//! chooses a free one per run and gives it to the controller in its environment), so
//! trials side by side do not share an address.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use http_body_util::BodyExt;

/// The idle URL with the run's metrics port filled in.
pub fn expand(url: &str, metrics_port: u16) -> String {
    url.replace("${STALEMATE_METRICS_PORT}", &metrics_port.to_string())
        .replace("$STALEMATE_METRICS_PORT", &metrics_port.to_string())
}

/// GET `url` (plain HTTP) and read its Prometheus text: `Ok(true)` when every workqueue
/// is empty and has no unfinished work; `Ok(false)` when one is busy; an error when it
/// cannot be read or names no workqueue at all.
pub async fn workqueues_idle(url: &str) -> Result<bool> {
    let text = get(url).await?;
    let mut queues = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, value)) = sample(line) else {
            continue;
        };
        if !matches!(
            name,
            "workqueue_depth" | "workqueue_unfinished_work_seconds"
        ) {
            continue;
        }
        queues += 1;
        if value != 0.0 {
            return Ok(false);
        }
    }
    if queues == 0 {
        bail!("{url} exports no workqueue_depth or workqueue_unfinished_work_seconds");
    }
    Ok(true)
}

/// `name{labels} value` → (name, value).
fn sample(line: &str) -> Option<(&str, f64)> {
    let name_end = line.find(['{', ' '])?;
    let name = &line[..name_end];
    let rest = match line[name_end..].strip_prefix('{') {
        Some(r) => &r[r.find('}')? + 1..],
        None => &line[name_end..],
    };
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some((name, value))
}

async fn get(url: &str) -> Result<String> {
    let uri: http::Uri = url.parse().with_context(|| format!("--idle-url {url:?}"))?;
    if uri.scheme_str() != Some("http") {
        bail!("--idle-url {url}: only http:// is read (a controller's metrics on loopback)");
    }
    let host = uri.host().unwrap_or("127.0.0.1").to_string();
    let port = uri.port_u16().unwrap_or(80);
    let call = async {
        let stream = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        let req = http::Request::get(uri.path_and_query().map_or("/", |p| p.as_str()))
            .header(http::header::HOST, format!("{host}:{port}"))
            .body(http_body_util::Empty::<bytes::Bytes>::new())?;
        let resp = sender.send_request(req).await?;
        let status = resp.status();
        let body = resp.into_body().collect().await?.to_bytes();
        anyhow::Ok((status, body))
    };
    let (status, body) = tokio::time::timeout(Duration::from_secs(2), call)
        .await
        .map_err(|_| anyhow::anyhow!("{url}: no answer within 2s"))?
        .with_context(|| format!("reading {url}"))?;
    if !status.is_success() {
        bail!("{url} answered {status}");
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_read() {
        assert_eq!(
            sample(r#"workqueue_depth{controller="gitrepository",name="gitrepository"} 0"#),
            Some(("workqueue_depth", 0.0))
        );
        assert_eq!(
            sample("workqueue_unfinished_work_seconds 1.5"),
            Some(("workqueue_unfinished_work_seconds", 1.5))
        );
        assert_eq!(sample("# HELP x y"), None);
        assert_eq!(
            expand("http://127.0.0.1:$STALEMATE_METRICS_PORT/metrics", 9000),
            "http://127.0.0.1:9000/metrics"
        );
    }
}
