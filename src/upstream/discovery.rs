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

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// The shortest time between two discoveries.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(1);
/// How long a request waits for the discovery its unknown group/version started.
/// Requests arriving while one runs do not wait for it (they are labelled `other`).
const WAIT: Duration = Duration::from_secs(1);

/// Group → version → the resources it serves, with `resource/subresource` entries.
/// Nested rather than keyed by a (group, version) pair so that a request's lookup
/// borrows its strings instead of copying them (every request looks up once).
type Known = HashMap<String, HashMap<String, HashSet<String>>>;

pub struct KnownResources {
    known: RwLock<Known>,
    /// Changes with every change of `known`: names this instance's current answers in
    /// each thread's [`LAST`] (unique across instances, so a test's proxies never share).
    generation: AtomicU64,
    client: Option<kube::Client>,
    /// When the last discovery started; held while one runs, so only one runs at once.
    last: tokio::sync::Mutex<Option<Instant>>,
}

/// A thread's last [`KnownResources::lookup`]: (group, version, resource, subresource).
struct Last {
    generation: u64,
    key: [String; 4],
    has_sub: bool,
    answer: Option<bool>,
}

thread_local! {
    static LAST: RefCell<Last> = const {
        RefCell::new(Last {
            // No instance has generation 0 (`next_generation` starts at 1).
            generation: 0,
            key: [String::new(), String::new(), String::new(), String::new()],
            has_sub: false,
            answer: None,
        })
    };
}

/// Generations are unique process-wide, so one thread's cache can serve any instance.
fn next_generation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl KnownResources {
    /// Resources learnt from the upstream through `client` (`None`: none are ever known,
    /// every resource label is `other`).
    pub fn new(client: Option<kube::Client>) -> KnownResources {
        KnownResources {
            known: RwLock::new(HashMap::new()),
            generation: AtomicU64::new(next_generation()),
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
                    .entry(g.to_string())
                    .or_default()
                    .entry(v.to_string())
                    .or_default()
                    .insert(r.to_string());
            }
        }
        k
    }

    /// `known` to change: every thread's [`LAST`] answer from before is void.
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Known> {
        let guard = self.known.write().unwrap_or_else(|p| p.into_inner());
        self.generation.store(next_generation(), Ordering::Release);
        guard
    }

    /// Whether discovery knows this group/version.
    pub fn knows_group_version(&self, group: &str, version: &str) -> bool {
        self.lookup(group, version, "", None).is_some()
    }

    /// Whether discovery lists `resource` (or `resource/subresource`) in group/version
    /// (requests ask [`KnownResources::lookup`], which also tells an unknown group/version).
    #[cfg(test)]
    pub fn knows(&self, group: &str, version: &str, resource: &str, sub: Option<&str>) -> bool {
        self.lookup(group, version, resource, sub) == Some(true)
    }

    /// `None` when discovery does not know the group/version; else whether it lists
    /// `resource` (or `resource/subresource`) there — one look, for a request's labels.
    /// A controller asks for the same few resources over and over: each thread keeps
    /// its last answer, valid while `known` is unchanged, and skips the shared lock and
    /// three hash lookups when the next request names the same resource.
    pub fn lookup(
        &self,
        group: &str,
        version: &str,
        resource: &str,
        sub: Option<&str>,
    ) -> Option<bool> {
        let generation = self.generation.load(Ordering::Acquire);
        let key = [group, version, resource, sub.unwrap_or("")];
        let cached = LAST.with_borrow(|last| {
            (last.generation == generation && last.has_sub == sub.is_some() && last.key == key)
                .then_some(last.answer)
        });
        if let Some(answer) = cached {
            return answer;
        }
        let answer = {
            let known = self.known.read().unwrap_or_else(|p| p.into_inner());
            known
                .get(group)
                .and_then(|v| v.get(version))
                .map(|set| match sub {
                    None => set.contains(resource),
                    Some(s) => set.contains(&format!("{resource}/{s}")),
                })
        };
        LAST.with_borrow_mut(|last| {
            for (kept, now) in last.key.iter_mut().zip(key) {
                kept.clear();
                kept.push_str(now);
            }
            (last.generation, last.has_sub, last.answer) = (generation, sub.is_some(), answer);
        });
        answer
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
                    .entry(g.name().to_string())
                    .or_default()
                    .entry(v.to_string())
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
        assert!(!k.knows_group_version("", "v2"));
        // One look tells an unknown group/version (discover again) from an unknown
        // resource in a known one (labelled `other`, no discovery).
        assert_eq!(k.lookup("", "v1", "configmaps", None), Some(true));
        assert_eq!(k.lookup("", "v1", "widgets", None), Some(false));
        assert_eq!(k.lookup("", "v2", "configmaps", None), None);
        assert_eq!(k.lookup("x1.example.com", "v1", "things1", None), None);
    }

    /// Each thread keeps its last answer: it must not outlive a discovery that changed
    /// what is known, nor answer for another instance.
    #[test]
    fn a_threads_last_answer_follows_discovery_and_its_instance() {
        let k = KnownResources::fixed(&[("", "v1", "configmaps")]);
        assert_eq!(k.lookup("", "v1", "widgets", None), Some(false));
        assert_eq!(k.lookup("", "v1", "widgets", None), Some(false));
        k.write()
            .entry(String::new())
            .or_default()
            .entry("v1".into())
            .or_default()
            .insert("widgets".into());
        assert_eq!(k.lookup("", "v1", "widgets", None), Some(true));
        let other = KnownResources::fixed(&[("apps", "v1", "deployments")]);
        assert_eq!(other.lookup("", "v1", "widgets", None), None);
        assert_eq!(k.lookup("", "v1", "widgets", None), Some(true));
        // The same strings, with and without a subresource, are different questions.
        assert_eq!(k.lookup("", "v1", "configmaps", Some("")), Some(false));
        assert_eq!(k.lookup("", "v1", "configmaps", None), Some(true));
    }
}
