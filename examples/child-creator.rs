//! A Widget controller that gives each Widget one child ConfigMap — and, buggy, creates
//! another whenever its cache has not seen the first (`stalemate::demo::widgets`).
//!
//! ```sh
//! stalemate explore --setup examples/widgets/setup.yaml -- target/debug/examples/child-creator [--fixed]
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
            eprintln!("child-creator: unknown argument {other:?} (use --fixed)");
            return ExitCode::from(2);
        }
    };
    let client = match kube::Client::try_default().await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("child-creator: no usable kubeconfig: {e}");
            return ExitCode::from(2);
        }
    };
    let log: stalemate::demo::controller::Log = Arc::new(|line| println!("{line}"));
    tokio::select! {
        _ = widgets::run(client, Kind::ChildCreator { fixed }, log) => {}
        _ = stalemate::cli::shutdown_signal() => {}
    }
    ExitCode::SUCCESS
}
