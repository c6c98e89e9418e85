//! Deletes: DELETE of one object and of a collection. An object with finalizers is only
//! marked (`deletionTimestamp`, and for graceful types a generation bump); one without,
//! or whose last finalizer goes (`write::commit`), is removed with the cascades that
//! follow — a CRD's custom resources, a terminating namespace's finalization. A pod is
//! deleted gracefully with no kubelet to wait for: marked, then gone.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::crds::KEY as CRD_KEY;
use super::http::Ctx;
use super::meta;
use super::namespaces::KEY as NS_KEY;
use super::registry::ResourceType;
use super::store::{EventType, ObjKey, State, Stored};
use super::write::{decode_body, existing};
use crate::status::{self, ApiError};

pub(super) fn has_finalizers(rt: &ResourceType, obj: &Value) -> bool {
    let nonempty = |v: &Value| v.as_array().is_some_and(|a| !a.is_empty());
    nonempty(&obj["metadata"]["finalizers"])
        || (rt.kind == "Namespace" && rt.group.is_empty() && nonempty(&obj["spec"]["finalizers"]))
}

/// Remove an object whose finalizers are done, with the cascades that follow.
fn finish_delete(st: &mut State, rt: &ResourceType, key: &ObjKey) -> Option<Arc<Stored>> {
    finish_delete_as(st, rt, key, None)
}

/// [`finish_delete`], with the object's last state given (see [`State::remove_as`]).
pub(super) fn finish_delete_as(
    st: &mut State,
    rt: &ResourceType,
    key: &ObjKey,
    last: Option<Value>,
) -> Option<Arc<Stored>> {
    let gone = st.remove_as(&rt.storage_key(), key, last)?;
    if rt.storage_key() == CRD_KEY {
        // The CRD finalizer deletes every custom resource first (`customresourcecleanup`).
        for t in crate::sim::registry::from_crd(&gone.value) {
            st.remove_all(&t.storage_key());
        }
        super::crds::rebuild_registry(st);
    }
    if rt.namespaced {
        super::namespaces::try_finalize(st, &key.0);
    }
    Some(gone)
}

/// Mark an object deleted: immediately gone without finalizers, else `deletionTimestamp`.
pub(super) fn delete_object(
    st: &mut State,
    rt: &ResourceType,
    old: &Arc<Stored>,
    dry_run: bool,
) -> (Arc<Stored>, bool) {
    if old.value["metadata"].get("deletionTimestamp").is_some() {
        return (old.clone(), false);
    }
    let mut obj = old.value.clone();
    if has_finalizers(rt, &obj) {
        obj["metadata"]["deletionTimestamp"] = meta::now_rfc3339().into();
        if rt.kind != "Namespace" {
            // Namespaces are finalized, not gracefully deleted: no grace period
            // (`fixtures/.../ns-delete.body`).
            obj["metadata"]["deletionGracePeriodSeconds"] = 0.into();
        }
        if rt.generation {
            // Graceful deletion bumps generation (`registry/rest/delete.go`).
            obj["metadata"]["generation"] =
                (obj["metadata"]["generation"].as_i64().unwrap_or(0) + 1).into();
        }
        if rt.kind == "Namespace" && rt.group.is_empty() {
            obj["status"]["phase"] = "Terminating".into();
        }
        meta::canonicalize(rt, &mut obj);
        if dry_run {
            return (Stored::new(obj, old.rv), false);
        }
        let stored = st.put(&rt.storage_key(), obj, EventType::Modified);
        if rt.kind == "Namespace" && rt.group.is_empty() {
            super::namespaces::empty(st, old.name());
            return (
                st.get(NS_KEY, "", old.name()).cloned().unwrap_or(stored),
                false,
            );
        }
        return (stored, false);
    }
    if dry_run {
        return (old.clone(), true);
    }
    if rt.kind == "Pod" && rt.group.is_empty() {
        // A pod is deleted gracefully — deletionTimestamp set, grace 0 with no kubelet
        // to wait for, generation moved: one MODIFIED, then DELETED; the answer is the
        // pod as marked (`podStrategy.CheckGracefulDelete`, `registry/rest/delete.go`).
        obj["metadata"]["deletionTimestamp"] = meta::now_rfc3339().into();
        obj["metadata"]["deletionGracePeriodSeconds"] = 0.into();
        obj["metadata"]["generation"] =
            (obj["metadata"]["generation"].as_i64().unwrap_or(0) + 1).into();
        meta::canonicalize(rt, &mut obj);
        let marked = st.put(&rt.storage_key(), obj, EventType::Modified);
        finish_delete(st, rt, &old.key());
        return (marked, true);
    }
    let gone = finish_delete(st, rt, &old.key()).unwrap_or_else(|| old.clone());
    (gone, true)
}

/// What a DELETE answers: the object (still there, or for types that return it) or a
/// `Status` of success.
pub enum Deleted {
    Object(Arc<Stored>),
    Status(Value),
}

pub fn delete(ctx: &Ctx, body: &[u8]) -> Result<Deleted, ApiError> {
    let opts: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        decode_body(body)?
    };
    let dry_run = opts["dryRun"]
        .as_array()
        .is_some_and(|a| a.iter().any(|v| v == "All"))
        || ctx.query("dryRun") == Some("All");
    let name = ctx.req.name.clone().unwrap_or_default();
    let mut st = ctx.sim.lock();
    let old = existing(&st, ctx)?;
    let pre = &opts["preconditions"];
    if let Some(uid) = pre["uid"].as_str()
        && uid != old.uid()
    {
        return Err(ApiError::conflict(
            ctx.rt.group_resource(),
            &name,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                old.uid()
            ),
        ));
    }
    if let Some(rv) = pre["resourceVersion"].as_str()
        && rv != old.rv.to_string()
    {
        return Err(ApiError::conflict(
            ctx.rt.group_resource(),
            &name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                old.rv
            ),
        ));
    }
    let (obj, gone) = delete_object(&mut st, &ctx.rt, &old, dry_run);
    if gone && !ctx.rt.returns_deleted {
        Ok(Deleted::Status(status::delete_success(
            ctx.rt.group_resource(),
            &name,
            obj.uid(),
        )))
    } else {
        Ok(Deleted::Object(obj))
    }
}

/// DELETE on a collection: every matching object, as one request.
pub fn delete_collection(
    ctx: &Ctx,
    filter: &super::read::Filter,
) -> Result<Vec<Arc<Stored>>, ApiError> {
    let mut st = ctx.sim.lock();
    let objs: Vec<Arc<Stored>> = st
        .iter(&ctx.rt.storage_key(), ctx.req.namespace.as_deref())
        .filter(|o| filter.matches(o))
        .cloned()
        .collect();
    let dry_run = ctx.query("dryRun") == Some("All");
    Ok(objs
        .iter()
        .map(|o| delete_object(&mut st, &ctx.rt, o, dry_run).0)
        .collect())
}

/// Items of a `…List` body from a sequence of objects (deletecollection's answer).
pub fn list_body(rt: &ResourceType, rv: u64, objs: &[Arc<Stored>]) -> Value {
    let items: Vec<Value> = objs.iter().map(|o| o.value.clone()).collect();
    let mut m = Map::new();
    m.insert("kind".into(), rt.list_kind().into());
    m.insert("apiVersion".into(), rt.api_version().into());
    m.insert(
        "metadata".into(),
        json!({"resourceVersion": rv.to_string()}),
    );
    m.insert("items".into(), Value::Array(items));
    Value::Object(m)
}
