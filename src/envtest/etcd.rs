//! etcd for a control plane: one per control plane (its own data directory and port),
//! or one shared by several, each apiserver keeping its objects under its own
//! `--etcd-prefix` (what `explore --envtest` measures both ways; see `mod.rs`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::assets::Assets;
use super::daemon::Daemon;
use super::port::{free_port, port_clash};

/// A running etcd on loopback.
pub struct Etcd {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    pub dir: PathBuf,
    daemon: Daemon,
}

impl Etcd {
    /// Start etcd with its data under `dir/etcd`, on a free port; returns once it accepts
    /// connections. A port taken between choosing and binding it is tried again.
    pub async fn start(assets: &Assets, dir: &Path, timeout: Duration) -> Result<Etcd> {
        let program = assets.binary("etcd")?;
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
        let mut last = None;
        for _ in 0..3 {
            let port = free_port()?;
            let url = format!("http://127.0.0.1:{port}");
            let data = dir.join("etcd");
            let _ = std::fs::remove_dir_all(&data);
            let args: Vec<String> = vec![
                "--name=stalemate".into(),
                format!("--data-dir={}", data.display()),
                format!("--listen-client-urls={url}"),
                format!("--advertise-client-urls={url}"),
                // One member: its peer port is never dialled, so any free one will do.
                "--listen-peer-urls=http://127.0.0.1:0".into(),
                // A test cluster's data need not survive a power cut; fsync on 2 busy
                // cores costs every write tens of milliseconds.
                "--unsafe-no-fsync".into(),
                "--log-level=warn".into(),
            ];
            let mut daemon = Daemon::spawn("etcd", &program, &args, dir)?;
            match wait_listening(&mut daemon, port, timeout).await {
                Ok(()) => {
                    return Ok(Etcd {
                        url,
                        dir: dir.to_path_buf(),
                        daemon,
                    });
                }
                Err(e) if port_clash(&daemon) => {
                    last = Some(e);
                    continue;
                }
                Err(e) => {
                    daemon.stop().await;
                    return Err(e);
                }
            }
        }
        match last {
            Some(e) => {
                Err(e.context("etcd: its port was taken three times in a row (a port clash)"))
            }
            None => bail!("etcd did not start"),
        }
    }

    /// Whether it is still running (false: it exited; the error says how).
    pub fn check(&mut self) -> Result<()> {
        match self.daemon.exited() {
            Some(status) => Err(self.daemon.exit_error(status)),
            None => Ok(()),
        }
    }

    /// Whether it has exited because it was told to (`Daemon::told_to_stop`).
    pub fn told_to_stop(&mut self) -> bool {
        self.daemon.exited().is_some_and(Daemon::told_to_stop)
    }

    pub async fn stop(self) {
        self.daemon.stop().await;
    }

    /// At once (its data is thrown away).
    pub async fn kill(self) {
        self.daemon.kill().await;
    }
}

/// Until something accepts connections on `port`, `daemon` exits, or `timeout`.
async fn wait_listening(daemon: &mut Daemon, port: u16, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = daemon.exited() {
            return Err(daemon.exit_error(status));
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "etcd did not listen on 127.0.0.1:{port} within {}s (its log: {}):\n{}",
                timeout.as_secs(),
                daemon.log.display(),
                daemon.log_tail(12)
            );
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
