//! Whether a write carries a precondition: the only writes a real kube-apiserver can
//! answer `409 Conflict` ("the object has been modified"). A create never gets that (its
//! 409 is `AlreadyExists`); a patch without `metadata.resourceVersion` is applied to
//! whatever the object is now, the apiserver retrying its own storage conflicts.
//!
//! Evidence (Kubernetes v1.33, `staging/src/k8s.io/apiserver/pkg/`):
//! - `registry/generic/registry/store.go`, `Update`: an object whose resourceVersion is
//!   not the stored one is `NewConflict(…, OptimisticLockErrorMsg)`; with none it is an
//!   unconditional update (`AllowUnconditionalUpdate`).
//! - `endpoints/handlers/patch.go`: the patch is applied inside `GuaranteedUpdate`'s
//!   retry loop to the current object; only a resourceVersion the patch itself sets
//!   can conflict.
//! - `storage/etcd3/store.go` `conditionalDelete` + `storage/errors/storage.go`
//!   `InterpretDeleteError`: a delete whose `preconditions` (uid, resourceVersion) do not
//!   hold is a 409 Conflict.
//!
//! So the proxy reads the body of updates, patches and deletes (they are small: the
//! apiserver refuses bodies over 3 MiB) and passes it on unchanged; a body larger than
//! that, or one it cannot read, is passed on as it came and counts as unconditioned.

use bytes::{Bytes, BytesMut};
use http::Request;
use http_body_util::BodyExt;
use serde_json::Value;

use crate::k8s::protobuf::{Fields, Wire, unwrap_unknown};
use crate::k8s::request::Verb;
use crate::listen::{Body, BodyError};

/// The apiserver's request body limit (`--max-request-bytes`' default, 3 MiB).
const MAX_BODY: usize = 3 * 1024 * 1024;

/// Whether the request carries a precondition; its body is put back as it came.
pub async fn read(req: Request<Body>, verb: Verb) -> (Request<Body>, bool) {
    if !matches!(verb, Verb::Update | Verb::Patch | Verb::Delete) {
        return (req, false);
    }
    let (parts, mut body) = req.into_parts();
    let mut buf = BytesMut::new();
    loop {
        match body.frame().await {
            None => break,
            // Trailers on a write: nothing a Kubernetes client sends; dropped.
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    buf.extend_from_slice(&data);
                    if buf.len() > MAX_BODY {
                        // Too large to be a real write: pass it on, read so far and rest.
                        let head =
                            http_body_util::Full::new(buf.freeze()).map_err(|never| match never {});
                        let rest = StreamAfter { head, rest: body };
                        return (Request::from_parts(parts, rest.boxed()), false);
                    }
                }
            }
            Some(Err(e)) => {
                // The client's body broke off: the upstream gets the same error.
                let failed =
                    http_body_util::Full::new(buf.freeze()).map_err(|never| match never {});
                let rest = StreamAfter {
                    head: failed,
                    rest: FailedBody(Some(e)).boxed(),
                };
                return (Request::from_parts(parts, rest.boxed()), false);
            }
        }
    }
    let bytes = buf.freeze();
    let content_type = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let carries = carries_precondition(verb, content_type, &bytes);
    let body = http_body_util::Full::new(bytes)
        .map_err(|never| match never {})
        .boxed();
    (Request::from_parts(parts, body), carries)
}

/// Whether a write's body sets a precondition, by its content type.
pub fn carries_precondition(verb: Verb, content_type: &str, body: &[u8]) -> bool {
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if media == "application/vnd.kubernetes.protobuf" {
        return proto_precondition(verb, body);
    }
    let value: Option<Value> = if media == "application/apply-patch+yaml" {
        serde_saphyr::from_slice(body).ok()
    } else {
        serde_json::from_slice(body).ok()
    };
    let Some(value) = value else { return false };
    match (verb, media.as_str()) {
        (Verb::Delete, _) => {
            let p = &value["preconditions"];
            nonempty(&p["resourceVersion"]) || nonempty(&p["uid"])
        }
        // A JSON patch sets (or tests) the resourceVersion with an operation on its path.
        (Verb::Patch, "application/json-patch+json") => value.as_array().is_some_and(|ops| {
            ops.iter().any(|op| {
                op["path"] == "/metadata/resourceVersion"
                    && matches!(op["op"].as_str(), Some("add" | "replace" | "test"))
                    && nonempty(&op["value"])
            })
        }),
        _ => nonempty(&value["metadata"]["resourceVersion"]),
    }
}

fn nonempty(v: &Value) -> bool {
    v.as_str().is_some_and(|s| !s.is_empty())
}

/// `k8s\0` + Unknown{raw}: an object's ObjectMeta is its field 1, resourceVersion field
/// 6 of that; DeleteOptions' preconditions are field 2 (uid 1, resourceVersion 2).
fn proto_precondition(verb: Verb, body: &[u8]) -> bool {
    let Ok((_, kind, raw)) = unwrap_unknown(body) else {
        return false;
    };
    let (outer, inner) = match (verb, kind.as_str()) {
        (Verb::Delete, "DeleteOptions") => (2, [1u32, 2].as_slice()),
        (Verb::Delete, _) => return false,
        _ => (1, [6u32].as_slice()),
    };
    Fields::new(raw).flatten().any(|f| match f {
        (n, Wire::Bytes(m)) if n == outer => Fields::new(m)
            .flatten()
            .any(|g| matches!(g, (k, Wire::Bytes(v)) if inner.contains(&k) && !v.is_empty())),
        _ => false,
    })
}

/// A body already read in part (`head`), then the rest of the original.
struct StreamAfter<H> {
    head: H,
    rest: Body,
}

impl<H> http_body::Body for StreamAfter<H>
where
    H: http_body::Body<Data = Bytes, Error = BodyError> + Unpin,
{
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BodyError>>> {
        if !self.head.is_end_stream() {
            match std::pin::Pin::new(&mut self.head).poll_frame(cx) {
                std::task::Poll::Ready(None) => {}
                other => return other,
            }
        }
        std::pin::Pin::new(&mut self.rest).poll_frame(cx)
    }
}

/// A body that fails with the client's error.
struct FailedBody(Option<BodyError>);

impl http_body::Body for FailedBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BodyError>>> {
        std::task::Poll::Ready(self.0.take().map(Err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_preconditions_as_the_apiserver_would() {
        let json = "application/json";
        let rv = br#"{"metadata": {"name": "a", "resourceVersion": "7"}}"#;
        let none = br#"{"metadata": {"name": "a"}, "data": {"k": "v"}}"#;
        assert!(carries_precondition(Verb::Update, json, rv));
        assert!(!carries_precondition(Verb::Update, json, none));
        for merge in [
            "application/merge-patch+json",
            "application/strategic-merge-patch+json; charset=utf-8",
        ] {
            assert!(carries_precondition(Verb::Patch, merge, rv));
            assert!(!carries_precondition(Verb::Patch, merge, none));
        }
        let jp = "application/json-patch+json";
        assert!(carries_precondition(
            Verb::Patch,
            jp,
            br#"[{"op": "test", "path": "/metadata/resourceVersion", "value": "7"}, {"op": "replace", "path": "/spec/replicas", "value": 2}]"#
        ));
        assert!(!carries_precondition(
            Verb::Patch,
            jp,
            br#"[{"op": "replace", "path": "/spec/replicas", "value": 2}]"#
        ));
        assert!(carries_precondition(
            Verb::Patch,
            "application/apply-patch+yaml",
            b"metadata:\n  name: a\n  resourceVersion: \"7\"\n"
        ));
        assert!(carries_precondition(
            Verb::Delete,
            json,
            br#"{"kind": "DeleteOptions", "preconditions": {"uid": "u-1"}}"#
        ));
        assert!(!carries_precondition(
            Verb::Delete,
            json,
            br#"{"kind": "DeleteOptions", "propagationPolicy": "Background"}"#
        ));
        assert!(!carries_precondition(Verb::Update, json, b"not json"));
        assert!(!carries_precondition(Verb::Delete, json, b""));
    }

    #[test]
    fn reads_protobuf_bodies() {
        use crate::k8s::protobuf::envelope;
        // ObjectMeta{name = 1: "a", resourceVersion = 6: "7"} as field 1 of a ConfigMap.
        let meta = [&[0x0a, 1][..], b"a", &[0x32, 1], b"7"].concat();
        let object = [&[0x0a, meta.len() as u8][..], &meta].concat();
        let body = envelope("v1", "ConfigMap", &object);
        let proto = "application/vnd.kubernetes.protobuf";
        assert!(carries_precondition(Verb::Update, proto, &body));
        let meta = [&[0x0a, 1][..], b"a"].concat();
        let object = [&[0x0a, meta.len() as u8][..], &meta].concat();
        assert!(!carries_precondition(
            Verb::Update,
            proto,
            &envelope("v1", "ConfigMap", &object)
        ));
        // DeleteOptions{preconditions = 2: {resourceVersion = 2: "7"}}.
        let pre = [&[0x12, 1][..], b"7"].concat();
        let opts = [&[0x12, pre.len() as u8][..], &pre].concat();
        assert!(carries_precondition(
            Verb::Delete,
            proto,
            &envelope("v1", "DeleteOptions", &opts)
        ));
    }

    #[tokio::test]
    async fn the_body_goes_on_unchanged() {
        let body = br#"{"metadata": {"resourceVersion": "3"}}"#.to_vec();
        let req = Request::put("/api/v1/namespaces/d/configmaps/a")
            .header("content-type", "application/json")
            .body(
                http_body_util::Full::new(Bytes::from(body.clone()))
                    .map_err(|never| match never {})
                    .boxed(),
            )
            .unwrap();
        let (req, carries) = read(req, Verb::Update).await;
        assert!(carries);
        let got = req.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&got[..], &body[..]);

        let big = vec![b' '; MAX_BODY + 10];
        let req = Request::put("/x")
            .body(
                http_body_util::Full::new(Bytes::from(big.clone()))
                    .map_err(|never| match never {})
                    .boxed(),
            )
            .unwrap();
        let (req, carries) = read(req, Verb::Patch).await;
        assert!(!carries);
        let got = req.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(got.len(), big.len());
    }
}
