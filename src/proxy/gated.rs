//! A gated watch response: upstream chunks → codec → gate → client, with the schedule's
//! windows applied as they open and close.
//!
//! ```text
//!  upstream body ─► JsonFramer | ProtoFramer ─► Gate ─► ChannelBody ─► client
//!                                                 ▲
//!            Engine (windows open/close) ─────────┘   lag: timer on gate.next_due()
//! ```
//!
//! A frame that does not parse, or an upstream end while events are held, ends the stream
//! with ERROR 410 `Expired`, so the client relists and nothing is silently lost. What the
//! windows do is their faults' decision (`fault/`): how they hold (drawn when they
//! opened) and whether they end the streams open when they open; the gate carries it out.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;

use crate::fault::{StreamEnd, combined_hold};
use crate::listen::body::ChannelBody;
use crate::listen::{Body, BodyError};
use crate::proxy::metrics::Metrics;
use crate::schedule::engine::Engine;
use crate::trace::{Record, Trace};
use crate::upstream::error::WatchEnd;
use crate::watch::gate::{self, Fate, Gate, HeldBudget, Output};
use crate::watch::json::JsonFramer;
use crate::watch::proto::ProtoFramer;
use crate::watch::view::{self, Encoding, ViewKey, Views};
use crate::watch::{CodecError, DEFAULT_MAX_FRAME, Format, Frame, expired_event};

/// What every gated stream shares.
pub struct Gates {
    pub engine: Arc<Engine>,
    pub metrics: Arc<Metrics>,
    pub views: Arc<Views>,
    pub trace: Trace,
    /// Held bytes of all streams together (`--max-held-bytes-total`).
    pub budget: Arc<HeldBudget>,
    /// Held bytes allowed per stream (`--max-held-bytes`).
    pub max_held_bytes: usize,
}

impl Gates {
    /// Whether client views of `resource` are kept (`--views`).
    pub fn wants_view(&self, resource: &str) -> bool {
        match self.views.mode() {
            view::ViewsMode::Off => false,
            view::ViewsMode::All => true,
            view::ViewsMode::Named => self.engine.may_use_view(resource),
        }
    }
}

/// Turns the gate's counters into metrics as the stream goes, and takes its held
/// events out of the gauges when the stream ends.
struct Report {
    events: [[prometheus::IntCounter; 4]; 5],
    injected: prometheus::IntCounter,
    held_events: prometheus::IntGauge,
    held_bytes: prometheus::IntGauge,
    last: gate::GateStats,
    last_held: (i64, i64),
}

impl Report {
    fn new(m: &Metrics, t: &Target) -> Report {
        let c = |ty: &str, action: &str| {
            m.watch_events
                .with_label_values(&[t.client.as_str(), &t.label, ty, action])
        };
        let events = gate::TYPE_NAMES
            .map(|ty| ["delivered", "held", "released", "dropped"].map(|a| c(ty, a)));
        Report {
            events,
            injected: c("ERROR", "injected"),
            held_events: m
                .held_events
                .with_label_values(&[t.client.as_str(), &t.label]),
            held_bytes: m
                .held_bytes
                .with_label_values(&[t.client.as_str(), &t.label]),
            last: Default::default(),
            last_held: (0, 0),
        }
    }

    fn update(&mut self, gate: &Gate, outs: &[Output]) {
        let s = &gate.stats;
        for ty in 0..5 {
            for (a, (now, before)) in [
                (s.delivered[ty], self.last.delivered[ty]),
                (s.held[ty], self.last.held[ty]),
                (s.released[ty], self.last.released[ty]),
                (s.dropped[ty], self.last.dropped[ty]),
            ]
            .into_iter()
            .enumerate()
            {
                if now > before {
                    self.events[ty][a].inc_by(now - before);
                }
            }
        }
        self.last = s.clone();
        let injected = outs
            .iter()
            .filter(|o| matches!(o, Output::EndExpired { .. }))
            .count() as u64;
        if injected > 0 {
            self.injected.inc_by(injected);
        }
        let held = (gate.held_len() as i64, gate.held_bytes() as i64);
        self.held_events.add(held.0 - self.last_held.0);
        self.held_bytes.add(held.1 - self.last_held.1);
        self.last_held = held;
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        self.held_events.sub(self.last_held.0);
        self.held_bytes.sub(self.last_held.1);
    }
}

enum Framer {
    Json(JsonFramer),
    Proto(ProtoFramer),
}

impl Framer {
    fn push(&mut self, chunk: &[u8]) -> Result<Vec<Frame>, CodecError> {
        match self {
            Framer::Json(f) => f.push(chunk),
            Framer::Proto(f) => f.push(chunk),
        }
    }
}

/// Who a stream belongs to, for window matching.
#[derive(Debug, Clone)]
pub struct Target {
    pub client: String,
    /// The resource as windows name it.
    pub resource: String,
    /// The resource as metrics label it (`other` when the upstream does not serve it).
    pub label: String,
    pub namespace: Option<String>,
    /// The view this stream's delivered events update.
    pub view: ViewKey,
    /// A WatchList stream (`sendInitialEvents=true`): its initial events rebuild the view.
    pub watch_list: bool,
    /// A `rewind` sent this watch back in time: these events come first (held by the
    /// window like the upstream's that follow).
    pub rewind: Option<crate::watch::view::Rewind>,
    /// A WatchList answered from the client's view: its initial events and end marker,
    /// delivered first and at once (`proxy/reads.rs` `watch_list`).
    pub initial_events: Option<Vec<Bytes>>,
    /// A WatchList stream's initial state, done when its end marker is delivered (or the
    /// stream ends).
    pub initial: Option<Arc<super::activity::InitialState>>,
}

/// Every event's fate goes to the trace, and — for the resources the oracles watch — to
/// the oracles' delivery lanes (the report draws them against ground truth).
fn trace_notes(trace: &Trace, lanes: Option<&crate::oracle::Oracles>, t: &Target, gate: &mut Gate) {
    for n in gate.take_notes() {
        if let Some(o) = lanes
            && let Some(kind) = n.meta.type_.filter(|k| {
                !matches!(
                    k,
                    crate::watch::EventType::Bookmark | crate::watch::EventType::Error
                )
            })
        {
            o.on_delivery(
                &t.client,
                &t.resource,
                &n.meta.namespace,
                &n.meta.name,
                &n.meta.resource_version,
                kind.as_str(),
                n.fate.as_str(),
                std::time::SystemTime::now(),
            );
        }
        trace.record(Record::Event {
            client: t.client.clone(),
            resource: t.resource.clone(),
            type_: n.meta.type_.map_or("ERROR", |t| t.as_str()),
            namespace: n.meta.namespace,
            name: n.meta.name,
            resource_version: n.meta.resource_version,
            fate: n.fate.as_str(),
            delay_ms: match n.fate {
                Fate::Released(d) => Some(d.as_secs_f64() * 1000.0),
                _ => None,
            },
        });
    }
}

/// Gate an upstream watch body — gzip-encoded if `gzip` (decoded here: the client gets
/// the plain stream). Returns the body to send to the client.
pub fn gated<B>(upstream: B, format: Format, gzip: bool, target: Target, gates: Arc<Gates>) -> Body
where
    B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<BodyError>,
{
    let (tx, body) = ChannelBody::channel(64);
    tokio::spawn(async move {
        let mut watch = GatedWatch::new(format, gzip, target, gates);
        let outs = watch.opening();
        watch.run(upstream, outs, tx).await;
    });
    body
}

/// Where the client's stream goes from here.
enum Flow {
    Open,
    /// Ended: by the gate, or the client went away.
    Ended,
}

/// One gated watch stream, on a task of its own: what it holds (the gate), how it reads
/// the upstream (framer, gunzip), whom it tells (views, trace, oracles, metrics), and one
/// method per thing that happens to it — it opens, the windows change, the upstream
/// sends, a held event falls due, outputs go to the client.
struct GatedWatch {
    gates: Arc<Gates>,
    target: Target,
    format: Format,
    framer: Framer,
    /// Boxed: a stream that is not gzipped (nearly all) keeps its task small.
    gunzip: Option<Box<crate::watch::gzip::GzipStream>>,
    encoding: Encoding,
    /// Decided once per stream: a view a runtime window asks for starts at the
    /// client's next LIST (or WatchList).
    keep_view: bool,
    stream_id: u64,
    /// The oracles' delivery lanes, when they watch this resource.
    lanes: Option<Arc<crate::oracle::Oracles>>,
    gate: Gate,
    changes: tokio::sync::watch::Receiver<u64>,
    /// Windows (by generation) that ended this stream already: a relist window ends the
    /// streams open when it opens, once; a stream started while it is open (the
    /// client's relist) is left alone, or it would loop.
    ended: std::collections::HashSet<u64>,
    report: Report,
    cap_hits: u64,
    last_since: Option<tokio::time::Instant>,
    _lag: LagGuard,
}

impl GatedWatch {
    fn new(format: Format, gzip: bool, target: Target, gates: Arc<Gates>) -> GatedWatch {
        let engine = gates.engine.clone();
        let views = gates.views.clone();
        let report = Report::new(&gates.metrics, &target);
        let framer = match format {
            Format::Json => Framer::Json(JsonFramer::new(DEFAULT_MAX_FRAME)),
            Format::Protobuf => Framer::Proto(ProtoFramer::new(DEFAULT_MAX_FRAME)),
        };
        let gunzip = gzip.then(|| Box::new(crate::watch::gzip::GzipStream::default()));
        let encoding = match format {
            Format::Json => Encoding::Json,
            Format::Protobuf => Encoding::Protobuf,
        };
        let keep_view = gates.wants_view(&target.resource);
        if target.watch_list && keep_view {
            views.start_watch_list(&target.view, encoding);
        }
        let stream_id = views.stream_id();
        let _lag = LagGuard {
            views,
            target: target.clone(),
            stream_id,
        };
        let lanes = engine
            .oracles()
            .filter(|o| o.keeps_lanes_for(&target.resource))
            .cloned();
        let mut gate = Gate::new(gates.max_held_bytes).with_budget(gates.budget.clone());
        gate.record = gates.trace.enabled() || lanes.is_some();
        let changes = engine.changes();
        let ended = engine
            .windows_for(
                &target.client,
                &target.resource,
                target.namespace.as_deref(),
            )
            .iter()
            .filter(|a| a.window.fault.behaviour().ends_streams().is_some())
            .map(|a| a.generation)
            .collect();
        GatedWatch {
            gates,
            target,
            format,
            framer,
            gunzip,
            encoding,
            keep_view,
            stream_id,
            lanes,
            gate,
            changes,
            ended,
            report,
            cap_hits: 0,
            last_since: None,
            _lag,
        }
    }

    /// What the stream starts with: the windows open right now applied, then a
    /// WatchList's initial state from the view, then a rewind's past.
    fn opening(&mut self) -> Vec<Output> {
        let mut outs = self.windows_changed();
        if let Some(initial) = &self.target.initial_events {
            outs.extend(initial_from_view(initial, &mut self.framer, &mut self.gate));
        }
        outs.extend(self.rewound());
        outs
    }

    /// A rewound watch's past, fed to the gate as if the upstream sent it now.
    fn rewound(&mut self) -> Vec<Output> {
        let Some(rw) = &self.target.rewind else {
            return Vec::new();
        };
        let now = tokio::time::Instant::now();
        if rw.format != self.format {
            // The past was recorded in another framing: the client must start over
            // rather than miss it (nothing silently lost).
            tracing::info!(resource = %self.target.resource, "a rewound watch asked for another framing than the view's; ending it with 410");
            return self.gate.relist(true);
        }
        let mut outs = Vec::new();
        for bytes in &rw.replay {
            match self.framer.push(bytes) {
                Ok(frames) => {
                    for fr in frames {
                        outs.extend(self.gate.on_frame(fr, now));
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a recorded event did not frame; ending the stream with 410");
                    outs.extend(self.gate.relist(true));
                    break;
                }
            }
        }
        outs
    }

    /// Follow the streams, the windows and the clock until the stream ends or the
    /// client goes away; `outs` are the first outputs to send.
    async fn run<B>(mut self, mut upstream: B, mut outs: Vec<Output>, tx: Sender)
    where
        B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: Into<BodyError>,
    {
        loop {
            self.account(&outs);
            if let Flow::Ended = self.send(&mut outs, &tx).await {
                return;
            }
            let due = self.gate.next_due();
            tokio::select! {
                _ = tx.closed() => return,
                changed = self.changes.changed() => {
                    if changed.is_err() { return; }
                    outs = self.windows_changed();
                }
                _ = async { match due { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => {
                    outs = self.gate.tick(tokio::time::Instant::now());
                }
                frame = upstream.frame() => {
                    outs = self.upstream_sent(frame);
                }
            }
        }
    }

    /// The gate's counters into metrics, its notes into the trace and the oracles'
    /// lanes, and its oldest held event into the views' lag.
    fn account(&mut self, outs: &[Output]) {
        self.report.update(&self.gate, outs);
        let hits = self.gate.stats.cap_hits;
        if hits > self.cap_hits {
            self.gates.metrics.cap_hits.inc_by(hits - self.cap_hits);
            self.cap_hits = hits;
        }
        trace_notes(
            &self.gates.trace,
            self.lanes.as_deref(),
            &self.target,
            &mut self.gate,
        );
        let since = self.gate.oldest_held_since();
        if since != self.last_since {
            let t = &self.target;
            self.gates
                .views
                .set_held_since(&t.client, &t.label, self.stream_id, since);
            self.last_since = since;
        }
    }

    /// Send `outs` to the client, in order: a delivered event also updates the
    /// client's view (and a WatchList's end marker its initial state); an end ends.
    async fn send(&mut self, outs: &mut Vec<Output>, tx: &Sender) -> Flow {
        for o in outs.drain(..) {
            let (bytes, end): (Option<Result<Bytes, BodyError>>, bool) = match o {
                Output::Deliver(f) => {
                    if self.keep_view {
                        self.gates
                            .views
                            .apply(&self.target.view, self.encoding, &f.meta, &f.bytes);
                    }
                    if f.meta.initial_events_end
                        && let Some(i) = &self.target.initial
                    {
                        i.done();
                    }
                    (Some(Ok(f.bytes)), false)
                }
                Output::EndExpired { reason } => {
                    self.trace_injected();
                    (Some(Ok(expired_event(self.format, reason))), true)
                }
                Output::EndClean => (None, true),
                Output::Abort => (Some(Err("stalemate: watch stream reset".into())), true),
            };
            if let Some(b) = bytes
                && tx.send(b).await.is_err()
            {
                return Flow::Ended;
            }
            if end {
                return Flow::Ended;
            }
        }
        Flow::Open
    }

    /// An ERROR the proxy wrote into the stream, in the trace.
    fn trace_injected(&self) {
        if !self.gates.trace.enabled() {
            return;
        }
        self.gates.trace.record(Record::Event {
            client: self.target.client.clone(),
            resource: self.target.resource.clone(),
            type_: "ERROR",
            namespace: String::new(),
            name: String::new(),
            resource_version: String::new(),
            fate: "injected",
            delay_ms: None,
        });
    }

    /// The windows over this stream changed (or may have): apply them.
    fn windows_changed(&mut self) -> Vec<Output> {
        apply_windows(
            &self.gates.engine,
            &self.target,
            &mut self.gate,
            &mut self.ended,
        )
    }

    /// A window may have opened since the last look — over the control API (its
    /// notification not polled yet: the 201 has already gone out, so what comes next
    /// must be held) or by a trigger the previous event fired: apply it now.
    fn windows_if_changed(&mut self) -> Vec<Output> {
        if self.changes.has_changed().unwrap_or(false) {
            self.changes.borrow_and_update();
            self.windows_changed()
        } else {
            Vec::new()
        }
    }

    /// The upstream sent a frame of its body, an error, or its end.
    fn upstream_sent<E: Into<BodyError>>(
        &mut self,
        frame: Option<Result<http_body::Frame<Bytes>, E>>,
    ) -> Vec<Output> {
        match frame {
            None => self.gate.on_upstream_end(),
            Some(Err(e)) => {
                let e: BodyError = e.into();
                tracing::info!(error = %e, "upstream watch ended with an error");
                // Held events: ERROR 410 (invariant 1). Otherwise end the client's
                // stream the way the upstream's ended.
                match crate::upstream::error::watch_end(&*e) {
                    _ if self.gate.held_len() > 0 => self.gate.on_upstream_end(),
                    WatchEnd::Reset => vec![Output::Abort],
                    WatchEnd::Lost => self.gate.on_upstream_end(),
                }
            }
            // Trailers: nothing to gate.
            Some(Ok(f)) => match f.into_data() {
                Err(_) => vec![],
                Ok(data) => self.upstream_data(data),
            },
        }
    }

    /// Body bytes from the upstream: gunzipped, framed, each event told to the engine
    /// (its triggers) and gated — or, when they do not parse, the stream ended with 410.
    fn upstream_data(&mut self, data: Bytes) -> Vec<Output> {
        let now = tokio::time::Instant::now();
        let data = match self.gunzip.as_mut() {
            Some(g) => g.push(&data).map(Bytes::from),
            None => Ok(data),
        };
        let frames = match data.and_then(|data| self.framer.push(&data)) {
            Ok(frames) => frames,
            Err(e) => {
                tracing::warn!(error = %e, resource = %self.target.resource, "malformed watch frame; ending the stream with 410");
                let _ = self.gate.relist(true);
                return vec![Output::EndExpired {
                    reason: "stalemate: the upstream sent a watch event it could not parse",
                }];
            }
        };
        let mut outs = Vec::new();
        for fr in frames {
            outs.extend(self.windows_if_changed());
            if let Some(kind) = fr.meta.type_.and_then(crate::schedule::EventKind::of) {
                self.gates
                    .engine
                    .on_event(&self.target.client, &self.target.resource, kind);
            }
            outs.extend(self.gate.on_frame(fr, now));
        }
        outs.extend(self.windows_if_changed());
        outs
    }
}

/// Where a gated stream's bytes go: the client's body.
type Sender = tokio::sync::mpsc::Sender<Result<Bytes, BodyError>>;

/// A WatchList's initial state from the view, delivered now; one that does not frame
/// (it cannot: the proxy wrote it) ends the stream with 410 rather than mislead.
fn initial_from_view(initial: &[Bytes], framer: &mut Framer, gate: &mut Gate) -> Vec<Output> {
    let mut outs = Vec::new();
    for bytes in initial {
        match framer.push(bytes) {
            Ok(frames) => {
                for fr in frames {
                    outs.extend(gate.initial(fr));
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "a view's initial event did not frame; ending the stream with 410");
                outs.extend(gate.relist(true));
                break;
            }
        }
    }
    outs
}

/// Takes a finished stream out of `view_lag_seconds`.
struct LagGuard {
    views: Arc<Views>,
    target: Target,
    stream_id: u64,
}

impl Drop for LagGuard {
    fn drop(&mut self) {
        self.views.set_held_since(
            &self.target.client,
            &self.target.label,
            self.stream_id,
            None,
        );
    }
}

/// Apply the windows open over a stream now: a window that ends streams does so once
/// per opening; otherwise the strongest hold among them (or none) applies.
fn apply_windows(
    engine: &Engine,
    t: &Target,
    gate: &mut Gate,
    ended: &mut std::collections::HashSet<u64>,
) -> Vec<Output> {
    let windows = engine.windows_for(&t.client, &t.resource, t.namespace.as_deref());
    for a in &windows {
        if let Some(end) = a.window.fault.behaviour().ends_streams()
            && ended.insert(a.generation)
        {
            return gate.relist(end == StreamEnd::Expired);
        }
    }
    let now = tokio::time::Instant::now();
    match combined_hold(windows.iter().filter_map(|a| a.hold)) {
        Some(mode) => gate.open(mode, now),
        None => gate.close(now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lag window over a gated stream, on tokio's paused clock: events arrive exactly
    /// the drawn delay late, and the same seed and traffic give the same trace.
    #[tokio::test(start_paused = true)]
    async fn lag_is_exact_on_paused_time_and_seeded_runs_repeat() {
        async fn run() -> (Vec<std::time::Duration>, Vec<String>) {
            let s = crate::schedule::Schedule::parse(
                r#"{"seed": 9, "windows": [{"name": "lag", "resources": ["configmaps"],
                    "fault": {"lag": {"delay": "2s", "jitter": "1s"}}}]}"#,
                "t",
            )
            .unwrap();
            let engine = Engine::new(&s, Default::default());
            engine.start(&s);
            let (trace, mut records) = Trace::to_channel(1024);
            let gates = Arc::new(Gates {
                engine,
                metrics: Arc::new(Metrics::new()),
                views: Arc::new(Views::new(0)),
                trace,
                budget: HeldBudget::new(1 << 20),
                max_held_bytes: 1 << 20,
            });
            let (tx, rx) =
                tokio::sync::mpsc::channel::<Result<http_body::Frame<Bytes>, BodyError>>(8);
            let upstream = http_body_util::StreamBody::new(tokio_stream_from(rx));
            let target = configmaps_target();
            let mut body = gated(upstream, Format::Json, false, target, gates);
            let start = tokio::time::Instant::now();
            for i in 0..3 {
                let line = format!(
                    "{{\"type\":\"ADDED\",\"object\":{{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"c{i}\",\"namespace\":\"a\",\"resourceVersion\":\"{i}\"}}}}}}\n"
                );
                tx.send(Ok(http_body::Frame::data(Bytes::from(line))))
                    .await
                    .unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            let mut arrivals = Vec::new();
            while arrivals.len() < 3 {
                let f = body.frame().await.unwrap().unwrap();
                if f.data_ref().is_some() {
                    arrivals.push(start.elapsed());
                }
            }
            drop(tx);
            let mut fates = Vec::new();
            while let Ok(r) = records.try_recv() {
                if let Record::Event {
                    name,
                    fate,
                    delay_ms,
                    ..
                } = r
                {
                    fates.push(format!("{name} {fate} {delay_ms:?}"));
                }
            }
            (arrivals, fates)
        }
        let (a, fa) = run().await;
        // Each event the drawn delay after it arrived (100 ms apart), none early.
        let lag = a[0];
        assert!(
            lag >= std::time::Duration::from_secs(1) && lag <= std::time::Duration::from_secs(3),
            "{a:?}"
        );
        assert_eq!(a[1] - a[0], std::time::Duration::from_millis(100), "{a:?}");
        assert_eq!(a[2] - a[1], std::time::Duration::from_millis(100), "{a:?}");
        let (b, fb) = run().await;
        assert_eq!((a, fa), (b, fb), "same seed, same traffic, same trace");
    }

    /// A JSON watch of every configmap, from a client no window names.
    fn configmaps_target() -> Target {
        Target {
            client: "other".into(),
            resource: "configmaps".into(),
            label: "configmaps".into(),
            namespace: None,
            view: ViewKey {
                client: "other".into(),
                resource: "configmaps".into(),
                namespace: None,
                label_selector: String::new(),
                field_selector: String::new(),
            },
            watch_list: false,
            initial: None,
            rewind: None,
            initial_events: None,
        }
    }

    /// A receiver as a stream of frames (tokio-stream is not a dependency).
    fn tokio_stream_from(
        mut rx: tokio::sync::mpsc::Receiver<Result<http_body::Frame<Bytes>, BodyError>>,
    ) -> impl futures_util::Stream<Item = Result<http_body::Frame<Bytes>, BodyError>> + Unpin {
        Box::pin(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }
}
