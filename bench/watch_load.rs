//! Watch load through the proxy: fan-out memory, gated event throughput, memory while
//! holding events, and a large LIST — each printed as one line of figures.
//!
//!   cargo run --release --example watch-load -- [--watches N] [--events E]
//!
//! Starts `stalemate sim` and `stalemate serve` (the release binary next to this one's
//! target directory, or $STALEMATE_BIN; $STALEMATE_ARGS adds `serve` flags) on loopback;
//! the proxy's RSS is read from
//! /proc/PID/status. Load client, proxy and simulator share the machine's cores.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};

type H2 = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Empty<Bytes>,
>;

struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn bin() -> PathBuf {
    std::env::var_os("STALEMATE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let exe = std::env::current_exe().expect("current exe");
            exe.parent()
                .and_then(Path::parent)
                .map(|d| d.join("stalemate"))
                .expect("target dir")
        })
}

/// Start a stalemate verb; returns the process and its first `lines` stdout lines.
fn start(args: &[&str], lines: usize) -> (Proc, Vec<String>) {
    let mut c = Command::new(bin())
        .args(args)
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start stalemate");
    let mut out = BufReader::new(c.stdout.take().expect("stdout"));
    let got = (0..lines)
        .map(|_| {
            let mut line = String::new();
            out.read_line(&mut line).expect("a line");
            line.trim().to_string()
        })
        .collect();
    (Proc(c), got)
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn h2_clients(ca: &Path, n: usize) -> Vec<H2> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).expect("ca") {
        roots.add(c.expect("cert")).expect("add");
    }
    let tls = rustls::ClientConfig::builder_with_provider(stalemate::listen::tls::provider())
        .with_safe_default_protocol_versions()
        .expect("tls")
        .with_root_certificates(roots)
        .with_no_client_auth();
    (0..n)
        .map(|_| {
            let https = hyper_rustls::HttpsConnectorBuilder::new()
                .with_tls_config(tls.clone())
                .https_only()
                .enable_http2()
                .build();
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .http2_only(true)
                .build(https)
        })
        .collect()
}

/// Open `n` watches from resourceVersion `rv`, spread over HTTP/2 connections of at most
/// 100 streams; each counts the events (lines) it receives.
async fn open_watches(proxy: &str, ca: &Path, ns: &str, rv: &str, n: usize) -> Vec<Arc<AtomicU64>> {
    let clients = h2_clients(ca, n.div_ceil(100));
    let mut counters = Vec::with_capacity(n);
    let mut opened = Vec::with_capacity(n);
    for i in 0..n {
        let counter = Arc::new(AtomicU64::new(0));
        counters.push(counter.clone());
        let client = clients[i / 100].clone();
        let uri =
            format!("{proxy}/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={rv}");
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let req = http::Request::get(uri)
                .header(
                    "authorization",
                    format!("Bearer {}", stalemate::proxy::UPSTREAM_CREDENTIALS_TOKEN),
                )
                .body(Empty::new())
                .expect("request");
            let Ok(resp) = client.request(req).await else {
                return;
            };
            let _ = tx.send(resp.status().as_u16());
            let mut body = resp.into_body();
            while let Some(Ok(f)) = body.frame().await {
                if let Some(d) = f.data_ref() {
                    counter.fetch_add(
                        d.iter().filter(|b| **b == b'\n').count() as u64,
                        Ordering::Relaxed,
                    );
                }
            }
        });
        opened.push(rx);
    }
    for rx in opened {
        assert_eq!(rx.await.ok(), Some(200), "a watch did not open");
    }
    counters
}

async fn wait_all(counters: &[Arc<AtomicU64>], each: u64, limit: Duration) -> Duration {
    let start = Instant::now();
    while counters.iter().any(|c| c.load(Ordering::Relaxed) < each) {
        assert!(start.elapsed() < limit, "events did not all arrive");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    start.elapsed()
}

async fn touch(api: &Api<ConfigMap>, name: &str, n: usize, blob: &str) {
    for i in 0..n {
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"i": i.to_string(), "blob": blob}})),
        )
        .await
        .expect("patch");
    }
}

fn admin(admin: &str, method: &str, path: &str, body: Option<&str>) {
    let mut c = Command::new("curl");
    c.args(["-sS", "-o", "/dev/null", "-X", method]);
    if let Some(b) = body {
        c.args(["--data-binary", b]);
    }
    assert!(
        c.arg(format!("{admin}{path}"))
            .status()
            .expect("curl")
            .success()
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1)?.parse().ok())
            .unwrap_or(default)
    };
    let watches = arg("--watches", 1000);
    let events = arg("--events", 1000);
    let dir = std::env::temp_dir().join(format!("stalemate-watch-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let d = |f: &str| dir.join(f).to_string_lossy().into_owned();
    let (_sim, _) = start(
        &[
            "sim",
            "--listen",
            "127.0.0.1:0",
            "--tls-dir",
            &d("sim-tls"),
            "--kubeconfig-out",
            &d("sim.kubeconfig"),
        ],
        1,
    );
    let serve = |extra: &[&str]| {
        let mut a = vec![
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
            "--upstream-kubeconfig",
        ];
        let kc = d("sim.kubeconfig");
        let tls = d("tls");
        let mut owned: Vec<String> = vec![kc, "--tls-dir".into(), tls];
        owned.extend(extra.iter().map(|s| s.to_string()));
        // Extra `serve` flags for every proxy this benchmark starts.
        if let Ok(more) = std::env::var("STALEMATE_ARGS") {
            owned.extend(more.split_whitespace().map(str::to_string));
        }
        a.extend(owned.iter().map(String::as_str));
        let (p, lines) = start(&a, 2);
        let admin = lines[1].trim_start_matches("admin ").to_string();
        (p, lines[0].clone(), admin)
    };
    // Room for the 100 MiB hold below (past the per-stream cap a stream ends with 410).
    let (proxy, url, admin_url) = serve(&["--max-held-bytes", "256MiB"]);
    let pid = proxy.0.id();
    let ca = dir.join("tls/ca.crt");
    let kc = kube::config::Kubeconfig::read_from(dir.join("sim.kubeconfig")).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    let client = kube::Client::try_from(cfg).expect("client");
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    for ns in ["w", "g", "big"] {
        nss.create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": ns}})).expect("ns"),
        )
        .await
        .expect("create ns");
    }
    let new_cm = |ns: &'static str, name: &'static str| {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        async move {
            let cm = api
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))
                        .expect("cm"),
                )
                .await
                .expect("create");
            (api, cm.metadata.resource_version.expect("rv"))
        }
    };
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("cores: {cores} (load client, proxy and simulator share them)");

    // 1. Fan-out: N idle watches, then every one of them gets 20 events.
    let (cms, rv) = new_cm("w", "hot").await;
    let base = rss_kib(pid, "VmRSS:");
    let counters = open_watches(&url, &ca, "w", &rv, watches).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss = rss_kib(pid, "VmRSS:");
    println!(
        "fan-out        {watches} watches open: proxy RSS {:.1} MiB ({:.1} MiB idle; {:.1} KiB per watch)",
        rss as f64 / 1024.0,
        base as f64 / 1024.0,
        rss.saturating_sub(base) as f64 / watches as f64
    );
    let t = Instant::now();
    touch(&cms, "hot", 20, "").await;
    wait_all(&counters, 20, Duration::from_secs(60)).await;
    println!(
        "fan-out        20 events to each of {watches} watches: {:.0} events/s delivered",
        (watches * 20) as f64 / t.elapsed().as_secs_f64()
    );
    drop(counters);

    // 2. Gated throughput: 100 watches, E events each held by a freeze, then released.
    let (gms, grv) = new_cm("g", "gated").await;
    let counters = open_watches(&url, &ca, "g", &grv, 100).await;
    admin(
        &admin_url,
        "POST",
        "/v1/windows",
        Some(
            r#"{"name": "f", "resources": ["configmaps"], "namespaces": ["g"], "fault": {"freeze": {}}}"#,
        ),
    );
    touch(&gms, "gated", events, "").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held: u64 = counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    let t = Instant::now();
    admin(&admin_url, "DELETE", "/v1/windows/f", None);
    wait_all(&counters, events as u64, Duration::from_secs(60)).await;
    println!(
        "freeze/release {} events held across 100 watches ({held} leaked early), released at {:.0} events/s",
        100 * events,
        (100 * events) as f64 / t.elapsed().as_secs_f64()
    );
    // Lag: every event 100 ms late, in order, while being written.
    admin(
        &admin_url,
        "POST",
        "/v1/windows",
        Some(
            r#"{"name": "l", "resources": ["configmaps"], "namespaces": ["g"], "fault": {"lag": {"delay": "100ms"}}}"#,
        ),
    );
    let t = Instant::now();
    touch(&gms, "gated", events, "").await;
    wait_all(&counters, 2 * events as u64, Duration::from_secs(60)).await;
    println!(
        "lag 100ms      {} events through 100 lagged watches in {:.2}s: {:.0} events/s",
        100 * events,
        t.elapsed().as_secs_f64(),
        (100 * events) as f64 / t.elapsed().as_secs_f64()
    );
    admin(&admin_url, "DELETE", "/v1/windows/l", None);
    drop(counters);

    // 3. Holding 100 MiB of events: one watch, 100 updates of 1 MiB each under a freeze.
    let (bms, brv) = new_cm("big", "blob").await;
    let counters = open_watches(&url, &ca, "big", &brv, 1).await;
    let before = rss_kib(pid, "VmRSS:");
    admin(
        &admin_url,
        "POST",
        "/v1/windows",
        Some(
            r#"{"name": "h", "resources": ["configmaps"], "namespaces": ["big"], "fault": {"freeze": {}}}"#,
        ),
    );
    let blob = "x".repeat(1 << 20);
    touch(&bms, "blob", 100, &blob).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let holding = rss_kib(pid, "VmRSS:");
    admin(&admin_url, "DELETE", "/v1/windows/h", None);
    wait_all(&counters, 100, Duration::from_secs(60)).await;
    println!(
        "hold 100 MiB   proxy RSS {:.1} MiB while holding ({:+.1} MiB)",
        holding as f64 / 1024.0,
        (holding as f64 - before as f64) / 1024.0
    );
    drop(counters);
    drop(proxy);

    // 4. A 100 MiB LIST streamed through a fresh proxy: views off, the default (views only
    //    of resources a staleness window names: none here) and `--views all` (a view
    //    keeps a copy of what the client listed: that is its job).
    for i in 0..100 {
        let name = format!("big-{i}");
        bms.create(
            &PostParams::default(),
            &serde_json::from_value(
                serde_json::json!({"metadata": {"name": name}, "data": {"blob": blob}}),
            )
            .expect("cm"),
        )
        .await
        .expect("create");
    }
    for (label, extra) in [
        ("views off", vec!["--max-view-bytes", "0"]),
        ("default (--views named)", vec![]),
        ("--views all", vec!["--views", "all"]),
    ] {
        let (p, url, _) = serve(&extra);
        let pid = p.0.id();
        let client = &h2_clients(&ca, 1)[0];
        let warm = http::Request::get(format!("{url}/api/v1/namespaces"))
            .header(
                "authorization",
                format!("Bearer {}", stalemate::proxy::UPSTREAM_CREDENTIALS_TOKEN),
            )
            .body(Empty::new())
            .expect("req");
        let _ = client
            .request(warm)
            .await
            .expect("warm")
            .into_body()
            .collect()
            .await;
        let before = rss_kib(pid, "VmHWM:");
        let req = http::Request::get(format!("{url}/api/v1/namespaces/big/configmaps"))
            .header(
                "authorization",
                format!("Bearer {}", stalemate::proxy::UPSTREAM_CREDENTIALS_TOKEN),
            )
            .body(Empty::new())
            .expect("req");
        let mut body = client.request(req).await.expect("list").into_body();
        let mut n = 0usize;
        while let Some(Ok(f)) = body.frame().await {
            n += f.data_ref().map_or(0, |d| d.len());
        }
        let peak = rss_kib(pid, "VmHWM:");
        println!(
            "LIST {:.0} MiB    {label}: proxy peak RSS {:+.1} MiB",
            n as f64 / (1 << 20) as f64,
            (peak as f64 - before as f64) / 1024.0
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
