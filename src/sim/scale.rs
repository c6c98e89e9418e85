//! The `scale` subresource (`deployments`, `replicasets`, `statefulsets`,
//! `replicationcontrollers`): an `autoscaling/v1` Scale of the object's
//! `spec.replicas`, `status.replicas` and selector — what `kubectl scale` and the
//! HorizontalPodAutoscaler read and write. A write changes the object's `spec.replicas`
//! (its generation moves, as any spec change) and answers the new Scale.

use std::sync::Arc;

use serde_json::{Value, json};

use super::http::Ctx;
use super::meta::Scope;
use super::patch::{self, PatchType};
use super::store::Stored;
use super::write;
use crate::status::ApiError;

/// The Scale of `obj`.
pub fn of(obj: &Stored) -> Value {
    let v = &obj.value;
    let m = &v["metadata"];
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": m["name"], "namespace": m["namespace"], "uid": m["uid"],
            "resourceVersion": obj.rv.to_string(), "creationTimestamp": m["creationTimestamp"]},
        "spec": {"replicas": v["spec"]["replicas"].as_i64().unwrap_or(0)},
        "status": {"replicas": v["status"]["replicas"].as_i64().unwrap_or(0),
            "selector": selector(&v["spec"]["selector"])},
    })
}

/// A label selector as the string form Scale carries (`app=web,tier in (a,b)`);
/// ReplicationControllers' selectors are plain maps.
pub fn selector(s: &Value) -> String {
    let labels = s.get("matchLabels").unwrap_or(s);
    let mut parts: Vec<String> = labels
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}")))
        .collect();
    for e in s["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            _ => format!("!{key}"),
        });
    }
    parts.sort();
    parts.join(",")
}

pub fn get(ctx: &Ctx) -> Result<Value, ApiError> {
    let st = ctx.sim.lock();
    let obj = write::existing(&st, ctx)?;
    Ok(of(&obj))
}

/// PUT a Scale: its `spec.replicas` becomes the object's (a `resourceVersion` in it is a
/// precondition).
pub fn update(ctx: &Ctx, body: &[u8]) -> Result<Value, ApiError> {
    let scale = write::decode_body(body)?;
    set_replicas(ctx, |_| Ok(scale))
}

/// PATCH a Scale (merge, JSON or strategic merge patch of the Scale object).
pub fn patch(ctx: &Ctx, content_type: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    let pt = content_type
        .and_then(PatchType::from_content_type)
        .filter(|pt| *pt != PatchType::Apply)
        .ok_or_else(|| ApiError::unsupported_media_type(patch::accepted_patch_types(false)))?;
    set_replicas(ctx, |current| {
        let mut doc = current.clone();
        patch::apply(&mut doc, pt, body).map_err(write::patch_error)?;
        Ok(doc)
    })
}

fn set_replicas(
    ctx: &Ctx,
    scale: impl FnOnce(&Value) -> Result<Value, ApiError>,
) -> Result<Value, ApiError> {
    let w = write::writer(ctx, "Update", None)?;
    let mut st = ctx.sim.lock();
    let old: Arc<Stored> = write::existing(&st, ctx)?;
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
    let out = write::commit(&mut st, &ctx.rt, &old, obj, scope, &w)?;
    Ok(of(&out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_as_strings() {
        assert_eq!(
            selector(&json!({"matchLabels": {"b": "2", "a": "1"}})),
            "a=1,b=2"
        );
        assert_eq!(selector(&json!({"app": "rc"})), "app=rc");
        assert_eq!(
            selector(
                &json!({"matchExpressions": [{"key": "t", "operator": "In", "values": ["x", "y"]}]})
            ),
            "t in (x,y)"
        );
    }
}
