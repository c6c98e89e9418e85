//! The generic write rules, below the HTTP verbs (`verbs/write.rs`) and the in-line
//! controllers (`kinds/namespaces.rs`, `bootstrap.rs`) alike. A new object goes through
//! [`create_in`]: its metadata set, then its kind's strategy (`strategy.rs`, `kinds/`)
//! prepares, defaults, admits and validates it.
//!
//! Every other write goes through [`commit`], which owns the generic rules: server-owned
//! metadata is kept, `status` is split off when it is a subresource, `generation` moves
//! only when the spec does, a write that changes nothing is a no-op (no RV, no event),
//! and an object whose last finalizer goes while it is being deleted is removed
//! (`delete::finish_delete_as`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::delete::finish_delete_as;
use super::meta::{self, Scope, Write};
use super::namespace_lifecycle;
use super::resource_type::ResourceType;
use super::store::{EventType, State, Stored};
use super::strategy::{Strategies, Strategy};
use stalemate_wire::k8s::status::{ApiError, FieldError};

/// Who is writing, and how the write is recorded.
pub(crate) struct Writer<'a> {
    pub manager: String,
    pub dry_run: bool,
    pub operation: &'a str,
    pub applied: Option<Value>,
    /// A write of the apiserver's own (a binding, an eviction) that user validation does
    /// not apply to.
    pub internal: bool,
}

pub(super) fn invalid(rt: &ResourceType, name: &str, errs: &[FieldError]) -> ApiError {
    // `Deployment.apps "web" is invalid` for a built-in of a group, `ConfigMap "c"` for
    // the core group, `widgets.example.com "w"` for a custom resource.
    let what = match (rt.custom, rt.group.is_empty()) {
        (true, _) => rt.group_resource().to_string(),
        (false, true) => rt.kind.clone(),
        (false, false) => format!("{}.{}", rt.kind, rt.group),
    };
    ApiError::invalid(&what, &rt.group, &rt.kind, name, errs)
}

/// `kind`/`apiVersion` in a body must name the resource's type (missing ones are filled).
pub(super) fn check_type(rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    let api_version = rt.api_version();
    match obj["apiVersion"].as_str() {
        None | Some("") => obj["apiVersion"] = api_version.clone().into(),
        Some(v) if v == api_version => {}
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({api_version})"
            )));
        }
    }
    match obj["kind"].as_str() {
        None | Some("") => obj["kind"] = rt.kind.clone().into(),
        Some(k) if k == rt.kind => {}
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                rt.kind
            )));
        }
    }
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    Ok(())
}

/// Create `obj` in the state (HTTP POST and internal writes alike).
pub(crate) fn create_in(
    st: &mut State,
    kinds: Strategies,
    rt: &ResourceType,
    ns: Option<&str>,
    mut obj: Value,
    w: &Writer<'_>,
) -> Result<Arc<Stored>, ApiError> {
    let s = kinds(rt);
    check_type(rt, &mut obj)?;
    place_in_namespace(&mut obj["metadata"], ns)?;
    let name = new_name(rt, s, &mut obj["metadata"])?;
    let ns_s = ns.unwrap_or_default();
    namespace_lifecycle::admit(st, rt, ns_s, &name)?;
    let key = rt.storage_key();
    if st.get(&key, ns_s, &name).is_some() {
        return Err(ApiError::already_exists(rt.group_resource(), &name));
    }
    set_server_metadata(rt, &mut obj["metadata"]);
    if rt.status_subresource
        && rt.custom
        && let Some(o) = obj.as_object_mut()
    {
        // "create cannot set status" (apiextensions customResourceStrategy.PrepareForCreate)
        o.shift_remove("status");
    }
    s.prepare_for_create(&mut obj);
    meta::update_managed_fields(
        None,
        &mut obj,
        &Write {
            manager: &w.manager,
            operation: w.operation,
            scope: Scope::Main {
                status_subresource: rt.status_subresource,
            },
            api_version: &rt.api_version(),
            applied: w.applied.as_ref(),
        },
    );
    s.defaults(&mut obj, true);
    s.admit(st, ns_s, &mut obj)?;
    let errs = s.validate_create(&obj);
    if !errs.is_empty() {
        return Err(invalid(rt, &name, &errs));
    }
    meta::canonicalize(rt, &mut obj);
    if w.dry_run {
        // Nothing was stored: a dry-run create answers without a resourceVersion.
        if let Some(m) = obj["metadata"].as_object_mut() {
            m.shift_remove("resourceVersion");
        }
        return Ok(Stored::new(obj, st.rv));
    }
    let stored = st.put(&key, obj, EventType::Added);
    s.after_create(st, kinds, &stored);
    Ok(stored)
}

/// A namespaced object takes the request's namespace (a different one in the body is a
/// 400); a cluster-scoped one has none.
fn place_in_namespace(m: &mut Value, ns: Option<&str>) -> Result<(), ApiError> {
    if let Some(ns) = ns {
        match m["namespace"].as_str() {
            None | Some("") => m["namespace"] = ns.into(),
            Some(body_ns) if body_ns == ns => {}
            Some(_) => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
    } else if let Some(meta) = m.as_object_mut() {
        meta.shift_remove("namespace");
    }
    Ok(())
}

/// The new object's name — given, or generated from `generateName` — if its kind takes it.
fn new_name(rt: &ResourceType, s: &dyn Strategy, m: &mut Value) -> Result<String, ApiError> {
    let name = match (m["name"].as_str(), m["generateName"].as_str()) {
        (Some(n), _) if !n.is_empty() => n.to_string(),
        (_, Some(g)) if !g.is_empty() => {
            let n = format!("{g}{}", meta::generate_suffix());
            m["name"] = n.clone().into();
            n
        }
        _ => {
            return Err(invalid(
                rt,
                "",
                &[FieldError::required(
                    "metadata.name",
                    "name or generateName is required",
                )],
            ));
        }
    };
    if let Some(why) = s.name_problem(&name) {
        return Err(invalid(
            rt,
            &name,
            &[FieldError::invalid(
                "metadata.name",
                &format!("{name:?}"),
                &why,
            )],
        ));
    }
    Ok(name)
}

/// What the server alone sets on a new object, whatever the request said.
fn set_server_metadata(rt: &ResourceType, m: &mut Value) {
    if let Some(meta) = m.as_object_mut() {
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
            "selfLink",
        ] {
            meta.shift_remove(k);
        }
    }
    m["uid"] = uuid::Uuid::new_v4().to_string().into();
    // Placeholder keeping the key's place in Go order; the store sets the value.
    m["resourceVersion"] = "".into();
    m["creationTimestamp"] = meta::now_rfc3339().into();
    if rt.generation {
        m["generation"] = 1.into();
    }
}

/// A built-in's `/status` write: the request's object with the old spec, and what its
/// strategy keeps besides (`deploymentStatusStrategy.PrepareForUpdate` and its kin); the
/// rest of the metadata is the request's.
fn status_write(s: &dyn Strategy, old: &Value, mut new: Value) -> Value {
    let keep = |k: &str| !matches!(k, "metadata" | "status" | "apiVersion" | "kind");
    if let Some(n) = new.as_object_mut() {
        n.retain(|k, _| !keep(k));
        for (k, v) in old.as_object().into_iter().flatten() {
            if keep(k) {
                n.insert(k.clone(), v.clone());
            }
        }
    }
    s.prepare_for_status_update(old, &mut new);
    new
}

/// The object a write produces: for /status, the old object with the new status
/// (`statusStrategy.PrepareForUpdate`; custom resources keep the whole old object but its
/// status); for the main resource, the new object with the old status when status is a
/// subresource.
fn next_object(
    rt: &ResourceType,
    s: &dyn Strategy,
    old: &Value,
    mut new: Value,
    scope: Scope,
) -> Value {
    match scope {
        Scope::Status if !rt.custom => status_write(s, old, new),
        Scope::Status => {
            let mut o = old.clone();
            match new.as_object_mut().and_then(|m| m.shift_remove("status")) {
                Some(s) => o["status"] = s,
                None => {
                    if let Some(m) = o.as_object_mut() {
                        m.shift_remove("status");
                    }
                }
            }
            o
        }
        Scope::Main { status_subresource } => {
            if status_subresource {
                match old.get("status") {
                    Some(s) => new["status"] = s.clone(),
                    None => {
                        if let Some(m) = new.as_object_mut() {
                            m.shift_remove("status");
                        }
                    }
                }
            }
            new
        }
    }
}

/// Type, name and server-owned metadata as the old object has them: a write cannot
/// change them (a different name is a 400).
fn keep_server_metadata(obj: &mut Value, old: &Stored) -> Result<(), ApiError> {
    let name = old.name();
    let om = &old.value["metadata"];
    obj["apiVersion"] = old.value["apiVersion"].clone();
    obj["kind"] = old.value["kind"].clone();
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    let m = &mut obj["metadata"];
    if m["name"].as_str().is_some_and(|n| n != name) {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            m["name"].as_str().unwrap_or_default()
        )));
    }
    for k in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match om.get(k) {
            Some(v) => m[k] = v.clone(),
            None => {
                if let Some(mm) = m.as_object_mut() {
                    mm.shift_remove(k);
                }
            }
        }
    }
    m["resourceVersion"] = om["resourceVersion"].clone();
    Ok(())
}

/// Apply `new` as the next version of `old`: the generic update rules, then store.
/// Returns the object as written (or as it was, for a no-op).
pub(crate) fn commit(
    st: &mut State,
    kinds: Strategies,
    rt: &ResourceType,
    old: &Arc<Stored>,
    new: Value,
    scope: Scope,
    w: &Writer<'_>,
) -> Result<Arc<Stored>, ApiError> {
    let s = kinds(rt);
    let name = old.name().to_string();
    let mut obj = next_object(rt, s, &old.value, new, scope);
    keep_server_metadata(&mut obj, old)?;
    s.prepare_for_update(&old.value, &mut obj);
    s.defaults(&mut obj, false);
    let errs = match scope {
        _ if w.internal => vec![],
        Scope::Main { .. } => s.validate_update(&old.value, &obj),
        Scope::Status => s.validate_status(&obj),
    };
    if !errs.is_empty() {
        return Err(invalid(rt, &name, &errs));
    }
    if matches!(scope, Scope::Main { .. }) && rt.generation && s.spec_changed(rt, &old.value, &obj)
    {
        let generation = old.value["metadata"]["generation"].as_i64().unwrap_or(0);
        obj["metadata"]["generation"] = (generation + 1).into();
    }
    meta::canonicalize(rt, &mut obj);
    if meta::same_content(&old.value, &obj) && w.applied.is_none() {
        return Ok(old.clone());
    }
    meta::update_managed_fields(
        Some(&old.value),
        &mut obj,
        &Write {
            manager: &w.manager,
            operation: w.operation,
            scope,
            api_version: &rt.api_version(),
            applied: w.applied.as_ref(),
        },
    );
    meta::canonicalize(rt, &mut obj);
    if meta::same_content(&old.value, &obj) && meta_fields_same(&old.value, &obj) {
        return Ok(old.clone());
    }
    if w.dry_run {
        return Ok(Stored::new(obj, old.rv));
    }
    Ok(store_update(st, kinds, rt, old, obj))
}

/// Store an update, or — when the last finalizer of an object being deleted went —
/// remove the object in it, with one DELETED. Then the answer is the object as written,
/// at the resourceVersion it had: the update itself was never stored (`store.go`
/// `Update` → `deleteWithoutFinalizers`).
fn store_update(
    st: &mut State,
    kinds: Strategies,
    rt: &ResourceType,
    old: &Stored,
    obj: Value,
) -> Arc<Stored> {
    let s = kinds(rt);
    if obj["metadata"].get("deletionTimestamp").is_some() && !s.has_finalizers(&obj) {
        let k = old.key();
        let mut answer = obj.clone();
        answer["metadata"]["resourceVersion"] = old.rv.to_string().into();
        finish_delete_as(st, kinds, rt, &k, Some(obj));
        return Stored::new(answer, old.rv);
    }
    let stored = st.put(&rt.storage_key(), obj, EventType::Modified);
    s.after_update(st);
    stored
}

fn meta_fields_same(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut mf = v["metadata"]["managedFields"].clone();
        for e in mf.as_array_mut().into_iter().flatten() {
            if let Some(m) = e.as_object_mut() {
                m.shift_remove("time");
            }
        }
        mf
    };
    strip(a) == strip(b)
}
