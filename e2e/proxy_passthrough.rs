//! `stalemate serve` as a transparent proxy in front of `stalemate sim`: real kubectl,
//! kube-rs and curl (HTTP/1.1 and HTTP/2) through the real binary. (TLS on either side:
//! proxy_tls.rs.)

#[path = "common/mod.rs"]
mod common;
use common::Kubectl;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::kubectl::kubectl_cmd;
use common::{Proxy, Sim, curl, install_gitrepo_crd, peak_rss, wait_for};
use futures_util::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::{Value, json};

const GITREPO: &str = r#"apiVersion: source.testbed.example.com/v1
kind: GitRepository
metadata: {name: podinfo, namespace: default}
spec: {url: "https://example.invalid/podinfo.git"}
"#;

#[test]
fn kubectl_works_through_the_proxy() {
    let sim = Sim::start_with(&["--kube-version", "1.33"]);
    let proxy = Proxy::start(&sim, &[]);
    let v: Value = serde_json::from_str(&proxy.kubectl_ok(&["version", "-o", "json"])).unwrap();
    assert_eq!(v["serverVersion"]["minor"], "33");
    install_gitrepo_crd(&sim);
    let res = proxy.kubectl_ok(&["api-resources", "-o", "name"]);
    assert!(
        res.lines()
            .any(|l| l == "gitrepositories.source.testbed.example.com"),
        "{res}"
    );
    proxy.kubectl_ok(&["create", "namespace", "p"]);
    proxy.kubectl_ok(&["-n", "p", "create", "configmap", "c", "--from-literal=a=1"]);
    proxy.kubectl_ok(&[
        "-n",
        "p",
        "patch",
        "configmap",
        "c",
        "-p",
        r#"{"data":{"b":"2"}}"#,
    ]);
    proxy.kubectl_ok(&[
        "-n",
        "p",
        "patch",
        "configmap",
        "c",
        "--type",
        "json",
        "-p",
        r#"[{"op":"add","path":"/data/c","value":"3"}]"#,
    ]);
    let cm: Value =
        serde_json::from_str(&proxy.kubectl_ok(&["-n", "p", "get", "cm", "c", "-o", "json"]))
            .unwrap();
    assert_eq!(cm["data"], json!({"a": "1", "b": "2", "c": "3"}));

    // apply + get -w through the proxy.
    let mut watch = kubectl_cmd(&proxy.kubeconfig, &proxy.dir.path().join("kubectl-cache"))
        .args([
            "get",
            "gitrepositories",
            "-A",
            "-w",
            "--output-watch-events",
            "-o",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    let mut apply = kubectl_cmd(&proxy.kubeconfig, &proxy.dir.path().join("kubectl-cache"))
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    apply
        .stdin
        .take()
        .unwrap()
        .write_all(GITREPO.as_bytes())
        .unwrap();
    assert!(apply.wait().unwrap().success());
    proxy.kubectl_ok(&[
        "patch",
        "gitrepo",
        "podinfo",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"url":"u2"}}"#,
    ]);
    proxy.kubectl_ok(&["delete", "gitrepo", "podinfo"]);
    let types: Vec<String> = (0..3)
        .map(|_| {
            let l = rx
                .recv_timeout(Duration::from_secs(20))
                .expect("watch event through the proxy");
            serde_json::from_str::<Value>(&l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let _ = watch.kill();
    let _ = watch.wait();
    assert_eq!(types, ["ADDED", "MODIFIED", "DELETED"]);
    proxy.kubectl_ok(&["delete", "namespace", "p"]);
}

#[test]
fn raw_bodies_are_byte_identical_through_the_proxy() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    for i in 0..5 {
        sim.kubectl_ok(&[
            "-n",
            "default",
            "create",
            "configmap",
            &format!("c{i}"),
            &format!("--from-literal=k=v{i}"),
        ]);
    }
    for path in [
        "/api/v1/namespaces/default/configmaps/c3",
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1",
        "/apis",
        "/openapi/v3",
    ] {
        let direct = sim.kubectl(&["get", "--raw", path]);
        let proxied = proxy.kubectl(&["get", "--raw", path]);
        assert!(
            direct.status.success() && proxied.status.success(),
            "{path}"
        );
        assert!(!direct.stdout.is_empty(), "{path}");
        assert_eq!(direct.stdout, proxied.stdout, "{path}: bodies differ");
    }
}

/// docs/DESIGN.md "Credentials": a client's identity through the proxy is the identity it
/// has direct. With a certificate upstream kubeconfig (what kind and kubeadm write), a
/// connection that presented the certificate would answer every request as the
/// certificate's user, whatever token it carried — so requests with their own
/// `Authorization` (plain requests, watches, upgrades) must go over connections without
/// it, and only requests without credentials get the upstream's.
fn credentials_are_never_replaced(kubeconfig_auth: &str) {
    let sim = Sim::start_with(&["--kubeconfig-auth", kubeconfig_auth]);
    let proxy = Proxy::start(&sim, &[]);
    // No credentials of its own: the upstream kubeconfig's user (its certificate's CN).
    assert_eq!(
        proxy.kubectl_ok(&[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}"
        ]),
        "stalemate-sim:admin"
    );
    // Its own service-account token: that service account, as direct.
    let sa = sim.sa_token("flux-system", "source-controller");
    let out = proxy.kubectl_ok(&[
        "--token",
        &sa,
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(out, "system:serviceaccount:flux-system:source-controller");
    let review =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).to_string();
    let own = format!("Bearer {sa}");
    let direct = sim.curl(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &own),
        ],
        Some(review.as_bytes()),
    );
    assert_eq!(
        direct.json()["status"]["userInfo"]["username"],
        out.as_str()
    );
    // A token the upstream does not accept: 401 through the proxy exactly as direct,
    // for a read, a watch and an upgrade — never the certificate's user.
    let garbage = ("Authorization", "Bearer garbage");
    for path in [
        "/api/v1/namespaces/kube-system/secrets",
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=2",
    ] {
        let direct = sim.curl("GET", path, &[garbage], None);
        let proxied = proxy.curl("GET", path, &[garbage], None);
        assert_eq!(direct.status, 401, "{path}: {}", direct.text());
        assert_eq!(
            (proxied.status, proxied.json()),
            (direct.status, direct.json()),
            "{path}"
        );
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        assert!(
            upgrade(&proxy, Some("Bearer garbage"))
                .await
                .starts_with("http/1.1 401")
        );
        assert!(
            upgrade(&proxy, Some(&own))
                .await
                .starts_with("http/1.1 101")
        );
        assert!(upgrade(&proxy, None).await.starts_with("http/1.1 101"));
    });
    // A watch with its own token is served (as that user: a garbage one was refused).
    let r = proxy.curl(
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
        &[("Authorization", &own)],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn credentials_are_never_replaced_with_a_certificate_upstream() {
    credentials_are_never_replaced("cert");
}

#[test]
fn credentials_are_never_replaced_with_a_token_upstream() {
    credentials_are_never_replaced("token");
}

/// Open the simulator's echo upgrade through the proxy; the response head, lowercased.
async fn upgrade(proxy: &Proxy, authorization: Option<&str>) -> String {
    let mut tls = connect_tls(proxy).await;
    upgrade_on(&mut tls, proxy, authorization).await
}

type Tls = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

/// A TLS connection to the proxy, trusting its CA.
async fn connect_tls(proxy: &Proxy) -> Tls {
    let ca = std::fs::read(proxy.ca()).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(&ca).unwrap())
        .unwrap();
    let cfg = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let addr = proxy.url.trim_start_matches("https://").to_string();
    let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(cfg))
        .connect(name, tcp)
        .await
        .unwrap()
}

/// Send an upgrade request for `/_sim/echo` and read the response head.
async fn upgrade_on(tls: &mut Tls, proxy: &Proxy, authorization: Option<&str>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = proxy.url.trim_start_matches("https://");
    let auth = authorization.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    tls.write_all(format!("GET /_sim/echo HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        tls.read_exact(&mut b).await.unwrap();
        head.push(b[0]);
    }
    String::from_utf8_lossy(&head).to_lowercase()
}

#[tokio::test]
async fn kube_rs_client_and_watcher_through_the_proxy() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    let client = proxy.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut stream = Box::pin(watcher(
        api.clone(),
        watcher::Config::default().labels("via=proxy"),
    ));
    tokio::time::timeout(Duration::from_secs(20), async {
        while !matches!(
            stream.try_next().await.unwrap(),
            Some(watcher::Event::InitDone)
        ) {}
    })
    .await
    .unwrap();
    let cm: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "k", "labels": {"via": "proxy"}}, "data": {"v": "0"}}),
    )
    .unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    for i in 1..=3 {
        api.patch(
            "k",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": i.to_string()}})),
        )
        .await
        .unwrap();
    }
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while seen.len() < 4 {
            if let Some(watcher::Event::Apply(o)) = stream.try_next().await.unwrap() {
                seen.push(o.data.unwrap()["v"].clone());
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(seen, ["0", "1", "2", "3"]);
}

#[test]
fn http2_clients_multiplex_watches_on_one_connection() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("curl");
    cmd.args([
        "-sS",
        "--http2",
        "--parallel",
        "--parallel-max",
        "8",
        "--max-time",
        "15",
        "-w",
        "%{http_version} %{num_connects}\n",
        "--cacert",
    ])
    .arg(proxy.ca());
    for i in 0..8 {
        cmd.arg("-o").arg(dir.path().join(format!("w{i}")));
        cmd.arg(format!(
            "{}/api/v1/namespaces?watch=1&resourceVersion=0&timeoutSeconds=2",
            proxy.url
        ));
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = String::from_utf8_lossy(&out.stdout);
    assert!(
        stats.lines().all(|l| l.starts_with("2 ")),
        "all over HTTP/2: {stats}"
    );
    let connects: u32 = stats
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u32>().ok())
        .sum();
    assert_eq!(connects, 1, "eight watches, one connection: {stats}");
    for i in 0..8 {
        let body = std::fs::read_to_string(dir.path().join(format!("w{i}"))).unwrap();
        assert_eq!(body.lines().count(), 4, "watch {i}: the four namespaces");
    }
}

#[test]
fn upstream_down_gives_503_and_recovers_without_restart() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    assert_eq!(
        proxy.curl("GET", "/api/v1/namespaces", &[], None).status,
        200
    );
    assert_eq!(proxy.admin_get("/readyz").0, 200);
    sim.admin("/_sim/restart?down=3s");
    std::thread::sleep(Duration::from_millis(400));
    let r = proxy.curl("GET", "/api/v1/namespaces", &[], None);
    assert_eq!(r.status, 503, "{}", r.text());
    let st = r.json();
    assert_eq!(
        (st["kind"].clone(), st["reason"].clone()),
        (json!("Status"), json!("ServiceUnavailable"))
    );
    assert!(
        st["message"].as_str().unwrap().contains("unreachable"),
        "{st}"
    );
    assert_eq!(proxy.admin_get("/readyz").0, 503);
    wait_for("the upstream to come back", Duration::from_secs(15), || {
        (proxy.curl("GET", "/api/v1/namespaces", &[], None).status == 200).then_some(())
    });
    assert_eq!(proxy.admin_get("/readyz").0, 200);
}

#[test]
fn large_list_streams_without_buffering_and_metrics_count_it() {
    let sim = Sim::start();
    // Views off: what is measured is the forwarding path alone. (With views on, a LIST
    // is also kept as the client's view; that memory is capped separately, below.)
    let proxy = Proxy::start(&sim, &["--max-view-bytes", "0"]);
    let blob = "x".repeat(1024 * 1024);
    for i in 0..40 {
        let body =
            json!({"metadata": {"name": format!("big-{i}")}, "data": {"k": blob}}).to_string();
        let r = sim.curl(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            &[("Content-Type", "application/json")],
            Some(body.as_bytes()),
        );
        assert_eq!(r.status, 201);
    }
    // Warm up connections and allocator, then measure the peak across one 40 MB LIST:
    // (body size, peak RSS growth).
    let list_peak = |proxy: &Proxy| -> (u64, u64) {
        assert_eq!(
            proxy.curl("GET", "/api/v1/namespaces", &[], None).status,
            200
        );
        let before = peak_rss(proxy.pid());
        let out = curl(
            &proxy.ca(),
            &proxy.url,
            "GET",
            "/api/v1/namespaces/default/configmaps",
            &[],
            None,
            &["-w", ""],
        );
        assert_eq!(out.status, 200);
        (
            out.body.len() as u64,
            peak_rss(proxy.pid()).saturating_sub(before),
        )
    };
    let (size, grew) = list_peak(&proxy);
    assert!(size > 40 * 1024 * 1024, "{size}");
    assert!(
        grew < size / 4,
        "the proxy's peak RSS grew by {grew} bytes for a {size}-byte LIST"
    );
    eprintln!(
        "40 MB LIST through the proxy: peak RSS +{} KiB",
        grew / 1024
    );
    // Views on, capped at 8 MiB: the copy stops at the cap, so the LIST still costs
    // far less than its size (and makes no view).
    let capped = Proxy::start(&sim, &["--max-view-bytes", "8MiB"]);
    let (capped_size, grew_capped) = list_peak(&capped);
    assert_eq!(capped_size, size);
    assert!(
        grew_capped < 8 * 1024 * 1024 + size / 4,
        "with views capped at 8 MiB the peak RSS grew by {grew_capped} bytes"
    );
    let (_, status) = capped.admin_get("/v1/status");
    let status: Value = serde_json::from_str(&status).unwrap();
    assert!(
        status["views"]["bytes"].as_u64().unwrap() < 1024 * 1024,
        "past the cap, the 40 MB LIST is not kept as a view: {status}"
    );

    let (code, metrics) = proxy.admin_get("/metrics");
    assert_eq!(code, 200);
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("stalemate_requests_total{")
                && l.contains(r#"resource="configmaps""#)
                && l.contains(r#"verb="list""#)
                && l.contains(r#"code="200""#)
        })
        .unwrap_or_else(|| panic!("no LIST counter in:\n{metrics}"));
    assert!(line.ends_with(" 1"), "{line}");
    assert!(metrics.contains("stalemate_request_duration_seconds_bucket"));
}

/// Each thread of a process: its id, its name and its scheduling policy.
fn thread_policies(pid: u32) -> Vec<(u32, String, u32)> {
    let mut threads = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).expect("the proxy's threads") {
        let path = t.expect("a thread").path();
        let tid = path.file_name().unwrap().to_string_lossy().parse().unwrap();
        let (Ok(comm), Ok(stat)) = (
            std::fs::read_to_string(path.join("comm")),
            std::fs::read_to_string(path.join("stat")),
        ) else {
            continue; // ended meanwhile
        };
        threads.push((tid, comm.trim().to_string(), common::sched_policy(&stat)));
    }
    threads
}

/// The serving threads run SCHED_BATCH unless told otherwise; the rest of the process
/// (the main thread: accept loop, control API, schedule timers) keeps the default.
#[test]
fn serving_threads_are_batch_scheduled_unless_asked_otherwise() {
    let sim = Sim::start();
    for (flags, serving_policy) in [(&[][..], 3), (&["--scheduling", "normal"][..], 0)] {
        let proxy = Proxy::start(&sim, flags);
        assert_eq!(
            proxy.curl("GET", "/api/v1/namespaces", &[], None).status,
            200
        );
        let threads = thread_policies(proxy.pid());
        let serving: Vec<_> = threads
            .iter()
            .filter(|(_, name, _)| name.starts_with("stalemate-serve"))
            .collect();
        assert!(!serving.is_empty(), "no serving thread among {threads:?}");
        assert!(
            serving.iter().all(|(_, _, p)| *p == serving_policy),
            "{flags:?}: serving threads {serving:?}"
        );
        let main = threads.iter().find(|(tid, _, _)| *tid == proxy.pid());
        assert_eq!(
            main.map(|t| t.2),
            Some(0),
            "{flags:?}: main thread {main:?}"
        );
    }
    let bad = Command::new(common::BIN)
        .args(["serve", "--scheduling", "fifo"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("'fifo'") && err.contains("batch") && err.contains("normal"),
        "{err}"
    );
}

#[test]
fn sigterm_drains_and_exits() {
    let sim = Sim::start();
    let mut proxy = Proxy::start(&sim, &["--drain-timeout", "2s"]);
    let (ca, url) = (proxy.ca(), proxy.url.clone());
    let w = std::thread::spawn(move || {
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
    wait_for("the watch to be counted", Duration::from_secs(10), || {
        proxy
            .admin_get("/metrics")
            .1
            .lines()
            .any(|l| l.starts_with("stalemate_watch_streams{") && l.ends_with(" 1"))
            .then_some(())
    });
    let st = proxy
        .terminate(Duration::from_secs(10))
        .expect("exits within the drain deadline");
    assert!(st.success(), "{st}");
    let r = w.join().unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(
        String::from_utf8_lossy(&r.body).lines().count(),
        4,
        "the watch ended cleanly after its events"
    );
}

/// Connection upgrades (exec, attach, port-forward use SPDY or WebSocket) pass through:
/// after 101 Switching Protocols, bytes flow both ways untouched.
#[tokio::test]
async fn connection_upgrades_pass_through() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    let mut tls = connect_tls(&proxy).await;
    let head = upgrade_on(&mut tls, &proxy, None).await;
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("upgrade: spdy/3.1"), "{head}");
    for msg in [&b"ping"[..], b"\x00\x01binary\xff", b"pong pong"] {
        tls.write_all(msg).await.unwrap();
        let mut back = vec![0u8; msg.len()];
        tls.read_exact(&mut back).await.unwrap();
        assert_eq!(back, msg);
    }
}

/// A client that goes away takes its upstream request with it: the simulator's watch
/// count drops back to zero.
#[test]
fn client_disconnect_cancels_the_upstream_watch() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    let mut child = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "--cacert"])
        .arg(proxy.ca())
        .arg(format!("{}/api/v1/namespaces?watch=1", proxy.url))
        .spawn()
        .unwrap();
    let watches = || {
        sim.curl("GET", "/_sim/state", &[], None).json()["watches"]
            .as_u64()
            .unwrap()
    };
    wait_for("the upstream watch", Duration::from_secs(10), || {
        (watches() == 1).then_some(())
    });
    let _ = child.kill();
    let _ = child.wait();
    wait_for(
        "the upstream watch to be cancelled",
        Duration::from_secs(10),
        || (watches() == 0).then_some(()),
    );
}

/// Impersonation headers reach the upstream (Flux impersonates service accounts), and no
/// credential value shows up in the proxy's logs, even at trace level.
#[test]
fn impersonation_passes_through_and_tokens_are_not_logged() {
    let sim = Sim::start();
    let dir = tempfile::tempdir().unwrap();
    let kc = sim.kubeconfig.to_string_lossy().into_owned();
    let mut child = common::KillOnDrop(
        Command::new(common::BIN)
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--admin-listen",
                "127.0.0.1:0",
                "--upstream-kubeconfig",
                &kc,
                "--tls-dir",
            ])
            .arg(dir.path().join("tls"))
            .env("RUST_LOG", "trace")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Drain the trace logs while the proxy runs, or the pipe fills and blocks it.
    let mut stderr = child.0.stderr.take().unwrap();
    let logs_thread = std::thread::spawn(move || {
        let mut logs = String::new();
        use std::io::Read;
        let _ = stderr.read_to_string(&mut logs);
        logs
    });
    let mut out = BufReader::new(child.0.stdout.take().unwrap());
    let mut url = String::new();
    out.read_line(&mut url).unwrap();
    let url = url.trim().to_string();
    let ca = dir.path().join("tls/ca.crt");
    let token = sim.sa_token("default", "alice");
    let review =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).to_string();
    let auth = format!("Bearer {token}");
    let r = curl(
        &ca,
        &url,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "devs"),
        ],
        Some(review.as_bytes()),
        &[],
    );
    assert_eq!(r.status, 201);
    let u = &r.json()["status"]["userInfo"];
    assert_eq!(u["username"], "bob");
    assert!(u["groups"].as_array().unwrap().contains(&json!("devs")));
    // Requests without a token get the upstream's (the simulator kubeconfig's token).
    let r = curl(
        &ca,
        &url,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &[("Content-Type", "application/json")],
        Some(review.as_bytes()),
        &[],
    );
    assert_eq!(
        r.json()["status"]["userInfo"]["username"],
        "stalemate-sim:admin"
    );
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.0.id().to_string())
        .status();
    let _ = child.0.wait();
    let logs = logs_thread.join().unwrap();
    assert!(logs.len() > 1000, "trace logging produced output");
    let upstream_token = sim.admin_token();
    for secret in [token.as_str(), upstream_token.as_str()] {
        let payload = secret.split('.').nth(1).unwrap();
        assert!(!logs.contains(payload), "a token appeared in the logs");
    }
}
