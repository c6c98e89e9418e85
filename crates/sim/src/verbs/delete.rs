//! The delete verbs: DELETE of one object (its options: preconditions, `dryRun`) and of
//! a collection, handed to the generic delete (`delete.rs`) with the kind's strategy.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::read::Filter;
use super::write::{decode_body, existing};
use crate::ctx::Ctx;
use crate::delete::delete_object;
use crate::kinds;
use crate::resource_type::ResourceType;
use crate::store::Stored;
use stalemate_wire::k8s::status::{self, ApiError};

/// What a DELETE answers: the object (still there, or for types that return it) or a
/// `Status` of success.
pub(crate) enum Deleted {
    Object(Arc<Stored>),
    Status(Value),
}

/// DELETE of one object, with its preconditions and `dryRun`.
pub(crate) fn delete(ctx: &Ctx, body: &[u8]) -> Result<Deleted, ApiError> {
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
    let (obj, gone) = delete_object(&mut st, kinds::strategy, &ctx.rt, &old, dry_run);
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
pub(crate) fn delete_collection(ctx: &Ctx, filter: &Filter) -> Result<Vec<Arc<Stored>>, ApiError> {
    let mut st = ctx.sim.lock();
    let objs: Vec<Arc<Stored>> = st
        .iter(&ctx.rt.storage_key(), ctx.req.namespace.as_deref())
        .filter(|o| filter.matches(o))
        .cloned()
        .collect();
    let dry_run = ctx.query("dryRun") == Some("All");
    Ok(objs
        .iter()
        .map(|o| delete_object(&mut st, kinds::strategy, &ctx.rt, o, dry_run).0)
        .collect())
}

/// Items of a `…List` body from a sequence of objects (deletecollection's answer).
pub(crate) fn list_body(rt: &ResourceType, rv: u64, objs: &[Arc<Stored>]) -> Value {
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
