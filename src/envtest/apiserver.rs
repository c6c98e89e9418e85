//! kube-apiserver for a control plane: its flags, and waiting until `/readyz` says 200.
//!
//! The flags are kubeadm's where a choice matters to a controller — RBAC authorization,
//! the default admission plugins, service-account tokens signed with the control
//! plane's key and issued for the apiserver's own URL — and nothing that needs a node, a
//! cloud or a second member.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::assets::Assets;
use super::daemon::Daemon;
use super::pki::{self, Pki};
use super::port::{free_port, port_clash};

/// A kube-apiserver serving on `url`, its admin kubeconfig written.
pub struct ApiServer {
    pub url: String,
    pub admin_kubeconfig: std::path::PathBuf,
    pub daemon: Daemon,
}

/// Where its objects are kept.
pub struct Storage<'a> {
    pub etcd_url: &'a str,
    pub prefix: &'a str,
}

impl ApiServer {
    /// Start it on a free port and wait for `/readyz`. `alive` is asked as it waits
    /// whether what it depends on still runs (an etcd that exited fails it at once).
    pub async fn start(
        assets: &Assets,
        pki: &Pki,
        storage: Storage<'_>,
        extra: &[String],
        dir: &Path,
        timeout: Duration,
        alive: &mut (dyn FnMut() -> Result<()> + Send),
    ) -> Result<ApiServer> {
        let program = assets.binary("kube-apiserver")?;
        let mut last = None;
        for _ in 0..3 {
            let port = free_port()?;
            let url = format!("https://127.0.0.1:{port}");
            let admin = pki.kubeconfig(
                pki::ADMIN_KUBECONFIG,
                &url,
                pki::ADMIN_USER,
                Some("system:masters"),
            )?;
            let mut flags = args(pki, &storage, port);
            flags.extend(extra.iter().cloned());
            let mut daemon = Daemon::spawn("kube-apiserver", &program, &flags, dir)?;
            match wait_ready(&mut daemon, &admin, timeout, alive).await {
                Ok(()) => {
                    return Ok(ApiServer {
                        url,
                        admin_kubeconfig: admin,
                        daemon,
                    });
                }
                Err(e) if port_clash(&daemon) => last = Some(e),
                Err(e) => {
                    daemon.stop().await;
                    return Err(e);
                }
            }
        }
        match last {
            Some(e) => Err(
                e.context("kube-apiserver: its port was taken three times in a row (a port clash)")
            ),
            None => bail!("kube-apiserver did not start"),
        }
    }
}

fn args(pki: &Pki, storage: &Storage<'_>, port: u16) -> Vec<String> {
    let file = |f: &str| pki.path(f).display().to_string();
    vec![
        format!("--etcd-servers={}", storage.etcd_url),
        format!("--etcd-prefix={}", storage.prefix),
        "--bind-address=127.0.0.1".into(),
        "--advertise-address=127.0.0.1".into(),
        // Nothing here reaches the apiserver through the `kubernetes` Service, and 1.37
        // refuses to reconcile its endpoints onto a loopback address ("cannot use public
        // IP 127.0.0.1 with endpoint reconciler"): no reconciler, as envtest runs it.
        "--endpoint-reconciler-type=none".into(),
        format!("--secure-port={port}"),
        format!("--tls-cert-file={}", file(pki::SERVING_CERT)),
        format!("--tls-private-key-file={}", file(pki::SERVING_KEY)),
        format!("--client-ca-file={}", file(pki::CA_CERT)),
        format!("--service-account-issuer=https://127.0.0.1:{port}"),
        format!("--service-account-key-file={}", file(pki::SA_PUB)),
        format!("--service-account-signing-key-file={}", file(pki::SA_KEY)),
        "--service-cluster-ip-range=10.0.0.0/24".into(),
        "--authorization-mode=RBAC".into(),
        "--allow-privileged=true".into(),
        // Its own certificates are given: nothing to write under /var/run/kubernetes.
        format!("--cert-dir={}", pki.dir.join("apiserver-certs").display()),
    ]
}

/// Until `/readyz` answers 200 (every post-start hook done: RBAC's bootstrap roles,
/// the default priority levels, the system namespaces).
async fn wait_ready(
    daemon: &mut Daemon,
    admin: &Path,
    timeout: Duration,
    alive: &mut (dyn FnMut() -> Result<()> + Send),
) -> Result<()> {
    // The proxy's own upstream probe, not a kube-rs client: kube-rs logs every
    // refused connection and 500 on the way to ready as an error.
    let upstream = crate::upstream::Upstream::connect(
        &crate::upstream::Source::Kubeconfig {
            path: Some(admin.to_path_buf()),
            context: None,
        },
        &crate::upstream::TransportOptions {
            insecure_skip_verify: false,
            connect_timeout: Duration::from_secs(2),
            lanes: 1,
        },
    )
    .await
    .context("the control plane's admin kubeconfig")?;
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = daemon.exited() {
            return Err(daemon.exit_error(status));
        }
        alive()?;
        let said = match upstream.probe(Duration::from_secs(2)).await {
            Ok(200) => return Ok(()),
            Ok(code) => format!("{code}"),
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            bail!(
                "kube-apiserver did not get ready within {}s (/readyz: {said}; its log: {}):\n{}",
                timeout.as_secs(),
                daemon.log.display(),
                daemon.log_tail(12)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
