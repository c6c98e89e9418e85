//! The simulator's storage: objects, one global resourceVersion, and a bounded history.
//!
//! Everything lives behind one mutex, held only for in-memory work (never across an
//! await), so every write is atomic with its event: a watcher that subscribes under the
//! same lock sees the state at exactly one RV and then every later event, in order —
//! what etcd's revision gives the real apiserver.
//!
//! History is a ring of events bounded by count and age. It serves watches that resume
//! from an RV (`resourceVersion=X`) and exact/continued LISTs at an older RV; asking for
//! anything older than what was dropped gets `410 Expired`, as the apiserver does after
//! etcd compaction (docs/PROTOCOL.md §D).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::broadcast;

use super::registry::Registry;

/// Key of an object inside one resource's table: (namespace, name); namespace is empty
/// for cluster-scoped objects. Ordering is etcd key order within a resource.
pub(crate) type ObjKey = (String, String);

/// One stored object version, serialized once and shared by every reader.
#[derive(Debug)]
pub struct Stored {
    pub value: Value,
    pub rv: u64,
    /// Compact JSON of `value` (what a watch event or GET carries).
    pub json: Bytes,
    /// Compact JSON without `kind`/`apiVersion`: typed LIST items omit them.
    item_json: OnceLock<Bytes>,
}

impl Stored {
    pub fn new(value: Value, rv: u64) -> Arc<Stored> {
        let json = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        Arc::new(Stored {
            value,
            rv,
            json,
            item_json: OnceLock::new(),
        })
    }

    pub fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or_default()
    }

    pub fn namespace(&self) -> &str {
        self.value["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
    }

    pub fn uid(&self) -> &str {
        self.value["metadata"]["uid"].as_str().unwrap_or_default()
    }

    pub fn key(&self) -> ObjKey {
        (self.namespace().to_string(), self.name().to_string())
    }

    /// The object as served at `api_version` (custom resources are served at whichever
    /// version was asked for; there is no conversion beyond the apiVersion field).
    pub fn json_at(&self, api_version: &str) -> Bytes {
        if self.value["apiVersion"].as_str() == Some(api_version) {
            return self.json.clone();
        }
        let mut v = self.value.clone();
        v["apiVersion"] = api_version.into();
        Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
    }

    pub fn value_at(&self, api_version: &str) -> Value {
        let mut v = self.value.clone();
        if v["apiVersion"].as_str() != Some(api_version) {
            v["apiVersion"] = api_version.into();
        }
        v
    }

    /// Compact JSON without `kind` and `apiVersion`, for items of a typed LIST.
    pub fn item_json(&self) -> Bytes {
        self.item_json
            .get_or_init(|| {
                let mut v = self.value.clone();
                if let Some(m) = v.as_object_mut() {
                    m.shift_remove("kind");
                    m.shift_remove("apiVersion");
                }
                Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
            })
            .clone()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as every watcher and the history see it.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    /// [`ResourceType::storage_key`](super::resource_type::ResourceType::storage_key).
    pub resource: Arc<str>,
    pub type_: EventType,
    /// The object after the change (for DELETED: its last state, at the deletion RV).
    pub obj: Arc<Stored>,
    /// The object before the change (none for ADDED). Watchers with label selectors need
    /// it to turn "left the selection" into DELETED, as the watch cache does.
    pub prev: Option<Arc<Stored>>,
    pub at: Instant,
}

/// Limits on the retained history.
#[derive(Debug, Clone, Copy)]
pub struct HistoryLimits {
    pub max_events: usize,
    pub max_age: Duration,
}

pub struct State {
    pub rv: u64,
    /// What is served; replace it with [`State::serve`].
    pub registry: Registry,
    /// Per resource (storage key): the RV its watch history starts at — when it was first
    /// served (a CRD's resource when the CRD is established; built-ins at start), as
    /// each resource's watch cache in the apiserver starts from its own initial list.
    served_since: HashMap<String, u64>,
    tables: HashMap<String, BTreeMap<ObjKey, Arc<Stored>>>,
    history: VecDeque<Arc<Event>>,
    /// Highest RV whose event is no longer in `history` (0: nothing dropped yet).
    pub compacted_rv: u64,
    limits: HistoryLimits,
    tx: broadcast::Sender<Arc<Event>>,
    /// The CA bundle published in every namespace's `kube-root-ca.crt`.
    pub root_ca: String,
}

impl State {
    pub fn new(limits: HistoryLimits, channel_capacity: usize) -> State {
        let (tx, _) = broadcast::channel(channel_capacity.max(16));
        State {
            rv: 1,
            registry: Registry::new(&[]),
            // Built-ins are served from the start: their history is the whole history.
            served_since: Registry::new(&[])
                .all()
                .iter()
                .map(|t| (t.storage_key(), 0))
                .collect(),
            tables: HashMap::new(),
            history: VecDeque::new(),
            compacted_rv: 0,
            limits,
            tx,
            root_ca: String::new(),
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }

    pub fn get(&self, resource: &str, ns: &str, name: &str) -> Option<&Arc<Stored>> {
        self.tables
            .get(resource)?
            .get(&(ns.to_string(), name.to_string()))
    }

    /// Current objects of a resource, in key order, optionally in one namespace.
    pub fn iter<'a>(
        &'a self,
        resource: &str,
        ns: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Arc<Stored>> + 'a {
        self.tables
            .get(resource)
            .into_iter()
            .flat_map(move |t| match ns {
                Some(ns) => {
                    let lo = (ns.to_string(), String::new());
                    Box::new(
                        t.range(lo..)
                            .take_while(move |((n, _), _)| n == ns)
                            .map(|(_, v)| v),
                    ) as Box<dyn Iterator<Item = _>>
                }
                None => Box::new(t.values()),
            })
    }

    pub fn count(&self, resource: &str) -> usize {
        self.tables.get(resource).map_or(0, |t| t.len())
    }

    pub fn object_count(&self) -> usize {
        self.tables.values().map(|t| t.len()).sum()
    }

    /// Store `value` as the new version of its object under the next RV, record and
    /// broadcast the event. `metadata.resourceVersion` is set here and nowhere else.
    pub fn put(&mut self, resource: &str, mut value: Value, type_: EventType) -> Arc<Stored> {
        self.rv += 1;
        let rv = self.rv;
        value["metadata"]["resourceVersion"] = rv.to_string().into();
        let obj = Stored::new(value, rv);
        let prev = self
            .tables
            .entry(resource.to_string())
            .or_default()
            .insert(obj.key(), obj.clone());
        self.record(resource, type_, obj.clone(), prev);
        obj
    }

    /// Remove an object; its DELETED event carries its last state at a new RV.
    pub fn remove(&mut self, resource: &str, key: &ObjKey) -> Option<Arc<Stored>> {
        self.remove_as(resource, key, None)
    }

    /// Remove an object whose last state is `last` (the update that removed its last
    /// finalizer): one DELETED event carrying `last`, no MODIFIED before it — the
    /// apiserver deletes within that update (`registry/generic/registry/store.go`
    /// `Update` → `deleteWithoutFinalizers`).
    pub fn remove_as(
        &mut self,
        resource: &str,
        key: &ObjKey,
        last: Option<Value>,
    ) -> Option<Arc<Stored>> {
        let prev = self.tables.get_mut(resource)?.remove(key)?;
        self.rv += 1;
        let rv = self.rv;
        let mut value = last.unwrap_or_else(|| prev.value.clone());
        value["metadata"]["resourceVersion"] = rv.to_string().into();
        let obj = Stored::new(value, rv);
        self.record(resource, EventType::Deleted, obj.clone(), Some(prev));
        Some(obj)
    }

    fn record(
        &mut self,
        resource: &str,
        type_: EventType,
        obj: Arc<Stored>,
        prev: Option<Arc<Stored>>,
    ) {
        let ev = Arc::new(Event {
            rv: obj.rv,
            resource: Arc::from(resource),
            type_,
            obj,
            prev,
            at: Instant::now(),
        });
        self.history.push_back(ev.clone());
        self.trim_history();
        // No receivers is fine: nobody is watching.
        let _ = self.tx.send(ev);
    }

    /// Drop history beyond the limits; the highest dropped RV becomes `compacted_rv`.
    pub fn trim_history(&mut self) {
        let now = Instant::now();
        while let Some(front) = self.history.front() {
            let too_many = self.history.len() > self.limits.max_events;
            let too_old = now.duration_since(front.at) > self.limits.max_age;
            if !(too_many || too_old) {
                break;
            }
            self.compacted_rv = front.rv;
            self.history.pop_front();
        }
    }

    /// Forget all history now, as an etcd compaction at the current revision does.
    pub fn compact(&mut self) {
        self.history.clear();
        self.compacted_rv = self.rv;
    }

    /// The oldest RV a watch can resume from, for the `too old resource version` message.
    pub fn oldest_available_rv(&self) -> u64 {
        self.history
            .front()
            .map_or(self.rv, |e| e.rv.min(self.compacted_rv + 1))
    }

    /// True when events after `rv` are no longer all retained.
    pub fn is_expired(&mut self, rv: u64) -> bool {
        self.trim_history();
        rv < self.compacted_rv
    }

    /// Serve `registry` from now on. A resource served for the first time starts its
    /// watch history here; one no longer served forgets it.
    pub fn serve(&mut self, registry: Registry) {
        let keys: std::collections::HashSet<String> =
            registry.all().iter().map(|t| t.storage_key()).collect();
        self.served_since.retain(|k, _| keys.contains(k));
        for k in keys {
            self.served_since.entry(k).or_insert(self.rv);
        }
        self.registry = registry;
    }

    /// True when a watch of `resource` from `rv` cannot be served: the history is
    /// compacted past it, or the resource's own history starts after it (a real
    /// apiserver answers `resourceVersion=1` for a CRD created later with 410 Expired).
    pub fn is_expired_for(&mut self, resource: &str, rv: u64) -> bool {
        self.is_expired(rv) || rv < self.served_since.get(resource).copied().unwrap_or(0)
    }

    /// The oldest RV a watch of `resource` can resume from.
    pub fn oldest_available_rv_for(&self, resource: &str) -> u64 {
        self.oldest_available_rv()
            .max(self.served_since.get(resource).copied().unwrap_or(0))
    }

    /// History events after `rv`, oldest first.
    pub fn events_since(&self, rv: u64) -> impl Iterator<Item = &Arc<Event>> {
        let start = self.history.partition_point(|e| e.rv <= rv);
        self.history.range(start..)
    }

    /// The objects of `resource` as they were at `rv` (≤ current, not expired), in key
    /// order: today's table with every later change undone.
    pub fn snapshot_at(&self, resource: &str, rv: u64) -> BTreeMap<ObjKey, Arc<Stored>> {
        let mut table = self.tables.get(resource).cloned().unwrap_or_default();
        for ev in self.history.iter().rev() {
            if ev.rv <= rv {
                break;
            }
            if &*ev.resource != resource {
                continue;
            }
            let key = ev.obj.key();
            match (&ev.type_, &ev.prev) {
                (EventType::Added, _) | (_, None) => {
                    table.remove(&key);
                }
                (_, Some(prev)) => {
                    table.insert(key, prev.clone());
                }
            }
        }
        table
    }

    /// Remove every object of a resource (a deleted CRD's custom resources), with events.
    pub fn remove_all(&mut self, resource: &str) -> usize {
        let keys: Vec<ObjKey> = self
            .tables
            .get(resource)
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default();
        for k in &keys {
            self.remove(resource, k);
        }
        keys.len()
    }

    pub fn history_len(&self) -> usize {
        self.history.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(name: &str, v: &str) -> Value {
        json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": name, "namespace": "a"}, "data": {"k": v}})
    }

    fn state(max_events: usize) -> State {
        State::new(
            HistoryLimits {
                max_events,
                max_age: Duration::from_secs(3600),
            },
            64,
        )
    }

    #[test]
    fn snapshot_at_undoes_later_changes() {
        let mut s = state(100);
        s.put("/configmaps", cm("x", "1"), EventType::Added);
        let rv_after_x1 = s.rv;
        s.put("/configmaps", cm("y", "1"), EventType::Added);
        s.put("/configmaps", cm("x", "2"), EventType::Modified);
        s.remove("/configmaps", &("a".into(), "y".into()));
        let snap = s.snapshot_at("/configmaps", rv_after_x1);
        assert_eq!(snap.len(), 1);
        let x = &snap[&("a".to_string(), "x".to_string())];
        assert_eq!(x.value["data"]["k"], "1");
        assert_eq!(x.rv, rv_after_x1);
        let now = s.snapshot_at("/configmaps", s.rv);
        assert_eq!(now.len(), 1);
        assert_eq!(now.values().next().unwrap().value["data"]["k"], "2");
    }

    #[test]
    fn history_bounded_by_count_sets_compacted_rv() {
        let mut s = state(2);
        let start = s.rv;
        for i in 0..5 {
            s.put("/configmaps", cm(&format!("c{i}"), "v"), EventType::Added);
        }
        assert_eq!(s.history_len(), 2);
        assert_eq!(s.compacted_rv, start + 3);
        assert!(s.is_expired(start + 2));
        assert!(!s.is_expired(start + 3));
        let resumed: Vec<u64> = s.events_since(start + 3).map(|e| e.rv).collect();
        assert_eq!(resumed, [start + 4, start + 5]);
        s.compact();
        assert!(s.is_expired(start + 4));
    }

    #[test]
    fn deleted_event_carries_a_new_rv() {
        let mut s = state(10);
        let mut rx = s.subscribe();
        s.put("/configmaps", cm("x", "1"), EventType::Added);
        let gone = s.remove("/configmaps", &("a".into(), "x".into())).unwrap();
        assert_eq!(gone.value["metadata"]["resourceVersion"], s.rv.to_string());
        let a = rx.try_recv().unwrap();
        let d = rx.try_recv().unwrap();
        assert_eq!((a.type_, d.type_), (EventType::Added, EventType::Deleted));
        assert!(d.rv > a.rv);
        assert!(s.get("/configmaps", "a", "x").is_none());
    }
}
