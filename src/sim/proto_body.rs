//! Protobuf request bodies, decoded into JSON.
//!
//! client-go ≥ 0.32 typed clients send built-in objects as protobuf (kubectl 1.33's
//! `create namespace`, controller-runtime's Lease updates for leader election), and do not
//! fall back to JSON on a 415. The simulator therefore decodes the kinds it stores, from
//! field tables transcribed from `k8s.io/api/*/generated.proto`, and the self-reviews
//! kubectl 1.33 sends; other kinds (Deployment, whose pod template is large) still get
//! 415 — recorded as something the simulator could not answer (`run` and `explore` stop
//! and say so).

use base64::Engine;
use serde_json::{Map, Value};

use crate::protobuf::{Fields, Wire, WireError, unwrap_unknown};

#[derive(Clone, Copy)]
enum T {
    Str,
    Int,
    Bool,
    /// `metav1.Time` (seconds, nanos) as RFC 3339 seconds.
    Time,
    /// `metav1.MicroTime` as RFC 3339 with microseconds.
    MicroTime,
    Msg(&'static [F]),
    MapStr,
    MapB64,
    /// `metav1.FieldsV1{raw}`: the raw bytes are JSON.
    FieldsV1,
}

struct F(u32, &'static str, T, bool);

const OWNER_REF: &[F] = &[
    F(5, "apiVersion", T::Str, false),
    F(1, "kind", T::Str, false),
    F(3, "name", T::Str, false),
    F(4, "uid", T::Str, false),
    F(6, "controller", T::Bool, false),
    F(7, "blockOwnerDeletion", T::Bool, false),
];
const MANAGED: &[F] = &[
    F(1, "manager", T::Str, false),
    F(2, "operation", T::Str, false),
    F(3, "apiVersion", T::Str, false),
    F(4, "time", T::Time, false),
    F(6, "fieldsType", T::Str, false),
    F(7, "fieldsV1", T::FieldsV1, false),
    F(8, "subresource", T::Str, false),
];
const META: &[F] = &[
    F(1, "name", T::Str, false),
    F(2, "generateName", T::Str, false),
    F(3, "namespace", T::Str, false),
    F(4, "selfLink", T::Str, false),
    F(5, "uid", T::Str, false),
    F(6, "resourceVersion", T::Str, false),
    F(7, "generation", T::Int, false),
    F(8, "creationTimestamp", T::Time, false),
    F(9, "deletionTimestamp", T::Time, false),
    F(10, "deletionGracePeriodSeconds", T::Int, false),
    F(11, "labels", T::MapStr, false),
    F(12, "annotations", T::MapStr, false),
    F(13, "ownerReferences", T::Msg(OWNER_REF), true),
    F(14, "finalizers", T::Str, true),
    F(17, "managedFields", T::Msg(MANAGED), true),
];
const OBJECT_REF: &[F] = &[
    F(1, "kind", T::Str, false),
    F(2, "namespace", T::Str, false),
    F(3, "name", T::Str, false),
    F(4, "uid", T::Str, false),
    F(5, "apiVersion", T::Str, false),
    F(6, "resourceVersion", T::Str, false),
    F(7, "fieldPath", T::Str, false),
];
const CONFIGMAP: &[F] = &[
    F(1, "metadata", T::Msg(META), false),
    F(4, "immutable", T::Bool, false),
    F(2, "data", T::MapStr, false),
    F(3, "binaryData", T::MapB64, false),
];
const SECRET: &[F] = &[
    F(1, "metadata", T::Msg(META), false),
    F(5, "immutable", T::Bool, false),
    F(2, "data", T::MapB64, false),
    F(4, "stringData", T::MapStr, false),
    F(3, "type", T::Str, false),
];
const NAMESPACE: &[F] = &[
    F(1, "metadata", T::Msg(META), false),
    F(
        2,
        "spec",
        T::Msg(&[F(1, "finalizers", T::Str, true)]),
        false,
    ),
    F(3, "status", T::Msg(&[F(1, "phase", T::Str, false)]), false),
];
const SERVICE_ACCOUNT: &[F] = &[
    F(1, "metadata", T::Msg(META), false),
    F(2, "secrets", T::Msg(OBJECT_REF), true),
    F(
        3,
        "imagePullSecrets",
        T::Msg(&[F(1, "name", T::Str, false)]),
        true,
    ),
    F(4, "automountServiceAccountToken", T::Bool, false),
];
const LEASE: &[F] = &[
    F(1, "metadata", T::Msg(META), false),
    F(
        2,
        "spec",
        T::Msg(&[
            F(1, "holderIdentity", T::Str, false),
            F(2, "leaseDurationSeconds", T::Int, false),
            F(3, "acquireTime", T::MicroTime, false),
            F(4, "renewTime", T::MicroTime, false),
            F(5, "leaseTransitions", T::Int, false),
            F(6, "strategy", T::Str, false),
            F(7, "preferredHolder", T::Str, false),
        ]),
        false,
    ),
];
const EVENT: &[F] = &[
    F(1, "metadata", T::Msg(META), false),
    F(2, "involvedObject", T::Msg(OBJECT_REF), false),
    F(3, "reason", T::Str, false),
    F(4, "message", T::Str, false),
    F(
        5,
        "source",
        T::Msg(&[
            F(1, "component", T::Str, false),
            F(2, "host", T::Str, false),
        ]),
        false,
    ),
    F(6, "firstTimestamp", T::Time, false),
    F(7, "lastTimestamp", T::Time, false),
    F(8, "count", T::Int, false),
    F(9, "type", T::Str, false),
    F(10, "eventTime", T::MicroTime, false),
    F(
        11,
        "series",
        T::Msg(&[
            F(1, "count", T::Int, false),
            F(2, "lastObservedTime", T::MicroTime, false),
        ]),
        false,
    ),
    F(12, "action", T::Str, false),
    F(13, "related", T::Msg(OBJECT_REF), false),
    F(14, "reportingComponent", T::Str, false),
    F(15, "reportingInstance", T::Str, false),
];
const DELETE_OPTIONS: &[F] = &[
    F(1, "gracePeriodSeconds", T::Int, false),
    F(
        2,
        "preconditions",
        T::Msg(&[
            F(1, "uid", T::Str, false),
            F(2, "resourceVersion", T::Str, false),
        ]),
        false,
    ),
    F(3, "orphanDependents", T::Bool, false),
    F(4, "propagationPolicy", T::Str, false),
    F(5, "dryRun", T::Str, true),
];

const SELF_SUBJECT_REVIEW: &[F] = &[F(1, "metadata", T::Msg(META), false)];
const RESOURCE_ATTRIBUTES: &[F] = &[
    F(1, "namespace", T::Str, false),
    F(2, "verb", T::Str, false),
    F(3, "group", T::Str, false),
    F(4, "version", T::Str, false),
    F(5, "resource", T::Str, false),
    F(6, "subresource", T::Str, false),
    F(7, "name", T::Str, false),
];
const SELF_SUBJECT_ACCESS_REVIEW: &[F] = &[
    F(1, "metadata", T::Msg(META), false),
    F(
        2,
        "spec",
        T::Msg(&[
            F(1, "resourceAttributes", T::Msg(RESOURCE_ATTRIBUTES), false),
            F(
                2,
                "nonResourceAttributes",
                T::Msg(&[F(1, "path", T::Str, false), F(2, "verb", T::Str, false)]),
                false,
            ),
        ]),
        false,
    ),
];
const SELF_SUBJECT_RULES_REVIEW: &[F] = &[
    F(1, "metadata", T::Msg(META), false),
    F(
        2,
        "spec",
        T::Msg(&[F(1, "namespace", T::Str, false)]),
        false,
    ),
];

fn table_for(kind: &str) -> Option<&'static [F]> {
    Some(match kind {
        "ConfigMap" => CONFIGMAP,
        "Secret" => SECRET,
        "Namespace" => NAMESPACE,
        "ServiceAccount" => SERVICE_ACCOUNT,
        "Lease" => LEASE,
        "Event" => EVENT,
        "DeleteOptions" => DELETE_OPTIONS,
        // kubectl ≥ 1.33 sends these as protobuf (`auth whoami`, `auth can-i`).
        "SelfSubjectReview" => SELF_SUBJECT_REVIEW,
        "SelfSubjectAccessReview" => SELF_SUBJECT_ACCESS_REVIEW,
        "SelfSubjectRulesReview" => SELF_SUBJECT_RULES_REVIEW,
        _ => return None,
    })
}

fn str_of(b: &[u8]) -> Value {
    Value::String(String::from_utf8_lossy(b).into_owned())
}

fn time_of(b: &[u8], micros: bool) -> Result<Value, WireError> {
    let (mut secs, mut nanos) = (0i64, 0i64);
    for f in Fields::new(b) {
        match f? {
            (1, Wire::Varint(v)) => secs = v as i64,
            (2, Wire::Varint(v)) => nanos = v as i64,
            _ => {}
        }
    }
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64);
    let base = humantime::format_rfc3339_seconds(t).to_string();
    Ok(Value::String(if micros {
        format!("{}.{:06}Z", base.trim_end_matches('Z'), nanos / 1000)
    } else {
        base
    }))
}

fn map_entry(b: &[u8], b64: bool) -> Result<(String, Value), WireError> {
    let (mut k, mut v) = (String::new(), Value::String(String::new()));
    for f in Fields::new(b) {
        match f? {
            (1, Wire::Bytes(x)) => k = String::from_utf8_lossy(x).into_owned(),
            (2, Wire::Bytes(x)) => {
                v = if b64 {
                    Value::String(base64::engine::general_purpose::STANDARD.encode(x))
                } else {
                    str_of(x)
                }
            }
            _ => {}
        }
    }
    Ok((k, v))
}

fn decode_message(b: &[u8], table: &[F]) -> Result<Value, WireError> {
    let mut out = Map::new();
    for f in Fields::new(b) {
        let (num, wire) = f?;
        let Some(F(_, name, t, repeated)) = table.iter().find(|f| f.0 == num) else {
            continue;
        };
        let v = match (t, wire) {
            (T::Str, Wire::Bytes(x)) => str_of(x),
            (T::Int, Wire::Varint(x)) => Value::from(x as i64),
            (T::Bool, Wire::Varint(x)) => Value::Bool(x != 0),
            (T::Time, Wire::Bytes(x)) => time_of(x, false)?,
            (T::MicroTime, Wire::Bytes(x)) => time_of(x, true)?,
            (T::Msg(sub), Wire::Bytes(x)) => decode_message(x, sub)?,
            (T::FieldsV1, Wire::Bytes(x)) => {
                let mut raw = &[][..];
                for g in Fields::new(x) {
                    if let (1, Wire::Bytes(r)) = g? {
                        raw = r;
                    }
                }
                serde_json::from_slice(raw).unwrap_or(Value::Object(Map::new()))
            }
            (T::MapStr | T::MapB64, Wire::Bytes(x)) => {
                let (k, v) = map_entry(x, matches!(t, T::MapB64))?;
                let m = out
                    .entry(name.to_string())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(m) = m.as_object_mut() {
                    m.insert(k, v);
                }
                continue;
            }
            _ => {
                return Err(WireError {
                    offset: 0,
                    what: "field has an unexpected wire type",
                });
            }
        };
        if *repeated {
            if let Some(a) = out
                .entry(name.to_string())
                .or_insert_with(|| Value::Array(vec![]))
                .as_array_mut()
            {
                a.push(v);
            }
        } else {
            out.insert(name.to_string(), v);
        }
    }
    Ok(Value::Object(out))
}

/// Why a protobuf body could not be used.
#[derive(Debug)]
pub enum ProtoError {
    /// The kind is not one the simulator decodes.
    Unsupported(String),
    Malformed(WireError),
}

/// Decode a `k8s\0`-wrapped object into its JSON form. `default_kind` is used when the
/// envelope carries no kind.
pub fn decode(body: &[u8], default_kind: &str) -> Result<Value, ProtoError> {
    let (api_version, kind, raw) = unwrap_unknown(body).map_err(ProtoError::Malformed)?;
    let kind = if kind.is_empty() {
        default_kind.to_string()
    } else {
        kind
    };
    let table = table_for(&kind).ok_or_else(|| ProtoError::Unsupported(kind.clone()))?;
    let mut v = decode_message(raw, table).map_err(ProtoError::Malformed)?;
    if let Some(m) = v.as_object_mut()
        && kind != "DeleteOptions"
    {
        let mut out = Map::new();
        out.insert("kind".into(), kind.into());
        if !api_version.is_empty() {
            out.insert("apiVersion".into(), api_version.into());
        }
        out.extend(std::mem::take(m));
        return Ok(Value::Object(out));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_recorded_configmap() {
        // fixtures: the same object fetched as protobuf and (in the list) as JSON.
        let body = include_bytes!("../../fixtures/kube-apiserver-1.28/cm-get-protobuf.body");
        let v = decode(body, "ConfigMap").unwrap();
        assert_eq!(v["kind"], "ConfigMap");
        assert_eq!(v["metadata"]["name"], "cm-0");
        assert_eq!(v["metadata"]["namespace"], "fixtures");
        assert_eq!(v["metadata"]["labels"]["i"], "0");
        assert_eq!(v["data"]["k"], "changed");
        assert_eq!(v["metadata"]["creationTimestamp"], "2026-11-22T05:30:26Z");
        assert_eq!(v["metadata"]["managedFields"][0]["manager"], "curl");
        assert_eq!(
            v["metadata"]["managedFields"][0]["fieldsV1"]["f:data"]["f:k"],
            serde_json::json!({})
        );
    }

    #[test]
    fn malformed_and_unsupported() {
        assert!(matches!(
            decode(b"nope", "ConfigMap"),
            Err(ProtoError::Malformed(_))
        ));
        let mut w = crate::protobuf::Writer::default();
        w.message(1, |t| {
            t.string(1, "apps/v1").string(2, "Deployment");
        });
        let mut body = crate::protobuf::MAGIC.to_vec();
        body.extend_from_slice(&w.buf);
        assert!(matches!(
            decode(&body, "Deployment"),
            Err(ProtoError::Unsupported(_))
        ));
        let mut trunc =
            include_bytes!("../../fixtures/kube-apiserver-1.28/cm-get-protobuf.body").to_vec();
        trunc.truncate(trunc.len() - 7);
        assert!(decode(&trunc, "ConfigMap").is_err());
    }
}
