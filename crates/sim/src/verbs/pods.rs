//! The pods' own subresources: `pods/binding` (and the `bindings` resource) — what
//! kube-scheduler posts: the pod assigned to a node (`spec.nodeName`), once — and
//! `pods/eviction`: the pod deleted (PodDisruptionBudgets are not consulted).

use serde_json::{Value, json};

use super::delete::delete;
use super::write::{decode_body, writer};
use crate::ctx::Ctx;
use crate::kinds;
use crate::meta::Scope;
use crate::write::commit;
use stalemate_wire::k8s::status::ApiError;

fn success(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code})
}

/// `POST pods/NAME/binding` (or `POST bindings` naming the pod): `spec.nodeName` set to
/// the target node's name, once — a second binding is a 409, as on a real apiserver.
pub(crate) fn bind(ctx: &Ctx, body: &[u8]) -> Result<Value, ApiError> {
    let binding = decode_body(body)?;
    let pod_name = match &ctx.req.name {
        Some(n) => n.clone(),
        None => binding["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    };
    let node = binding["target"]["name"].as_str().unwrap_or_default();
    if node.is_empty() {
        return Err(ApiError::new(
            422,
            "Invalid",
            format!("Binding \"{pod_name}\" is invalid: target.name: Required value"),
        ));
    }
    let mut w = writer(ctx, "Update", None)?;
    w.internal = true;
    let ns = ctx.req.namespace.clone().unwrap_or_default();
    let mut st = ctx.sim.lock();
    let reg = st.registry.clone();
    let Some(pods) = reg.find("", "v1", "pods") else {
        return Err(ApiError::page_not_found());
    };
    let pods_gr = pods.group_resource();
    let old = st
        .get("/pods", &ns, &pod_name)
        .cloned()
        .ok_or_else(|| ApiError::not_found(pods_gr, &pod_name))?;
    if let Some(on) = old.value["spec"]["nodeName"]
        .as_str()
        .filter(|n| !n.is_empty())
    {
        return Err(ApiError::conflict(
            pods_gr,
            &pod_name,
            &format!("pod {pod_name} is already assigned to node \"{on}\""),
        ));
    }
    let mut pod = old.value.clone();
    pod["spec"]["nodeName"] = node.into();
    let scope = Scope::Main {
        status_subresource: true,
    };
    commit(&mut st, kinds::strategy, pods, &old, pod, scope, &w)?;
    Ok(success(201))
}

/// `POST pods/NAME/eviction`: the pod deleted.
pub(crate) fn evict(ctx: &Ctx) -> Result<Value, ApiError> {
    delete(ctx, b"")?;
    Ok(success(201))
}
