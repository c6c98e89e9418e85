//! One request on its way through the proxy's stages: what they learnt about it, its
//! labels, and the trace of a write its client abandoned.

use std::sync::Arc;
use std::time::Instant;

use super::activity;
use crate::k8s::request::{self, RequestInfo, Verb};
use crate::schedule::engine::{Active, Deferred};

/// Labels for one request, and how it was answered (for the trace).
pub struct Labels {
    pub client: Arc<str>,
    /// The verb (non-resource requests count as `get`).
    pub http_verb: Verb,
    pub verb: &'static str,
    /// The resource as named (`plural.group`, `/sub`): windows, trace and oracles.
    pub resource: String,
    /// The resource as metric labels name it: [`Labels::resource`] when the upstream's
    /// discovery knows it, else `other` (label sets stay bounded whatever URLs arrive).
    pub metric_resource: String,
    pub watch: bool,
    /// upstream | injected | view | view-violation
    pub answer: &'static str,
    pub window: Option<String>,
    /// The resourceVersion a view answered with.
    pub rv: Option<String>,
    /// Why a window did not apply (for the trace).
    pub note: Option<String>,
    /// A write carrying a resourceVersion (or uid) precondition (`precondition.rs`).
    pub precondition: bool,
}

impl Labels {
    /// What the request says of itself, before any stage has looked at it.
    pub(super) fn new(client: Arc<str>, info: &RequestInfo) -> Labels {
        match info {
            RequestInfo::NonResource { .. } => Labels {
                client,
                http_verb: Verb::Get,
                verb: "get",
                resource: String::new(),
                metric_resource: String::new(),
                watch: false,
                answer: "upstream",
                window: None,
                rv: None,
                note: None,
                precondition: false,
            },
            RequestInfo::Resource(r) => Labels {
                client,
                http_verb: r.verb,
                verb: r.verb.as_str(),
                resource: match &r.subresource {
                    Some(s) => format!("{}/{s}", r.resource_name()),
                    None => r.resource_name(),
                },
                // Set once discovery has been asked (`metric_resource` in mod.rs).
                metric_resource: String::new(),
                watch: r.verb == Verb::Watch,
                answer: "upstream",
                window: None,
                rv: None,
                note: None,
                precondition: false,
            },
        }
    }
}

/// One request on its way through the stages: what they learnt about it.
pub struct Call {
    pub(super) start: Instant,
    pub(super) info: RequestInfo,
    pub(super) labels: Labels,
    /// The windows open over this request's target (looked up once, after the triggers).
    pub(super) windows: Vec<Active>,
    /// What the windows its triggers opened do outside the proxy, once it is answered.
    pub(super) deferred: Vec<Deferred>,
    /// A watch a `rewind` sends back in time: the events to give it before the upstream's.
    pub(super) rewind: Option<crate::watch::view::Rewind>,
    /// A WatchList answered from the client's view: its initial events, given at once.
    pub(super) initial: Option<Vec<bytes::Bytes>>,
    /// The request counts as in flight for its client until the call is finished.
    pub(super) in_flight: activity::InFlight,
    /// A write whose client went away before its answer is traced all the same.
    pub(super) abandoned: Option<Abandoned>,
}

/// A write in flight: if its client goes away before the answer (a controller killed by
/// a restart, or crashing), hyper drops the call and no answer is traced — yet the
/// upstream may have done it. Traced as `abandoned` (code 499, nginx's "client closed
/// request"), so the trace says it may have been done.
pub(super) struct Abandoned {
    pub(super) armed: bool,
    pub(super) trace: crate::trace::Trace,
    pub(super) start: Instant,
    pub(super) client: String,
    pub(super) verb: &'static str,
    pub(super) resource: String,
    pub(super) namespace: Option<String>,
    pub(super) name: Option<String>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.trace.record(crate::trace::Record::Request {
            client: std::mem::take(&mut self.client),
            verb: self.verb,
            resource: std::mem::take(&mut self.resource),
            namespace: self.namespace.take(),
            name: self.name.take(),
            code: 499,
            latency_ms: self.start.elapsed().as_secs_f64() * 1000.0,
            answer: "abandoned",
            window: None,
            resource_version: None,
            note: None,
            precondition: false,
        });
    }
}

impl Call {
    pub(super) fn resource(&self) -> Option<&request::ResourceRequest> {
        match &self.info {
            RequestInfo::Resource(r) => Some(r),
            RequestInfo::NonResource { .. } => None,
        }
    }
}
