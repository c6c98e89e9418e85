//! The demo controller's workqueue metrics, under client-go's names, so that a run reads
//! it as it reads a Go controller (`--idle-url`, `session/idle.rs`): served on
//! `--metrics-bind-address` like controller-runtime's, only when asked.
//!
//! kube-rs has no workqueue to export: its scheduler starts a reconcile as soon as an
//! object changes (nothing waits behind a busy worker), so what is waiting is what is
//! running. The names keep client-go's meaning:
//! - `workqueue_depth`: 0 — an item is running (unfinished) or not queued at all;
//! - `workqueue_unfinished_work_seconds`: seconds the running reconciles have taken;
//! - `workqueue_adds_total`: reconciles started — each item taken into work, a retry
//!   when its back-off ends included;
//! - `workqueue_retries_total`: reconciles that failed and were scheduled again by the
//!   error policy (client-go's `AddRateLimited`). A requeue after the interval is not one,
//!   as `RequeueAfter` is not on client-go's queue.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One controller's queue, as its metrics show it.
pub struct Queue {
    name: &'static str,
    adds: AtomicU64,
    retries: AtomicU64,
    next: AtomicU64,
    running: Mutex<HashMap<u64, Instant>>,
}

/// A reconcile at work; done when dropped.
pub struct Work<'a> {
    queue: &'a Queue,
    id: u64,
}

impl Drop for Work<'_> {
    fn drop(&mut self) {
        self.queue.lock().remove(&self.id);
    }
}

impl Queue {
    pub fn new(name: &'static str) -> Queue {
        Queue {
            name,
            adds: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            next: AtomicU64::new(0),
            running: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Instant>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A reconcile starts.
    pub fn start(&self) -> Work<'_> {
        self.adds.fetch_add(1, Relaxed);
        let id = self.next.fetch_add(1, Relaxed);
        self.lock().insert(id, Instant::now());
        Work { queue: self, id }
    }

    /// A reconcile failed and is scheduled again.
    pub fn retry(&self) {
        self.retries.fetch_add(1, Relaxed);
    }

    /// Prometheus text.
    pub fn render(&self) -> String {
        // Folded from 0.0: an empty f64 `sum()` is -0.0, which prints as "-0".
        let unfinished = self
            .lock()
            .values()
            .fold(0.0, |sum, t| sum + t.elapsed().as_secs_f64());
        let n = self.name;
        format!(
            "# TYPE workqueue_depth gauge\nworkqueue_depth{{name=\"{n}\"}} 0\n\
             # TYPE workqueue_unfinished_work_seconds gauge\nworkqueue_unfinished_work_seconds{{name=\"{n}\"}} {unfinished}\n\
             # TYPE workqueue_adds_total counter\nworkqueue_adds_total{{name=\"{n}\"}} {}\n\
             # TYPE workqueue_retries_total counter\nworkqueue_retries_total{{name=\"{n}\"}} {}\n",
            self.adds.load(Relaxed),
            self.retries.load(Relaxed),
        )
    }
}

/// Serve `queue`'s metrics on `addr` (any path) until the future is dropped.
pub async fn serve(addr: SocketAddr, queue: Arc<Queue>) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let queue = queue.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |_req| {
                let body = queue.render();
                async move {
                    http::Response::builder()
                        .header(http::header::CONTENT_TYPE, "text/plain; version=0.0.4")
                        .body(http_body_util::Full::new(bytes::Bytes::from(body)))
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, svc)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_reconcile_is_unfinished_work_and_a_failure_a_retry() {
        let q = Queue::new("gitrepository");
        let w = q.start();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let busy = q.render();
        assert!(busy.contains("workqueue_adds_total{name=\"gitrepository\"} 1\n"));
        assert!(!busy.contains("workqueue_unfinished_work_seconds{name=\"gitrepository\"} 0\n"));
        drop(w);
        q.retry();
        let idle = q.render();
        assert!(idle.contains("workqueue_unfinished_work_seconds{name=\"gitrepository\"} 0\n"));
        assert!(idle.contains("workqueue_retries_total{name=\"gitrepository\"} 1\n"));
    }
}
