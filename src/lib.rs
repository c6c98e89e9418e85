//! stalemate: make Kubernetes controllers see a stale cluster on a schedule, through a
//! TLS-terminating proxy in front of a real kube-apiserver, and judge whether they recover.
//!
//! Layout (docs/ARCHITECTURE.md, "Modules"): `k8s/` the wire types (requests, `Status`,
//! protobuf, identities, certificates, kubeconfigs); `proxy/` a request's stages and its
//! metrics; `fault/` one file per fault; `schedule/` which windows are open for whom;
//! `watch/` codecs, the gate and views; `server/` the in-process proxy, its admin listener
//! and the sidecar injection; `session/` one run of a controller behind it (`run`,
//! `explore`'s trials), on an upstream of one of the kinds in `session/upstream/`;
//! `process` the controller process; `envtest/` a real control plane on loopback;
//! `explore/` the search for bugs; `setup` the manifests a run starts from; `upstream/`
//! the real apiserver; `listen/` the rustls + hyper server; `oracle/`, `report/` and
//! `trace` the verdicts and what they rest on; `sim/` the embedded simulator; `cli/` one
//! file per verb.

pub mod cli;
pub mod demo;
pub mod envtest;
pub mod explore;
pub mod fault;
pub mod oracle;
pub mod process;
pub mod proxy;
pub mod report;
pub mod schedule;
pub mod server;
pub mod session;
pub mod setup;
pub mod spans;
pub mod trace;
pub mod upstream;
pub mod watch;

// The floors below this crate, under the names the code has always used for them
// (`crate::k8s::…`, `stalemate::sim::…`): docs/ARCHITECTURE.md, "Crates".
pub use stalemate_sim as sim;
pub use stalemate_wire::{k8s, listen};

#[cfg(test)]
mod layout_tests;
