//! The simulator inside this process, on a free loopback port, with an admin kubeconfig
//! for it: the cluster of `stalemate demo`, of `run --sim`, and of every `explore` trial
//! (one each, so trials run side by side and never see each other's objects).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};

use super::instance::{Sim, SimConfig};
use super::kubeconfig::{KubeconfigAuth, write_kubeconfig};
use super::serve::serve;

/// A running in-process simulator.
pub struct Local {
    pub url: String,
    /// An admin kubeconfig for it (a bearer token it signed).
    pub kubeconfig: PathBuf,
    pub sim: Arc<Sim>,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<()>>,
}

impl Local {
    /// Serve a new simulator on `127.0.0.1:0`; its kubeconfig is written into `dir`.
    pub async fn start(dir: &Path, config: SimConfig) -> Result<Local> {
        let certs = stalemate_wire::k8s::certs::generate("stalemate-sim", &[])?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the simulator's loopback port")?;
        let url = stalemate_wire::listen::https_url(listener.local_addr()?);
        let sim = Sim::new(config, certs);
        let kubeconfig = dir.join("sim.kubeconfig");
        write_kubeconfig(&kubeconfig, &sim, &url, KubeconfigAuth::Token)?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(serve(sim.clone(), listener, async move {
            let _ = stopped.await;
        }));
        Ok(Local {
            url,
            kubeconfig,
            sim,
            stop,
            task,
        })
    }

    /// Stop serving: open watches end, connections close.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        match self.task.await {
            Ok(Err(e)) => tracing::warn!(error = %e, "the simulator stopped with an error"),
            Err(e) => tracing::warn!(error = %e, "the simulator's task failed"),
            Ok(Ok(())) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn serves_and_stops() {
        let dir = tempfile::tempdir().unwrap();
        let local = Local::start(dir.path(), SimConfig::default())
            .await
            .unwrap();
        let client = stalemate_wire::k8s::kubeconfig::client(&local.kubeconfig, None)
            .await
            .unwrap();
        let v = client.apiserver_version().await.unwrap();
        assert_eq!(v.minor, "37");
        let url = local.url.clone();
        local.stop().await;
        let addr = url.trim_start_matches("https://");
        assert!(
            tokio::net::TcpStream::connect(addr).await.is_err(),
            "nothing listens after stop"
        );
    }
}
