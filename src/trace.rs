//! `--trace FILE`: one JSON object per line for every request, every watch event's fate
//! and every window opening and closing — what a controller author reads to see exactly
//! what their controller was shown, and when.
//!
//! Records carry names, never contents: no object bodies (so no Secret data), no headers
//! (so no tokens). Writing never blocks the proxy: records go through a bounded channel
//! to a writer task, and when it is full they are dropped and counted (the count is
//! written as a `dropped` record once there is room again).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

/// One trace line.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Record {
    #[serde(rename_all = "camelCase")]
    Request {
        client: String,
        verb: &'static str,
        resource: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        code: u16,
        latency_ms: f64,
        /// How the proxy answered: `upstream`, `injected` (an `errors` window), `view`
        /// (a resourceVersion=0 read from the client's view), `view-violation`;
        /// `abandoned` (code 499): a write whose client went away before its answer.
        answer: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        window: Option<String>,
        /// For a read answered from a view: the list's (or object's) resourceVersion.
        #[serde(skip_serializing_if = "Option::is_none")]
        resource_version: Option<String>,
        /// Why a window did not apply to it (e.g. a rewind whose record does not reach
        /// back that far).
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        /// A write carrying a resourceVersion or uid precondition: one a real
        /// apiserver can answer 409 Conflict.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        precondition: bool,
    },
    #[serde(rename_all = "camelCase")]
    Event {
        client: String,
        resource: String,
        #[serde(rename = "type")]
        type_: &'static str,
        namespace: String,
        name: String,
        resource_version: String,
        /// delivered | held | released | dropped | injected
        fate: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        delay_ms: Option<f64>,
    },
    #[serde(rename_all = "camelCase")]
    Window {
        window: String,
        /// open | close
        action: &'static str,
        fault: String,
    },
    Dropped {
        records: u64,
    },
    /// A `restart` window killed a controller; it is started again after `downMs`.
    #[serde(rename_all = "camelCase")]
    Restart {
        window: String,
        /// Which (`controller`: the one after `--`; others by their name).
        controller: String,
        down_ms: f64,
        /// The killed process.
        pid: u32,
    },
    /// The controller exited on its own; it is started again after `backoffMs` (absent:
    /// it is not — a crash loop given up on).
    #[serde(rename_all = "camelCase")]
    Exit {
        /// Which controller (`controller`: the one after `--`).
        controller: String,
        status: String,
        ran_ms: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backoff_ms: Option<f64>,
        pid: u32,
    },
    /// An oracle's violation, written when the run ends.
    Verdict {
        violation: crate::oracle::Violation,
    },
    /// An object a client's create made (read from the apiserver's answer).
    Created {
        client: String,
        resource: String,
        namespace: String,
        name: String,
        uid: String,
    },
    /// A rate over its limit only inside windows: reported, not a violation.
    InsideWindow {
        violation: crate::oracle::Violation,
    },
    /// The run's verdict, written last.
    #[serde(rename_all = "camelCase")]
    Judgement {
        verdict: String,
        judged: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        pending: Option<String>,
        violations: usize,
    },
}

#[derive(Serialize)]
struct Line<'a> {
    ts: String,
    #[serde(flatten)]
    record: &'a Record,
}

/// The trace sink; cheap to clone, a no-op when tracing is off.
#[derive(Clone, Default)]
pub struct Trace {
    tx: Option<mpsc::Sender<Record>>,
    dropped: Arc<AtomicU64>,
}

impl Trace {
    /// Tracing off.
    pub fn off() -> Trace {
        Trace::default()
    }

    pub fn enabled(&self) -> bool {
        self.tx.is_some()
    }

    /// Open (truncate) FILE and start the writer task. It ends, having written and
    /// flushed everything recorded so far, when [`TraceWriter::finish`] is called or
    /// every `Trace` clone is dropped.
    pub async fn to_file(path: &Path) -> std::io::Result<(Trace, TraceWriter)> {
        let file = tokio::fs::File::create(path).await?;
        let (tx, mut rx) = mpsc::channel::<Record>(64 * 1024);
        let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
        let dropped = Arc::new(AtomicU64::new(0));
        let d = dropped.clone();
        let task = tokio::spawn(async move {
            let mut out = tokio::io::BufWriter::new(file);
            let mut reported = 0u64;
            let mut stopping = false;
            loop {
                let rec = if stopping {
                    match rx.try_recv() {
                        Ok(r) => Some(r),
                        Err(_) => break,
                    }
                } else {
                    tokio::select! {
                        _ = &mut stop_rx => { stopping = true; continue; }
                        r = tokio::time::timeout(Duration::from_millis(200), rx.recv()) => match r {
                            Ok(Some(r)) => Some(r),
                            Ok(None) => break,
                            Err(_) => None,
                        },
                    }
                };
                let lost = d.load(Ordering::Relaxed);
                if lost > reported {
                    write(
                        &mut out,
                        &Record::Dropped {
                            records: lost - reported,
                        },
                    )
                    .await;
                    reported = lost;
                }
                match rec {
                    Some(r) => write(&mut out, &r).await,
                    // Idle: make what was written visible to readers of the file.
                    None => {
                        let _ = out.flush().await;
                    }
                }
            }
            let _ = out.flush().await;
        });
        Ok((
            Trace {
                tx: Some(tx),
                dropped,
            },
            TraceWriter {
                task,
                stop: stop_tx,
            },
        ))
    }

    /// A trace whose records arrive on a channel (in memory) instead of a file.
    pub fn to_channel(capacity: usize) -> (Trace, mpsc::Receiver<Record>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (
            Trace {
                tx: Some(tx),
                dropped: Arc::new(AtomicU64::new(0)),
            },
            rx,
        )
    }

    pub fn record(&self, r: Record) {
        if let Some(tx) = &self.tx
            && tx.try_send(r).is_err()
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A record and when it was recorded (an in-memory trace's line).
#[derive(Debug, Clone)]
pub struct Stamped {
    pub at: std::time::SystemTime,
    pub record: Record,
}

impl Stamped {
    /// The record as a trace file has it: one JSON line (with its newline).
    pub fn line(&self) -> String {
        let ts = humantime::format_rfc3339_millis(self.at).to_string();
        let mut s = serde_json::to_string(&Line {
            ts,
            record: &self.record,
        })
        .unwrap_or_default();
        s.push('\n');
        s
    }
}

/// The collector of an in-memory trace ([`Trace::to_memory`]).
pub struct MemoryTrace {
    task: tokio::task::JoinHandle<Vec<Stamped>>,
    stop: tokio::sync::oneshot::Sender<()>,
}

impl MemoryTrace {
    /// Everything recorded so far, stamped when it arrived; ends the collection.
    pub async fn finish(self) -> Vec<Stamped> {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}

impl Trace {
    /// A trace kept in memory (what `explore` compares runs by), stamped as it arrives.
    /// Like a file trace, it never blocks the proxy: past `capacity` queued records,
    /// records are dropped and counted.
    pub fn to_memory(capacity: usize) -> (Trace, MemoryTrace) {
        let (trace, mut rx) = Trace::to_channel(capacity);
        let dropped = trace.dropped.clone();
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let mut out = Vec::new();
            loop {
                tokio::select! {
                    r = rx.recv() => match r {
                        Some(record) => out.push(Stamped { at: std::time::SystemTime::now(), record }),
                        None => break,
                    },
                    _ = &mut stopped => {
                        while let Ok(record) = rx.try_recv() {
                            out.push(Stamped { at: std::time::SystemTime::now(), record });
                        }
                        break;
                    }
                }
            }
            let lost = dropped.load(Ordering::Relaxed);
            if lost > 0 {
                out.push(Stamped {
                    at: std::time::SystemTime::now(),
                    record: Record::Dropped { records: lost },
                });
            }
            out
        });
        (trace, MemoryTrace { task, stop })
    }
}

/// The writer task of a trace file.
pub struct TraceWriter {
    task: tokio::task::JoinHandle<()>,
    stop: tokio::sync::oneshot::Sender<()>,
}

impl TraceWriter {
    /// Write what is queued, flush, and end.
    pub async fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

async fn write(out: &mut tokio::io::BufWriter<tokio::fs::File>, r: &Record) {
    let ts = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    if let Ok(mut line) = serde_json::to_vec(&Line { ts, record: r }) {
        line.push(b'\n');
        if let Err(e) = out.write_all(&line).await {
            tracing::warn!(error = %e, "--trace: write failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writes_json_lines_and_flushes_on_close() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let (t, writer) = Trace::to_file(&path).await.unwrap();
        t.record(Record::Window {
            window: "w".into(),
            action: "open",
            fault: "freeze".into(),
        });
        t.record(Record::Event {
            client: "c".into(),
            resource: "configmaps".into(),
            type_: "MODIFIED",
            namespace: "a".into(),
            name: "x".into(),
            resource_version: "7".into(),
            fate: "released",
            delay_ms: Some(1500.0),
        });
        // Still held: finish() writes what was queued anyway.
        writer.finish().await;
        drop(t);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["kind"], "window");
        assert_eq!(lines[1]["kind"], "event");
        assert_eq!(lines[1]["fate"], "released");
        assert_eq!(lines[1]["delayMs"], 1500.0);
        assert_eq!(lines[1]["type"], "MODIFIED");
        assert!(lines[1]["ts"].as_str().unwrap().ends_with('Z'));
    }

    #[tokio::test]
    async fn a_memory_trace_keeps_records_stamped_and_writes_them_as_lines() {
        let (t, memory) = Trace::to_memory(16);
        t.record(Record::Window {
            window: "w".into(),
            action: "open",
            fault: "freeze".into(),
        });
        t.record(Record::Dropped { records: 0 });
        let got = memory.finish().await;
        assert_eq!(got.len(), 2);
        let line: serde_json::Value = serde_json::from_str(got[0].line().trim_end()).unwrap();
        assert_eq!(line["kind"], "window");
        assert_eq!(line["window"], "w");
        assert!(line["ts"].as_str().unwrap().ends_with('Z'));
    }
}
