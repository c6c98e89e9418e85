//! Shared harness for the end-to-end tests: start the real `stalemate` binary, and talk to
//! it with real clients (kubectl, kube-rs, curl) over real TLS on loopback.
#![allow(dead_code)]

pub mod api_script;
pub mod envtest;
pub mod kubectl;
pub mod watch_stream;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use kubectl::Kubectl;

pub const BIN: &str = env!("CARGO_BIN_EXE_stalemate");

/// A path in the repository (examples, deploy files, e2e clients).
pub fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A running `stalemate sim`, killed when dropped.
pub struct Sim {
    child: Child,
    pub url: String,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

impl Sim {
    pub fn start() -> Sim {
        Sim::start_with(&[])
    }

    pub fn start_with(extra: &[&str]) -> Sim {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        let tls = dir.path().join("tls");
        // On 127.0.0.1 unless `extra` says where.
        let elsewhere = extra.iter().any(|a| a.starts_with("--listen"));
        let listen: &[&str] = if elsewhere {
            &[]
        } else {
            &["--listen", "127.0.0.1:0"]
        };
        let mut child = Command::new(BIN)
            .arg("sim")
            .args(listen)
            .arg("--kubeconfig-out")
            .arg(&kubeconfig)
            .arg("--tls-dir")
            .arg(&tls)
            .args(extra)
            .env("RUST_LOG", "warn,rustls=error")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn stalemate sim");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the URL line");
        let url = line.trim().to_string();
        assert!(
            url.starts_with(if elsewhere {
                "https://"
            } else {
                "https://127.0.0.1:"
            }),
            "unexpected first line (no URL: did it fail to listen?): {url:?}"
        );
        Sim {
            child,
            url,
            dir,
            kubeconfig,
        }
    }

    /// Send SIGTERM and wait (bounded) for the exit status.
    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        terminate(&mut self.child, within)
    }

    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("tls").join("ca.crt")
    }

    /// curl against the simulator (curl's User-Agent, as the fixtures were recorded with).
    pub fn curl(
        &self,
        method: &str,
        path_and_query: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Response {
        curl(
            &self.ca(),
            &self.url,
            method,
            path_and_query,
            headers,
            body,
            &[],
        )
    }

    /// A kube-rs client configured from the simulator's kubeconfig.
    pub async fn client(&self) -> kube::Client {
        client_from(&self.kubeconfig).await
    }

    /// The admin bearer token in the simulator's kubeconfig (`--kubeconfig-auth token`).
    pub fn admin_token(&self) -> String {
        let text = std::fs::read_to_string(&self.kubeconfig).expect("read the kubeconfig");
        let kc: serde_json::Value = serde_saphyr::from_str(&text).expect("kubeconfig YAML");
        kc["users"][0]["user"]["token"]
            .as_str()
            .expect("a token in the simulator's kubeconfig")
            .to_string()
    }

    pub fn admin(&self, path_and_query: &str) -> serde_json::Value {
        let r = self.curl("POST", path_and_query, &[], None);
        assert_eq!(r.status, 200, "{path_and_query}: {}", r.text());
        r.json()
    }
}

impl Kubectl for Sim {
    fn kubeconfig_file(&self) -> &Path {
        &self.kubeconfig
    }

    fn cache_dir(&self) -> PathBuf {
        self.dir.path().join("kubectl-cache")
    }

    fn whom(&self) -> &'static str {
        "the simulator"
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response as curl saw it.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Run curl and parse `-D` headers; `extra` are more curl flags (`--http2`, `--max-time`).
pub fn curl(
    ca: &Path,
    base: &str,
    method: &str,
    path_and_query: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
    extra: &[&str],
) -> Response {
    let dir = tempfile::tempdir().expect("tempdir");
    let hdr = dir.path().join("h");
    let out = dir.path().join("b");
    let mut c = Command::new("curl");
    c.args(["-sS", "--http1.1", "-X", method, "--cacert"])
        .arg(ca)
        .arg("-D")
        .arg(&hdr)
        .arg("-o")
        .arg(&out)
        .args(extra);
    for (k, v) in headers {
        c.arg("-H").arg(format!("{k}: {v}"));
    }
    if let Some(b) = body {
        let f = dir.path().join("req");
        std::fs::write(&f, b).expect("write body");
        c.arg("--data-binary").arg(format!("@{}", f.display()));
    }
    c.arg(format!("{base}{path_and_query}"));
    let st = c.status().expect("run curl");
    // 28: --max-time reached, which is how the tests end watches they opened.
    assert!(
        st.success() || st.code() == Some(28),
        "curl {method} {path_and_query} failed: {st}"
    );
    let raw = std::fs::read_to_string(&hdr).unwrap_or_default();
    // With HTTP/2 or 100-continue there may be several header blocks: take the last.
    let block = raw.trim_end().rsplit("\r\n\r\n").next().unwrap_or("");
    let mut lines = block.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| {
            l.split_once(':')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        })
        .collect();
    Response {
        status,
        headers,
        body: std::fs::read(&out).unwrap_or_default(),
    }
}

/// Poll `f` until it returns `Some`, or panic after `timeout` naming `what`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub const GITREPO_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gitrepositories.source.testbed.example.com
spec:
  group: source.testbed.example.com
  scope: Namespaced
  names: {plural: gitrepositories, singular: gitrepository, kind: GitRepository, shortNames: [gitrepo]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    additionalPrinterColumns:
    - {name: URL, type: string, jsonPath: .spec.url}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
"#;

/// Install the GitRepository-shaped CRD the fixtures were recorded with, and wait for it.
pub fn install_gitrepo_crd(sim: &Sim) {
    let out = sim.kubectl_stdin(&["apply", "-f", "-"], GITREPO_CRD);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sim.kubectl_ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/gitrepositories.source.testbed.example.com",
    ]);
}

/// Install the demo controller's GitRepository CRD (`source.toolkit.fluxcd.io`), and wait
/// until it is established.
pub fn install_demo_crd(sim: &Sim) {
    let out = sim.kubectl_stdin(&["apply", "-f", "-"], stalemate::demo::controller::CRD);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sim.kubectl_ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/gitrepositories.source.toolkit.fluxcd.io",
    ]);
}

/// A running `stalemate serve` in front of a simulator, killed when dropped.
pub struct Proxy {
    child: Child,
    pub url: String,
    pub admin: String,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

impl Proxy {
    /// Start a proxy whose upstream is `sim`, through the simulator's kubeconfig.
    pub fn start(sim: &Sim, extra: &[&str]) -> Proxy {
        let kc = sim.kubeconfig.to_string_lossy().into_owned();
        let mut args = vec!["--upstream-kubeconfig", kc.as_str()];
        args.extend_from_slice(extra);
        Proxy::start_raw(&args)
    }

    /// Start a proxy with exactly these upstream arguments.
    pub fn start_raw(upstream_args: &[&str]) -> Proxy {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        let mut child = Command::new(BIN)
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--admin-listen",
                "127.0.0.1:0",
                "--tls-dir",
            ])
            .arg(dir.path().join("tls"))
            .arg("--kubeconfig-out")
            .arg(&kubeconfig)
            .args(upstream_args)
            .env("RUST_LOG", "warn,rustls=error")
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn stalemate serve");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).expect("read the URL line");
        let url = line.trim().to_string();
        line.clear();
        out.read_line(&mut line).expect("read the admin line");
        let admin = line
            .trim()
            .strip_prefix("admin ")
            .unwrap_or_default()
            .to_string();
        assert!(
            url.starts_with("https://127.0.0.1:") && admin.starts_with("http://"),
            "unexpected output: {url:?} {admin:?}"
        );
        Proxy {
            child,
            url,
            admin,
            dir,
            kubeconfig,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("tls").join("ca.crt")
    }

    pub fn curl(
        &self,
        method: &str,
        path_and_query: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Response {
        curl(
            &self.ca(),
            &self.url,
            method,
            path_and_query,
            headers,
            body,
            &[],
        )
    }

    pub async fn client(&self) -> kube::Client {
        client_from(&self.kubeconfig).await
    }

    /// GET on the admin listener (plain HTTP).
    pub fn admin_get(&self, path: &str) -> (u16, String) {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "10", "-w", "\n%{http_code}"])
            .arg(format!("{}{path}", self.admin))
            .output()
            .expect("curl admin");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
        (code.trim().parse().unwrap_or(0), body.to_string())
    }

    /// A control-API call on the admin listener (JSON body in and out), with an optional
    /// bearer token: (status, body; `null` when not JSON).
    pub fn admin_call(
        &self,
        token: Option<&str>,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        let mut c = Command::new("curl");
        c.args([
            "-sS",
            "--max-time",
            "10",
            "-X",
            method,
            "-w",
            "\n%{http_code}",
        ]);
        if let Some(t) = token {
            c.args(["-H", &format!("Authorization: Bearer {t}")]);
        }
        if let Some(b) = body {
            c.args([
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                &b.to_string(),
            ]);
        }
        let out = c
            .arg(format!("{}{path}", self.admin))
            .output()
            .expect("curl admin");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
        (
            code.trim().parse().unwrap_or(0),
            serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
        )
    }

    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        terminate(&mut self.child, within)
    }
}

impl Kubectl for Proxy {
    fn kubeconfig_file(&self) -> &Path {
        &self.kubeconfig
    }

    fn cache_dir(&self) -> PathBuf {
        self.dir.path().join("kubectl-cache")
    }

    fn whom(&self) -> &'static str {
        "the proxy"
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A child process that is killed when dropped (also when a test panics: a process left
/// behind would keep the test binary's output pipe open).
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Peak resident set size of a process, in bytes (`VmHWM` in /proc/PID/status).
pub fn peak_rss(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The scheduling policy in a `/proc/PID[/task/TID]/stat` line (field 41: 0 SCHED_OTHER,
/// 3 SCHED_BATCH), counted after the `)` that closes the name, which may hold spaces.
pub fn sched_policy(stat: &str) -> u32 {
    let (_, rest) = stat
        .rsplit_once(')')
        .expect("stat has the name in brackets");
    rest.split_whitespace()
        .nth(38)
        .and_then(|p| p.parse().ok())
        .expect("field 41 of stat, the policy")
}

/// Send SIGTERM to a child and wait (bounded) for its exit status.
pub fn terminate(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let start = Instant::now();
    while start.elapsed() < within {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// A kube-rs client configured from a kubeconfig file.
pub async fn client_from(kubeconfig: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("read kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kube config");
    kube::Client::try_from(cfg).expect("kube client")
}
