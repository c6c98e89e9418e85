//! Client views, the optimistic-lock conflict behind the Flux bug, protobuf gating of a
//! recorded real stream, the trace file, and the control API's token — through the real
//! binary, with kube-rs and curl as clients.

#[path = "common/mod.rs"]
mod common;
use common::Kubectl;

use std::process::Command;
use std::time::Duration;

use common::{Proxy, Sim};
use serde_json::{Value, json};

/// The value of one sample in a Prometheus text exposition (0 if absent).
fn sample(metrics: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with('{'))
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn list_via(proxy: &Proxy, query: &str) -> Value {
    let r = proxy.curl(
        "GET",
        &format!("/api/v1/namespaces/default/configmaps{query}"),
        &[("Accept", "application/json")],
        None,
    );
    assert_eq!(r.status, 200, "{query}: {}", r.text());
    r.json()
}

/// (name, data.v) of the list's items, minus the namespace's `kube-root-ca.crt`.
fn values(list: &Value) -> Vec<(String, String)> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["metadata"]["name"] != "kube-root-ca.crt")
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap_or("").to_string(),
                i["data"]["v"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn views_answer_stale_reads_and_the_optimistic_lock_gets_a_real_409() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, Patch, PatchParams, PostParams};
    use kube::runtime::{WatchStreamExt, reflector, watcher};
    const TOKEN: &str = "admin-secret-token";
    let sim = Sim::start();
    let trace_dir = tempfile::tempdir().unwrap();
    let trace = trace_dir.path().join("trace.jsonl");
    let trace_arg = trace.to_string_lossy().into_owned();
    // The window opens at run time, after the client listed: keep every view.
    let mut proxy = Proxy::start(
        &sim,
        &[
            "--trace",
            &trace_arg,
            "--admin-token",
            TOKEN,
            "--views",
            "all",
        ],
    );
    let direct: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let api: Api<ConfigMap> = Api::namespaced(proxy.client().await, "default");
    let cm: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "flux"}, "data": {"v": "0", "payload": "s3cr3t-payload"}}),
    )
    .unwrap();
    direct.create(&PostParams::default(), &cm).await.unwrap();

    // A reflector through the proxy: its LIST and watch feed the client's view.
    let (reader, writer) = reflector::store();
    // With a back-off: a watcher without one retries a refused connection in a tight
    // loop that never yields, and the runtime cannot shut down once the proxy is gone.
    let rf = reflector(
        writer,
        watcher(api.clone(), watcher::Config::default()).default_backoff(),
    );
    let task = tokio::spawn(async move {
        use futures_util::StreamExt;
        rf.for_each(|_| async {}).await;
    });
    tokio::time::timeout(Duration::from_secs(20), reader.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    let fresh = list_via(&proxy, "?resourceVersion=0");
    assert_eq!(values(&fresh), [("flux".into(), "0".into())]);

    // The control API wants the token.
    let window = json!({"name": "freeze", "resources": ["configmaps"], "fault": {"freeze": {}}});
    assert_eq!(
        proxy
            .admin_call(None, "POST", "/v1/windows", Some(&window))
            .0,
        401
    );
    assert_eq!(
        proxy.admin_call(Some("wrong"), "GET", "/v1/status", None).0,
        401
    );
    assert_eq!(proxy.admin_get("/metrics").0, 200, "metrics stay open");
    let (code, _) = proxy.admin_call(Some(TOKEN), "POST", "/v1/windows", Some(&window));
    assert_eq!(code, 201);

    // The cluster moves on; the client's view does not.
    direct
        .patch(
            "flux",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "1"}})),
        )
        .await
        .unwrap();
    let upstream_now = list_via(&proxy, "");
    assert_eq!(
        values(&upstream_now),
        [("flux".into(), "1".into())],
        "a consistent LIST goes upstream even in the window"
    );
    let stale = list_via(&proxy, "?resourceVersion=0");
    assert_eq!(
        values(&stale),
        [("flux".into(), "0".into())],
        "resourceVersion=0 is answered from the view"
    );
    assert!(
        rv(&stale) < rv(&upstream_now),
        "the view's list RV ({}) is older than the upstream's ({})",
        rv(&stale),
        rv(&upstream_now)
    );
    assert!(
        rv(&stale) >= rv(&stale["items"][0]),
        "invariant 2: the list RV is never older than its items"
    );
    let get = proxy.curl(
        "GET",
        "/api/v1/namespaces/default/configmaps/flux?resourceVersion=0",
        &[],
        None,
    );
    assert_eq!(get.status, 200);
    let got = get.json();
    assert_eq!(
        (got["kind"].as_str(), got["data"]["v"].as_str()),
        (Some("ConfigMap"), Some("0"))
    );
    let missing = proxy.curl(
        "GET",
        "/api/v1/namespaces/default/configmaps/nope?resourceVersion=0",
        &[],
        None,
    );
    assert_eq!(
        (missing.status, missing.json()["reason"].as_str()),
        (404, Some("NotFound"))
    );

    // (d) The Flux bug's mechanism: read through the stale cache, write with the
    // optimistic lock, get the upstream's real 409 (not an injected one).
    let cached = reader
        .get(&reflector::ObjectRef::new("flux").within("default"))
        .unwrap();
    assert_eq!(
        cached.data.as_ref().unwrap()["v"],
        "0",
        "the reflector is stale"
    );
    let stale_rv = cached.metadata.resource_version.clone().unwrap();
    let err = api
        .patch(
            "flux",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": stale_rv}, "data": {"v": "from-stale-cache"}})),
        )
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
            assert!(!s.message.contains("injected"), "{}", s.message);
        }
        e => panic!("expected a 409, got {e}"),
    }
    let metrics = proxy.admin_get("/metrics").1;
    let cm = [("client", "other"), ("resource", "configmaps")];
    assert_eq!(
        sample(&metrics, "stalemate_upstream_conflicts_total", &cm),
        1.0
    );
    assert_eq!(
        sample(
            &metrics,
            "stalemate_writes_total",
            &[
                ("client", "other"),
                ("resource", "configmaps"),
                ("verb", "patch")
            ]
        ),
        1.0
    );
    assert_eq!(
        sample(
            &metrics,
            "stalemate_view_reads_total",
            &[
                ("client", "other"),
                ("resource", "configmaps"),
                ("contract", "kept")
            ]
        ),
        3.0,
        "the RV=0 LIST, the GET and the GET of a missing object"
    );
    assert!(
        sample(&metrics, "stalemate_view_lag_seconds", &cm) > 0.0,
        "{metrics}"
    );
    let (code, status) = proxy.admin_call(Some(TOKEN), "GET", "/v1/status", None);
    assert_eq!(code, 200);
    assert_eq!(status["windows"][0]["window"]["name"], "freeze");
    assert!(
        status["held"]["events"].as_f64().unwrap() >= 1.0,
        "{status}"
    );
    assert!(
        status["streams"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["resource"] == "configmaps")
    );
    let (_, clients) = proxy.admin_call(Some(TOKEN), "GET", "/v1/clients", None);
    assert!(
        clients["clients"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "other" && c["requests"].as_f64().unwrap() > 0.0),
        "{clients}"
    );

    // staleConsistentReads: even a consistent LIST is answered from the view — a
    // contract violation, labelled as such.
    proxy.admin_call(Some(TOKEN), "DELETE", "/v1/windows/freeze", None);
    let released = async {
        let caught_up = || {
            reader
                .get(&reflector::ObjectRef::new("flux").within("default"))
                .and_then(|o| o.data.clone())
                .is_some_and(|d| d["v"] == "1")
        };
        while !caught_up() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), released)
        .await
        .expect("the reflector catches up after the window");
    let violating = json!({"name": "lie", "resources": ["configmaps"], "fault": {"freeze": {}}, "staleConsistentReads": true});
    assert_eq!(
        proxy
            .admin_call(Some(TOKEN), "POST", "/v1/windows", Some(&violating))
            .0,
        201
    );
    direct
        .patch(
            "flux",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "2"}})),
        )
        .await
        .unwrap();
    assert_eq!(values(&list_via(&proxy, "")), [("flux".into(), "1".into())]);
    let metrics = proxy.admin_get("/metrics").1;
    assert_eq!(
        sample(
            &metrics,
            "stalemate_view_reads_total",
            &[("contract", "violated")]
        ),
        1.0
    );
    proxy.admin_call(Some(TOKEN), "DELETE", "/v1/windows/lie", None);
    assert_eq!(
        values(&list_via(&proxy, "?resourceVersion=0")),
        [("flux".into(), "2".into())],
        "outside windows, reads go upstream"
    );
    task.abort();

    // The trace: requests with how they were answered, event fates, windows; no
    // object contents and no credentials.
    proxy
        .terminate(Duration::from_secs(15))
        .expect("exits on SIGTERM");
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(
        !text.contains("s3cr3t-payload"),
        "no object contents in the trace"
    );
    assert!(!text.contains("stalemate-use-upstream-credentials") && !text.contains("Bearer"));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let has = |f: &dyn Fn(&Value) -> bool| lines.iter().any(f);
    assert!(has(&|l| l["kind"] == "window"
        && l["window"] == "freeze"
        && l["action"] == "open"
        && l["fault"] == "freeze"));
    assert!(has(&|l| l["kind"] == "window"
        && l["window"] == "freeze"
        && l["action"] == "close"));
    assert!(has(&|l| l["kind"] == "request"
        && l["verb"] == "list"
        && l["answer"] == "view"
        && l["window"] == "freeze"));
    assert!(has(
        &|l| l["kind"] == "request" && l["answer"] == "view-violation"
    ));
    assert!(has(&|l| l["kind"] == "request"
        && l["verb"] == "patch"
        && l["code"] == 409
        && l["name"] == "flux"));
    assert!(has(&|l| l["kind"] == "event"
        && l["fate"] == "held"
        && l["type"] == "MODIFIED"
        && l["name"] == "flux"));
    assert!(has(&|l| l["kind"] == "event"
        && l["fate"] == "released"
        && l["delayMs"].as_f64().is_some_and(|d| d > 0.0)));
}

/// A recorded real exchange as the upstream: every request gets the recorded watch
/// response (its Content-Type, its body in 97-byte chunks), and the stream then stays
/// open, as a real watch would. Returns the URL and the CA file.
async fn replay_upstream(
    dir: &std::path::Path,
    content_type: &'static str,
    body: Vec<u8>,
) -> (String, std::path::PathBuf) {
    use http_body_util::StreamBody;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let certs = stalemate::k8s::certs::generate("replay", &[]).unwrap();
    let ca = dir.join("replay-ca.crt");
    std::fs::write(&ca, &certs.ca_cert_pem).unwrap();
    let tls = stalemate::listen::tls::server_config(
        certs.cert_pem.as_bytes(),
        certs.key_pem.as_bytes(),
        "replay",
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    let body = bytes::Bytes::from(body);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, body) = (acceptor.clone(), body.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = hyper::service::service_fn(move |_req| {
                    let chunks: Vec<Result<http_body::Frame<bytes::Bytes>, std::io::Error>> = body
                        .chunks(97)
                        .map(|c| Ok(http_body::Frame::data(bytes::Bytes::copy_from_slice(c))))
                        .collect();
                    use futures_util::StreamExt;
                    let stream =
                        futures_util::stream::iter(chunks).chain(futures_util::stream::pending());
                    let resp = http::Response::builder()
                        .header("content-type", content_type)
                        .body(StreamBody::new(stream))
                        .unwrap();
                    async move { Ok::<_, std::convert::Infallible>(resp) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    (url, ca)
}

/// (f) The recorded real protobuf watch stream, served by a replay upstream, is held by a
/// freeze and then arrives byte-identical.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_protobuf_stream_is_frozen_then_delivered_byte_identical() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/kube-apiserver-1.28/");
    let recorded = std::fs::read(format!("{fixtures}cm-watch-protobuf.body")).unwrap();
    let frames = stalemate::watch::proto::ProtoFramer::new(1 << 24)
        .push(&recorded)
        .unwrap();
    let events = frames
        .iter()
        .filter(|f| f.meta.type_ != Some(stalemate::watch::EventType::Bookmark))
        .count();
    assert!(events >= 3, "the fixture holds a few events");
    let dir = tempfile::tempdir().unwrap();
    let (url, ca) = replay_upstream(
        dir.path(),
        "application/vnd.kubernetes.protobuf;stream=watch",
        recorded.clone(),
    )
    .await;
    let ca = ca.to_string_lossy().into_owned();
    let proxy = Proxy::start_raw(&["--upstream", &url, "--upstream-ca", &ca]);
    let window = json!({"name": "freeze", "resources": ["configmaps"], "fault": {"freeze": {}}});
    assert_eq!(
        proxy
            .admin_call(None, "POST", "/v1/windows", Some(&window))
            .0,
        201
    );

    let out = dir.path().join("watch.bin");
    let mut curl = Command::new("curl")
        .args(["-sS", "-N", "--http1.1", "--cacert"])
        .arg(proxy.ca())
        .args([
            "-H",
            "Accept: application/vnd.kubernetes.protobuf;stream=watch",
            "-H",
            &format!("Authorization: Bearer {}", stalemate::proxy::UPSTREAM_CREDENTIALS_TOKEN),
            "-o",
        ])
        .arg(&out)
        .arg(format!(
            "{}/api/v1/namespaces/fixtures/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion=572",
            proxy.url
        ))
        .spawn()
        .unwrap();
    // Held: the stream is open, every event is held, nothing has reached the client.
    // The replay upstream has no discovery, so its resources are labelled `other`.
    let held = |m: &str| sample(m, "stalemate_held_events", &[("resource", "other")]) as usize;
    let start = std::time::Instant::now();
    while held(&proxy.admin_get("/metrics").1) < events {
        assert!(start.elapsed() < Duration::from_secs(20), "events not held");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    assert_eq!(before, 0, "nothing delivered while frozen");
    assert_eq!(
        proxy
            .admin_call(None, "DELETE", "/v1/windows/freeze", None)
            .0,
        200
    );
    // Bookmarks that arrive during a freeze are dropped (invariant 2); every event
    // arrives with its original bytes, in order.
    let want: Vec<u8> = frames
        .iter()
        .filter(|f| f.meta.type_ != Some(stalemate::watch::EventType::Bookmark))
        .flat_map(|f| f.bytes.to_vec())
        .collect();
    let start = std::time::Instant::now();
    while std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0) < want.len() as u64 {
        assert!(start.elapsed() < Duration::from_secs(20), "not released");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = curl.kill();
    let _ = curl.wait();
    let got = std::fs::read(&out).unwrap();
    assert_eq!(got, want, "released frames are byte-identical, in order");
}

fn ctl(proxy: &Proxy, token: Option<&str>, args: &[&str]) -> (bool, String, String) {
    let mut c = Command::new(common::BIN);
    c.arg("ctl")
        .args(["--admin", &proxy.admin])
        .env_remove("STALEMATE_ADMIN_TOKEN");
    if let Some(t) = token {
        c.args(["--token", t]);
    }
    let out = c.args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ctl_drives_the_control_api_with_readable_output_and_clear_errors() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &["--admin-token", "tok"]);
    let (ok, _, err) = ctl(&proxy, None, &["status"]);
    assert!(!ok && err.contains("wants a token"), "{err}");
    let (ok, out, err) = ctl(
        &proxy,
        Some("tok"),
        &[
            "freeze",
            "configmaps",
            "secrets",
            "-n",
            "default",
            "--for",
            "5m",
            "--name",
            "f1",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out, "opened f1\n");
    let (ok, out, _) = ctl(&proxy, Some("tok"), &["status"]);
    assert!(ok);
    let first = out.lines().nth(1).unwrap_or("");
    assert!(
        first.starts_with("f1  ")
            && first.contains("freeze")
            && first.contains("configmaps,secrets in default"),
        "{out}"
    );
    assert!(out.contains("held: 0 events"), "{out}");
    let (_, json_out, _) = ctl(&proxy, Some("tok"), &["--json", "windows"]);
    let v: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(v["windows"][0]["window"]["duration"], "5m");

    // A window with a trigger is armed, not opened.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.json");
    std::fs::write(
        &file,
        r#"{"name": "later", "resources": ["configmaps"], "fault": {"lag": {"delay": "1s"}},
            "trigger": {"afterRequests": {"verb": "patch", "count": 1}}}"#,
    )
    .unwrap();
    let (ok, out, err) = ctl(&proxy, Some("tok"), &["open", file.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.starts_with("armed later"), "{out}");
    let (_, out, _) = ctl(&proxy, Some("tok"), &["windows"]);
    assert!(
        out.contains("ARMED  FAULT  TRIGGER        SEEN\nlater  lag    afterRequests  0 of 1"),
        "{out}"
    );
    // An armed window can be taken back before it fires.
    let (ok, out, err) = ctl(&proxy, Some("tok"), &["close", "later"]);
    assert!(
        ok && out == "disarmed later (its trigger will not open it)\n",
        "{out}{err}"
    );
    let (_, out, _) = ctl(&proxy, Some("tok"), &["windows"]);
    assert!(!out.contains("later"), "{out}");
    // Bad files are named, with the line and the field.
    std::fs::write(&file, "{\"name\": \"x\",\n \"fault\": {\"freez\": {}}}").unwrap();
    let (ok, _, err) = ctl(&proxy, Some("tok"), &["open", file.to_str().unwrap()]);
    assert!(
        !ok && err.contains("w.json") && err.contains("2:") && err.contains("freez"),
        "{err}"
    );

    let (ok, out, _) = ctl(&proxy, Some("tok"), &["close", "f1"]);
    assert!(ok && out.starts_with("closed f1"), "{out}");
    // A name a path must escape is closed by that name.
    let (ok, _, err) = ctl(
        &proxy,
        Some("tok"),
        &["freeze", "secrets", "--name", "two words+1%"],
    );
    assert!(ok, "{err}");
    let (ok, out, err) = ctl(&proxy, Some("tok"), &["close", "two words+1%"]);
    assert!(ok && out.starts_with("closed two words+1%"), "{out}{err}");
    let (ok, _, err) = ctl(&proxy, Some("tok"), &["close", "f1"]);
    assert!(
        !ok && err.contains("404") && err.contains("no open or armed window named \"f1\""),
        "{err}"
    );
    let (ok, out, _) = ctl(&proxy, Some("tok"), &["clients"]);
    assert!(
        ok && out.contains("other") && out.contains("(everyone else)"),
        "{out}"
    );

    // Nobody listening: says where it looked.
    let (ok, _, err) = Command::new(common::BIN)
        .args(["ctl", "--admin", "http://127.0.0.1:1", "status"])
        .output()
        .map(|o| {
            (
                o.status.success(),
                (),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            )
        })
        .unwrap();
    assert!(
        !ok && err.contains("cannot reach the admin listener at http://127.0.0.1:1"),
        "{err}"
    );
}

#[test]
fn every_schedule_in_config_passes_check() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/config");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    let out = Command::new(common::BIN)
        .arg("check")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.contains(": ok (")).count(),
        files.len()
    );
}

/// Invariant 6: while a window holds a watch's events, the HTTP/2 connection stays alive
/// — the client's keep-alive PINGs (every 200 ms, 500 ms to answer) are answered — and
/// the held events then arrive on the same stream.
#[tokio::test]
async fn http2_pings_are_answered_while_events_are_held() {
    use http_body_util::{BodyExt, Empty};
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(proxy.ca()).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let tls = rustls::ClientConfig::builder_with_provider(stalemate::listen::tls::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_http2()
        .build();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .timer(hyper_util::rt::TokioTimer::new())
        .http2_only(true)
        .http2_keep_alive_interval(Duration::from_millis(200))
        .http2_keep_alive_timeout(Duration::from_millis(500))
        .http2_keep_alive_while_idle(true)
        .build::<_, Empty<bytes::Bytes>>(https);
    let rv = sim
        .curl("GET", "/api/v1/namespaces/default/configmaps", &[], None)
        .json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let window = json!({"name": "hold", "resources": ["configmaps"], "fault": {"freeze": {}}});
    assert_eq!(
        proxy
            .admin_call(None, "POST", "/v1/windows", Some(&window))
            .0,
        201
    );
    let req = http::Request::get(format!(
        "{}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}",
        proxy.url
    ))
    .header(
        "authorization",
        format!("Bearer {}", stalemate::proxy::UPSTREAM_CREDENTIALS_TOKEN),
    )
    .body(Empty::new())
    .unwrap();
    let resp = client.request(req).await.unwrap();
    assert_eq!(
        (resp.status().as_u16(), resp.version()),
        (200, http::Version::HTTP_2)
    );
    let mut body = resp.into_body();
    let r = sim.curl(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("Content-Type", "application/json")],
        Some(br#"{"metadata":{"name":"held"}}"#),
    );
    assert_eq!(r.status, 201);
    // Fifteen keep-alive intervals with the event held: the connection must survive.
    let quiet = tokio::time::timeout(Duration::from_secs(3), body.frame()).await;
    assert!(
        quiet.is_err(),
        "nothing arrives while frozen, and the stream does not fail"
    );
    assert_eq!(
        proxy.admin_call(None, "DELETE", "/v1/windows/hold", None).0,
        200
    );
    let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
        .await
        .expect("the held event arrives after the window")
        .expect("the stream is still open")
        .expect("no keep-alive timeout on the connection");
    let line: Value = serde_json::from_slice(frame.data_ref().unwrap()).unwrap();
    assert_eq!(
        (
            line["type"].as_str(),
            line["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("held"))
    );
}

/// `--views named` (the default): a view is kept only for resources a staleness window
/// names. A runtime window on a resource nobody named before finds no view — its
/// `resourceVersion=0` reads go upstream — and the view starts at the client's next
/// LIST; from then on it answers them.
#[test]
fn views_are_kept_only_for_resources_a_window_names() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    sim.kubectl_ok(&["create", "configmap", "named", "--from-literal=v=0"]);
    let values_of = |l: &Value| -> Vec<String> {
        values(l)
            .into_iter()
            .filter(|(n, _)| n == "named")
            .map(|(_, v)| v)
            .collect()
    };
    assert_eq!(values_of(&list_via(&proxy, "")), ["0"]);
    let view_bytes = || {
        proxy.admin_call(None, "GET", "/v1/status", None).1["views"]["bytes"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(view_bytes(), 0, "nobody named configmaps: no view");
    let freeze = json!({"name": "f", "resources": ["configmaps"], "fault": {"freeze": {}}});
    assert_eq!(
        proxy
            .admin_call(None, "POST", "/v1/windows", Some(&freeze))
            .0,
        201
    );
    let patch = |v: &str| {
        sim.kubectl_ok(&[
            "patch",
            "configmap",
            "named",
            "-p",
            &format!(r#"{{"data":{{"v":"{v}"}}}}"#),
        ]);
    };
    patch("1");
    assert_eq!(
        values_of(&list_via(&proxy, "?resourceVersion=0")),
        ["1"],
        "no view yet: the read went upstream"
    );
    assert_eq!(
        proxy.admin_call(None, "DELETE", "/v1/windows/f", None).0,
        200
    );
    // The client lists again: now its view is kept, and the next window uses it.
    assert_eq!(values_of(&list_via(&proxy, "")), ["1"]);
    assert!(view_bytes() > 0, "a view since the LIST");
    assert_eq!(
        proxy
            .admin_call(None, "POST", "/v1/windows", Some(&freeze))
            .0,
        201
    );
    patch("2");
    assert_eq!(
        values_of(&list_via(&proxy, "?resourceVersion=0")),
        ["1"],
        "answered from the view"
    );
    assert_eq!(
        values_of(&list_via(&proxy, "")),
        ["2"],
        "consistent reads go upstream"
    );
}

/// `rewind`: while the window is open, a client that starts over — a new informer, a
/// `kubectl get -w` — is answered from its view as it was 1.5 s ago (legal for
/// resourceVersion=0 reads: a lagging HA apiserver does it), sees the changes since only
/// when the window ends, and converges. The trace shows the rewound answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_sends_new_readers_back_in_time_then_they_converge() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, Patch, PatchParams};
    use kube::runtime::{WatchStreamExt, reflector, watcher};
    use std::io::BufRead;
    let sim = Sim::start();
    let dir = tempfile::tempdir().unwrap();
    let schedule = dir.path().join("rewind.json");
    let window = json!({"name": "rw", "resources": ["configmaps"], "namespaces": ["rw"],
                        "fault": {"rewind": {"by": "1500ms"}}, "duration": "3s"});
    let mut in_file = window.clone();
    in_file["trigger"] = json!({"manual": {}});
    std::fs::write(&schedule, json!({"windows": [in_file]}).to_string()).unwrap();
    let trace = dir.path().join("trace.jsonl");
    let proxy = Proxy::start(
        &sim,
        &[
            "--schedule",
            schedule.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    sim.kubectl_ok(&["create", "namespace", "rw"]);
    sim.kubectl_ok(&["-n", "rw", "create", "configmap", "x", "--from-literal=v=1"]);
    // A controller's informer through the proxy (RV=0 LIST, as client-go's): the view.
    let api: Api<ConfigMap> = Api::namespaced(proxy.client().await, "rw");
    let informer = |api: Api<ConfigMap>| {
        let (reader, writer) = reflector::store();
        // client-go's informers list at resourceVersion=0, unpaged (kube-rs drops RV=0
        // from a paged list).
        let mut config = watcher::Config::default().any_semantic();
        config.page_size = None;
        // With a back-off (see above): the task outlives the proxy at the end.
        let stream = reflector(writer, watcher(api, config).default_backoff()).applied_objects();
        let task = tokio::spawn(async move {
            futures_util::pin_mut!(stream);
            use futures_util::StreamExt;
            while stream.next().await.is_some() {}
        });
        (reader, task)
    };
    let v_of = |r: &reflector::Store<ConfigMap>| {
        r.get(&reflector::ObjectRef::new("x").within("rw"))
            .and_then(|c| c.data.as_ref()?.get("v").cloned())
    };
    let wait_v = |r: reflector::Store<ConfigMap>, want: &'static str| async move {
        for _ in 0..200 {
            if v_of(&r).as_deref() == Some(want) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("never saw v={want}, last {:?}", v_of(&r))
    };
    let (a, _a_task) = informer(api.clone());
    wait_v(a.clone(), "1").await;
    // The cluster moves on: v=2 and v=3, well after the view was built.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let direct: Api<ConfigMap> = Api::namespaced(sim.client().await, "rw");
    for v in ["2", "3"] {
        direct
            .patch(
                "x",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"v": v}})),
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    wait_v(a.clone(), "3").await;
    // Open the rewind: 1.5 s back is before v=2.
    assert_eq!(
        proxy
            .admin_call(None, "POST", "/v1/windows", Some(&window))
            .0,
        201
    );
    // A new informer lists (RV=0) in the window: it is given v=1 ...
    let (b, _b_task) = informer(api.clone());
    wait_v(b.clone(), "1").await;
    // ... and kubectl, watching the one object, is sent back to it too.
    let mut kubectl = common::KillOnDrop(
        common::kubectl::kubectl_cmd(
            &proxy.kubeconfig,
            &proxy.dir.path().join("kubectl-cache-rw"),
        )
        .args([
            "-n",
            "rw",
            "get",
            "configmap",
            "x",
            "-w",
            "--output-watch-events",
            "-o",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap(),
    );
    let out = kubectl.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&l)
                && let Some(x) = v["object"]["data"]["v"].as_str()
                && tx.send(x.to_string()).is_err()
            {
                return;
            }
        }
    });
    // When the window ends, both converge.
    wait_v(b.clone(), "3").await;
    let seen = tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        while let Ok(v) = rx.recv_timeout(Duration::from_secs(3)) {
            seen.push(v);
        }
        seen
    })
    .await
    .unwrap();
    assert_eq!(
        seen.first().map(String::as_str),
        Some("3"),
        "kubectl's GET is current: {seen:?}"
    );
    assert!(
        seen[1..].iter().any(|v| v.as_str() < "3"),
        "then an older state again: {seen:?}"
    );
    assert_eq!(
        seen.last().map(String::as_str),
        Some("3"),
        "then current: {seen:?}"
    );
    drop(kubectl);
    // The trace shows the rewound answer: from the view, at v=1's resourceVersion.
    let v1_rv: u64 = {
        let text = std::fs::read_to_string(&trace).unwrap();
        let rewound = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|r| {
                r["kind"] == "request"
                    && r["verb"] == "list"
                    && r["answer"] == "view"
                    && r["window"] == "rw"
            })
            .expect("a LIST answered from the rewound view");
        rewound["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let now_rv: u64 = direct
        .get("x")
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        v1_rv < now_rv,
        "rewound to {v1_rv}, the object is at {now_rv}"
    );
}
