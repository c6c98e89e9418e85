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
pub mod sim;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use futures_util::future::BoxFuture;

use super::Outcome;

/// A kind of upstream.
pub trait Kind: Send + Sync {
    /// `sim`, `envtest` or `cluster` (what `summary.json` says).
    fn name(&self) -> &'static str;

    /// Whether runs may go side by side (each then has an upstream of its own).
    fn side_by_side(&self) -> bool;

    /// The upstream for one run, started afresh or put back; `dir` is the run's private
    /// directory.
    fn start<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<Box<dyn Started>>>;

    /// Whether it is still there once stalemate's process group has been signalled: not
    /// an `--envtest` control plane, which is in that group (a Ctrl-C takes it along).
    fn outlives_an_interrupt(&self) -> bool {
        true
    }

    /// A run ended with `outcome` (explore tells each; the cluster notes what it made).
    fn ran(&self, _outcome: &Outcome) {}

    /// No run will come any more: put back what the last left, stop what is shared.
    fn finish(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async { Ok(()) })
    }

    /// The flags that give `stalemate run` an upstream of the same kind.
    fn run_flags(&self) -> Vec<String>;
}

impl std::fmt::Debug for dyn Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.run_flags().join(" "))
    }
}

/// An upstream started for one run.
pub trait Started: Send + Sync {
    /// Where the proxy finds it.
    fn source(&self) -> crate::upstream::Source;

    /// Set in the controller's (and the workload's) environment.
    fn env(&self) -> Vec<(OsString, OsString)> {
        Vec::new()
    }

    /// What it is, for `run`'s first line.
    fn describe(&self) -> String;

    /// What clients asked that it could not answer as a real apiserver would (the
    /// simulator's gaps: a subresource, a media type), with how many times; a run that
    /// hit any is not judged (`session` stops with the list).
    fn unanswered(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// Stop what was started for the run.
    fn stop(self: Box<Self>) -> BoxFuture<'static, ()>;
}

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
