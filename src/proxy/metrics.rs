//! Prometheus metrics (names and labels from docs/DESIGN.md "Interfaces"). Label sets are
//! bounded: `client` is a schedule client name or `other`, `resource` a served resource.

use prometheus::{
    GaugeVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
};

pub struct Metrics {
    pub registry: Registry,
    pub requests: IntCounterVec,
    pub duration: HistogramVec,
    pub watch_streams: IntGaugeVec,
    pub watch_events: IntCounterVec,
    pub held_events: IntGaugeVec,
    pub held_bytes: IntGaugeVec,
    pub view_lag: GaugeVec,
    pub conflicts: IntCounterVec,
    pub writes: IntCounterVec,
    pub view_reads: IntCounterVec,
    pub cap_hits: IntCounter,
    pub ungated: IntCounterVec,
    /// `--max-held-bytes-total`: what `held_bytes` may add up to (the
    /// `StalemateHeldBytesNearCap` alert compares them).
    pub held_bytes_limit: prometheus::IntGauge,
    /// 1 when the last scrape's probe of the upstream got an answer below 500.
    pub upstream_up: prometheus::IntGauge,
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new_custom(Some("stalemate".into()), None).unwrap_or_default();
        let requests = IntCounterVec::new(
            Opts::new(
                "requests_total",
                "Requests through the proxy, by client, verb, resource and response code.",
            ),
            &["client", "verb", "resource", "code"],
        )
        .expect("static metric definition");
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "request_duration_seconds",
                "Time to the upstream's response headers (watches: until the stream starts), by client and verb.",
            )
            .buckets(vec![0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0]),
            &["client", "verb"],
        )
        .expect("static metric definition");
        let watch_streams = IntGaugeVec::new(
            Opts::new(
                "watch_streams",
                "Open watch streams, by client and resource.",
            ),
            &["client", "resource"],
        )
        .expect("static metric definition");
        let watch_events = IntCounterVec::new(
            Opts::new(
                "watch_events_total",
                "Watch events by client, resource, type and fate: delivered (passed at once), held, released (after a hold), dropped (bookmarks while holding, states a coalesce replaced), injected (ERROR 410 the proxy wrote).",
            ),
            &["client", "resource", "type", "action"],
        )
        .expect("static metric definition");
        let held_events = IntGaugeVec::new(
            Opts::new("held_events", "Events held now, by client and resource."),
            &["client", "resource"],
        )
        .expect("static metric definition");
        let held_bytes = IntGaugeVec::new(
            Opts::new(
                "held_bytes",
                "Bytes of events held now, by client and resource.",
            ),
            &["client", "resource"],
        )
        .expect("static metric definition");
        let held_bytes_limit = prometheus::IntGauge::new(
            "held_bytes_limit",
            "The most bytes of events the proxy holds at once, all streams together (--max-held-bytes-total).",
        )
        .expect("static metric definition");
        let upstream_up = prometheus::IntGauge::new(
            "upstream_up",
            "1 if the upstream answered the probe made for this scrape (below 500, within 2s), else 0.",
        )
        .expect("static metric definition");
        let view_lag = GaugeVec::new(
            Opts::new(
                "view_lag_seconds",
                "How far behind the upstream a client's view is: the age of its oldest held event (0 when nothing is held), by client and resource.",
            ),
            &["client", "resource"],
        )
        .expect("static metric definition");
        let conflicts = IntCounterVec::new(
            Opts::new(
                "upstream_conflicts_total",
                "Real 409 Conflict responses from the upstream (not injected ones), by client and resource.",
            ),
            &["client", "resource"],
        )
        .expect("static metric definition");
        let writes = IntCounterVec::new(
            Opts::new(
                "writes_total",
                "Write requests (create, update, patch, delete, deletecollection) sent upstream, by client, resource and verb.",
            ),
            &["client", "resource", "verb"],
        )
        .expect("static metric definition");
        let view_reads = IntCounterVec::new(
            Opts::new(
                "view_reads_total",
                "Reads answered from a client's view during a window, by client, resource and contract: kept (resourceVersion=0) or violated (a consistent read under staleConsistentReads).",
            ),
            &["client", "resource", "contract"],
        )
        .expect("static metric definition");
        let cap_hits = IntCounter::new(
            "held_cap_hits_total",
            "Watch streams ended with ERROR 410 because a held-bytes cap (per stream or global) was reached.",
        )
        .expect("static metric definition");
        let ungated = IntCounterVec::new(
            Opts::new(
                "watch_streams_ungated_total",
                "Watch streams passed through without a gate because their framing is unknown (reason: content-encoding, media-type): no window applies to them.",
            ),
            &["client", "resource", "reason"],
        )
        .expect("static metric definition");
        for c in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(duration.clone()),
            Box::new(watch_streams.clone()),
            Box::new(watch_events.clone()),
            Box::new(held_events.clone()),
            Box::new(held_bytes.clone()),
            Box::new(view_lag.clone()),
            Box::new(conflicts.clone()),
            Box::new(writes.clone()),
            Box::new(view_reads.clone()),
            Box::new(cap_hits.clone()),
            Box::new(ungated.clone()),
            Box::new(held_bytes_limit.clone()),
            Box::new(upstream_up.clone()),
        ] {
            let _ = registry.register(c);
        }
        Metrics {
            registry,
            requests,
            duration,
            watch_streams,
            watch_events,
            held_events,
            held_bytes,
            view_lag,
            conflicts,
            writes,
            view_reads,
            cap_hits,
            ungated,
            held_bytes_limit,
            upstream_up,
        }
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        use prometheus::Encoder;
        let mut buf = Vec::new();
        let _ = prometheus::TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8(buf).unwrap_or_default()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}
