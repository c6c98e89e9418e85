//! The demo's GitRepository controller as a program of its own, configured from
//! `KUBECONFIG` like any controller — for `stalemate run` (and its tests):
//!
//! ```sh
//! stalemate run --schedule config/flux-f1.json --duration 20s -- target/debug/examples/gitrepo-controller [--fixed|--hot-loop]
//! ```

use std::process::ExitCode;
use std::sync::Arc;

use stalemate::demo::controller::{self, Behaviour};

#[tokio::main]
async fn main() -> ExitCode {
    let behaviour = match std::env::args().nth(1).as_deref() {
        None => Behaviour::Buggy,
        Some("--fixed") => Behaviour::Fixed,
        Some("--hot-loop") => Behaviour::HotLoop,
        Some(other) => {
            eprintln!("gitrepo-controller: unknown argument {other:?} (use --fixed or --hot-loop)");
            return ExitCode::from(2);
        }
    };
    let client = match kube::Client::try_default().await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gitrepo-controller: no usable kubeconfig: {e}");
            return ExitCode::from(2);
        }
    };
    let log: controller::Log = Arc::new(|line| println!("{line}"));
    tokio::select! {
        _ = controller::run(client, behaviour, log) => {}
        _ = stalemate::cli::shutdown_signal() => {}
    }
    ExitCode::SUCCESS
}
