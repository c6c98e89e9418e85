//! What makes a run's results trustworthy, through the real binary in front of `stalemate
//! sim`: every window applies (or says why not), upstream watch ends reach clients as
//! they would direct, and no input bloats or crashes the proxy.

#[path = "common/mod.rs"]
mod common;
use common::Kubectl;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::kubectl::kubectl_cmd;
use common::{Proxy, Sim, curl, install_gitrepo_crd, wait_for};
use serde_json::{Value, json};

/// The sum of a metric's samples whose labels include all of `labels`.
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

fn metrics(proxy: &Proxy) -> String {
    proxy.admin_get("/metrics").1
}

/// A watch of namespace `ns`'s configmaps through the proxy, run by curl in the
/// background for `secs` seconds with extra headers/flags; returns its response.
fn background_watch(
    proxy: &Proxy,
    ns: &str,
    secs: u32,
    headers: Vec<(&'static str, &'static str)>,
    extra: Vec<&'static str>,
) -> std::thread::JoinHandle<common::Response> {
    let (ca, url) = (proxy.ca(), proxy.url.clone());
    let path = format!("/api/v1/namespaces/{ns}/configmaps?watch=true&timeoutSeconds={secs}");
    let max = (secs + 5).to_string();
    std::thread::spawn(move || {
        let mut flags = vec!["--max-time", max.as_str()];
        flags.extend(extra);
        curl(&ca, &url, "GET", &path, &headers, None, &flags)
    })
}

/// Create configmaps `prefix0..n` in `ns`, straight on the simulator.
fn create_configmaps(sim: &Sim, ns: &str, prefix: &str, n: usize) {
    for i in 0..n {
        sim.kubectl_ok(&["-n", ns, "create", "configmap", &format!("{prefix}{i}")]);
    }
}

fn names(body: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(body)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            v["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

/// An upstream that gzips its watch streams (whatever Accept-Encoding said): the proxy
/// decodes the stream, gates it — the freeze holds its events — and the client gets it
/// plain.
#[test]
fn gzip_encoded_watches_are_decoded_and_gated() {
    let sim = Sim::start_with(&["--encode-watches", "gzip"]);
    let proxy = Proxy::start(&sim, &[]);
    sim.kubectl_ok(&["create", "namespace", "z"]);
    let direct = sim.curl(
        "GET",
        "/api/v1/namespaces/z/configmaps?watch=true&timeoutSeconds=1",
        &[],
        None,
    );
    assert_eq!(
        direct.header("content-encoding"),
        Some("gzip"),
        "the upstream gzips"
    );
    let window = json!({"name": "fz", "resources": ["configmaps"], "namespaces": ["z"], "fault": {"freeze": {}}, "duration": "1500ms"});
    assert_eq!(
        proxy
            .admin_call(None, "POST", "/v1/windows", Some(&window))
            .0,
        201
    );
    let w = background_watch(&proxy, "z", 3, vec![], vec![]);
    std::thread::sleep(Duration::from_millis(300));
    create_configmaps(&sim, "z", "g", 3);
    let r = w.join().unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-encoding"),
        None,
        "the client gets it plain"
    );
    let got = names(&r.body);
    for want in ["g0", "g1", "g2"] {
        assert!(got.iter().any(|n| n == want), "{want} in {got:?}");
    }
    let m = metrics(&proxy);
    let cm = [("resource", "configmaps"), ("action", "held")];
    assert!(
        sample(&m, "stalemate_watch_events_total", &cm) >= 3.0,
        "{m}"
    );
    assert_eq!(
        sample(&m, "stalemate_watch_streams_ungated_total", &[]),
        0.0
    );
}

/// What the gate still cannot frame (a `deflate` stream) passes through as it is — and is
/// counted and named, never silently ungated.
#[test]
fn watches_the_gate_cannot_frame_are_counted() {
    let sim = Sim::start_with(&["--encode-watches", "deflate"]);
    let proxy = Proxy::start(&sim, &[]);
    create_configmaps(&sim, "default", "d", 1);
    let w = background_watch(&proxy, "default", 1, vec![], vec!["--compressed"]);
    let r = w.join().unwrap();
    assert_eq!(r.status, 200);
    assert!(
        names(&r.body).contains(&"d0".to_string()),
        "passed through intact"
    );
    let m = metrics(&proxy);
    assert_eq!(
        sample(
            &m,
            "stalemate_watch_streams_ungated_total",
            &[("resource", "configmaps"), ("reason", "content-encoding")]
        ),
        1.0,
        "{m}"
    );
}

/// A client asking only for a media type the gate cannot frame (CBOR) gets JSON instead,
/// gated like any other; direct, the simulator refuses CBOR.
#[test]
fn watches_in_unframable_media_types_are_asked_for_as_json() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    let cbor = ("Accept", "application/cbor-seq");
    let direct = sim.curl(
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
        &[cbor],
        None,
    );
    assert_eq!(direct.status, 406);
    let window = json!({"name": "f", "resources": ["configmaps"], "fault": {"freeze": {}}, "duration": "1s"});
    assert_eq!(
        proxy
            .admin_call(None, "POST", "/v1/windows", Some(&window))
            .0,
        201
    );
    let w = background_watch(&proxy, "default", 2, vec![cbor], vec![]);
    std::thread::sleep(Duration::from_millis(300));
    create_configmaps(&sim, "default", "c", 2);
    let r = w.join().unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(names(&r.body).contains(&"c1".to_string()));
    let m = metrics(&proxy);
    assert!(
        sample(
            &m,
            "stalemate_watch_events_total",
            &[("resource", "configmaps"), ("action", "held")]
        ) >= 2.0,
        "{m}"
    );
}

/// How `kubectl get -w` ended: (exit code, ERROR events it printed, error output).
fn kubectl_watch_end(
    kubeconfig: &std::path::Path,
    cache: &std::path::Path,
    sim: &Sim,
    misbehave: &str,
) -> (Option<i32>, usize, String) {
    let mut child = kubectl_cmd(kubeconfig, cache)
        .args([
            "get",
            "configmaps",
            "-w",
            "--output-watch-events",
            "-o",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let lines = std::thread::spawn(move || {
        BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .filter(|l| l.contains(r#""type":"ERROR""#))
            .collect::<Vec<_>>()
    });
    std::thread::sleep(Duration::from_millis(1500));
    let r = sim.curl("POST", misbehave, &[], None);
    assert_eq!(r.status, 200, "{}", r.text());
    let st = wait_for("kubectl get -w to end", Duration::from_secs(20), || {
        child.try_wait().ok().flatten()
    });
    let mut err = String::new();
    use std::io::Read;
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    let errors = lines.join().unwrap();
    (
        st.code(),
        errors.len(),
        format!("{err}{}", errors.join("\n")),
    )
}

/// An upstream watch that ends badly reaches the client as it would direct: a restarted
/// apiserver (connections dropped) is an end of stream that kubectl (HTTP/2) takes as a
/// normal close; a reset stream is a reset.
#[test]
fn upstream_watch_ends_reach_kubectl_as_they_do_direct() {
    for misbehave in [
        "/_sim/restart?down=300ms",
        "/_sim/close-watches?mode=abrupt",
    ] {
        let sim = Sim::start();
        let proxy = Proxy::start(&sim, &[]);
        let direct = kubectl_watch_end(&sim.kubeconfig, &sim.cache_dir(), &sim, misbehave);
        std::thread::sleep(Duration::from_millis(800));
        let proxied = kubectl_watch_end(
            &proxy.kubeconfig,
            &proxy.dir.path().join("kubectl-cache"),
            &sim,
            misbehave,
        );
        assert_eq!(
            (proxied.0, proxied.1),
            (direct.0, direct.1),
            "{misbehave}: direct {direct:?}, through the proxy {proxied:?}"
        );
        if misbehave.contains("restart") {
            assert_eq!(direct.1, 0, "a restart is no error for kubectl: {direct:?}");
        } else {
            assert_eq!(direct.1, 1, "a reset is an ERROR event: {direct:?}");
        }
    }
}

/// A kube-rs watcher (HTTP/1.1) through the proxy resumes from its last
/// resourceVersion after the upstream restarts or resets its watch, as it does direct:
/// no relist, and the next change arrives.
#[tokio::test]
async fn upstream_watch_ends_reach_kube_rs_as_they_do_direct() {
    use futures_util::TryStreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, PostParams};
    use kube::runtime::watcher;
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    for (n, misbehave) in [
        "/_sim/restart?down=300ms",
        "/_sim/close-watches?mode=abrupt",
    ]
    .into_iter()
    .enumerate()
    {
        for (via, client) in [
            ("direct", sim.client().await),
            ("proxy", proxy.client().await),
        ] {
            let api: Api<ConfigMap> = Api::namespaced(client, "default");
            let mut events = Box::pin(watcher(
                api.clone(),
                watcher::Config::default().labels(&format!("round={n}{via}")),
            ));
            tokio::time::timeout(Duration::from_secs(20), async {
                while !matches!(
                    events.try_next().await.unwrap(),
                    Some(watcher::Event::InitDone)
                ) {}
            })
            .await
            .unwrap();
            let r = sim.curl("POST", misbehave, &[], None);
            assert_eq!(r.status, 200);
            tokio::time::sleep(Duration::from_millis(800)).await;
            let admin = sim.client().await;
            let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("after-{n}-{via}"), "labels": {"round": format!("{n}{via}")}}})).unwrap();
            Api::<ConfigMap>::namespaced(admin, "default")
                .create(&PostParams::default(), &cm)
                .await
                .unwrap();
            let mut relisted = false;
            let seen = tokio::time::timeout(Duration::from_secs(30), async {
                loop {
                    match events.try_next().await {
                        Ok(Some(watcher::Event::Apply(o))) => break o.metadata.name,
                        Ok(Some(watcher::Event::Init)) => relisted = true,
                        _ => {}
                    }
                }
            })
            .await
            .unwrap_or_else(|_| panic!("{misbehave} {via}: the next change never arrived"));
            assert_eq!(seen.as_deref(), Some(format!("after-{n}-{via}").as_str()));
            assert!(!relisted, "{misbehave} {via}: resumed, no relist");
        }
    }
}

/// Metric labels name only resources the upstream serves: made-up paths are `other`,
/// and `/metrics` does not grow with them; a freshly created CRD is named once
/// discovery is refreshed.
#[test]
fn resource_labels_are_bounded_by_discovery() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    // One curl process sending 300 requests on one connection.
    let mut args: Vec<String> = vec![
        "-sS".into(),
        "--http1.1".into(),
        "--cacert".into(),
        proxy.ca().display().to_string(),
    ];
    for i in 0..300 {
        args.push("-o".into());
        args.push("/dev/null".into());
        args.push(format!("{}/apis/x{i}.example.com/v1/things{i}", proxy.url));
    }
    let st = Command::new("curl").args(&args).status().unwrap();
    assert!(st.success());
    let m = metrics(&proxy);
    assert!(
        !m.contains("example.com"),
        "a made-up resource became a label"
    );
    assert_eq!(
        sample(
            &m,
            "stalemate_requests_total",
            &[("resource", "other"), ("code", "404")]
        ),
        300.0
    );
    install_gitrepo_crd(&sim);
    // Discovery runs at most once a second, so the first requests may still be `other`.
    let crd = [
        ("resource", "gitrepositories.source.testbed.example.com"),
        ("verb", "list"),
    ];
    wait_for("the new CRD to be named", Duration::from_secs(10), || {
        let r = proxy.curl(
            "GET",
            "/apis/source.testbed.example.com/v1/namespaces/default/gitrepositories",
            &[],
            None,
        );
        assert_eq!(r.status, 200);
        (sample(&metrics(&proxy), "stalemate_requests_total", &crd) >= 1.0).then_some(())
    });
}

/// Durations past 24h are refused where a window is read — never a panic at the first
/// event.
#[test]
fn absurd_durations_are_refused() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    let w = json!({"name": "l", "resources": ["configmaps"], "fault": {"lag": {"delay": "500000000000y"}}});
    let (code, body) = proxy.admin_call(None, "POST", "/v1/windows", Some(&w));
    assert_eq!(code, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("fault.lag.delay"),
        "{body}"
    );
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.json");
    std::fs::write(&f, json!({"windows": [w]}).to_string()).unwrap();
    let out = Command::new(common::BIN)
        .arg("check")
        .arg(&f)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("longer than the 24h"));
    // The proxy still serves.
    assert_eq!(
        proxy.curl("GET", "/api/v1/namespaces", &[], None).status,
        200
    );
}

/// An armed window can be cancelled over the control API before its trigger fires.
#[test]
fn armed_windows_can_be_deleted() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    let w = json!({"name": "on-create", "resources": ["configmaps"], "fault": {"freeze": {}},
                   "trigger": {"afterRequests": {"verb": "create", "resource": "configmaps"}}});
    assert_eq!(
        proxy.admin_call(None, "POST", "/v1/windows", Some(&w)).0,
        202
    );
    let (_, v) = proxy.admin_call(None, "GET", "/v1/windows", None);
    assert_eq!(v["armed"][0]["window"]["name"], "on-create");
    let (code, v) = proxy.admin_call(None, "DELETE", "/v1/windows/on-create", None);
    assert_eq!(
        (code, v["disarmed"].clone(), v["closed"].clone()),
        (200, json!(true), json!(false))
    );
    proxy.kubectl_ok(&["create", "configmap", "x"]);
    let (_, v) = proxy.admin_call(None, "GET", "/v1/windows", None);
    assert_eq!(
        (v["windows"].clone(), v["armed"].clone()),
        (json!([]), json!([]))
    );
    assert_eq!(
        proxy
            .admin_call(None, "DELETE", "/v1/windows/on-create", None)
            .0,
        404
    );
}
