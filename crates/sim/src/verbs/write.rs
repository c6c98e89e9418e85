//! The write verbs: POST (create), PUT (update) and PATCH of one object, its `/status`
//! and a namespace's `/finalize` — the request read (body, preconditions, `dryRun`,
//! `fieldManager`, patch types) and handed to the generic write rules (`write.rs`) with
//! the kind's strategy (`kinds::strategy`).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::ctx::Ctx;
use crate::kinds;
use crate::meta::{self, Scope};
use crate::patch::{self, PatchError, PatchType};
use crate::store::{State, Stored};
use crate::write::{Writer, check_type, commit, create_in, invalid};
use stalemate_wire::k8s::status::{ApiError, FieldError};

/// A request body as a JSON object.
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

/// Who writes, as the request says (`fieldManager`, `dryRun`, the user agent).
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

pub(crate) fn create(ctx: &Ctx, body: &[u8]) -> Result<(u16, Arc<Stored>), ApiError> {
    if ctx.req.name.is_some() {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let obj = decode_body(body)?;
    let w = writer(ctx, "Update", None)?;
    let mut st = ctx.sim.lock();
    Ok((201, create_named(&mut st, ctx, obj, &w)?))
}

/// Create `obj` where the request says (its resource and namespace), by its kind's rules.
fn create_named(
    st: &mut State,
    ctx: &Ctx,
    obj: Value,
    w: &Writer,
) -> Result<Arc<Stored>, ApiError> {
    create_in(
        st,
        kinds::strategy,
        &ctx.rt,
        ctx.req.namespace.as_deref(),
        obj,
        w,
    )
}

/// The object the request names.
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

pub(crate) fn update(ctx: &Ctx, body: &[u8]) -> Result<(u16, Arc<Stored>), ApiError> {
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
    let out = commit(
        &mut st,
        kinds::strategy,
        &ctx.rt,
        &old,
        obj,
        scope_of(ctx),
        &w,
    )?;
    Ok((200, out))
}

pub(crate) fn patch(
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
        Some(apply_body(ctx, body)?)
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
            return Ok((201, create_named(&mut st, ctx, obj, &w)?));
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
    let out = commit(
        &mut st,
        kinds::strategy,
        &ctx.rt,
        &old,
        doc,
        scope_of(ctx),
        &w,
    )?;
    Ok((200, out))
}

/// A server-side apply body, which must come with a field manager.
fn apply_body(ctx: &Ctx, body: &[u8]) -> Result<Value, ApiError> {
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
    Ok(a)
}

/// A patch that fails, as kube-apiserver answers it.
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
