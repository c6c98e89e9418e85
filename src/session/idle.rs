//! `--idle-url`: the controller's own word on whether it is idle. client-go's and
//! controller-runtime's workqueues export `workqueue_depth` (items waiting) and
//! `workqueue_unfinished_work_seconds` (work in progress) on the controller's Prometheus
//! endpoint; a run may end quiet only when every queue's depth and unfinished work are
//! 0 — and not while a controller that exported workqueues exports none (restarted, or a
//! standby waiting for its Lease: [`IdleUrl`]). An item waiting on a requeue timer sits in the queue's delay heap, which neither
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

/// `--idle-url` for one run: what the controller's metrics say, and whether they have
/// named a workqueue yet.
///
/// Before they have, from a controller that was never restarted, a URL that cannot be
/// read or names no workqueue is an error (the flag is wrong: a run would otherwise never
/// be quiet). After, or once it was restarted (by a window, or after an exit), it is a
/// controller not running its controllers (yet): a restarted one serves its metrics
/// again only once it is up, and a standby waiting for a leader-election Lease — the one
/// its killed predecessor still holds, until the lease runs out — has no workqueues at
/// all. That is not idle.
pub struct IdleUrl {
    url: String,
    seen: std::sync::atomic::AtomicBool,
}

impl IdleUrl {
    pub fn new(url: String) -> IdleUrl {
        IdleUrl {
            url,
            seen: Default::default(),
        }
    }

    /// Whether every workqueue is empty with no unfinished work; `restarted`: the
    /// controller was started again in this run.
    pub async fn idle(&self, restarted: bool) -> Result<bool> {
        use std::sync::atomic::Ordering::Relaxed;
        match workqueues(&self.url).await {
            Ok(Some(idle)) => {
                self.seen.store(true, Relaxed);
                Ok(idle)
            }
            Ok(None) | Err(_) if restarted || self.seen.load(Relaxed) => Ok(false),
            Ok(None) => bail!(
                "{} exports no workqueue_depth or workqueue_unfinished_work_seconds",
                self.url
            ),
            Err(e) => Err(e),
        }
    }
}

/// GET `url` (plain HTTP) and read its Prometheus text: `Some(true)` when every workqueue
/// is empty and has no unfinished work; `Some(false)` when one is busy; `None` when it
/// names no workqueue at all; an error when it cannot be read.
pub async fn workqueues(url: &str) -> Result<Option<bool>> {
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
            return Ok(Some(false));
        }
    }
    Ok((queues > 0).then_some(true))
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

    /// Serve each of `bodies` to one GET in turn, on loopback; the URL.
    async fn metrics(bodies: Vec<&'static str>) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/metrics", l.local_addr().unwrap());
        tokio::spawn(async move {
            for body in bodies {
                let (mut c, _) = l.accept().await.unwrap();
                let mut buf = [0u8; 1024];
                let _ = c.read(&mut buf).await;
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = c.write_all(resp.as_bytes()).await;
            }
        });
        url
    }

    const IDLE: &str =
        "workqueue_depth{name=\"a\"} 0\nworkqueue_unfinished_work_seconds{name=\"a\"} 0\n";
    const BUSY: &str = "workqueue_depth{name=\"a\"} 2\n";
    const NONE: &str = "# a standby: no controllers\ngo_goroutines 12\n";

    /// No workqueue before any was seen, from a controller never restarted, is a wrong
    /// URL; after, or once restarted, a controller coming back (a standby waiting for its
    /// Lease has none, and a down one serves nothing): busy.
    #[tokio::test]
    async fn no_workqueues_is_an_error_until_some_were_seen_then_not_idle() {
        let u = IdleUrl::new(metrics(vec![NONE, NONE]).await);
        let e = u.idle(false).await.unwrap_err();
        assert!(e.to_string().contains("exports no workqueue_depth"), "{e}");
        assert!(!u.idle(true).await.unwrap(), "restarted: a standby");
        let u = IdleUrl::new(metrics(vec![BUSY, IDLE, NONE, IDLE]).await);
        assert!(!u.idle(false).await.unwrap());
        assert!(u.idle(false).await.unwrap());
        assert!(!u.idle(false).await.unwrap(), "none after some: not idle");
        assert!(u.idle(false).await.unwrap());
        assert!(
            !u.idle(false).await.unwrap(),
            "nothing serving after some: not idle"
        );
        let gone = IdleUrl::new("http://127.0.0.1:1/metrics".into());
        assert!(gone.idle(false).await.is_err());
        assert!(!gone.idle(true).await.unwrap());
    }

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
