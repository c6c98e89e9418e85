//! The kinds of upstream a session runs a controller against — one file each, behind one
//! interface, the way faults are under `src/fault/`:
//!
//! | kind | starts (per run) | puts back | side by side | costs per run (2 cores) |
//! |---|---|---|---|---|
//! | [`sim`] (default) | a fresh in-process simulator | nothing to: each run has its own | yes | ~1 ms, a few MiB |
//! | [`envtest`] (`--envtest`) | a real kube-apiserver (and `--with`'s components) on loopback, one shared etcd; explore keeps the next ones started ahead | explore: a bare apiserver put back to what it held when ready, checked (else a new one); `run`, `--with`, `--fresh-control-planes`: nothing to, each run has its own | yes | ~1.8 s of start and ~250 MiB per apiserver; +5 s with kube-controller-manager and kwok; a put back: two listings and the deletes |
//! | [`cluster`] (`--upstream-kubeconfig`) | nothing: the kubeconfig's cluster | `--reset`, then what the last run created deleted | no | the reset and the deletes |
//!
//! ```text
//!  Kind::start(run dir) ─► Started { source, env } ─► session ─► Started::stop()
//!  explore: Kind::ran(outcome) after each run, Kind::finish() at the end
//! ```
//!
//! `run` and `explore` only pick a kind ([`Choice`]); the session asks it for an
//! upstream, and explore asks whether runs may go side by side and how `stalemate run`
//! reaches the same kind again (a finding's reproducer).

pub mod cluster;
pub mod envtest;
mod kind;
pub mod sim;

pub use kind::{Kind, Started};

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;

/// What the command line chose.
#[derive(Debug, Clone)]
pub enum Choice {
    Sim,
    Envtest {
        /// `--envtest DIR` (None: `$KUBEBUILDER_ASSETS`).
        assets: Option<PathBuf>,
        with: crate::envtest::With,
    },
    Cluster {
        kubeconfig: Option<PathBuf>,
        context: Option<String>,
        /// explore's `--reset`.
        reset: Option<String>,
    },
}

impl Choice {
    /// The kind for `run`: one run, nothing to put back after it.
    pub async fn for_run(self) -> Result<Arc<dyn Kind>> {
        Ok(match self {
            Choice::Sim => Arc::new(sim::Sim),
            Choice::Envtest { assets, with } => {
                Arc::new(envtest::Envtest::prepare(assets, with, 0, Vec::new(), false).await?)
            }
            Choice::Cluster {
                kubeconfig,
                context,
                ..
            } => Arc::new(cluster::Cluster::for_run(kubeconfig, context)),
        })
    }

    /// The kind for `explore`: many runs, `jobs` at a time — control planes started ahead
    /// for them with the `setup`'s definitions on and put back between runs (unless
    /// `fresh`: one started for every run), the cluster put back between them.
    pub async fn for_explore(
        self,
        jobs: usize,
        setup: &[crate::setup::Manifest],
        fresh: bool,
    ) -> Result<Arc<dyn Kind>> {
        Ok(match self {
            Choice::Envtest { assets, with } => Arc::new(
                envtest::Envtest::prepare(assets, with, jobs.max(1), setup.to_vec(), !fresh)
                    .await?,
            ),
            Choice::Cluster {
                kubeconfig,
                context,
                reset,
            } => Arc::new(cluster::Cluster::for_explore(kubeconfig, context, reset).await?),
            other => other.for_run().await?,
        })
    }
}
