//! The `scale` subresource (`deployments`, `replicasets`, `statefulsets`,
//! `replicationcontrollers`): an `autoscaling/v1` Scale of the object's
//! `spec.replicas`, `status.replicas` and selector — what `kubectl scale` and the
//! HorizontalPodAutoscaler read and write. A write changes the object's `spec.replicas`
//! (its generation moves, as any spec change) and answers the new Scale.

use std::sync::Arc;

use serde_json::{Value, json};

use super::write::{decode_body, existing, patch_error, writer};
use crate::ctx::Ctx;
use crate::kinds;
use crate::meta::Scope;
use crate::patch::{self, PatchType};
use crate::selector::string_form;
use crate::store::Stored;
use crate::write::commit;
use stalemate_wire::k8s::status::ApiError;

/// The Scale of `obj`.
pub(crate) fn of(obj: &Stored) -> Value {
    let v = &obj.value;
    let m = &v["metadata"];
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": m["name"], "namespace": m["namespace"], "uid": m["uid"],
            "resourceVersion": obj.rv.to_string(), "creationTimestamp": m["creationTimestamp"]},
        "spec": {"replicas": v["spec"]["replicas"].as_i64().unwrap_or(0)},
        "status": {"replicas": v["status"]["replicas"].as_i64().unwrap_or(0),
            "selector": string_form(&v["spec"]["selector"])},
    })
}

pub(crate) fn get(ctx: &Ctx) -> Result<Value, ApiError> {
    let st = ctx.sim.lock();
    let obj = existing(&st, ctx)?;
    Ok(of(&obj))
}

/// PUT a Scale: its `spec.replicas` becomes the object's (a `resourceVersion` in it is a
/// precondition).
pub(crate) fn update(ctx: &Ctx, body: &[u8]) -> Result<Value, ApiError> {
    let scale = decode_body(body)?;
    set_replicas(ctx, |_| Ok(scale))
}

/// PATCH a Scale (merge, JSON or strategic merge patch of the Scale object).
pub(crate) fn patch(ctx: &Ctx, content_type: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    let pt = content_type
        .and_then(PatchType::from_content_type)
        .filter(|pt| *pt != PatchType::Apply)
        .ok_or_else(|| ApiError::unsupported_media_type(patch::accepted_patch_types(false)))?;
    set_replicas(ctx, |current| {
        let mut doc = current.clone();
        patch::apply(&mut doc, pt, body).map_err(patch_error)?;
        Ok(doc)
    })
}

fn set_replicas(
    ctx: &Ctx,
    scale: impl FnOnce(&Value) -> Result<Value, ApiError>,
) -> Result<Value, ApiError> {
    let w = writer(ctx, "Update", None)?;
    let mut st = ctx.sim.lock();
    let old: Arc<Stored> = existing(&st, ctx)?;
    let name = old.name().to_string();
    let new = scale(&of(&old))?;
    let rv = new["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default();
    if !rv.is_empty() && rv != old.rv.to_string() {
        return Err(ApiError::conflict_modified(ctx.rt.group_resource(), &name));
    }
    let Some(replicas) = new["spec"]["replicas"].as_i64() else {
        return Err(ApiError::new(
            422,
            "Invalid",
            format!("Scale.autoscaling \"{name}\" is invalid: spec.replicas: Required value"),
        ));
    };
    if replicas < 0 {
        return Err(ApiError::new(
            422,
            "Invalid",
            format!(
                "Scale.autoscaling \"{name}\" is invalid: spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0"
            ),
        ));
    }
    let mut obj = old.value.clone();
    obj["spec"]["replicas"] = replicas.into();
    let scope = Scope::Main {
        status_subresource: ctx.rt.status_subresource,
    };
    let out = commit(&mut st, kinds::strategy, &ctx.rt, &old, obj, scope, &w)?;
    Ok(of(&out))
}
