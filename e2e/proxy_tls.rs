//! TLS on both sides of `stalemate serve`, through the real binary in front of `stalemate
//! sim`: which clients it accepts, how it verifies the upstream, and the certificates and
//! kubeconfigs it writes for its clients.

#[path = "common/mod.rs"]
mod common;
use common::Kubectl;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::kubectl::kubectl_cmd;
use common::{Proxy, Sim, curl};
use serde_json::Value;

#[test]
fn clients_without_the_proxy_ca_are_refused_and_upstream_tls_is_verified() {
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    // A client that trusts only the simulator's CA cannot talk to the proxy.
    let st = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "--cacert"])
        .arg(sim.ca())
        .arg(format!("{}/version", proxy.url))
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(60), "certificate verification failure");
    // An upstream presented with the wrong CA: every request is a 502 naming TLS.
    let wrong_ca = proxy.ca().to_string_lossy().into_owned();
    let bad = Proxy::start_raw(&["--upstream", &sim.url, "--upstream-ca", &wrong_ca]);
    let r = bad.curl("GET", "/version", &[], None);
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(
        r.json()["message"].as_str().unwrap().contains("TLS"),
        "{}",
        r.text()
    );
    // The right CA: fine (no credentials: the simulator sees an anonymous user).
    let sim_ca = sim.ca().to_string_lossy().into_owned();
    let good = Proxy::start_raw(&["--upstream", &sim.url, "--upstream-ca", &sim_ca]);
    assert_eq!(good.curl("GET", "/version", &[], None).status, 200);
    // Explicitly insecure: works, and says so.
    let insecure = Proxy::start_raw(&[
        "--upstream",
        &sim.url,
        "--upstream-ca",
        &wrong_ca,
        "--insecure-skip-upstream-verify",
    ]);
    assert_eq!(insecure.curl("GET", "/version", &[], None).status, 200);
}

/// The upstream kubeconfig's `tls-server-name` is what the apiserver's certificate is
/// checked against, as kubectl and client-go check it: here the simulator listens on
/// 127.0.0.2, which its certificate (127.0.0.1, ::1, localhost) does not name.
#[test]
fn the_upstream_kubeconfigs_tls_server_name_is_what_its_certificate_must_name() {
    let sim = Sim::start_with(&["--listen", "127.0.0.2:0"]);
    assert!(sim.url.starts_with("https://127.0.0.2:"), "{}", sim.url);
    let with_name = |name: &str, label: &str| {
        let kc = std::fs::read_to_string(&sim.kubeconfig).unwrap();
        let mut out = String::new();
        for line in kc.lines() {
            if let Some(at) = line.find("server: https://127.0.0.2") {
                out.push_str(&format!("{}tls-server-name: {name}\n", &line[..at]));
            }
            out.push_str(line);
            out.push('\n');
        }
        assert!(out.contains("tls-server-name"), "{kc}");
        let path = sim.dir.path().join(format!("kubeconfig-{label}"));
        std::fs::write(&path, out).unwrap();
        path.to_string_lossy().into_owned()
    };
    let named = with_name("localhost", "dns");
    // kubectl direct: the name makes it work (the test's premise).
    let direct = kubectl_cmd(std::path::Path::new(&named), &sim.cache_dir())
        .args(["get", "namespace", "default", "-o", "name"])
        .output()
        .unwrap();
    assert!(
        direct.status.success(),
        "{}",
        String::from_utf8_lossy(&direct.stderr)
    );

    // Through the proxy: requests (the serving threads' pools), a watch (the HTTP/2
    // watch pool) and kubectl.
    let proxy = Proxy::start_raw(&["--upstream-kubeconfig", &named]);
    let r = proxy.curl("GET", "/api/v1/namespaces/default", &[], None);
    assert_eq!(r.status, 200, "{}", r.text());
    let w = common::curl(
        &proxy.ca(),
        &proxy.url,
        "GET",
        "/api/v1/namespaces?watch=1&timeoutSeconds=1",
        &[],
        None,
        &["--max-time", "20"],
    );
    assert_eq!(w.status, 200, "{}", w.text());
    assert!(w.text().contains(r#""type":"ADDED""#), "{}", w.text());
    assert_eq!(
        proxy
            .kubectl_ok(&["get", "namespace", "default", "-o", "name"])
            .trim(),
        "namespace/default"
    );

    // An IP address as the name (checked against the certificate's IP addresses).
    let by_ip = Proxy::start_raw(&["--upstream-kubeconfig", &with_name("127.0.0.1", "ip")]);
    let r = by_ip.curl("GET", "/api/v1/namespaces/default", &[], None);
    assert_eq!(r.status, 200, "{}", r.text());

    // Without it the address is checked, and fails, naming the certificate.
    let unnamed = Proxy::start(&sim, &[]);
    let r = unnamed.curl("GET", "/api/v1/namespaces/default", &[], None);
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains("not valid for name"), "{}", r.text());

    // An empty one is no name (as in client-go): the address is checked again.
    let empty = Proxy::start_raw(&["--upstream-kubeconfig", &with_name(r#""""#, "empty")]);
    let r = empty.curl("GET", "/api/v1/namespaces/default", &[], None);
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains("not valid for name"), "{}", r.text());

    // A name that is not one is refused at start.
    let bad = with_name("not a name!", "bad");
    let out = Command::new(common::BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--upstream-kubeconfig",
            &bad,
        ])
        // Its own serving certificate, not one in the user's state directory.
        .arg("--tls-dir")
        .arg(sim.dir.path().join("bad-tls"))
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"tls-server-name "not a name!" is neither a DNS name nor an IP address"#),
        "{err}"
    );
}

/// The two-halves workflow with a certificate made by `stalemate certs`: `serve
/// --tls-cert/--tls-key` with the upstream found by the usual kubeconfig lookup
/// ($KUBECONFIG), and `stalemate kubeconfig` for its clients.
#[test]
fn certs_kubeconfig_and_default_upstream_lookup() {
    let sim = Sim::start();
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    let st = Command::new(common::BIN)
        .args(["certs", "--out"])
        .arg(&certs)
        .args(["--san", "proxy.example"])
        .status()
        .unwrap();
    assert!(st.success());
    for f in ["ca.crt", "ca.key", "tls.crt", "tls.key"] {
        assert!(certs.join(f).exists(), "{f}");
    }
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(certs.join("tls.key"))
            .unwrap()
            .permissions()
            .mode()
            & 0o077,
        0,
        "keys are private"
    );
    let mut child = Command::new(common::BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
            "--upstream-timeout",
            "1s",
            "--tls-cert",
        ])
        .arg(certs.join("tls.crt"))
        .arg("--tls-key")
        .arg(certs.join("tls.key"))
        .env("KUBECONFIG", &sim.kubeconfig)
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let url = url.trim().to_string();
    let kc = dir.path().join("kc");
    let st = Command::new(common::BIN)
        .args(["kubeconfig", "--server", &url, "--ca"])
        .arg(certs.join("ca.crt"))
        .arg("--out")
        .arg(&kc)
        .status()
        .unwrap();
    assert!(st.success());
    let out = kubectl_cmd(&kc, &dir.path().join("cache"))
        .args(["auth", "whoami", "-o", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let who: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "stalemate-sim:admin");

    // Response headers come back: the apiserver adopts an inbound Audit-ID.
    let r = curl(
        &certs.join("ca.crt"),
        &url,
        "GET",
        "/api/v1/namespaces",
        &[("Audit-ID", "e2e-audit-1")],
        None,
        &[],
    );
    assert_eq!(r.header("audit-id"), Some("e2e-audit-1"));
    assert_eq!(r.header("content-type"), Some("application/json"));

    // An upstream that does not answer within --upstream-timeout: 504 Status.
    sim.admin("/_sim/pause?for=3s");
    let r = curl(
        &certs.join("ca.crt"),
        &url,
        "GET",
        "/api/v1/namespaces",
        &[],
        None,
        &[],
    );
    assert_eq!(r.status, 504, "{}", r.text());
    assert_eq!(r.json()["reason"], "Timeout");
    let _ = child.kill();
    let _ = child.wait();

    // Bad input to the verbs: one clear error, exit status 2.
    let out = Command::new(common::BIN)
        .args(["kubeconfig", "--server", "not a url", "--ca"])
        .arg(certs.join("ca.crt"))
        .arg("--out")
        .arg(&kc)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--server"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without --tls-dir, serve generates its CA under $XDG_STATE_HOME on first start —
    // only once it runs: a start that fails on another flag leaves none behind.
    let state = dir.path().join("state");
    let out = Command::new(common::BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
            "--upstream-kubeconfig",
        ])
        .arg(certs.join("ca.crt"))
        .env("XDG_STATE_HOME", &state)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--upstream-kubeconfig"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !state.join("stalemate").exists(),
        "a failed start wrote {}",
        state.join("stalemate").display()
    );
    // A start that runs writes it, and it is the CA the proxy's certificate chains to.
    let mut child = Command::new(common::BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ])
        .env("KUBECONFIG", &sim.kubeconfig)
        .env("XDG_STATE_HOME", &state)
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let generated = state.join("stalemate/tls");
    let r = curl(
        &generated.join("ca.crt"),
        url.trim(),
        "GET",
        "/api/v1/namespaces",
        &[],
        None,
        &[],
    );
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(r.status, 200, "{}", r.text());
    for f in ["ca.key", "tls.crt", "tls.key"] {
        assert!(generated.join(f).exists(), "{f}");
    }
}
