//! A real control plane for the end-to-end tests: `stalemate envtest` (etcd and
//! kube-apiserver of the default pinned version, v1.37, built from the Go module proxy
//! by `e2e/assets/build.sh`), on loopback, stopped with everything it started when
//! dropped.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use super::{BIN, repo};

/// The directory of real control-plane binaries: `$KUBEBUILDER_ASSETS` if it holds a
/// kube-apiserver, else what `e2e/assets/build.sh` builds (or finds cached: a second;
/// cold, several minutes — `.ci/run` builds it before the tests).
pub fn assets() -> PathBuf {
    static ASSETS: OnceLock<PathBuf> = OnceLock::new();
    ASSETS
        .get_or_init(|| {
            if let Some(d) = std::env::var_os("KUBEBUILDER_ASSETS")
                .map(PathBuf::from)
                .filter(|d| d.join("kube-apiserver").is_file())
            {
                return d;
            }
            let out = Command::new("bash")
                .arg(repo("e2e/assets/build.sh"))
                .stderr(Stdio::inherit())
                .output()
                .expect("run e2e/assets/build.sh");
            assert!(out.status.success(), "e2e/assets/build.sh failed");
            let text = String::from_utf8_lossy(&out.stdout);
            PathBuf::from(
                text.lines()
                    .last()
                    .expect("build.sh prints the directory")
                    .trim(),
            )
        })
        .clone()
}

/// The directory of the pinned control plane of `minor` (`e2e/assets/build.sh 1.37`:
/// cached, a second; else it builds kube-apiserver and the rest, minutes) — for a test
/// that needs that version whatever `KUBEBUILDER_ASSETS` says.
pub fn assets_of(minor: &str) -> PathBuf {
    let out = Command::new("bash")
        .arg(repo("e2e/assets/build.sh"))
        .arg(minor)
        .stderr(Stdio::inherit())
        .output()
        .expect("run e2e/assets/build.sh");
    assert!(out.status.success(), "e2e/assets/build.sh {minor} failed");
    let text = String::from_utf8_lossy(&out.stdout);
    let dir = text.lines().last().expect("build.sh prints the directory");
    PathBuf::from(dir.trim())
}

/// The default pinned Kubernetes version (`KUBERNETES_VERSION` in
/// `e2e/assets/versions.env`: `v1.37.2`), what `assets()` holds.
pub fn default_version() -> String {
    let env = std::fs::read_to_string(repo("e2e/assets/versions.env")).expect("versions.env");
    env.lines()
        .find_map(|l| l.strip_prefix("KUBERNETES_VERSION="))
        .expect("versions.env pins KUBERNETES_VERSION")
        .trim()
        .to_string()
}

/// Its minor, as `--version` prefixes say it: `v1.37`.
pub fn default_minor() -> String {
    let v = default_version();
    v.rsplit_once('.').map(|(m, _)| m.to_string()).unwrap_or(v)
}

/// A running `stalemate envtest`: a real etcd + kube-apiserver (and `--with`'s
/// components). Its admin kubeconfig is `system:masters` by client certificate.
pub struct RealApiserver {
    child: Child,
    pub url: String,
    /// The control plane's directory (ca.crt, sa.key, admin.kubeconfig, logs).
    pub cp_dir: PathBuf,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

impl RealApiserver {
    pub fn start() -> RealApiserver {
        RealApiserver::start_with(&[])
    }

    /// With more `stalemate envtest` flags (`--with kube-controller-manager,kwok`).
    pub fn start_with(extra: &[&str]) -> RealApiserver {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        let mut child = Command::new(BIN)
            .args(["envtest", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .arg("--dir")
            .arg(dir.path().join("cp"))
            .arg("--assets")
            .arg(assets())
            .args(extra)
            .env("RUST_LOG", "warn,rustls=error")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // Its own process group, which its control plane shares: dropping it kills
            // them all, even when the test panics before a clean stop.
            .process_group(0)
            .spawn()
            .expect("spawn stalemate envtest");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut url = String::new();
        out.read_line(&mut url).expect("read the URL line");
        let mut cp = String::new();
        out.read_line(&mut cp).expect("read the directory line");
        let url = url.trim().to_string();
        assert!(
            url.starts_with("https://127.0.0.1:"),
            "stalemate envtest did not start: {url:?}"
        );
        RealApiserver {
            child,
            url,
            cp_dir: PathBuf::from(cp.trim()),
            dir,
            kubeconfig,
        }
    }

    pub fn ca(&self) -> PathBuf {
        self.cp_dir.join("ca.crt")
    }

    /// The admin's client certificate and key files (for curl's `--cert`/`--key`).
    pub fn admin_cert(&self) -> (PathBuf, PathBuf) {
        let text = std::fs::read_to_string(&self.kubeconfig).expect("read the kubeconfig");
        let kc: serde_json::Value = serde_saphyr::from_str(&text).expect("kubeconfig YAML");
        let user = &kc["users"][0]["user"];
        let write = |field: &str, file: &str| {
            use base64::Engine;
            let pem = base64::engine::general_purpose::STANDARD
                .decode(user[field].as_str().expect("client certificate data"))
                .expect("base64");
            let p = self.dir.path().join(file);
            std::fs::write(&p, pem).expect("write PEM");
            p
        };
        (
            write("client-certificate-data", "admin.crt"),
            write("client-key-data", "admin.key"),
        )
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl super::Kubectl for RealApiserver {
    fn kubeconfig_file(&self) -> &Path {
        &self.kubeconfig
    }

    fn cache_dir(&self) -> PathBuf {
        self.dir.path().join("kubectl-cache")
    }

    fn whom(&self) -> &'static str {
        "the real apiserver"
    }
}

impl Drop for RealApiserver {
    fn drop(&mut self) {
        // SIGTERM lets it stop its control plane; the group kill makes sure.
        let _ = super::terminate(&mut self.child, Duration::from_secs(10));
        kill_group(self.child.id());
        let _ = self.child.wait();
    }
}

/// SIGKILL to a process group (a child started with `process_group(0)`).
pub fn kill_group(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stderr(Stdio::null())
        .status();
}

/// A command whose process group is killed when dropped: a `stalemate run`/`explore`
/// with `--envtest`, whose control plane shares its group.
pub struct GroupOnDrop(pub Child);

impl Drop for GroupOnDrop {
    fn drop(&mut self) {
        kill_group(self.0.id());
        let _ = self.0.wait();
    }
}

/// Run `cmd` in a process group of its own to the end, killing the group afterwards (or
/// if the test panics meanwhile) so nothing it started outlives it.
pub fn output_in_group(cmd: &mut Command) -> Output {
    let child = cmd
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let out = child.wait_with_output().expect("wait");
    kill_group(pid);
    out
}

/// Processes whose command line mentions `needle` (e.g. a control plane's directory).
pub fn processes_mentioning(needle: &Path) -> Vec<String> {
    let needle = needle.display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(&needle) {
                found.push(cmd);
            }
        }
    }
    found
}
