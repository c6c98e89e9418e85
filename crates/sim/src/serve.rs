//! The accept loop: serve a simulator over TLS until shutdown, and come back on the same
//! address after a restart asked for over `/_sim/restart`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::net::TcpListener;

use super::http;
use super::instance::{CloseMode, Sim};

/// Serve `sim` on `listener` until `shutdown` resolves. Restarts requested over the admin
/// endpoint rebind the same address.
pub async fn serve(
    sim: Arc<Sim>,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<()> {
    // Client certificates signed by the simulator's CA authenticate, as with
    // kube-apiserver's --client-ca-file (one CA for serving and clients, as kind has).
    let tls = stalemate_wire::listen::tls::server_config_with_client_ca(
        sim.certs.cert_pem.as_bytes(),
        sim.certs.key_pem.as_bytes(),
        Some(sim.certs.ca_cert_pem.as_bytes()),
        "the simulator's certificate",
    )?;
    let addr = listener.local_addr().context("listener address")?;
    let mut listener = Some(listener);
    tokio::pin!(shutdown);
    loop {
        let l = match listener.take() {
            Some(l) => l,
            None => bind_retry(addr).await?,
        };
        let s = sim.clone();
        let handler = move |req, peer| http::handle(s.clone(), req, peer);
        let restart = sim.restart.notified();
        let stop = async {
            tokio::select! {
                _ = &mut shutdown => true,
                _ = restart => false,
            }
        };
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<bool>();
        let kill_rx = sim.kill_connections.subscribe();
        let serving = stalemate_wire::listen::serve(
            l,
            tls.clone(),
            handler,
            async {
                let _ = stop_rx.await;
            },
            Duration::from_secs(5),
            kill_rx,
        );
        tokio::pin!(serving);
        let shutting_down = tokio::select! {
            stop = stop => { let _ = stop_tx.send(stop); stop }
            _ = &mut serving => true,
        };
        if shutting_down {
            sim.close_watches(CloseMode::Clean);
            serving.await;
            return Ok(());
        }
        // Restart: everything open vanishes at once, like a killed process — the
        // connections drop (their watches end with them), no stream is reset first
        // (a dying process sends no RST_STREAM).
        sim.kill_connections.send_modify(|n| *n += 1);
        serving.await;
        let down = *sim.restart_down.lock().unwrap_or_else(|p| p.into_inner());
        tracing::info!(?down, "simulator restarting");
        tokio::time::sleep(down).await;
    }
}

async fn bind_retry(addr: SocketAddr) -> Result<TcpListener> {
    let mut last = None;
    for _ in 0..50 {
        match TcpListener::bind(addr).await {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(last.map_or_else(|| anyhow::anyhow!("bind failed"), Into::into))
        .with_context(|| format!("rebinding {addr} after a restart"))
}
