//! The simulator: a fresh one in this process for every run (`sim/local.rs`), gone when
//! the run ends — instant, parallel, no binaries; not the real thing
//! (docs/simulator.md).

use std::path::Path;

use anyhow::{Context, Result};
use futures_util::future::BoxFuture;

use super::kind::{Kind, Started};

pub struct Sim;

impl Kind for Sim {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn side_by_side(&self) -> bool {
        true
    }

    fn start<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<Box<dyn Started>>> {
        Box::pin(async move {
            let local = crate::sim::Local::start(dir, crate::sim::SimConfig::default())
                .await
                .context("starting the simulator")?;
            Ok(Box::new(local) as Box<dyn Started>)
        })
    }

    fn run_flags(&self) -> Vec<String> {
        vec!["--sim".into()]
    }
}

impl Started for crate::sim::Local {
    fn source(&self) -> crate::upstream::Source {
        crate::upstream::Source::kubeconfig_file(self.kubeconfig.clone())
    }

    fn describe(&self) -> String {
        format!("a fresh simulator ({})", self.url)
    }

    fn unanswered(&self) -> Vec<(String, u64)> {
        self.sim.unanswered()
    }

    fn stop(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(crate::sim::Local::stop(*self))
    }
}
