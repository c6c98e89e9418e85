//! Wire-level behaviour of `stalemate sim` that kubectl and kube-rs do not show directly:
//! bookmarks, WatchList, timeouts, HTTP/2, identities, bad input, and the misbehaviour
//! endpoints — checked with curl over real TLS.

#[path = "common/mod.rs"]
mod common;
use common::Kubectl;

use std::process::Command;
use std::time::Duration;

use common::{Sim, curl};
use serde_json::{Value, json};

fn lines(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn post(sim: &Sim, path: &str, body: Value) -> common::Response {
    sim.curl(
        "POST",
        path,
        &[("Content-Type", "application/json")],
        Some(body.to_string().as_bytes()),
    )
}

fn watch(sim: &Sim, path: &str, max_time: &str, extra: &[&str]) -> common::Response {
    let mut flags = vec!["--max-time", max_time];
    flags.extend_from_slice(extra);
    curl(&sim.ca(), &sim.url, "GET", path, &[], None, &flags)
}

#[test]
fn periodic_bookmarks_carry_the_latest_rv_and_kind() {
    let sim = Sim::start_with(&["--bookmark-interval", "300ms"]);
    let r = watch(
        &sim,
        "/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=0&timeoutSeconds=1",
        "5",
        &[],
    );
    assert_eq!(r.status, 200);
    let evs = lines(&r.body);
    let bookmarks: Vec<&Value> = evs.iter().filter(|e| e["type"] == "BOOKMARK").collect();
    assert!(
        bookmarks.len() >= 2,
        "a bookmark every 300 ms over 1 s: {evs:?}"
    );
    let state = sim.curl("GET", "/_sim/state", &[], None).json();
    for b in bookmarks {
        assert_eq!(b["object"]["kind"], "ConfigMap");
        assert_eq!(b["object"]["apiVersion"], "v1");
        assert_eq!(
            b["object"]["metadata"]["resourceVersion"],
            state["resourceVersion"]
        );
    }
    // Without allowWatchBookmarks there are none.
    let r = watch(
        &sim,
        "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1",
        "5",
        &[],
    );
    assert!(lines(&r.body).iter().all(|e| e["type"] != "BOOKMARK"));
}

#[test]
fn watch_list_initial_events_end_bookmark_and_validation() {
    let sim = Sim::start();
    for i in 0..3 {
        assert_eq!(
            post(
                &sim,
                "/api/v1/namespaces/default/configmaps",
                json!({"metadata": {"name": format!("c{i}")}})
            )
            .status,
            201
        );
    }
    let rv = sim
        .curl("GET", "/api/v1/namespaces/default/configmaps", &[], None)
        .json()["metadata"]["resourceVersion"]
        .clone();
    let r = watch(
        &sim,
        "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion=&timeoutSeconds=1",
        "5",
        &[],
    );
    let evs = lines(&r.body);
    let types: Vec<&str> = evs.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "ADDED", "ADDED", "ADDED", "BOOKMARK"]);
    let end = &evs[4]["object"];
    assert_eq!(
        end["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(
        end["metadata"]["resourceVersion"], rv,
        "the end bookmark carries the list RV"
    );
    // sendInitialEvents needs resourceVersionMatch=NotOlderThan; on a LIST it is forbidden.
    let r = sim.curl(
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true",
        &[],
        None,
    );
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (422, json!("Invalid"))
    );
    let r = sim.curl("GET", "/api/v1/namespaces/default/configmaps?sendInitialEvents=true&resourceVersionMatch=NotOlderThan", &[], None);
    assert_eq!(r.status, 422);
}

#[test]
fn watch_resume_expired_and_too_large() {
    let sim = Sim::start_with(&["--history-size", "3"]);
    let rv0: u64 = sim
        .curl("GET", "/api/v1/namespaces/default/configmaps", &[], None)
        .json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    for i in 0..2 {
        post(
            &sim,
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": format!("c{i}")}}),
        );
    }
    // Resume from a retained RV: exactly the events after it.
    let r = watch(
        &sim,
        &format!(
            "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv0}&timeoutSeconds=1"
        ),
        "5",
        &[],
    );
    let names: Vec<Value> = lines(&r.body)
        .iter()
        .map(|e| e["object"]["metadata"]["name"].clone())
        .collect();
    assert_eq!(names, [json!("c0"), json!("c1")]);
    // Push the history window past rv0: HTTP 200, one ERROR 410 Expired event.
    for i in 2..6 {
        post(
            &sim,
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": format!("c{i}")}}),
        );
    }
    let r = watch(
        &sim,
        &format!("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv0}"),
        "5",
        &[],
    );
    assert_eq!(r.status, 200);
    let evs = lines(&r.body);
    assert_eq!(evs.len(), 1);
    assert_eq!(
        (
            evs[0]["type"].clone(),
            evs[0]["object"]["code"].clone(),
            evs[0]["object"]["reason"].clone()
        ),
        (json!("ERROR"), json!(410), json!("Expired"))
    );
    // An RV the server has not reached: 504 before any stream.
    let r = sim.curl(
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=99999",
        &[],
        None,
    );
    assert_eq!(r.status, 504);
    assert_eq!(r.header("retry-after"), Some("1"));
    // Exact LIST at an RV no longer in history: 410.
    let r = sim.curl(
        "GET",
        &format!(
            "/api/v1/namespaces/default/configmaps?resourceVersion={rv0}&resourceVersionMatch=Exact"
        ),
        &[],
        None,
    );
    assert_eq!(r.status, 410);
}

#[test]
fn http2_single_object_watch_and_timeout() {
    let sim = Sim::start();
    post(
        &sim,
        "/api/v1/namespaces/default/configmaps",
        json!({"metadata": {"name": "one"}}),
    );
    post(
        &sim,
        "/api/v1/namespaces/default/configmaps",
        json!({"metadata": {"name": "two"}}),
    );
    let start = std::time::Instant::now();
    let r = watch(
        &sim,
        "/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name%3Dtwo&timeoutSeconds=1",
        "10",
        &["--http2"],
    );
    assert_eq!(r.status, 200);
    assert!(
        start.elapsed() < Duration::from_secs(9),
        "timeoutSeconds ended the stream"
    );
    let evs = lines(&r.body);
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0]["object"]["metadata"]["name"], "two");
    // curl negotiated HTTP/2 over ALPN.
    let out = std::process::Command::new("curl")
        .args([
            "-sS",
            "--http2",
            "-o",
            "/dev/null",
            "-w",
            "%{http_version}",
            "--cacert",
        ])
        .arg(sim.ca())
        .arg(format!("{}/version", sim.url))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2");
}

/// The simulator authenticates as kube-apiserver does: client certificates signed by its
/// CA first, then bearer tokens it signed (its kubeconfig's, TokenRequest's); no
/// credentials is `system:anonymous`; anything else is 401 with the real `Status`.
#[test]
fn authenticates_like_a_real_apiserver() {
    let sim = Sim::start();
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let who = |auth: Option<&str>| {
        let mut h = vec![("Content-Type", "application/json")];
        if let Some(a) = auth {
            h.push(("Authorization", a));
        }
        sim.curl(
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &h,
            Some(review.to_string().as_bytes()),
        )
    };
    let user = |r: common::Response| {
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["status"]["userInfo"].clone()
    };
    assert_eq!(user(who(None))["username"], "system:anonymous");
    let admin = format!("Bearer {}", sim.admin_token());
    assert_eq!(user(who(Some(&admin)))["username"], "stalemate-sim:admin");
    // TokenRequest (kubectl create token) issues service-account tokens it accepts.
    let sa = format!(
        "Bearer {}",
        sim.sa_token("flux-system", "source-controller")
    );
    let u = user(who(Some(&sa)));
    assert_eq!(
        u["username"],
        "system:serviceaccount:flux-system:source-controller"
    );
    assert!(
        u["groups"]
            .as_array()
            .unwrap()
            .contains(&json!("system:serviceaccounts:flux-system"))
    );
    // Tokens it did not sign: 401, the body a real apiserver sends.
    let unsigned = format!(
        "Bearer {}",
        stalemate::k8s::identity::unsigned_jwt("stalemate-sim:admin")
    );
    for bad in ["Bearer opaque-token", unsigned.as_str(), "Basic YTpi"] {
        let r = who(Some(bad));
        assert_eq!(r.status, 401, "{bad}");
        assert_eq!(
            r.json(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "Unauthorized", "reason": "Unauthorized", "code": 401}),
            "{bad}"
        );
    }
    // Bad credentials are refused everywhere, discovery included.
    assert_eq!(
        sim.curl("GET", "/version", &[("Authorization", "Bearer x")], None)
            .status,
        401
    );
    // TokenRequest for a service account that does not exist: 404.
    let r = sim.curl(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/ghost/token",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &admin),
        ],
        Some(br#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}"#),
    );
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (404, json!("NotFound"))
    );
}

/// `--kubeconfig-auth cert`: the kubeconfig's user is a client certificate (CN the user,
/// O the group), as kind writes; a certificate from another CA fails the handshake.
#[test]
fn client_certificates_authenticate() {
    let sim = Sim::start_with(&["--kubeconfig-auth", "cert"]);
    let who = sim.kubectl_ok(&["auth", "whoami", "-o", "json"]);
    let who: serde_json::Value = serde_json::from_str(&who).unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "stalemate-sim:admin");
    assert!(
        who["status"]["userInfo"]["groups"]
            .as_array()
            .unwrap()
            .contains(&json!("system:masters"))
    );
    let kc = std::fs::read_to_string(&sim.kubeconfig).unwrap();
    assert!(kc.contains("client-certificate-data") && !kc.contains("token"));
    // A certificate signed by some other CA is refused in the TLS handshake.
    let dir = tempfile::tempdir().unwrap();
    let other = stalemate::k8s::certs::generate("other", &[]).unwrap();
    let (cert, key) =
        stalemate::k8s::certs::client_cert(&other, "mallory", Some("system:masters")).unwrap();
    std::fs::write(dir.path().join("c.pem"), cert).unwrap();
    std::fs::write(dir.path().join("k.pem"), key).unwrap();
    let out = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert"])
        .arg(sim.ca())
        .arg("--cert")
        .arg(dir.path().join("c.pem"))
        .arg("--key")
        .arg(dir.path().join("k.pem"))
        .arg(format!("{}/version", sim.url))
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "handshake must fail: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn bad_input_gets_the_right_status() {
    let sim = Sim::start_with(&["--max-body-bytes", "1024"]);
    let ct = [("Content-Type", "application/json")];
    // (method, path, body, expected code, expected reason)
    type Case<'a> = (&'a str, &'a str, Option<Vec<u8>>, u16, &'a str);
    let cases: Vec<Case> = vec![
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(b"{not json".to_vec()),
            400,
            "BadRequest",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(b"[1,2]".to_vec()),
            400,
            "BadRequest",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(vec![b' '; 2048]),
            413,
            "RequestEntityTooLarge",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(br#"{"metadata":{}}"#.to_vec()),
            422,
            "Invalid",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(br#"{"metadata":{"name":"Bad_Name"}}"#.to_vec()),
            422,
            "Invalid",
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(br#"{"kind":"Secret","metadata":{"name":"x"}}"#.to_vec()),
            400,
            "BadRequest",
        ),
        (
            "POST",
            "/api/v1/namespaces/nope/configmaps",
            Some(br#"{"metadata":{"name":"x"}}"#.to_vec()),
            404,
            "NotFound",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20b",
            None,
            400,
            "BadRequest",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps?resourceVersion=abc&resourceVersionMatch=NotOlderThan",
            None,
            400,
            "BadRequest",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps?continue=garbage",
            None,
            400,
            "BadRequest",
        ),
        (
            "PATCH",
            "/api/v1/namespaces/default/configmaps/kube-root-ca.crt",
            Some(b"{}".to_vec()),
            415,
            "UnsupportedMediaType",
        ),
    ];
    for (method, path, body, code, reason) in cases {
        let r = sim.curl(method, path, &ct, body.as_deref());
        assert_eq!(r.status, code, "{method} {path}: {}", r.text());
        let st = r.json();
        assert_eq!(
            (st["kind"].clone(), st["reason"].clone()),
            (json!("Status"), json!(reason)),
            "{method} {path}"
        );
    }
    // A JSON patch that does not apply: 422; a malformed one: 400.
    let jp = [("Content-Type", "application/json-patch+json")];
    let r = sim.curl(
        "PATCH",
        "/api/v1/namespaces/default/configmaps/kube-root-ca.crt",
        &jp,
        Some(br#"[{"op":"remove","path":"/nope"}]"#),
    );
    assert_eq!(r.status, 422);
    let r = sim.curl(
        "PATCH",
        "/api/v1/namespaces/default/configmaps/kube-root-ca.crt",
        &jp,
        Some(b"{"),
    );
    assert_eq!(r.status, 400);
    // Only protobuf accepted: 406.
    let r = sim.curl(
        "GET",
        "/api/v1/namespaces",
        &[("Accept", "application/vnd.kubernetes.protobuf")],
        None,
    );
    assert_eq!(r.status, 406);
    // Protobuf bodies: a good one is decoded; a truncated one is 400 saying where; a kind
    // no built-in has is 415 and recorded.
    let pb = [("Content-Type", "application/vnd.kubernetes.protobuf")];
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pb"},
        "data": {"k": "v"}});
    let body = stalemate::sim::proto_body::encode(&cm).unwrap();
    let r = sim.curl(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &pb,
        Some(&body),
    );
    assert_eq!(
        (r.status, &r.json()["data"]["k"]),
        (201, &json!("v")),
        "{}",
        r.text()
    );
    let cut = &body[..body.len() - 3];
    let r = sim.curl(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &pb,
        Some(cut),
    );
    assert_eq!((r.status, &r.json()["reason"]), (400, &json!("BadRequest")));
    let message = r.json()["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains("malformed protobuf at byte"), "{message}");
    let widget = stalemate::k8s::protobuf::envelope("example.com/v1", "Widget", &[]);
    let r = sim.curl(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &pb,
        Some(&widget),
    );
    assert_eq!(r.status, 415, "{}", r.text());
    let state = sim.curl("GET", "/_sim/state", &[], None).json();
    assert_eq!(state["protobufBodies"], 1, "{state}");
    let unanswered = state["unanswered"].to_string();
    assert!(unanswered.contains("Widget"), "{unanswered}");
    // The server is still fine.
    assert_eq!(sim.curl("GET", "/version", &[], None).status, 200);
}

#[test]
fn writes_preconditions_generate_name_and_namespace_lifecycle() {
    let sim = Sim::start();
    let r = post(
        &sim,
        "/api/v1/namespaces/default/configmaps",
        json!({"metadata": {"generateName": "gen-"}}),
    );
    assert_eq!(r.status, 201);
    let name = r.json()["metadata"]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    let r = post(
        &sim,
        "/api/v1/namespaces/default/configmaps",
        json!({"metadata": {"name": &name}}),
    );
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (409, json!("AlreadyExists"))
    );
    // DELETE with a stale resourceVersion precondition: 409; with the right uid: gone.
    let cm = sim
        .curl(
            "GET",
            &format!("/api/v1/namespaces/default/configmaps/{name}"),
            &[],
            None,
        )
        .json();
    let del = |pre: Value| {
        sim.curl(
            "DELETE",
            &format!("/api/v1/namespaces/default/configmaps/{name}"),
            &[("Content-Type", "application/json")],
            Some(json!({"preconditions": pre}).to_string().as_bytes()),
        )
    };
    assert_eq!(del(json!({"resourceVersion": "1"})).status, 409);
    let r = del(json!({"uid": cm["metadata"]["uid"]}));
    assert_eq!(
        (r.status, r.json()["status"].clone()),
        (200, json!("Success"))
    );
    // Secrets: stringData folds into base64 data.
    let r = post(
        &sim,
        "/api/v1/namespaces/default/secrets",
        json!({"metadata": {"name": "s"}, "stringData": {"a": "hello"}}),
    );
    assert_eq!(r.json()["data"]["a"], "aGVsbG8=");
    assert!(r.json().get("stringData").is_none());
    // A terminating namespace refuses new content (403) until it is gone.
    post(
        &sim,
        "/api/v1/namespaces",
        json!({"metadata": {"name": "t"}}),
    );
    post(
        &sim,
        "/api/v1/namespaces/t/configmaps",
        json!({"metadata": {"name": "held", "finalizers": ["e2e/hold"]}}),
    );
    let r = sim.curl("DELETE", "/api/v1/namespaces/t", &[], None);
    assert_eq!(
        (r.status, r.json()["status"]["phase"].clone()),
        (200, json!("Terminating"))
    );
    let r = post(
        &sim,
        "/api/v1/namespaces/t/configmaps",
        json!({"metadata": {"name": "new"}}),
    );
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (403, json!("Forbidden"))
    );
    let held = sim
        .curl("GET", "/api/v1/namespaces/t/configmaps/held", &[], None)
        .json();
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    let r = sim.curl(
        "PATCH",
        "/api/v1/namespaces/t/configmaps/held",
        &[("Content-Type", "application/merge-patch+json")],
        Some(br#"{"metadata":{"finalizers":null}}"#),
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        sim.curl("GET", "/api/v1/namespaces/t", &[], None).status,
        404,
        "the namespace goes once it is empty"
    );
}

#[test]
fn misbehaviour_close_pause_and_restart() {
    let sim = Sim::start();
    // close-watches: clean ends a stream normally (curl exits 0 well before --max-time).
    let (ca, url) = (sim.ca(), sim.url.clone());
    let clean = std::thread::spawn(move || {
        let start = std::time::Instant::now();
        let r = curl(
            &ca,
            &url,
            "GET",
            "/api/v1/namespaces?watch=1",
            &[],
            None,
            &["--max-time", "20"],
        );
        (r, start.elapsed())
    });
    common::wait_for("the watch to be open", Duration::from_secs(10), || {
        (sim.curl("GET", "/_sim/state", &[], None).json()["watches"] == 1).then_some(())
    });
    sim.admin("/_sim/close-watches?mode=clean");
    let (r, took) = clean.join().unwrap();
    assert_eq!(r.status, 200);
    assert!(took < Duration::from_secs(15));
    assert_eq!(
        lines(&r.body).len(),
        4,
        "the four initial namespaces, then a clean end"
    );

    // abrupt: the stream is reset; curl reports a transfer error.
    let mut child = std::process::Command::new("curl")
        .args([
            "-sS",
            "--http1.1",
            "-o",
            "/dev/null",
            "--max-time",
            "20",
            "--cacert",
        ])
        .arg(sim.ca())
        .arg(format!("{}/api/v1/namespaces?watch=1", sim.url))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    common::wait_for("the watch to be open", Duration::from_secs(10), || {
        (sim.curl("GET", "/_sim/state", &[], None).json()["watches"] == 1).then_some(())
    });
    sim.admin("/_sim/close-watches?mode=abrupt");
    let st = child.wait().unwrap();
    assert!(
        !st.success() && st.code() != Some(28),
        "aborted, not timed out: {st}"
    );

    // pause holds requests; they complete afterwards.
    sim.admin("/_sim/pause?for=800ms");
    let start = std::time::Instant::now();
    assert_eq!(sim.curl("GET", "/api/v1/namespaces", &[], None).status, 200);
    assert!(
        start.elapsed() >= Duration::from_millis(500),
        "held while paused"
    );

    // restart: connections refused while down, then served again with state intact.
    let before = sim.curl("GET", "/_sim/state", &[], None).json()["resourceVersion"].clone();
    sim.admin("/_sim/restart?down=1s");
    std::thread::sleep(Duration::from_millis(300));
    let st = std::process::Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "--max-time", "2", "--cacert"])
        .arg(sim.ca())
        .arg(format!("{}/version", sim.url))
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!st.success(), "refused while down");
    let state = common::wait_for(
        "the simulator to come back",
        Duration::from_secs(10),
        || {
            let out = std::process::Command::new("curl")
                .args(["-sS", "--max-time", "2", "--cacert"])
                .arg(sim.ca())
                .arg(format!("{}/_sim/state", sim.url))
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            serde_json::from_slice::<Value>(&out.stdout).ok()
        },
    );
    assert_eq!(state["resourceVersion"], before);
}

/// A WatchList response (sendInitialEvents with bookmarks) to a client that accepts gzip
/// is gzipped, one gzip member per flush, as kube-apiserver 1.37 does
/// (WatchListCompression, `perFlushGzipWriter`); a plain watch, or a client that does not
/// ask, is not.
#[test]
fn watch_lists_are_gzipped_when_asked() {
    let sim = Sim::start();
    post(
        &sim,
        "/api/v1/namespaces/default/configmaps",
        json!({"metadata": {"name": "w"}}),
    );
    let list = "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true\
                &allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan";
    let gzip = ["-H", "Accept-Encoding: gzip"];
    let r = watch(&sim, list, "2", &gzip);
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    let mut plain = Vec::new();
    use std::io::Read;
    flate2::read::MultiGzDecoder::new(&r.body[..])
        .read_to_end(&mut plain)
        .unwrap();
    let events = lines(&plain);
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(
        types.contains(&"ADDED") && types.last() == Some(&"BOOKMARK"),
        "{events:?}"
    );
    let members = r.body.windows(3).filter(|w| w == b"\x1f\x8b\x08").count();
    assert!(members >= 2, "one member per event: {members}");
    let r = watch(&sim, list, "2", &[]);
    assert!(r.header("content-encoding").is_none());
    let r = watch(
        &sim,
        "/api/v1/namespaces/default/configmaps?watch=1",
        "2",
        &gzip,
    );
    assert!(r.header("content-encoding").is_none());
}

#[test]
fn large_lists_are_gzipped_when_asked() {
    let sim = Sim::start();
    for i in 0..70 {
        post(
            &sim,
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": format!("big-{i}")}, "data": {"k": "x".repeat(2048)}}),
        );
    }
    let r = sim.curl(
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[("Accept-Encoding", "gzip")],
        None,
    );
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    let mut plain = Vec::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(&r.body[..])
        .read_to_end(&mut plain)
        .unwrap();
    let list: Value = serde_json::from_slice(&plain).unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 71);
    let r = sim.curl("GET", "/api/v1/namespaces/default/configmaps", &[], None);
    assert!(r.header("content-encoding").is_none());
    // Small responses are never compressed.
    let r = sim.curl("GET", "/version", &[("Accept-Encoding", "gzip")], None);
    assert!(r.header("content-encoding").is_none());
}

#[test]
fn sigterm_ends_open_watches_and_exits_cleanly() {
    let mut sim = Sim::start();
    let (ca, url) = (sim.ca(), sim.url.clone());
    let watcher = std::thread::spawn(move || {
        curl(
            &ca,
            &url,
            "GET",
            "/api/v1/namespaces?watch=1",
            &[],
            None,
            &["--max-time", "20"],
        )
    });
    common::wait_for("the watch to be open", Duration::from_secs(10), || {
        (sim.curl("GET", "/_sim/state", &[], None).json()["watches"] == 1).then_some(())
    });
    let st = sim
        .terminate(Duration::from_secs(10))
        .expect("exited within the drain deadline");
    assert!(st.success(), "{st}");
    let r = watcher.join().unwrap();
    assert_eq!(
        (r.status, lines(&r.body).len()),
        (200, 4),
        "the watch ended cleanly after its events"
    );
}
