//! Writes: create, update (PUT) and patch, with the rules the real registry strategies
//! apply (delete and deletecollection: `delete.rs`). A new object goes through [`create_in`]: its
//! metadata set, defaults (`defaults.rs`), admission (`pods.rs`, `services.rs`, the
//! protection finalizers, `namespaces.rs`), validation (`validate.rs`, `crds.rs`).
//!
//! Every other write goes through [`commit`], which owns the generic rules: server-owned
//! metadata is kept, `status` is split off when it is a subresource, `generation` moves
//! only when the spec does, a write that changes nothing is a no-op (no RV, no event),
//! and an object whose last finalizer goes while it is being deleted is removed
//! (`delete::finish_delete_as`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::delete::{finish_delete_as, has_finalizers};
use super::http::Ctx;
use super::meta::{self, Scope, Write};
use super::patch::{self, PatchError, PatchType};
use super::registry::ResourceType;
use super::store::{EventType, State, Stored};
use crate::status::{ApiError, FieldError};

use super::crds::KEY as CRD_KEY;

/// Who is writing, and how the write is recorded.
pub struct Writer<'a> {
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

pub(super) fn decode_body(body: &[u8]) -> Result<Value, ApiError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })?;
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "couldn't get version/kind; json parse error: the object must be a JSON object",
        ));
    }
    Ok(v)
}

/// `kind`/`apiVersion` in a body must name the resource's type (missing ones are filled).
fn check_type(rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
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

/// Metadata the strategies set before field management sees the object (so the writer
/// owns it, as `fixtures/.../ns-create.body` shows for the namespace name label).
fn prepare_meta(rt: &ResourceType, obj: &mut Value) {
    if rt.kind == "Namespace" && rt.group.is_empty() {
        let name = obj["metadata"]["name"].clone();
        obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
    }
}

/// Create `obj` in the state (HTTP POST and internal bootstrap alike).
pub fn create_in(
    st: &mut State,
    rt: &ResourceType,
    ns: Option<&str>,
    mut obj: Value,
    w: &Writer<'_>,
) -> Result<Arc<Stored>, ApiError> {
    check_type(rt, &mut obj)?;
    let m = &mut obj["metadata"];
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
    if let Some(why) = meta::name_problem(&name, rt.kind == "Namespace") {
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
    let ns_s = ns.unwrap_or_default();
    super::namespaces::check(st, rt, ns_s, &name)?;
    let key = rt.storage_key();
    if st.get(&key, ns_s, &name).is_some() {
        return Err(ApiError::already_exists(rt.group_resource(), &name));
    }
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
    if rt.status_subresource
        && rt.custom
        && let Some(o) = obj.as_object_mut()
    {
        // "create cannot set status" (apiextensions customResourceStrategy.PrepareForCreate)
        o.shift_remove("status");
    }
    prepare_meta(rt, &mut obj);
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
    super::defaults::apply(rt, &mut obj, true);
    admit(st, rt, ns_s, &mut obj)?;
    let errs = super::validate::create(rt, &obj);
    if !errs.is_empty() {
        return Err(invalid(rt, &name, &errs));
    }
    super::crds::validate(rt, &obj)?;
    if key == CRD_KEY {
        super::crds::prepare(&mut obj);
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
    if key == CRD_KEY {
        // Answered as created; its names accepted and established by the next write, as
        // the apiextensions controllers do at once (a watch sees ADDED, then MODIFIED).
        let mut established = stored.value.clone();
        super::crds::establish(&mut established);
        st.put(&key, established, EventType::Modified);
        super::crds::rebuild_registry(st);
    }
    if rt.kind == "Namespace" && rt.group.is_empty() {
        super::namespaces::populate(st, &name);
    }
    Ok(stored)
}

/// What admission and the REST storage add to a new built-in object: pods their service
/// account, tolerations and priority (`pods.rs`); Services their cluster IP (and node
/// ports).
fn admit(st: &State, rt: &ResourceType, ns: &str, obj: &mut Value) -> Result<(), ApiError> {
    if rt.custom || !rt.group.is_empty() {
        return Ok(());
    }
    match rt.kind.as_str() {
        "Pod" => super::pods::admit(st, ns, obj),
        "Service" => {
            super::services::allocate(st, obj);
            Ok(())
        }
        // StorageObjectInUseProtection: a claim or volume in use is not removed under
        // its pod (the protection controllers take the finalizer off).
        "PersistentVolumeClaim" => {
            add_finalizer(obj, "kubernetes.io/pvc-protection");
            Ok(())
        }
        "PersistentVolume" => {
            add_finalizer(obj, "kubernetes.io/pv-protection");
            Ok(())
        }
        _ => Ok(()),
    }
}

fn add_finalizer(obj: &mut Value, f: &str) {
    match obj["metadata"]
        .get_mut("finalizers")
        .and_then(Value::as_array_mut)
    {
        Some(fs) if fs.iter().any(|x| x == f) => {}
        Some(fs) => fs.push(f.into()),
        None => obj["metadata"]["finalizers"] = json!([f]),
    }
}

/// A built-in's `/status` write: the request's object with the old spec — and, as the
/// status strategies have it, the old labels for a Deployment and the old owner
/// references for a Pod; the rest of the metadata is the request's
/// (`deploymentStatusStrategy.PrepareForUpdate` and its kin). Custom resources keep the
/// whole old object but its status.
fn status_write(rt: &ResourceType, old: &Value, mut new: Value) -> Value {
    let keep = |k: &str| !matches!(k, "metadata" | "status" | "apiVersion" | "kind");
    if let Some(n) = new.as_object_mut() {
        n.retain(|k, _| !keep(k));
        for (k, v) in old.as_object().into_iter().flatten() {
            if keep(k) {
                n.insert(k.clone(), v.clone());
            }
        }
    }
    let restore: &[&str] = match (rt.group.as_str(), rt.kind.as_str()) {
        ("apps", "Deployment") => &["labels"],
        ("", "Pod") => &["ownerReferences"],
        _ => &[],
    };
    for k in restore {
        match old["metadata"].get(*k) {
            Some(v) => new["metadata"][*k] = v.clone(),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.shift_remove(*k);
                }
            }
        }
    }
    // podStatusStrategy: the QoS class is set at creation; a status write without one
    // (old kubelets dropped it) keeps it.
    let qos = &old["status"]["qosClass"];
    if rt.group.is_empty() && rt.kind == "Pod" && !qos.is_null() {
        let status = &mut new["status"];
        if status["qosClass"].as_str().is_none_or(str::is_empty) {
            status["qosClass"] = qos.clone();
        }
    }
    new
}

/// Apply `new` as the next version of `old`: the generic update rules, then store.
/// Returns the object as written (or as it was, for a no-op).
pub fn commit(
    st: &mut State,
    rt: &ResourceType,
    old: &Arc<Stored>,
    mut new: Value,
    scope: Scope,
    w: &Writer<'_>,
) -> Result<Arc<Stored>, ApiError> {
    let name = old.name().to_string();
    let om = &old.value["metadata"];
    // The object the write produces: for /status, the old object with the new status
    // (`statusStrategy.PrepareForUpdate`); for the main resource, the new object with the
    // old status when status is a subresource.
    let mut obj = match scope {
        Scope::Status if !rt.custom => status_write(rt, &old.value, new),
        Scope::Status => {
            let mut o = old.value.clone();
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
                match old.value.get("status") {
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
    };
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
    // Server-owned metadata cannot be changed by a write.
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
    if rt.kind == "Service" && rt.group.is_empty() {
        super::services::keep_allocated(&old.value, &mut obj);
    }
    super::defaults::apply(rt, &mut obj, false);
    let errs = match scope {
        _ if w.internal => vec![],
        Scope::Main { .. } => super::validate::update(rt, &old.value, &obj),
        Scope::Status => super::validate::status(rt, &obj),
    };
    if !errs.is_empty() {
        return Err(invalid(rt, &name, &errs));
    }
    super::crds::validate(rt, &obj)?;
    if matches!(scope, Scope::Main { .. })
        && rt.generation
        && meta::spec_changed(rt, &old.value, &obj)
    {
        obj["metadata"]["generation"] = (om["generation"].as_i64().unwrap_or(0) + 1).into();
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
    let key = rt.storage_key();
    if obj["metadata"].get("deletionTimestamp").is_some() && !has_finalizers(rt, &obj) {
        // The last finalizer went: the object is removed in this update, one DELETED. The
        // answer is the object as written, at the resourceVersion it had: the update
        // itself was never stored (`store.go` `Update` → `deleteWithoutFinalizers`).
        let k = old.key();
        let mut answer = obj.clone();
        answer["metadata"]["resourceVersion"] = old.rv.to_string().into();
        finish_delete_as(st, rt, &k, Some(obj));
        return Ok(Stored::new(answer, old.rv));
    }
    let stored = st.put(&key, obj, EventType::Modified);
    if key == CRD_KEY {
        super::crds::rebuild_registry(st);
    }
    Ok(stored)
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

// ---- HTTP verbs ----------------------------------------------------------------------

pub(super) fn writer<'a>(
    ctx: &Ctx,
    operation: &'a str,
    applied: Option<Value>,
) -> Result<Writer<'a>, ApiError> {
    let dry_run = match ctx.query("dryRun") {
        None => false,
        Some("All") => true,
        Some(other) => {
            return Err(invalid(
                &ctx.rt,
                "",
                &[FieldError {
                    reason: "FieldValueNotSupported",
                    field: "dryRun".into(),
                    message: format!("Unsupported value: {other:?}: supported values: \"All\""),
                }],
            ));
        }
    };
    Ok(Writer {
        manager: meta::manager_name(ctx.query("fieldManager"), ctx.user_agent.as_deref()),
        dry_run,
        operation,
        applied,
        internal: false,
    })
}

fn scope_of(ctx: &Ctx) -> Scope {
    match ctx.req.subresource.as_deref() {
        Some("status") => Scope::Status,
        _ => Scope::Main {
            status_subresource: ctx.rt.status_subresource,
        },
    }
}

pub fn create(ctx: &Ctx, body: &[u8]) -> Result<(u16, Arc<Stored>), ApiError> {
    if ctx.req.name.is_some() {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let obj = decode_body(body)?;
    let w = writer(ctx, "Update", None)?;
    let mut st = ctx.sim.lock();
    let created = create_in(&mut st, &ctx.rt, ctx.req.namespace.as_deref(), obj, &w)?;
    Ok((201, created))
}

pub(super) fn existing(st: &State, ctx: &Ctx) -> Result<Arc<Stored>, ApiError> {
    let name = ctx.req.name.as_deref().unwrap_or_default();
    st.get(
        &ctx.rt.storage_key(),
        ctx.req.namespace.as_deref().unwrap_or_default(),
        name,
    )
    .cloned()
    .ok_or_else(|| ApiError::not_found(ctx.rt.group_resource(), name))
}

pub fn update(ctx: &Ctx, body: &[u8]) -> Result<(u16, Arc<Stored>), ApiError> {
    let mut obj = decode_body(body)?;
    let name = ctx.req.name.clone().unwrap_or_default();
    check_type(&ctx.rt, &mut obj)?;
    if obj["metadata"]["name"].as_str().is_some_and(|n| n != name) {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            obj["metadata"]["name"].as_str().unwrap_or_default()
        )));
    }
    let w = writer(ctx, "Update", None)?;
    let mut st = ctx.sim.lock();
    let old = existing(&st, ctx)?;
    let rv = obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default();
    if rv.is_empty() {
        // Custom resources never allow unconditional updates
        // (`customResourceStrategy.AllowUnconditionalUpdate`); the built-ins here do.
        if ctx.rt.custom {
            return Err(invalid(
                &ctx.rt,
                &name,
                &[FieldError::invalid(
                    "metadata.resourceVersion",
                    "0x0",
                    "must be specified for an update",
                )],
            ));
        }
    } else if rv != old.rv.to_string() {
        return Err(ApiError::conflict_modified(ctx.rt.group_resource(), &name));
    }
    if ctx.req.subresource.as_deref() == Some("finalize") {
        let mut o = old.value.clone();
        o["spec"]["finalizers"] = obj["spec"]["finalizers"].clone();
        obj = o;
    }
    let out = commit(&mut st, &ctx.rt, &old, obj, scope_of(ctx), &w)?;
    Ok((200, out))
}

pub fn patch(
    ctx: &Ctx,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<(u16, Arc<Stored>), ApiError> {
    let accepted = patch::accepted_patch_types(ctx.rt.custom);
    let pt = content_type
        .and_then(PatchType::from_content_type)
        .filter(|pt| !(ctx.rt.custom && *pt == PatchType::Strategic))
        .ok_or_else(|| ApiError::unsupported_media_type(accepted))?;
    let name = ctx.req.name.clone().unwrap_or_default();
    let applied = if pt == PatchType::Apply {
        if ctx.query("fieldManager").is_none_or(str::is_empty) {
            return Err(ApiError::new(
                422,
                "Invalid",
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            )
            .with_details(json!({"group": "meta.k8s.io", "kind": "PatchOptions",
                "causes": [{"reason": "FieldValueRequired",
                    "message": "Required value: is required for apply patch", "field": "fieldManager"}]})));
        }
        let mut a = patch::parse_apply_body(body).map_err(patch_error)?;
        check_type(&ctx.rt, &mut a)?;
        Some(a)
    } else {
        None
    };
    let w = writer(
        ctx,
        if pt == PatchType::Apply {
            "Apply"
        } else {
            "Update"
        },
        applied.clone(),
    )?;
    let mut st = ctx.sim.lock();
    let old = match existing(&st, ctx) {
        Ok(o) => o,
        Err(e) if pt == PatchType::Apply && e.code == 404 && ctx.req.subresource.is_none() => {
            // Apply creates what does not exist yet.
            let mut obj = applied.unwrap_or_default();
            obj["metadata"]["name"] = name.clone().into();
            let created = create_in(&mut st, &ctx.rt, ctx.req.namespace.as_deref(), obj, &w)?;
            return Ok((201, created));
        }
        Err(e) => return Err(e),
    };
    let mut doc = old.value_at(&ctx.rt.api_version());
    patch::apply(&mut doc, pt, body).map_err(patch_error)?;
    // A resourceVersion inside the patch is a precondition (`MergeFromWithOptimisticLock`).
    let patched_rv = doc["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default();
    if !patched_rv.is_empty() && patched_rv != old.rv.to_string() {
        return Err(ApiError::conflict_modified(ctx.rt.group_resource(), &name));
    }
    if doc["metadata"]["uid"] != old.value["metadata"]["uid"] && !doc["metadata"]["uid"].is_null() {
        return Err(ApiError::conflict(
            ctx.rt.group_resource(),
            &name,
            &format!(
                "Precondition failed: UID in precondition: {}, UID in object meta: {}",
                doc["metadata"]["uid"].as_str().unwrap_or_default(),
                old.uid()
            ),
        ));
    }
    let out = commit(&mut st, &ctx.rt, &old, doc, scope_of(ctx), &w)?;
    Ok((200, out))
}

pub(super) fn patch_error(e: PatchError) -> ApiError {
    match e {
        PatchError::Malformed(m) => ApiError::bad_request(m),
        // kube-apiserver answers a JSON patch that cannot be applied (a failed `test`, a
        // path that is not there) with a generic 422: its message and empty details,
        // whatever the patch library said (`NewGenericServerResponse`).
        PatchError::Unprocessable(why) => {
            tracing::debug!(%why, "a JSON patch could not be applied");
            ApiError::new(
                422,
                "Invalid",
                "the server rejected our request due to an error in our request",
            )
            .with_details(json!({}))
        }
    }
}
