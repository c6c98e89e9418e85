//! A controller that deletes ConfigMaps labelled `widget=NAME` whose Widget is gone —
//! and, buggy, takes "not in my cache" for gone (`stalemate::demo::widgets`). Its bug needs
//! a workload that creates a Widget and its ConfigMap while the controller runs:
//!
//! ```sh
//! stalemate explore --setup examples/widgets/setup.yaml \
//!     --workload 'kubectl create -f examples/widgets/w2.yaml' \
//!     -- target/debug/examples/orphan-cleaner [--fixed]
//! ```

use std::process::ExitCode;
use std::sync::Arc;

use stalemate::demo::widgets::{self, Kind};

#[tokio::main]
async fn main() -> ExitCode {
    let fixed = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--fixed") => true,
        Some(other) => {
            eprintln!("orphan-cleaner: unknown argument {other:?} (use --fixed)");
            return ExitCode::from(2);
        }
    };
    let client = match kube::Client::try_default().await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("orphan-cleaner: no usable kubeconfig: {e}");
            return ExitCode::from(2);
        }
    };
    let log: stalemate::demo::controller::Log = Arc::new(|line| println!("{line}"));
    tokio::select! {
        _ = widgets::run(client, Kind::OrphanCleaner { fixed }, log) => {}
        _ = stalemate::cli::shutdown_signal() => {}
    }
    ExitCode::SUCCESS
}
