//! The simulator's request handler: route, negotiate, read the body, dispatch.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Method, Request, Response};
use serde_json::{Value, json};

use super::auth::{self, UserInfo};
use super::ctx::Ctx;
use super::instance::{CloseMode, Sim};
use super::negotiate::{Reply, negotiate, wants_pretty};
use super::resource_type::{Answer, ResourceType};
use super::verbs::{delete, pods, read, scale, watch, write};
use super::{discovery, openapi, proto_body};
use stalemate_wire::k8s::request::{self, RequestInfo, ResourceRequest, Verb};
use stalemate_wire::k8s::status::ApiError;
use stalemate_wire::listen::{Body, Peer};

fn header<'a>(req: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// Responses over 128 KiB are gzipped for clients that accept it, as the apiserver's
/// `APIResponseCompression` does (`fixtures/.../cm-list-gzip`).
const GZIP_THRESHOLD: usize = 128 * 1024;

pub(crate) async fn handle(sim: Arc<Sim>, req: Request<Incoming>, peer: Peer) -> Response<Body> {
    let audit_id = header(&req, "audit-id")
        .and_then(|v| HeaderValue::from_str(v).ok())
        .unwrap_or_else(|| {
            HeaderValue::from_str(&uuid::Uuid::new_v4().to_string())
                .unwrap_or(HeaderValue::from_static("0"))
        });
    let query: HashMap<String, String> = request::query_pairs(req.uri().query().unwrap_or(""))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let reply = Reply {
        pretty: wants_pretty(
            query.get("pretty").map(String::as_str),
            header(&req, "user-agent"),
        ),
        audit_id,
    };
    if req.uri().path().starts_with("/_sim/") && req.uri().path() != "/_sim/echo" {
        return admin(&sim, &req, &reply);
    }
    // Authentication comes first, for every API path (and for the upgrade stand-in, so
    // a proxy's upgrade connections are held to the same rule).
    let authenticated = sim.auth.authenticate(
        peer.client_cert.as_deref().map(|c| c.as_ref()),
        header(&req, "authorization"),
    );
    let user = match authenticated {
        Ok(u) => u,
        Err(e) => return reply.error(&e),
    };
    if req.uri().path() == "/_sim/echo" {
        return echo_upgrade(req, &reply);
    }
    sim.wait_unpaused().await;
    let gzip = header(&req, "accept-encoding")
        .is_some_and(|a| a.split(',').any(|e| e.trim().starts_with("gzip")));
    let resp = match route(&sim, req, peer, user, reply.clone(), query).await {
        Ok(r) => r,
        Err(e) => reply.error(&e),
    };
    if gzip {
        compress(watch::gzip_watch_list(resp)).await
    } else {
        resp
    }
}

async fn compress(resp: Response<Body>) -> Response<Body> {
    use http_body::Body as _;
    let big = resp
        .body()
        .size_hint()
        .exact()
        .is_some_and(|n| n as usize > GZIP_THRESHOLD);
    if !big {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(collected) = body.collect().await else {
        return Response::from_parts(parts, stalemate_wire::listen::body::full(Bytes::new()));
    };
    let bytes = collected.to_bytes();
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 4),
        flate2::Compression::fast(),
    );
    use std::io::Write;
    if enc.write_all(&bytes).is_err() {
        return Response::from_parts(parts, stalemate_wire::listen::body::full(bytes));
    }
    let Ok(gz) = enc.finish() else {
        return Response::from_parts(parts, stalemate_wire::listen::body::full(bytes));
    };
    parts
        .headers
        .insert("content-encoding", HeaderValue::from_static("gzip"));
    parts.headers.remove("content-length");
    Response::from_parts(parts, stalemate_wire::listen::body::full(gz))
}

async fn route(
    sim: &Arc<Sim>,
    req: Request<Incoming>,
    peer: Peer,
    user: UserInfo,
    reply: Reply,
    query: HashMap<String, String>,
) -> Result<Response<Body>, ApiError> {
    let info = request::classify(req.method(), req.uri().path(), req.uri().query());
    let accept = header(&req, "accept").map(str::to_string);
    let user_agent = header(&req, "user-agent").map(str::to_string);
    let user = impersonated(&req, user);
    let r = match info {
        RequestInfo::NonResource { path, .. } => {
            return non_resource(sim, &path, accept.as_deref(), peer, &reply);
        }
        RequestInfo::Resource(r) => *r,
    };
    let (rt, answer) = resolve(sim, &r)?;
    match answer {
        Some(Answer::Token) => {
            let manager = super::meta::manager_name(
                query.get("fieldManager").map(String::as_str),
                user_agent.as_deref(),
            );
            let content_type = header(&req, "content-type").map(str::to_string);
            let body = read_body(req, sim.cfg.max_body_bytes).await?;
            let body = json_body(sim, &rt, &r, content_type.as_deref(), body)?;
            return token_request(sim, &r, &body, &manager, &reply);
        }
        Some(Answer::Unsupported) => return Err(unsupported(sim, &rt, &r)),
        _ => {}
    }
    let content_type = header(&req, "content-type").map(str::to_string);
    let method = req.method().clone();
    let body = if matches!(
        method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        let body = read_body(req, sim.cfg.max_body_bytes).await?;
        json_body(sim, &rt, &r, content_type.as_deref(), body)?
    } else {
        Bytes::new()
    };
    if rt.virtual_create && rt.plural != "bindings" {
        return review(&rt, &r, &method, &body, &user, &reply);
    }
    if r.verb != Verb::Create
        && r.verb != Verb::DeleteCollection
        && r.verb != Verb::List
        && r.verb != Verb::Watch
        && r.name.is_none()
    {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let output = negotiate(accept.as_deref()).inspect_err(|_| {
        sim.unanswerable(format!(
            "a response in {} only",
            accept.as_deref().unwrap_or_default()
        ))
    })?;
    let ctx = Ctx {
        sim: sim.clone(),
        rt,
        req: r,
        reply,
        output,
        user_agent,
        query,
    };
    dispatch(&ctx, answer, content_type.as_deref(), &body)
}

/// Hand a resource request to its verb (or its subresource's handler).
fn dispatch(
    ctx: &Ctx,
    answer: Option<Answer>,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    match (answer, ctx.req.verb) {
        (Some(Answer::Scale), Verb::Get) => return Ok(ctx.reply.json(200, &scale::get(ctx)?)),
        (Some(Answer::Scale), Verb::Update) => {
            return Ok(ctx.reply.json(200, &scale::update(ctx, body)?));
        }
        (Some(Answer::Scale), Verb::Patch) => {
            let doc = scale::patch(ctx, content_type, body)?;
            return Ok(ctx.reply.json(200, &doc));
        }
        (Some(Answer::Binding), _) => return Ok(ctx.reply.json(201, &pods::bind(ctx, body)?)),
        (None, Verb::Create) if ctx.rt.plural == "bindings" && ctx.rt.group.is_empty() => {
            return Ok(ctx.reply.json(201, &pods::bind(ctx, body)?));
        }
        (Some(Answer::Eviction), _) => return Ok(ctx.reply.json(201, &pods::evict(ctx)?)),
        _ => {}
    }
    let obj_reply = |code: u16, obj: &super::store::Stored| -> Response<Body> {
        ctx.reply
            .json_bytes(code, obj.json_at(&ctx.rt.api_version()))
    };
    match ctx.req.verb {
        Verb::Get => read::get(ctx),
        Verb::List => read::list(ctx),
        Verb::Watch => watch::watch(ctx),
        Verb::Create => write::create(ctx, body).map(|(c, o)| obj_reply(c, &o)),
        Verb::Update => write::update(ctx, body).map(|(c, o)| obj_reply(c, &o)),
        Verb::Patch => write::patch(ctx, content_type, body).map(|(c, o)| obj_reply(c, &o)),
        Verb::Delete => match delete::delete(ctx, body)? {
            delete::Deleted::Object(o) => Ok(obj_reply(200, &o)),
            delete::Deleted::Status(s) => Ok(ctx.reply.json(200, &s)),
        },
        Verb::DeleteCollection => {
            let filter = read::Filter::from_request(ctx)?;
            let gone = delete::delete_collection(ctx, &filter)?;
            let rv = ctx.sim.lock().rv;
            Ok(ctx.reply.json(200, &delete::list_body(&ctx.rt, rv, &gone)))
        }
        Verb::Connect => Err(ApiError::page_not_found()),
    }
}

/// Who the request acts as: `user`, or whom it impersonates.
fn impersonated(req: &Request<Incoming>, user: UserInfo) -> UserInfo {
    let groups: Vec<&str> = req
        .headers()
        .get_all("impersonate-group")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    auth::impersonate(user, header(req, "impersonate-user"), &groups)
}

/// The served type a resource request names, and how its subresource (if any) is
/// answered: 404 for what is not served, 405 for a verb it does not allow.
fn resolve(
    sim: &Sim,
    r: &ResourceRequest,
) -> Result<(Arc<ResourceType>, Option<Answer>), ApiError> {
    let rt = sim
        .lock()
        .registry
        .find(&r.group, &r.version, &r.resource)
        .cloned()
        .ok_or_else(ApiError::page_not_found)?;
    if r.namespace.is_some() && !rt.namespaced {
        return Err(ApiError::page_not_found());
    }
    let answer = match r.subresource.as_deref() {
        None => None,
        Some(s) => match rt.subresource(s) {
            None => return Err(ApiError::page_not_found()),
            Some(sub) => Some(sub.answer(&rt.plural)),
        },
    };
    check_verb(&rt, r)?;
    Ok((rt, answer))
}

/// A subresource the simulator does not do (logs, exec, proxies, ...): 501, and recorded
/// so that `run` and `explore` stop and say so.
fn unsupported(sim: &Sim, rt: &ResourceType, r: &ResourceRequest) -> ApiError {
    let what = format!(
        "{} {}/{}",
        r.verb,
        rt.plural,
        r.subresource.as_deref().unwrap_or_default()
    );
    sim.unanswerable(what.clone());
    ApiError::not_implemented(&what)
}

/// A verb discovery does not list for the resource (or the subresource) is 405, as
/// kube-apiserver answers it (namespaces cannot be deleted as a collection; a review can
/// only be created).
fn check_verb(rt: &ResourceType, r: &ResourceRequest) -> Result<(), ApiError> {
    let verbs: &[String] = match r.subresource.as_deref() {
        None => &rt.verbs,
        Some(s) => rt.subresource(s).map_or(&[][..], |s| &s.verbs[..]),
    };
    if r.verb == Verb::Connect || verbs.iter().any(|v| v == r.verb.as_str()) {
        return Ok(());
    }
    Err(ApiError::method_not_allowed(
        "the server does not allow this method on the requested resource",
    ))
}

async fn read_body(req: Request<Incoming>, limit: usize) -> Result<Bytes, ApiError> {
    match Limited::new(req.into_body(), limit).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            Err(ApiError::entity_too_large(limit))
        }
        Err(e) => Err(ApiError::bad_request(format!(
            "reading the request body: {e}"
        ))),
    }
}

fn non_resource(
    sim: &Sim,
    path: &str,
    accept: Option<&str>,
    peer: Peer,
    reply: &Reply,
) -> Result<Response<Body>, ApiError> {
    let reg = sim.lock().registry.clone();
    let p = path.trim_end_matches('/');
    let agg = discovery::aggregated_version(accept);
    let doc = match p {
        "/version" => discovery::version(sim.cfg.kube_minor),
        "/healthz" | "/livez" | "/readyz" => {
            return Ok(reply.raw(200, Bytes::from_static(b"ok"), "text/plain; charset=utf-8"));
        }
        "/api" | "/apis" if agg.is_some() => {
            let v = agg.unwrap_or("v2");
            let doc = discovery::aggregated(&reg, p == "/api", v);
            let mut r = reply.typed(
                200,
                Bytes::from(doc.to_string()),
                &discovery::aggregated_content_type(v),
            );
            r.headers_mut()
                .insert("vary", HeaderValue::from_static("Accept"));
            return Ok(r);
        }
        "/openapi/v2" => {
            let pb = accept.is_some_and(|a| a.contains(openapi::V2_PROTOBUF));
            if !pb {
                return Err(ApiError::not_acceptable(&[openapi::V2_PROTOBUF]));
            }
            return Ok(reply.raw(
                200,
                Bytes::from(openapi::v2_protobuf(&reg, sim.cfg.kube_minor)),
                "application/octet-stream",
            ));
        }
        "/api" => discovery::api_versions(&peer.local.to_string()),
        "/apis" => discovery::api_group_list(&reg),
        _ => {
            let parts: Vec<&str> = p.trim_start_matches('/').split('/').collect();
            match parts.as_slice() {
                ["api", v] => discovery::api_resource_list(&reg, "", v)
                    .ok_or_else(ApiError::page_not_found)?,
                ["apis", g] => {
                    discovery::api_group(&reg, g).ok_or_else(ApiError::page_not_found)?
                }
                ["apis", g, v] => {
                    discovery::api_resource_list(&reg, g, v).ok_or_else(ApiError::page_not_found)?
                }
                ["openapi", "v3"] => openapi::index(&reg, sim.cfg.kube_minor),
                ["openapi", "v3", "api", v] => {
                    openapi::group_version(&reg, "", v, sim.cfg.kube_minor)
                        .ok_or_else(ApiError::page_not_found)?
                }
                ["openapi", "v3", "apis", g, v] => {
                    openapi::group_version(&reg, g, v, sim.cfg.kube_minor)
                        .ok_or_else(ApiError::page_not_found)?
                }
                _ => return Err(ApiError::page_not_found()),
            }
        }
    };
    Ok(reply.json(200, &doc))
}

/// A request body as JSON (or YAML, which the verbs read themselves): a protobuf body
/// decoded (`proto_body`), CBOR refused with 415 and recorded.
fn json_body(
    sim: &Sim,
    rt: &ResourceType,
    r: &ResourceRequest,
    content_type: Option<&str>,
    body: Bytes,
) -> Result<Bytes, ApiError> {
    let media = content_type.map(|ct| ct.split(';').next().unwrap_or("").trim());
    if body.is_empty() {
        return Ok(body);
    }
    match media {
        Some("application/vnd.kubernetes.protobuf") => {
            let default_kind = match r.verb {
                Verb::Delete | Verb::DeleteCollection => "DeleteOptions",
                _ => &rt.kind,
            };
            match proto_body::decode(&body, &rt.api_version(), default_kind) {
                Ok(v) => {
                    sim.protobuf_bodies
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    Ok(Bytes::from(v.to_string()))
                }
                Err(proto_body::ProtoError::Malformed(e)) => Err(ApiError::bad_request(format!(
                    "the protobuf body could not be decoded: {e}"
                ))),
                Err(proto_body::ProtoError::Unsupported(kind)) => {
                    sim.unanswerable(format!("a protobuf request body ({kind})"));
                    Err(ApiError::unsupported_media_type(&[
                        "application/json",
                        "application/yaml",
                    ]))
                }
            }
        }
        Some(m) if m.starts_with("application/cbor") => {
            sim.unanswerable("a CBOR request body".into());
            Err(ApiError::unsupported_media_type(&[
                "application/json",
                "application/yaml",
                "application/vnd.kubernetes.protobuf",
            ]))
        }
        _ => Ok(body),
    }
}

/// `POST /api/v1/namespaces/NS/serviceaccounts/NAME/token` (TokenRequest, what
/// `kubectl create token` sends): a token for the service account, signed by this
/// simulator. The body's `expirationSeconds` is honoured (at least 10 minutes, as the
/// apiserver enforces; default one hour); audiences and bound objects are echoed, not
/// enforced.
fn token_request(
    sim: &Sim,
    r: &ResourceRequest,
    body: &[u8],
    manager: &str,
    reply: &Reply,
) -> Result<Response<Body>, ApiError> {
    let (Some(ns), Some(name)) = (r.namespace.as_deref(), r.name.as_deref()) else {
        return Err(ApiError::page_not_found());
    };
    if r.verb != Verb::Create {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let account_uid =
        (sim.lock().get("/serviceaccounts", ns, name)).map(|a| a.value["metadata"]["uid"].clone());
    let Some(account_uid) = account_uid else {
        return Err(ApiError::not_found(
            stalemate_wire::k8s::status::GroupResource {
                group: "",
                resource: "serviceaccounts",
            },
            name,
        ));
    };
    let input: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let seconds = input["spec"]["expirationSeconds"]
        .as_u64()
        .unwrap_or(3600)
        .clamp(600, 2u64.pow(32));
    let ttl = Duration::from_secs(seconds);
    let token = sim
        .auth
        .issue(&format!("system:serviceaccount:{ns}:{name}"), Some(ttl));
    let expires = humantime::format_rfc3339_seconds(std::time::SystemTime::now() + ttl);
    let audiences = match &input["spec"]["audiences"] {
        Value::Array(a) if !a.is_empty() => Value::Array(a.clone()),
        _ => json!(["https://kubernetes.default.svc.cluster.local"]),
    };
    // Created now, by its requester, through the `token` subresource (what the real
    // apiserver records, though nothing is stored).
    let now = super::meta::now_rfc3339();
    let managed = json!([{"manager": manager, "operation": "Update",
        "apiVersion": "authentication.k8s.io/v1", "time": now, "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:expirationSeconds": {}}}, "subresource": "token"}]);
    let out = json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        // Since 1.35 the answer carries the service account's uid.
        "metadata": {"name": name, "namespace": ns, "uid": account_uid,
            "creationTimestamp": now, "managedFields": managed},
        "spec": {"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": input["spec"]["boundObjectRef"].clone()},
        "status": {"token": token, "expirationTimestamp": expires.to_string()},
    });
    Ok(reply.json(201, &out))
}

/// Create-only review resources: answered, never stored.
fn review(
    rt: &ResourceType,
    r: &ResourceRequest,
    method: &Method,
    body: &[u8],
    user: &UserInfo,
    reply: &Reply,
) -> Result<Response<Body>, ApiError> {
    if *method != Method::POST || r.name.is_some() {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let input: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let mut out = json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": {}});
    match rt.plural.as_str() {
        "selfsubjectreviews" => out["status"] = json!({"userInfo": user.to_json()}),
        "selfsubjectaccessreviews" => {
            out["spec"] = input["spec"].clone();
            // Authorization is not simulated: everyone may do everything.
            out["status"] =
                json!({"allowed": true, "reason": "the simulator authorizes every request"});
        }
        _ => {
            out["spec"] = input["spec"].clone();
            out["status"] = json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": false});
        }
    }
    Ok(reply.json(201, &out))
}

/// `/_sim/echo`: an HTTP/1.1 connection upgrade (`Connection: Upgrade`, any `Upgrade`
/// protocol) that echoes every byte back — a stand-in for exec/attach/port-forward streams
/// when testing that upgrades pass through a proxy.
fn echo_upgrade(mut req: Request<Incoming>, reply: &Reply) -> Response<Body> {
    let upgrade = req.headers().get("upgrade").cloned();
    let Some(protocol) = upgrade else {
        return reply.error(&ApiError::bad_request(
            "/_sim/echo needs Connection: Upgrade and an Upgrade protocol",
        ));
    };
    let on = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        if let Ok(up) = on.await {
            let (mut r, mut w) = tokio::io::split(hyper_util::rt::TokioIo::new(up));
            let _ = tokio::io::copy(&mut r, &mut w).await;
        }
    });
    let mut resp = reply.raw(101, Bytes::new(), "application/octet-stream");
    resp.headers_mut().remove("content-type");
    resp.headers_mut()
        .insert("connection", HeaderValue::from_static("Upgrade"));
    resp.headers_mut().insert("upgrade", protocol);
    resp
}

/// `/_sim/...`: inspect the simulator and make it misbehave, for reliability tests.
///
/// - `GET  /_sim/state` — resourceVersion, compaction point, object and watch counts
/// - `POST /_sim/compact` — drop all history (watches resuming before now get 410)
/// - `POST /_sim/close-watches?mode=clean|abrupt` — end every open watch
/// - `POST /_sim/pause?for=2s` — hold every API request and watch delivery
/// - `POST /_sim/restart?down=1s` — drop every connection, stop listening, come back
fn admin(sim: &Arc<Sim>, req: &Request<Incoming>, reply: &Reply) -> Response<Body> {
    let q: HashMap<String, String> = request::query_pairs(req.uri().query().unwrap_or(""))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let dur = |k: &str, default: Duration| -> Result<Duration, ApiError> {
        match q.get(k) {
            None => Ok(default),
            Some(s) => stalemate_wire::k8s::duration::parse(s)
                .map_err(|e| ApiError::bad_request(format!("{k}={s:?}: {e}"))),
        }
    };
    let is_post = req.method() == Method::POST;
    let result: Result<Value, ApiError> = match (req.uri().path(), is_post) {
        ("/_sim/state", false) => {
            // What it could not answer, for a test outside the process (`run` reads it
            // in-process).
            let unanswered: Vec<Value> = (sim.unanswered().into_iter())
                .map(|(what, n)| json!({"what": what, "count": n}))
                .collect();
            let st = sim.lock();
            Ok(
                json!({"resourceVersion": st.rv.to_string(), "compactedResourceVersion": st.compacted_rv.to_string(),
                "historyEvents": st.history_len(), "objects": st.object_count(), "watches": sim.watch_count(),
                "uptimeSeconds": sim.uptime().as_secs(), "unanswered": unanswered,
                "protobufBodies": sim.protobuf_bodies.load(std::sync::atomic::Ordering::Relaxed)}),
            )
        }
        ("/_sim/compact", true) => {
            let mut st = sim.lock();
            st.compact();
            Ok(json!({"compactedResourceVersion": st.compacted_rv.to_string()}))
        }
        ("/_sim/close-watches", true) => match q.get("mode").map(String::as_str) {
            None | Some("clean") => {
                sim.close_watches(CloseMode::Clean);
                Ok(json!({"closed": "clean"}))
            }
            Some("abrupt") => {
                sim.close_watches(CloseMode::Abrupt);
                Ok(json!({"closed": "abrupt"}))
            }
            Some(m) => Err(ApiError::bad_request(format!(
                "mode={m:?}: expected clean or abrupt"
            ))),
        },
        ("/_sim/pause", true) => dur("for", Duration::from_secs(1)).map(|d| {
            sim.pause(d);
            json!({"pausedForSeconds": d.as_secs_f64()})
        }),
        ("/_sim/restart", true) => dur("down", Duration::ZERO).map(|d| {
            // Answer first; the restart drops this connection too.
            let s = sim.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                s.restart(d);
            });
            json!({"restartingWithDownSeconds": d.as_secs_f64()})
        }),
        (_, _) => Err(ApiError::page_not_found()),
    };
    match result {
        Ok(v) => reply.json(200, &v),
        Err(e) => reply.error(&e),
    }
}
