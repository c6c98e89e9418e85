//! The interface every kind of upstream is behind: [`Kind`] (what explore and `run` ask
//! of it) and [`Started`] (one run's upstream).

use std::ffi::OsString;
use std::path::Path;

use anyhow::Result;
use futures_util::future::BoxFuture;

use crate::session::outcome::Outcome;

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
