//! The staleness engine through the real binary: windows opened over the control API
//! gate real clients' watches (kubectl, kube-rs, curl) in front of `stalemate sim`.

#[path = "common/mod.rs"]
mod common;
use common::Kubectl;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use common::kubectl::kubectl_cmd;
use common::{Proxy, Sim};
use serde_json::{Value, json};

fn admin(proxy: &Proxy, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    proxy.admin_call(None, method, path, body)
}

/// `kubectl get -w --output-watch-events -o json` lines, on a channel.
fn watch_lines(
    kubeconfig: &std::path::Path,
    cache: &std::path::Path,
    args: &[&str],
) -> (std::process::Child, Receiver<(Instant, Value)>) {
    let mut child = kubectl_cmd(kubeconfig, cache)
        .args(args)
        .args(["-w", "--output-watch-events", "-o", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&l)
                && tx.send((Instant::now(), v)).is_err()
            {
                break;
            }
        }
    });
    (child, rx)
}

fn summary(v: &Value) -> (String, String, String) {
    (
        v["type"].as_str().unwrap_or("").to_string(),
        v["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        v["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}

/// (a) A 2 s freeze opened over the control API: changes made during the window reach the
/// proxied watch only after it closes, in order, none missing — the same events a direct
/// watch on the simulator saw.
#[test]
fn freeze_over_the_control_api_holds_then_releases_everything_in_order() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    sim.kubectl_ok(&["create", "namespace", "f"]);
    let cache = proxy.dir.path().join("cache-w");
    let (mut direct, direct_rx) = watch_lines(
        &sim.kubeconfig,
        &sim.dir.path().join("cache-d"),
        &["-n", "f", "get", "configmaps", "-l", "e2e=yes"],
    );
    let (mut proxied, proxied_rx) = watch_lines(
        &proxy.kubeconfig,
        &cache,
        &["-n", "f", "get", "configmaps", "-l", "e2e=yes"],
    );
    std::thread::sleep(Duration::from_millis(800));

    let (code, _) = admin(
        &proxy,
        "POST",
        "/v1/windows",
        Some(
            &json!({"name": "freeze-f", "resources": ["configmaps"], "namespaces": ["f"], "fault": {"freeze": {}}, "duration": "2s"}),
        ),
    );
    assert_eq!(code, 201);
    let (_, status) = admin(&proxy, "GET", "/v1/windows", None);
    assert_eq!(status["windows"][0]["window"]["name"], "freeze-f");
    let opened = Instant::now();
    for i in 0..4 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}"), "namespace": "f", "labels": {"e2e": "yes"}}, "data": {"v": "1"}});
        let out = sim.kubectl_stdin(&["create", "-f", "-"], &cm.to_string());
        assert!(out.status.success());
    }
    sim.kubectl_ok(&[
        "-n",
        "f",
        "patch",
        "configmap",
        "c1",
        "-p",
        r#"{"data":{"v":"2"}}"#,
    ]);
    sim.kubectl_ok(&["-n", "f", "delete", "configmap", "c2"]);

    let collect = |rx: &Receiver<(Instant, Value)>| -> Vec<(Instant, Value)> {
        (0..6)
            .map(|_| {
                rx.recv_timeout(Duration::from_secs(20))
                    .expect("watch event")
            })
            .collect()
    };
    let d = collect(&direct_rx);
    let p = collect(&proxied_rx);
    let _ = direct.kill();
    let _ = proxied.kill();
    let _ = (direct.wait(), proxied.wait());
    let ds: Vec<_> = d.iter().map(|(_, v)| summary(v)).collect();
    let ps: Vec<_> = p.iter().map(|(_, v)| summary(v)).collect();
    assert_eq!(ps, ds, "the same events, in the same order");
    assert!(
        d[0].0 < opened + Duration::from_millis(1500),
        "the direct watch saw them at once"
    );
    for (t, v) in &p {
        assert!(
            *t >= opened + Duration::from_millis(1900),
            "{:?} arrived {:?} after the window opened",
            summary(v),
            t.duration_since(opened)
        );
    }
    let (_, status) = admin(&proxy, "GET", "/v1/windows", None);
    assert_eq!(status["windows"], json!([]), "closed after its duration");
    // Metrics tell the story: events held, then released; nothing held now.
    let (_, m) = proxy.admin_get("/metrics");
    let sum = |action: &str| -> u64 {
        m.lines()
            .filter(|l| {
                l.starts_with("stalemate_watch_events_total{")
                    && l.contains(&format!(r#"action="{action}""#))
                    && l.contains(r#"resource="configmaps""#)
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    assert_eq!((sum("held"), sum("released")), (6, 6), "{m}");
    assert!(
        m.lines()
            .any(|l| l == r#"stalemate_window_active{window="freeze-f"} 0"#),
        "{m}"
    );
    assert!(
        m.lines()
            .any(|l| l.starts_with("stalemate_held_events{") && l.ends_with(" 0")),
        "{m}"
    );
}

/// (c) `relist {how: expired}` makes a kube-rs watcher relist; a freeze can be ended early
/// with DELETE, releasing what it held.
#[tokio::test]
async fn relist_fault_and_early_close() {
    use futures_util::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, PostParams};
    use kube::runtime::watcher;
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    let client = proxy.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut stream = watcher(api.clone(), watcher::Config::default()).boxed();
    let next = async |s: &mut futures_util::stream::BoxStream<
        'static,
        Result<watcher::Event<ConfigMap>, watcher::Error>,
    >| {
        tokio::time::timeout(Duration::from_secs(20), s.next())
            .await
            .expect("watch event")
            .expect("stream ended")
    };
    while !matches!(next(&mut stream).await, Ok(watcher::Event::InitDone)) {}
    let p2 = proxy.admin.clone();
    let post = move |b: Value| {
        let p = p2.clone();
        std::thread::spawn(move || {
            Command::new("curl")
                .args([
                    "-sS",
                    "-X",
                    "POST",
                    "-H",
                    "Content-Type: application/json",
                    "--data-binary",
                    &b.to_string(),
                ])
                .arg(format!("{p}/v1/windows"))
                .output()
                .unwrap()
        })
        .join()
        .unwrap()
    };
    // Make sure the watch itself is open (kube-rs starts it lazily after InitDone): a
    // relist window ends the streams open when it opens.
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "probe"}})).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    while !matches!(next(&mut stream).await, Ok(watcher::Event::Apply(_))) {}
    post(
        json!({"name": "relist", "resources": ["configmaps"], "fault": {"relist": {"how": "expired"}}}),
    );
    let mut saw_410 = false;
    loop {
        match next(&mut stream).await {
            Err(watcher::Error::WatchError(s)) if s.code == 410 => saw_410 = true,
            Ok(watcher::Event::Init) => break,
            _ => {}
        }
    }
    assert!(saw_410, "the relist fault arrived as ERROR 410");
    while !matches!(next(&mut stream).await, Ok(watcher::Event::InitDone)) {}

    // A freeze without a duration holds until DELETE /v1/windows/{name}.
    post(json!({"name": "hold", "resources": ["configmaps"], "fault": {"freeze": {}}}));
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "held"}})).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(700), stream.next())
            .await
            .is_err(),
        "held while frozen"
    );
    let admin_url = proxy.admin.clone();
    let out = std::thread::spawn(move || {
        Command::new("curl")
            .args([
                "-sS",
                "-X",
                "DELETE",
                "-w",
                "%{http_code}",
                "-o",
                "/dev/null",
            ])
            .arg(format!("{admin_url}/v1/windows/hold"))
            .output()
            .unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200");
    match next(&mut stream).await {
        Ok(watcher::Event::Apply(o)) => assert_eq!(o.metadata.name.as_deref(), Some("held")),
        other => panic!("expected the held event, got {other:?}"),
    }
}

/// `stalemate check` accepts good schedules and names the field of a bad one.
#[test]
fn check_reports_errors_with_location_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(&good, r#"{"windows": [{"name": "w", "resources": ["configmaps"], "fault": {"lag": {"delay": "2s"}}, "duration": "10s"}]}"#).unwrap();
    let out = Command::new(common::BIN)
        .args(["check"])
        .arg(&good)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\n  \"windows\": [\n    {\"name\": \"w\", \"fault\": {\"lag\": {\"delay\": \"soon\"}}}\n  ]\n}\n").unwrap();
    let out = Command::new(common::BIN)
        .args(["check"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.json:3:")
            && err.contains("windows[0].fault")
            && err.contains("not a duration"),
        "{err}"
    );
}

/// A schedule with a type error in one window and semantic errors elsewhere: `check`
/// reports every one at once, each at the line and column of the value at fault, as a
/// compiler does — and `run` refuses it with the same errors before it starts anything.
#[test]
fn check_reports_every_error_at_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    // windows[3] rewinds to "typed", the window whose type error is reported: a window
    // that did not deserialize still counts as a name, so no second error follows.
    std::fs::write(
        &bad,
        r#"{
  "clients": {
    "ctrl": { "userAgent": "^ctrl/" },
    "gc": { "serviceAccount": "garbage-collector" }
  },
  "windows": [
    { "name": "typed", "fault": { "lag": { "delay": 5 } } },
    { "name": "teapot", "client": "ctrl", "fault": { "errors": { "status": 418 } } },
    { "name": "nobody", "client": "ghost", "fault": { "freeze": {} } },
    { "name": "teapot", "fault": { "rewind": { "at": "typed" } },
      "trigger": { "at": "1s", "every": "10s" } },
    { "name": "later", "fault": { "rewind": { "at": "nowhere" } } }
  ]
}
"#,
    )
    .unwrap();
    let f = bad.display().to_string();
    let want = [
        format!(
            r#"{f}:4:31: clients.gc.serviceAccount: "garbage-collector" is not NAMESPACE:NAME"#
        ),
        format!(
            "{f}:7:53: windows[0].fault.lag.delay: invalid type: integer `5`, expected a string"
        ),
        format!(
            "{f}:8:76: windows[1].fault.errors.status: 418 is not one of 409, 429, 500, 503, 504"
        ),
        format!(
            r#"{f}:9:35: windows[2].client: "ghost" is not a client defined in `clients` (or "*")"#
        ),
        format!(r#"{f}:10:15: windows[3].name: "teapot" is used by another window"#),
        format!(
            "{f}:11:18: windows[3].trigger: give exactly one of at, every, afterRequests, afterEvents, manual"
        ),
        format!(
            r#"{f}:12:53: windows[4].fault.rewind.at: "nowhere" is not another window of this schedule"#
        ),
    ];
    let out = Command::new(common::BIN)
        .arg("check")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let listed: Vec<&str> = err.lines().filter_map(|l| l.strip_prefix("  ")).collect();
    assert_eq!(listed, want, "{err}");
    assert!(err.starts_with(&format!("{f} has 7 error(s):\n")), "{err}");
    // `run` refuses it with the same errors, before any cluster or controller.
    let out = Command::new(common::BIN)
        .args(["run", "--sim", "--schedule"])
        .arg(&bad)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for w in &want {
        assert!(err.contains(w.as_str()), "{w}\nnot in\n{err}");
    }
    // A syntax error stops the reading there: one error, at its place (columns count
    // characters: serde_json's own count, in bytes, says 19).
    std::fs::write(
        &bad,
        "{\n  \"windows\": [\n    {\"name\": \"é\",, }\n  ]\n}\n",
    )
    .unwrap();
    let out = Command::new(common::BIN)
        .arg("check")
        .arg(&bad)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("\n  {f}:3:18: key must be a string\n")),
        "{err}"
    );
}

/// (e) `errors {status: 429, retryAfter}` and `latency` as clients see them, and an
/// `afterRequests` trigger opening a window at the Nth matching request.
#[tokio::test]
async fn errors_latency_and_after_requests() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::Api;
    let sim = Sim::start();
    let dir = tempfile::tempdir().unwrap();
    let schedule = dir.path().join("s.json");
    std::fs::write(
        &schedule,
        json!({
            "clients": {"curl": {"userAgent": "^curl/"}},
            "windows": [
                {"name": "throttle", "client": "*", "resources": ["configmaps"], "fault": {"errors": {"verbs": ["get"], "status": 429, "retryAfter": "1s"}}, "trigger": {"manual": {}}},
                {"name": "slow-lists", "client": "curl", "resources": ["secrets"], "fault": {"latency": {"verbs": ["list"], "delay": "800ms"}},
                 "trigger": {"afterRequests": {"verb": "list", "resource": "secrets", "count": 2}}, "duration": "30s"}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let s = schedule.to_string_lossy().into_owned();
    let proxy = Proxy::start(&sim, &["--schedule", &s]);

    // afterRequests: the first LIST is fast and untouched; the second opens the window
    // before it is forwarded, so it is already delayed.
    let timed = || {
        let t = Instant::now();
        let r = proxy.curl("GET", "/api/v1/namespaces/default/secrets", &[], None);
        assert_eq!(r.status, 200);
        t.elapsed()
    };
    let first = timed();
    let second = timed();
    assert!(
        second >= Duration::from_millis(800),
        "second LIST took {second:?}"
    );
    assert!(
        first < Duration::from_millis(800),
        "first LIST took {first:?}"
    );

    // errors: opened over the control API; GETs get the injected 429, LISTs do not.
    let (code, _) = admin(
        &proxy,
        "POST",
        "/v1/windows",
        Some(
            &json!({"name": "throttle-now", "resources": ["configmaps"], "fault": {"errors": {"verbs": ["get"], "status": 429, "retryAfter": "1s"}}, "duration": "3s"}),
        ),
    );
    assert_eq!(code, 201);
    let opened = Instant::now();
    let r = proxy.curl(
        "GET",
        "/api/v1/namespaces/default/configmaps/kube-root-ca.crt",
        &[],
        None,
    );
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("1"));
    let st = r.json();
    assert_eq!(
        (st["kind"].clone(), st["reason"].clone(), st["code"].clone()),
        (json!("Status"), json!("TooManyRequests"), json!(429))
    );
    assert!(st["message"].as_str().unwrap().contains("throttle-now"));
    assert_eq!(
        proxy
            .curl("GET", "/api/v1/namespaces/default/configmaps", &[], None)
            .status,
        200,
        "LISTs are not targeted"
    );
    // kube-rs honours Retry-After and retries until the 3 s window has closed.
    let api: Api<ConfigMap> = Api::namespaced(proxy.client().await, "default");
    api.get("kube-root-ca.crt")
        .await
        .expect("succeeds once the window closes");
    assert!(
        opened.elapsed() >= Duration::from_millis(2500),
        "kube-rs got through after {:?}",
        opened.elapsed()
    );
    let (_, m) = proxy.admin_get("/metrics");
    let throttled: u64 = m
        .lines()
        .filter(|l| l.starts_with("stalemate_requests_total{") && l.contains(r#"code="429""#))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    assert!(
        throttled >= 2,
        "curl's 429 and kube-rs's retried ones: {throttled}"
    );
    // Metrics name the schedule's clients.
    let (_, m) = proxy.admin_get("/metrics");
    assert!(
        m.lines()
            .any(|l| l.starts_with("stalemate_requests_total{") && l.contains(r#"client="curl""#)),
        "{m}"
    );
    assert!(m.contains("stalemate_windows_opened_total 2"), "{m}");
    let _ = admin(&proxy, "DELETE", "/v1/windows/slow-lists", None);
}

/// (b) A kube-rs reflector store behind a freeze is stale during the window and equals
/// the simulator's state after release; `coalesce` delivers only the last state of each
/// object.
#[tokio::test]
async fn reflector_is_stale_during_freeze_and_coalesce_delivers_last_states() {
    use futures_util::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, Patch, PatchParams, PostParams};
    use kube::runtime::{WatchStreamExt, reflector, watcher};
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    let api: Api<ConfigMap> = Api::namespaced(proxy.client().await, "default");
    let direct: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let (reader, writer) = reflector::store();
    let cm = |name: &str| -> ConfigMap {
        serde_json::from_value(
            json!({"metadata": {"name": name, "labels": {"r": "yes"}}, "data": {"v": "0"}}),
        )
        .unwrap()
    };
    direct
        .create(&PostParams::default(), &cm("a"))
        .await
        .unwrap();
    // Drive the reflector in the background; applied objects come out of a channel.
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<ConfigMap>();
    let mut stream = reflector(
        writer,
        watcher(api.clone(), watcher::Config::default().labels("r=yes")),
    )
    .applied_objects()
    .boxed();
    tokio::spawn(async move {
        while let Some(Ok(o)) = stream.next().await {
            if tx.send(o).is_err() {
                break;
            }
        }
    });
    let mut events = tokio_stream_from(rx);
    tokio::time::timeout(Duration::from_secs(20), reader.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .unwrap()
        .unwrap();
    let v = |s: &reflector::Store<ConfigMap>, n: &str| {
        s.get(&reflector::ObjectRef::new(n).within("default"))
            .and_then(|o| o.data.clone())
            .map(|d| d["v"].clone())
    };
    assert_eq!(v(&reader, "a").as_deref(), Some("0"));

    // Freeze: the store does not move while the simulator does.
    let (code, _) = admin(
        &proxy,
        "POST",
        "/v1/windows",
        Some(&json!({"name": "freeze", "resources": ["configmaps"], "fault": {"freeze": {}}})),
    );
    assert_eq!(code, 201);
    for i in 1..=3 {
        direct
            .patch(
                "a",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"v": i.to_string()}})),
            )
            .await
            .unwrap();
    }
    direct
        .create(&PostParams::default(), &cm("b"))
        .await
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(700), events.next())
            .await
            .is_err(),
        "nothing delivered while frozen"
    );
    assert_eq!(
        v(&reader, "a").as_deref(),
        Some("0"),
        "stale during the window"
    );
    assert!(v(&reader, "b").is_none());
    admin(&proxy, "DELETE", "/v1/windows/freeze", None);
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let o = tokio::time::timeout(Duration::from_secs(20), events.next())
            .await
            .unwrap()
            .unwrap();
        seen.push((
            o.metadata.name.clone().unwrap(),
            o.data.unwrap()["v"].clone(),
        ));
    }
    assert_eq!(
        seen,
        [
            ("a".to_string(), "1".to_string()),
            ("a".into(), "2".into()),
            ("a".into(), "3".into()),
            ("b".into(), "0".into())
        ]
    );
    assert_eq!(
        v(&reader, "a").as_deref(),
        Some("3"),
        "equal to the simulator after release"
    );
    assert_eq!(v(&reader, "b").as_deref(), Some("0"));

    // Coalesce: only the last state of each object.
    admin(
        &proxy,
        "POST",
        "/v1/windows",
        Some(&json!({"name": "co", "resources": ["configmaps"], "fault": {"coalesce": {}}})),
    );
    for i in 4..=6 {
        direct
            .patch(
                "a",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"v": i.to_string()}})),
            )
            .await
            .unwrap();
    }
    direct
        .patch(
            "b",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "9"}})),
        )
        .await
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(500), events.next())
            .await
            .is_err()
    );
    admin(&proxy, "DELETE", "/v1/windows/co", None);
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let o = tokio::time::timeout(Duration::from_secs(20), events.next())
            .await
            .unwrap()
            .unwrap();
        seen.push((
            o.metadata.name.clone().unwrap(),
            o.data.unwrap()["v"].clone(),
        ));
    }
    assert_eq!(
        seen,
        [("a".to_string(), "6".to_string()), ("b".into(), "9".into())]
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(500), events.next())
            .await
            .is_err(),
        "intermediate states were not delivered"
    );
    assert_eq!(v(&reader, "a").as_deref(), Some("6"));
}

/// A receiver as a `Stream`, so `.next()` reads it.
fn tokio_stream_from<T: Send + 'static>(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<T>,
) -> futures_util::stream::BoxStream<'static, T> {
    use futures_util::StreamExt;
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

/// (h) `partition`: a blackhole makes the apiserver unreachable as a dead network does —
/// kubectl's request hangs until its own `--request-timeout`, an open watch delivers
/// nothing until the link is up, then what happened meanwhile; a refusal resets kubectl's
/// connection at once; a refusal narrowed to some resources is refused as a window (a
/// connection carries every resource). After each, kubectl works again.
#[test]
fn partition_blackholes_then_refuses_as_kubectl_sees_it() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    sim.kubectl_ok(&["create", "namespace", "p"]);
    let (mut watch, rx) = watch_lines(
        &proxy.kubeconfig,
        &proxy.dir.path().join("cache-w"),
        &["-n", "p", "get", "configmaps"],
    );
    std::thread::sleep(Duration::from_millis(800));

    let (code, body) = admin(
        &proxy,
        "POST",
        "/v1/windows",
        Some(&json!({"name": "cut", "fault": {"partition": {}}, "duration": "4s"})),
    );
    assert_eq!(code, 201, "{body}");
    let opened = Instant::now();
    sim.kubectl_ok(&["-n", "p", "create", "configmap", "during"]);
    // One request (`--raw`: no discovery retried around it).
    let list = "/api/v1/namespaces/p/configmaps";
    let out = proxy.kubectl(&["get", "--raw", list, "--request-timeout=1s"]);
    let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(!out.status.success(), "kubectl got through a blackhole");
    assert!(
        err.contains("timeout") || err.contains("deadline"),
        "a hang cut by kubectl's own timeout: {err}"
    );
    // (The namespace's kube-root-ca.crt came before the window.)
    let at = loop {
        let (at, event) = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the watch gets the event once the link is up");
        if event["object"]["metadata"]["name"] == "during" {
            break at;
        }
    };
    assert!(
        at >= opened + Duration::from_millis(3500),
        "delivered through a blackhole after {:?}",
        at - opened
    );
    proxy.kubectl_ok(&["-n", "p", "get", "configmap", "during"]);

    let (code, body) = admin(
        &proxy,
        "POST",
        "/v1/windows",
        Some(&json!({"name": "closed-port", "fault": {"partition": {"mode": "refuse"}}})),
    );
    assert_eq!(code, 201, "{body}");
    // client-go tries again a second after a reset (five times for kubectl, whatever its
    // --request-timeout), so the window stays open until closed over the control API.
    let out = proxy.kubectl(&["get", "--raw", list, "--request-timeout=2s"]);
    let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(!out.status.success(), "kubectl got through a refusal");
    assert!(
        err.contains("reset") || err.contains("refused") || err.contains("eof"),
        "reset, not hung: {err}"
    );
    let (code, _) = admin(&proxy, "DELETE", "/v1/windows/closed-port", None);
    assert_eq!(code, 200);
    proxy.kubectl_ok(&["-n", "p", "get", "configmaps"]);

    let (code, body) = admin(
        &proxy,
        "POST",
        "/v1/windows",
        Some(
            &json!({"name": "narrow", "resources": ["configmaps"], "fault": {"partition": {"mode": "refuse"}}}),
        ),
    );
    assert_eq!(code, 422, "{body}");
    assert!(
        body.to_string().contains("a refusal is of connections"),
        "{body}"
    );
    let _ = watch.kill();
    let _ = watch.wait();
}
