//! `--upstream-kubeconfig FILE [--context NAME]`, the cluster `serve`, `run` and
//! `explore` (and `explore job`) reach instead of the simulator, defined once.
//!
//! Each command says something of its own about them — `serve` that they exclude
//! `--in-cluster` and `--upstream`, `run` and `explore` that they exclude `--envtest`,
//! `explore` that it then explores a cluster — so the help text and the relations
//! to other flags are set where the struct is flattened (`mut_arg`), and the flags'
//! names, ids and types here. The ids stay `upstream_kubeconfig` and `context`: other
//! flags' `requires`/`conflicts_with` and `explore job`'s matches name them.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct UpstreamArgs {
    /// Upstream kubeconfig (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    pub upstream_kubeconfig: Option<PathBuf>,

    /// Context of the upstream kubeconfig (default: its current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}
