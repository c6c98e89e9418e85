//! The demo's GitRepository controller as a program of its own, configured from
//! `KUBECONFIG` like any controller — for `stalemate run` (and its tests):
//!
//! ```sh
//! stalemate run --sim --setup examples/gitrepo/setup.yaml --quiet 2s --schedule f1.json -- target/debug/gitrepo-controller [--fixed|--hot-loop] [--metrics-bind-address=ADDR]
//! ```
//!
//! with `f1.json` the README's schedule (its client is everyone: `config/flux-f1.json`
//! targets only a User-Agent of `source-controller/`, which this one does not send).
//!
//! `--metrics-bind-address=127.0.0.1:$STALEMATE_METRICS_PORT` serves its workqueue
//! metrics as controller-runtime's manager would (`src/demo/metrics.rs`): a run then
//! knows when it has settled.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use stalemate::demo::controller::{self, Behaviour};
use stalemate::demo::metrics::{self, Queue};

const USAGE: &str = "use --fixed, --hot-loop or --metrics-bind-address=HOST:PORT";

#[tokio::main]
async fn main() -> ExitCode {
    let mut behaviour = Behaviour::Buggy;
    let mut bind: Option<SocketAddr> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        match flag.as_str() {
            "--fixed" => behaviour = Behaviour::Fixed,
            "--hot-loop" => behaviour = Behaviour::HotLoop,
            "--metrics-bind-address" => {
                let value = inline.or_else(|| args.next()).unwrap_or_default();
                match value.parse() {
                    Ok(a) => bind = Some(a),
                    Err(e) => {
                        eprintln!("gitrepo-controller: --metrics-bind-address {value:?}: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            _ => {
                eprintln!("gitrepo-controller: unknown argument {arg:?} ({USAGE})");
                return ExitCode::from(2);
            }
        }
    }
    let client = match kube::Client::try_default().await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gitrepo-controller: no usable kubeconfig: {e}");
            return ExitCode::from(2);
        }
    };
    let queue = Arc::new(Queue::new("gitrepository"));
    let served = {
        let queue = queue.clone();
        async move {
            match bind {
                Some(addr) => metrics::serve(addr, queue).await,
                None => std::future::pending().await,
            }
        }
    };
    let log: controller::Log = Arc::new(|line| println!("{line}"));
    tokio::select! {
        _ = controller::run_with_metrics(client, behaviour, log, queue) => {}
        Err(e) = served => {
            eprintln!("gitrepo-controller: serving metrics on {bind:?}: {e}");
            return ExitCode::from(1);
        }
        _ = stalemate::process::shutdown_signal() => {}
    }
    ExitCode::SUCCESS
}
