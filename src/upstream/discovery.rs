//! The resources the upstream serves, as its discovery lists them — so that metric labels
//! name only real resources.
//!
//! A `resource` label taken straight from request URLs is unbounded: anyone who can reach
//! the proxy can send `/apis/x1.example.com/v1/things1`, `…x2…`, and every path becomes a
//! new time series for as long as the process lives. So a request is labelled with its
//! resource only when the upstream's discovery knows it, and `other` otherwise. Discovery
//! is refreshed when a request names a group/version it does not know — the way kubectl
//! refreshes its cache for a freshly created CRD — at most once per
//! [`REFRESH_INTERVAL`], so a flood of made-up paths costs the upstream at most one
//! discovery a second. Discovery uses stalemate's own (upstream) credentials: the
//! aggregated API (two requests) where the upstream has it, the per-group one otherwise.

use std::collections::{HashMap, HashSet};
use std::sync::RwLock;
use std::time::Duration;

use tokio::time::Instant;

/// The shortest time between two discoveries.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(1);
/// How long a request waits for the discovery its unknown group/version started.
/// Requests arriving while one runs do not wait for it (they are labelled `other`).
const WAIT: Duration = Duration::from_secs(1);

/// Group/version → the resources it serves, with `resource/subresource` entries.
type Known = HashMap<(String, String), HashSet<String>>;

pub struct KnownResources {
    known: RwLock<Known>,
    client: Option<kube::Client>,
    /// When the last discovery started; held while one runs, so only one runs at once.
    last: tokio::sync::Mutex<Option<Instant>>,
}

impl KnownResources {
    /// Resources learnt from the upstream through `client` (`None`: none are ever known,
    /// every resource label is `other`).
    pub fn new(client: Option<kube::Client>) -> KnownResources {
        KnownResources {
            known: RwLock::new(HashMap::new()),
            client,
            last: tokio::sync::Mutex::new(None),
        }
    }

    /// A fixed set, for tests: (group, version, resource or `resource/subresource`).
    pub fn fixed(entries: &[(&str, &str, &str)]) -> KnownResources {
        let k = KnownResources::new(None);
        {
            let mut known = k.write();
            for (g, v, r) in entries {
                known
                    .entry((g.to_string(), v.to_string()))
                    .or_default()
                    .insert(r.to_string());
            }
        }
        k
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Known> {
        self.known.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether discovery knows this group/version.
    pub fn knows_group_version(&self, group: &str, version: &str) -> bool {
        self.known
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(&(group.to_string(), version.to_string()))
    }

    /// Whether discovery lists `resource` (or `resource/subresource`) in group/version.
    pub fn knows(&self, group: &str, version: &str, resource: &str, sub: Option<&str>) -> bool {
        let known = self.known.read().unwrap_or_else(|p| p.into_inner());
        let Some(set) = known.get(&(group.to_string(), version.to_string())) else {
            return false;
        };
        match sub {
            None => set.contains(resource),
            Some(s) => set.contains(&format!("{resource}/{s}")),
        }
    }

    /// A request names a group/version discovery does not know: discover again, unless
    /// that happened less than [`REFRESH_INTERVAL`] ago (then the request stays unknown),
    /// waiting at most a couple of seconds.
    pub async fn refresh_for(&self, group: &str, version: &str) {
        if self.client.is_none() {
            return;
        }
        // One discovery at a time, and nobody queues behind it.
        let Ok(mut last) = self.last.try_lock() else {
            return;
        };
        // A discovery that just ended may have found it.
        if self.knows_group_version(group, version)
            || last.is_some_and(|t| t.elapsed() < REFRESH_INTERVAL)
        {
            return;
        }
        *last = Some(Instant::now());
        let _ = tokio::time::timeout(WAIT, self.discover()).await;
    }

    /// Run discovery now (also at start).
    pub async fn discover(&self) {
        let Some(client) = &self.client else { return };
        let d = match kube::Discovery::new(client.clone()).run_aggregated().await {
            Ok(d) => Ok(d),
            Err(_) => kube::Discovery::new(client.clone()).run().await,
        };
        let d = match d {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "upstream discovery failed; resources it would name are labelled `other` until it succeeds");
                return;
            }
        };
        let mut known = Known::new();
        for g in d.groups() {
            for v in g.versions() {
                let set = known
                    .entry((g.name().to_string(), v.to_string()))
                    .or_default();
                for (ar, caps) in g.versioned_resources(v) {
                    for (sub, _) in &caps.subresources {
                        set.insert(format!("{}/{}", ar.plural, sub.plural));
                    }
                    set.insert(ar.plural);
                }
            }
        }
        *self.write() = known;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_only_what_discovery_listed() {
        let k = KnownResources::fixed(&[
            ("", "v1", "configmaps"),
            ("source.toolkit.fluxcd.io", "v1", "gitrepositories"),
            ("source.toolkit.fluxcd.io", "v1", "gitrepositories/status"),
        ]);
        assert!(k.knows("", "v1", "configmaps", None));
        assert!(k.knows(
            "source.toolkit.fluxcd.io",
            "v1",
            "gitrepositories",
            Some("status")
        ));
        assert!(!k.knows("", "v1", "configmaps", Some("status")));
        assert!(!k.knows("", "v1", "widgets", None));
        assert!(!k.knows("x1.example.com", "v1", "things1", None));
        assert!(k.knows_group_version("", "v1"));
        assert!(!k.knows_group_version("x1.example.com", "v1"));
    }
}
