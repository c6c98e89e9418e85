//! A minimal OpenAPI v3 document per group-version.
//!
//! kubectl (≥ 1.27) will not create or apply anything before it knows whether the server
//! validates fields itself: it looks for a `fieldValidation` parameter on the PATCH
//! operation of the object's kind in `/openapi/v3/<gv>`
//! (`cli-runtime/pkg/resource/query_param_verifier_v3.go`); without OpenAPI it refuses
//! ("failed to download openapi"). So each served kind gets one path whose PATCH carries
//! that parameter. No schemas are published: the PATCH operations have no request body,
//! which tells `kubectl apply` to build its strategic merge patches from its compiled-in
//! types (`apply/patcher.go gvkSupportsPatchOpenAPIV3`), as it does for older servers.

use std::hash::{Hash, Hasher};

use serde_json::{Map, Value, json};

use super::registry::Registry;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The GV document, or `None` when the group-version is not served.
pub(crate) fn group_version(
    reg: &Registry,
    group: &str,
    version: &str,
    kube_minor: u32,
) -> Option<Value> {
    let mut paths = Map::new();
    for t in reg
        .in_group_version(group, version)
        .filter(|t| !t.virtual_create)
    {
        let base = format!("/{}", gv_path(group, version));
        let path = if t.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
        } else {
            format!("{base}/{}/{{name}}", t.plural)
        };
        let gvk = json!({"group": t.group, "version": t.version, "kind": t.kind});
        paths.insert(
            path,
            json!({"patch": {
                "description": format!("partially update the specified {}", t.kind),
                "operationId": format!("patch{}", t.kind),
                "parameters": [
                    {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "force", "in": "query", "schema": {"type": "boolean", "uniqueItems": true}}
                ],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk
            }}),
        );
    }
    if paths.is_empty() {
        return None;
    }
    Some(
        json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": format!("v1.{kube_minor}.0")},
        "paths": paths, "components": {"schemas": {}}}),
    )
}

/// `/openapi/v3`: where each group-version's document is, with a content hash so clients
/// cache a document only as long as it is current.
pub(crate) fn index(reg: &Registry, kube_minor: u32) -> Value {
    let mut paths = Map::new();
    for (g, versions) in reg.groups() {
        for v in versions {
            let Some(doc) = group_version(reg, &g, &v, kube_minor) else {
                continue;
            };
            let mut h = std::collections::hash_map::DefaultHasher::new();
            doc.to_string().hash(&mut h);
            let p = gv_path(&g, &v);
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={:016X}", h.finish())}),
            );
        }
    }
    json!({"paths": paths})
}

/// Media type a client asks for the protobuf OpenAPI v2 document with (the response is
/// `application/octet-stream`, as kube-openapi's handler sends it: Go cannot parse this one).
pub(crate) const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The OpenAPI v2 document (gnostic `openapi.v2.Document`), protobuf-encoded: one PATCH
/// operation per kind with the `fieldValidation` query parameter and the
/// `x-kubernetes-group-version-kind` extension (as YAML, the way gnostic carries it).
pub(crate) fn v2_protobuf(reg: &Registry, kube_minor: u32) -> Vec<u8> {
    use stalemate_wire::k8s::protobuf::Writer;
    let mut doc = Writer::default();
    doc.string(1, "2.0");
    doc.message(2, |info| {
        info.string(1, "Kubernetes")
            .string(2, &format!("v1.{kube_minor}.0"));
    });
    doc.message(8, |paths| {
        for t in reg.all().iter().filter(|t| !t.virtual_create) {
            let base = format!("/{}", gv_path(&t.group, &t.version));
            let path = if t.namespaced {
                format!("{base}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
            } else {
                format!("{base}/{}/{{name}}", t.plural)
            };
            let gvk_yaml = format!(
                "group: \"{}\"\nkind: {}\nversion: {}\n",
                t.group, t.kind, t.version
            );
            paths.message(2, |named| {
                named.string(1, &path);
                named.message(2, |item| {
                    // PathItem.patch = 8
                    item.message(8, |op| {
                        op.string(5, &format!("patch{}", t.kind));
                        for p in ["dryRun", "fieldManager", "fieldValidation", "force"] {
                            // Operation.parameters = 8 → ParametersItem.parameter = 1 →
                            // Parameter.non_body_parameter = 2 → query_parameter_sub_schema = 3
                            op.message(8, |pi| {
                                pi.message(1, |param| {
                                    param.message(2, |nb| {
                                        nb.message(3, |q| {
                                            q.string(2, "query").string(4, p).string(6, "string");
                                        });
                                    });
                                });
                            });
                        }
                        // Operation.vendor_extension = 13 (NamedAny{name, Any{yaml = 2}})
                        op.message(13, |ext| {
                            ext.string(1, "x-kubernetes-group-version-kind");
                            ext.message(2, |any| {
                                any.string(2, &gvk_yaml);
                            });
                        });
                    });
                });
            });
        }
    });
    doc.buf
}
