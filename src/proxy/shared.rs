//! What every request of a running proxy shares: the upstream, metrics, gates, oracles,
//! the clients requests are told apart by.

use std::sync::Arc;
use std::time::Duration;

use super::activity;
use super::gated;
use crate::proxy::metrics::Metrics;
use crate::upstream::Upstream;

/// Shared state of a running proxy.
pub struct Proxy {
    pub upstream: Upstream,
    pub metrics: Arc<Metrics>,
    /// Time allowed for the upstream's response headers (not for streaming bodies).
    pub header_timeout: Duration,
    /// Becomes `true` when the proxy shuts down: watch streams then end cleanly at their
    /// next frame boundary, so clients resume (docs/PROTOCOL.md §C) instead of seeing a
    /// reset.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    /// The schedule's windows, views, trace and held-bytes budget; watch streams that
    /// windows target go through a gate.
    pub gates: Arc<gated::Gates>,
    /// Writes and conflicts feed the hot-loop and conflict-storm oracles.
    pub oracles: Arc<crate::oracle::Oracles>,
    /// What the upstream serves: only those resources are metric labels.
    pub known: Arc<crate::upstream::discovery::KnownResources>,
    /// (client, resource) pairs whose ungated watches were already logged.
    pub ungated_seen: std::sync::Mutex<std::collections::HashSet<(String, String)>>,
    /// The schedule's clients and the listeners' names: who a request is from.
    pub clients: Arc<super::identity::Clients>,
    /// What each client is doing (a session tells a starting controller from an idle one).
    pub activity: Arc<activity::ClientActivity>,
}
