//! `--idle-url`: the controller's own word on whether it is idle, and on whether it has
//! settled. client-go's and controller-runtime's workqueues export `workqueue_depth`
//! (items waiting) and `workqueue_unfinished_work_seconds` (work in progress) on the
//! controller's Prometheus endpoint; a run may end quiet only when every queue's depth and
//! unfinished work are 0 — and not while a controller that exported workqueues exports
//! none (restarted, or a standby waiting for its Lease: [`IdleUrl`]).
//!
//! **Settled** is more: idle *and no retry pending*. An item waiting on a rate-limited
//! retry sits in the queue's delay heap, which neither gauge counts — that is why a quiet
//! run whose objects are not right yet waits out the convergence oracle's `settle` (the
//! controller may be backing off). `workqueue_retries_total` counts every rate-limited
//! re-add (a reconcile that failed, or asked to be requeued); `workqueue_adds_total`
//! every item that entered the queue, including a retry when its back-off ends. Sampled
//! through the run ([`IdleUrl::observe`]), each queue keeps a count of retries not yet
//! come back. Between two samples, every retry beyond the items the queue already held
//! at the first (queued, or one at work) needs an add before it — an item fails only
//! after it was added — and the adds beyond those are retries coming back; so the
//! pending count grows by the retries and shrinks by those adds. A single item that
//! failed after it was added stays pending; one at work that failed and came back at
//! once (kube-rs starts it again at once when it changed meanwhile; client-go's first
//! back-off is 5 ms) does not. What the counters cannot tell apart is an item at work
//! that succeeded while another was added and failed — the order of two items' events
//! inside one sample (50 ms) — and an add of one item while another's retry waits: both
//! are taken as settled. A reconcile requeued *after an interval* (`RequeueAfter`: a
//! resync, Flux's `spec.interval`) is no retry on client-go's queue and counts as
//! settled. controller-runtime's priority queue (`pkg/controller/priorityqueue`) counts
//! it as one — source-controller v1.9.3, after one reconcile asking for a requeue and one
//! returning `RequeueAfter: interval`, shows `workqueue_retries_total 2` for ever — so
//! where a controller-runtime controller exports `controller_runtime_reconcile_total`,
//! its queue's retries are its reconciles with `result` `error` or `requeue` (less its
//! terminal errors, which are not retried), not the queue's own count. A controller whose
//! queues export no retries never settles by its metrics.
//!
//! **Held, not glimpsed.** client-go's `workqueue_unfinished_work_seconds` is brought up
//! to date every 500 ms (`updateUnfinishedWorkLoop`), not when a worker takes an item:
//! for up to half a second after a worker starts on it, a queue reads empty with no work
//! in progress — a controller just made leader, its first item at work, looks settled.
//! So a look says idle (or settled) only once the queues have read so for [`HELD`]
//! (two update periods) with no item added meanwhile: work still in progress by then
//! shows, and work started and finished shows in the counters.
//!
//! With no `--idle-url`, the run's metrics port is probed
//! (`http://127.0.0.1:$STALEMATE_METRICS_PORT/metrics`): a controller that serves its
//! workqueues there (`--metrics-bind-address=127.0.0.1:$STALEMATE_METRICS_PORT`) is read
//! as if it had been named; one that does not is judged as without the flag.
//!
//! The URL may name the run's metrics port as `$STALEMATE_METRICS_PORT` (the session
//! chooses a free one per run and gives it to the controller in its environment), so
//! trials side by side do not share an address.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// What `--idle-url none` says: no metrics read, not even the run's port probed.
pub const NONE: &str = "none";

/// How long the queues must read idle, no item added, before a look says so: twice
/// client-go's 500 ms update period of `workqueue_unfinished_work_seconds`.
pub const HELD: Duration = Duration::from_secs(1);

/// The URL probed when `--idle-url` is not given.
pub const PROBED: &str = "http://127.0.0.1:$STALEMATE_METRICS_PORT/metrics";

/// The idle URL with the run's metrics port filled in.
pub fn expand(url: &str, metrics_port: u16) -> String {
    url.replace("${STALEMATE_METRICS_PORT}", &metrics_port.to_string())
        .replace("$STALEMATE_METRICS_PORT", &metrics_port.to_string())
}

/// `--idle-url` for one run: what the controller's metrics say, whether they have named a
/// workqueue yet, and the retries each queue has not seen come back.
///
/// Before they have named one, from a controller that was never restarted, a URL the user
/// gave that cannot be read or names no workqueue is an error (the flag is wrong: a run
/// would otherwise never be quiet); a probed one is no metrics at all. After, or once it
/// was restarted (by a window, or after an exit), it is a controller not running its
/// controllers (yet): a restarted one serves its metrics again only once it is up, and a
/// standby waiting for a leader-election Lease — the one its killed predecessor still
/// holds, until the lease runs out — has no workqueues at all. That is not idle.
pub struct IdleUrl {
    url: String,
    /// Named by the user (`--idle-url`), not probed.
    given: bool,
    /// How long idle must hold ([`HELD`]).
    held: Duration,
    state: Mutex<Seen>,
}

/// What the samples so far have shown.
#[derive(Default)]
struct Seen {
    /// A sample has named a workqueue.
    queues: bool,
    /// Each queue's counters at the last sample.
    last: BTreeMap<String, Counters>,
    /// Each queue's retries not yet come back.
    pending: BTreeMap<String, f64>,
    /// Every queue exports `workqueue_retries_total`.
    retries_exported: bool,
    /// Since when every sample has read idle, and the adds (all queues) then.
    idle_since: Option<(std::time::Instant, f64)>,
    /// The controller's restart the history above is of (None: its first process).
    process: Option<std::time::SystemTime>,
}

/// One queue's counters in one sample.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Counters {
    retries: f64,
    adds: f64,
    /// Items it held: queued (its depth), and one at work if it had unfinished work (at
    /// least one: the count at work is not exported).
    held: f64,
}

/// One look at the controller's workqueues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    /// Every workqueue empty with no unfinished work (true when there are no metrics to
    /// read: a probed port that serves none).
    pub idle: bool,
    /// Idle, and no retry pending: what the controller does next is only what something
    /// outside it asks (or an interval).
    pub settled: bool,
    /// Some workqueue of this process has had an item added: its informers have synced
    /// and handed it work. Before that, empty queues mean not started, not done (a
    /// controller's queues are served before its caches sync and its workers start).
    pub worked: bool,
}

impl IdleUrl {
    /// `url` as named by `--idle-url` (`given`) or probed at the run's port.
    pub fn new(url: String, given: bool) -> IdleUrl {
        IdleUrl {
            url,
            given,
            held: HELD,
            state: Default::default(),
        }
    }

    /// A sample taken while the run goes on, for the retries' history: what cannot be
    /// read now (a controller starting, or restarting) is no error.
    /// What it said, when it could be read and named a workqueue.
    pub async fn observe(&self) -> Option<Look> {
        let Ok(text) = get(&self.url, Duration::from_millis(500)).await else {
            self.lock().idle_since = None;
            return None;
        };
        let look = self.take(&text);
        if look.is_none() {
            self.lock().idle_since = None;
        }
        look
    }

    /// The controller was last restarted `at` (None: never). A new process's history
    /// starts over: its counters start from 0, the retries its predecessor had pending
    /// died with it, and an idle spell that began before the kill says nothing of the
    /// process now — which, a standby waiting for the Lease its predecessor still held,
    /// has only just made its queues and is listing into them. Its counters could even
    /// add up to what the dead one's last did (one item each), so without this the
    /// first look after it won its Lease would read "idle for seconds" and end the run.
    pub fn restarted(&self, at: Option<std::time::SystemTime>) {
        let mut seen = self.lock();
        if seen.process != at {
            seen.process = at;
            seen.last.clear();
            seen.pending.clear();
            seen.idle_since = None;
        }
    }

    /// Whether every workqueue is empty with no unfinished work, and whether no retry is
    /// pending; `restarted`: the controller was started again in this run.
    pub async fn look(&self, restarted: bool) -> Result<Look> {
        let read = get(&self.url, Duration::from_secs(2)).await;
        let sample = read.as_deref().map(|text| self.take(text));
        let seen = self.lock().queues;
        match sample {
            Ok(Some(look)) => Ok(look),
            // A probed port that never served workqueues: no metrics to go by.
            Ok(None) | Err(_) if !self.given && !seen => Ok(Look {
                idle: true,
                settled: false,
                worked: false,
            }),
            Ok(None) | Err(_) if restarted || seen => {
                self.lock().idle_since = None;
                Ok(Look {
                    idle: false,
                    settled: false,
                    worked: false,
                })
            }
            Ok(None) => bail!(
                "{} exports no workqueue_depth or workqueue_unfinished_work_seconds",
                self.url
            ),
            Err(e) => Err(anyhow::anyhow!("{e:#}")),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Read one sample into the history; `None` when it names no workqueue.
    fn take(&self, text: &str) -> Option<Look> {
        self.take_at(text, std::time::Instant::now())
    }

    /// `take` as of `now`: idle and settled only once the queues have read idle for
    /// `held`, no item added since.
    fn take_at(&self, text: &str, now: std::time::Instant) -> Option<Look> {
        let glimpse = self.glimpse(text)?;
        let mut seen = self.lock();
        let adds: f64 = seen.last.values().map(|c| c.adds).sum();
        seen.idle_since = match seen.idle_since {
            Some((since, a)) if glimpse.idle && a == adds => Some((since, a)),
            _ if glimpse.idle => Some((now, adds)),
            _ => None,
        };
        let held = seen
            .idle_since
            .is_some_and(|(since, _)| now.duration_since(since) >= self.held);
        Some(Look {
            idle: glimpse.idle && held,
            settled: glimpse.settled && held,
            worked: glimpse.worked,
        })
    }

    /// What one sample says by itself.
    fn glimpse(&self, text: &str) -> Option<Look> {
        let sample = Sample::read(text)?;
        let mut seen = self.lock();
        seen.queues = true;
        seen.retries_exported = sample.retries_exported;
        for (queue, now) in &sample.counters {
            let before = seen.last.get(queue).copied();
            let pending = seen.pending.entry(queue.clone()).or_default();
            *pending = still_pending(*pending, before, *now);
        }
        seen.last = sample.counters;
        let pending = seen.pending.values().any(|p| *p > 0.0);
        Some(Look {
            idle: !sample.busy,
            settled: !sample.busy && seen.retries_exported && !pending,
            worked: seen.last.values().any(|c| c.adds > 0.0),
        })
    }
}

/// The retries of one queue not yet come back, after a sample (`now`) following `before`
/// (none: the first). Counters that went down belong to a new process: what the old one
/// had pending died with it.
fn still_pending(pending: f64, before: Option<Counters>, now: Counters) -> f64 {
    let (pending, before) = match before {
        Some(b) if now.retries >= b.retries && now.adds >= b.adds => (pending, b),
        _ => (0.0, Counters::default()),
    };
    let (retried, added) = (now.retries - before.retries, now.adds - before.adds);
    // The failures that needed an add first: those beyond what the queue already held.
    let added_first = (retried - before.held).max(0.0);
    let came_back = (added - added_first).max(0.0);
    (pending + retried - came_back).max(0.0)
}

/// What one read of the metrics says.
struct Sample {
    /// A queue has items or unfinished work.
    busy: bool,
    counters: BTreeMap<String, Counters>,
    retries_exported: bool,
}

impl Sample {
    /// The workqueues in Prometheus text; `None` when it names none.
    fn read(text: &str) -> Option<Sample> {
        let mut gauges = 0;
        let mut busy = false;
        let mut counters: BTreeMap<String, Counters> = BTreeMap::new();
        let mut with_retries = std::collections::BTreeSet::new();
        // Per controller-runtime controller: the reconciles that asked for a retry.
        let mut retried: BTreeMap<String, f64> = BTreeMap::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((name, value)) = sample(line) else {
                continue;
            };
            let queue = || label(line, "name").unwrap_or_default().to_string();
            match name {
                "workqueue_depth" | "workqueue_unfinished_work_seconds" => {
                    gauges += 1;
                    busy |= value != 0.0;
                    let held = match name {
                        "workqueue_depth" => value,
                        _ => f64::from(u8::from(value > 0.0)),
                    };
                    counters.entry(queue()).or_default().held += held;
                }
                "workqueue_retries_total" => {
                    counters.entry(queue()).or_default().retries += value;
                    with_retries.insert(queue());
                }
                "workqueue_adds_total" => counters.entry(queue()).or_default().adds += value,
                "controller_runtime_reconcile_total" => {
                    let controller = label(line, "controller").unwrap_or_default();
                    let retry = match label(line, "result") {
                        Some("error" | "requeue") => value,
                        _ => 0.0,
                    };
                    *retried.entry(controller.to_string()).or_default() += retry;
                }
                "controller_runtime_terminal_reconcile_errors_total" => {
                    let controller = label(line, "controller").unwrap_or_default();
                    *retried.entry(controller.to_string()).or_default() -= value;
                }
                _ => {}
            }
        }
        // A controller-runtime controller's own count of the reconciles that asked for a
        // retry stands for its queue's: a priority queue counts a `RequeueAfter` as a
        // retry too, an interval that is no retry pending.
        for (controller, n) in retried {
            if let Some(c) = counters.get_mut(&controller) {
                c.retries = n.max(0.0);
                with_retries.insert(controller);
            }
        }
        (gauges > 0).then(|| Sample {
            busy,
            retries_exported: counters.keys().all(|q| with_retries.contains(q)),
            counters,
        })
    }
}

/// The value of label `key` in `name{labels} value`.
fn label<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let labels = &line[line.find('{')? + 1..line.find('}')?];
    labels.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"'))
    })
}

/// `name{labels} value` → (name, value).
fn sample(line: &str) -> Option<(&str, f64)> {
    let name_end = line.find(['{', ' '])?;
    let name = unprefixed(&line[..name_end]);
    let rest = match line[name_end..].strip_prefix('{') {
        Some(r) => &r[r.find('}')? + 1..],
        None => &line[name_end..],
    };
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some((name, value))
}

/// A workqueue metric under a controller's own prefix read as client-go's:
/// prometheus-operator registers client-go's workqueue metrics as
/// `prometheus_operator_workqueue_depth` and so on (its `resource_reconciler.go`).
fn unprefixed(name: &str) -> &str {
    match name.find("_workqueue_") {
        Some(i) => &name[i + 1..],
        None => name,
    }
}

async fn get(url: &str, within: Duration) -> Result<String> {
    super::scrape::get(url, within)
        .await
        .with_context(|| format!("--idle-url {url}"))
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

    fn idle(l: Look) -> bool {
        l.idle
    }

    /// No workqueue before any was seen, from a controller never restarted, is a wrong
    /// URL; after, or once restarted, a controller coming back (a standby waiting for its
    /// Lease has none, and a down one serves nothing): busy. A probed port that serves
    /// none is no metrics: idle as far as they can say, never settled.
    #[tokio::test]
    async fn no_workqueues_is_an_error_until_some_were_seen_then_not_idle() {
        let u = IdleUrl::new(metrics(vec![NONE, NONE]).await, true);
        let e = u.look(false).await.unwrap_err();
        assert!(e.to_string().contains("exports no workqueue_depth"), "{e}");
        assert!(!idle(u.look(true).await.unwrap()), "restarted: a standby");
        let u = glimpsing(metrics(vec![BUSY, IDLE, NONE, IDLE]).await);
        assert!(!idle(u.look(false).await.unwrap()));
        assert!(idle(u.look(false).await.unwrap()));
        assert!(
            !idle(u.look(false).await.unwrap()),
            "none after some: not idle"
        );
        assert!(idle(u.look(false).await.unwrap()));
        assert!(
            !idle(u.look(false).await.unwrap()),
            "nothing serving after some: not idle"
        );
        let gone = IdleUrl::new("http://127.0.0.1:1/metrics".into(), true);
        assert!(gone.look(false).await.is_err());
        assert!(!idle(gone.look(true).await.unwrap()));
        let probed = IdleUrl::new("http://127.0.0.1:1/metrics".into(), false);
        let l = probed.look(false).await.unwrap();
        assert!(l.idle && !l.settled, "{l:?}");
    }

    /// One that takes each sample at its word (no [`HELD`]): what one sample says.
    fn glimpsing(url: String) -> IdleUrl {
        IdleUrl {
            held: Duration::ZERO,
            ..IdleUrl::new(url, true)
        }
    }

    /// A worker just started on an item reads idle for up to half a second (the
    /// unfinished-work gauge is updated every 500 ms): idle and settled only once that
    /// has held for [`HELD`] with no item added — an add starts the wait over, busy
    /// ends it.
    #[test]
    fn idle_must_hold_before_a_look_says_so() {
        let u = IdleUrl::new(String::new(), true);
        let t0 = std::time::Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let look = |text: &str, ms: u64| u.take_at(text, at(ms)).unwrap();
        let first = look(&queue(0, 0, 1), 0);
        assert!(!first.idle && !first.settled, "a glimpse: {first:?}");
        assert!(!look(&queue(0, 0, 1), 500).settled, "half a second");
        let held = look(&queue(0, 0, 1), 1000);
        assert!(held.idle && held.settled, "held a second: {held:?}");
        assert!(
            !look(&queue(0, 0, 2), 1200).idle,
            "an item added: the wait starts over"
        );
        assert!(!look(&queue(0, 0, 2), 1900).idle);
        assert!(look(&queue(0, 0, 2), 2200).settled);
        assert!(!look(&busy(0, 0.5, 0, 2), 2300).idle, "at work");
        assert!(
            !look(&queue(0, 0, 2), 2400).idle,
            "idle again: the wait starts over"
        );
        assert!(look(&queue(0, 0, 2), 3400).idle);
    }

    /// A restarted controller's first look starts idle's wait over, even when the new
    /// process's counters add up to the dead one's (KEDA's standby, made leader 16 s
    /// after its predecessor was killed, read "idle" 60 ms after it won its Lease and
    /// its trial was judged before it had reconciled anything).
    #[test]
    fn a_restart_starts_the_history_over() {
        let u = IdleUrl::new(String::new(), true);
        let t0 = std::time::Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let look = |text: &str, ms: u64| u.take_at(text, at(ms)).unwrap();
        look(&queue(0, 1, 1), 0);
        assert!(look(&queue(0, 1, 1), 1500).idle, "the first process, idle");
        u.restarted(Some(std::time::SystemTime::now()));
        let after = look(&queue(0, 0, 1), 1600);
        assert!(!after.idle && !after.settled, "a new process: {after:?}");
        assert!(
            look(&queue(0, 0, 1), 2600).settled,
            "held since its own start"
        );
        let same = u.lock().process;
        u.restarted(same);
        assert!(
            look(&queue(0, 0, 1), 2700).idle,
            "the same restart again: no reset"
        );
    }

    fn queue(depth: u32, retries: u32, adds: u32) -> String {
        busy(depth, 0.0, retries, adds)
    }

    fn busy(depth: u32, unfinished: f64, retries: u32, adds: u32) -> String {
        format!(
            "# TYPE workqueue_depth gauge\nworkqueue_depth{{name=\"a\"}} {depth}\nworkqueue_unfinished_work_seconds{{name=\"a\"}} {unfinished}\nworkqueue_retries_total{{name=\"a\"}} {retries}\nworkqueue_adds_total{{name=\"a\"}} {adds}\nworkqueue_depth{{name=\"b\"}} 0\nworkqueue_retries_total{{name=\"b\"}} 0\nworkqueue_adds_total{{name=\"b\"}} 3\n"
        )
    }

    fn settled(u: &IdleUrl, text: &str) -> bool {
        u.take(text).unwrap().settled
    }

    /// A retry keeps the controller unsettled until an add shows it came back; an item
    /// added and failed between two samples stays pending, one at work that failed and
    /// came back at once does not; a new process (counters down) starts over; busy is
    /// never settled.
    #[test]
    fn a_retry_is_pending_until_it_comes_back() {
        let u = glimpsing(String::new());
        assert!(settled(&u, &queue(0, 0, 1)), "one add, no retry");
        assert!(!u.take(&queue(1, 0, 2)).unwrap().settled, "busy");
        assert!(!settled(&u, &queue(0, 1, 2)), "the queued item failed");
        assert!(
            !settled(&u, &queue(0, 1, 2)),
            "nothing since: still pending"
        );
        assert!(settled(&u, &queue(0, 1, 3)), "it came back and succeeded");
        assert!(
            !settled(&u, &queue(0, 2, 4)),
            "added and failed in one interval"
        );
        assert!(!settled(&u, &queue(0, 2, 4)), "kept until another add");
        assert!(settled(&u, &queue(0, 2, 5)));
        assert!(
            settled(&u, &queue(0, 3, 7)),
            "added, failed, back, succeeded"
        );
        assert!(!u.take(&busy(0, 0.5, 3, 7)).unwrap().settled, "one at work");
        assert!(
            settled(&u, &queue(0, 4, 8)),
            "the one at work failed and came back at once"
        );
        assert!(!settled(&u, &queue(0, 6, 8)), "two retries");
        assert!(!settled(&u, &queue(0, 6, 9)), "one back, one pending");
        assert!(
            settled(&u, &queue(0, 0, 1)),
            "restarted: what was pending died"
        );
        assert!(
            !settled(&u, &queue(0, 1, 1)),
            "the first sample of a process"
        );
        let no_retries = glimpsing(String::new());
        assert!(
            !settled(&no_retries, "workqueue_depth{name=\"a\"} 0\n"),
            "no retries exported: never settled by metrics"
        );
    }

    /// source-controller v1.9.3 on a priority queue, as it served them: one reconcile that
    /// asked for a requeue (it came back), then one that returned `RequeueAfter` — which
    /// the queue counts as a retry, and which never comes back within a run. Its
    /// reconciles' results say no retry is pending; an error is one until it comes back.
    #[test]
    fn controller_runtime_results_stand_for_a_priority_queues_retries() {
        const FIRST: &str = r#"controller_runtime_reconcile_total{controller="gitrepository",result="error"} 0
controller_runtime_reconcile_total{controller="gitrepository",result="requeue"} 1
controller_runtime_reconcile_total{controller="gitrepository",result="requeue_after"} 0
controller_runtime_reconcile_total{controller="gitrepository",result="success"} 0
workqueue_adds_total{controller="gitrepository",name="gitrepository"} 1
workqueue_depth{controller="gitrepository",name="gitrepository",priority="-100"} 0
workqueue_retries_total{controller="gitrepository",name="gitrepository"} 1
workqueue_unfinished_work_seconds{controller="gitrepository",name="gitrepository"} 0
"#;
        const INTERVAL: &str = r#"controller_runtime_reconcile_total{controller="gitrepository",result="error"} 0
controller_runtime_reconcile_total{controller="gitrepository",result="requeue"} 1
controller_runtime_reconcile_total{controller="gitrepository",result="requeue_after"} 1
controller_runtime_reconcile_total{controller="gitrepository",result="success"} 0
workqueue_adds_total{controller="gitrepository",name="gitrepository"} 2
workqueue_depth{controller="gitrepository",name="gitrepository",priority="-100"} 0
workqueue_retries_total{controller="gitrepository",name="gitrepository"} 2
workqueue_unfinished_work_seconds{controller="gitrepository",name="gitrepository"} 0
"#;
        let u = glimpsing(String::new());
        assert!(!settled(&u, FIRST), "the requeue: pending");
        assert!(
            settled(&u, INTERVAL),
            "it came back; the interval is no retry"
        );
        assert!(u.take(INTERVAL).unwrap().worked);
        let failed = INTERVAL.replace(r#"result="error"} 0"#, r#"result="error"} 1"#);
        assert!(!settled(&u, &failed), "an error: a retry pending");
        let back = failed.replace(r#"name="gitrepository"} 2"#, r#"name="gitrepository"} 3"#);
        assert!(settled(&u, &back), "it came back");
        let terminal = format!(
            "{}controller_runtime_terminal_reconcile_errors_total{{controller=\"gitrepository\"}} 1\n",
            back.replace(r#"result="error"} 1"#, r#"result="error"} 2"#)
        );
        assert!(settled(&u, &terminal), "a terminal error is not retried");
        // Only queue-less counters: the queue's own retries are read as before.
        let plain = glimpsing(String::new());
        assert!(!settled(&plain, &queue(0, 1, 1)));
        let starting = "workqueue_depth{name=\"a\"} 0\nworkqueue_retries_total{name=\"a\"} 0\nworkqueue_adds_total{name=\"a\"} 0\n";
        assert!(!plain.take(starting).unwrap().worked, "nothing added yet");
    }

    #[test]
    fn samples_are_read() {
        assert_eq!(
            sample(r#"workqueue_depth{controller="gitrepository",name="gitrepository"} 0"#),
            Some(("workqueue_depth", 0.0))
        );
        assert_eq!(
            sample(
                r#"prometheus_operator_workqueue_depth{controller="prometheus",name="prometheus"} 2"#
            ),
            Some(("workqueue_depth", 2.0))
        );
        assert_eq!(
            sample("workqueue_unfinished_work_seconds 1.5"),
            Some(("workqueue_unfinished_work_seconds", 1.5))
        );
        assert_eq!(
            label(
                r#"workqueue_adds_total{controller="x",name="gitrepository"} 3"#,
                "name"
            ),
            Some("gitrepository")
        );
        assert_eq!(sample("# HELP x y"), None);
        assert_eq!(
            expand("http://127.0.0.1:$STALEMATE_METRICS_PORT/metrics", 9000),
            "http://127.0.0.1:9000/metrics"
        );
    }
}
