//! The generic delete, below the HTTP verbs (`verbs/delete.rs`) and the namespace
//! controller alike. An object its strategy says has finalizers is only marked
//! (`deletionTimestamp`, and for types that track it a generation bump); one without, or
//! whose last finalizer goes (`write::commit`), is removed, and its strategy's cascades
//! follow — a CRD's custom resources, a terminating namespace's emptying — as does the
//! finalization of a namespace that was waiting for it.

use std::sync::Arc;

use serde_json::Value;

use super::meta;
use super::namespace_lifecycle;
use super::resource_type::ResourceType;
use super::store::{EventType, ObjKey, State, Stored};
use super::strategy::Strategies;

/// Remove an object whose finalizers are done, with the cascades that follow.
fn finish_delete(
    st: &mut State,
    kinds: Strategies,
    rt: &ResourceType,
    key: &ObjKey,
) -> Option<Arc<Stored>> {
    finish_delete_as(st, kinds, rt, key, None)
}

/// [`finish_delete`], with the object's last state given (see [`State::remove_as`]).
pub(super) fn finish_delete_as(
    st: &mut State,
    kinds: Strategies,
    rt: &ResourceType,
    key: &ObjKey,
    last: Option<Value>,
) -> Option<Arc<Stored>> {
    let gone = st.remove_as(&rt.storage_key(), key, last)?;
    kinds(rt).after_remove(st, &gone);
    if rt.namespaced {
        namespace_lifecycle::try_finalize(st, &key.0);
    }
    Some(gone)
}

/// Mark an object deleted: immediately gone without finalizers, else `deletionTimestamp`.
/// Returns the object as answered, and whether it is gone.
pub(crate) fn delete_object(
    st: &mut State,
    kinds: Strategies,
    rt: &ResourceType,
    old: &Arc<Stored>,
    dry_run: bool,
) -> (Arc<Stored>, bool) {
    if old.value["metadata"].get("deletionTimestamp").is_some() {
        return (old.clone(), false);
    }
    let s = kinds(rt);
    let mut obj = old.value.clone();
    if s.has_finalizers(&obj) {
        obj["metadata"]["deletionTimestamp"] = meta::now_rfc3339().into();
        s.prepare_for_delete(&mut obj);
        if rt.generation {
            // Graceful deletion bumps generation (`registry/rest/delete.go`).
            obj["metadata"]["generation"] =
                (obj["metadata"]["generation"].as_i64().unwrap_or(0) + 1).into();
        }
        meta::canonicalize(rt, &mut obj);
        if dry_run {
            return (Stored::new(obj, old.rv), false);
        }
        let stored = st.put(&rt.storage_key(), obj, EventType::Modified);
        return (s.after_delete_marked(st, kinds, stored), false);
    }
    if dry_run {
        return (old.clone(), true);
    }
    if s.deleted_gracefully() {
        // Marked — deletionTimestamp set, grace 0 with no kubelet to wait for, generation
        // moved: one MODIFIED, then DELETED; the answer is the object as marked
        // (`podStrategy.CheckGracefulDelete`, `registry/rest/delete.go`).
        obj["metadata"]["deletionTimestamp"] = meta::now_rfc3339().into();
        obj["metadata"]["deletionGracePeriodSeconds"] = 0.into();
        obj["metadata"]["generation"] =
            (obj["metadata"]["generation"].as_i64().unwrap_or(0) + 1).into();
        meta::canonicalize(rt, &mut obj);
        let marked = st.put(&rt.storage_key(), obj, EventType::Modified);
        finish_delete(st, kinds, rt, &old.key());
        return (marked, true);
    }
    let gone = finish_delete(st, kinds, rt, &old.key()).unwrap_or_else(|| old.clone());
    (gone, true)
}
