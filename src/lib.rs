//! stalemate: make Kubernetes controllers see a stale cluster on a schedule, through a
//! TLS-terminating proxy in front of a real kube-apiserver, and judge whether they recover.
//!
//! Layout (docs/ARCHITECTURE.md, "Modules"): `proxy/` a request's stages; `fault/` one
//! file per fault; `schedule/` which windows are open for whom; `watch/` codecs, the gate
//! and views; `server` the in-process proxy; `session/` one run of a controller behind it
//! (`run`, `explore`'s trials), on an upstream of one of the kinds in
//! `session/upstream/`; `envtest/` a real control plane on loopback; `explore/` the
//! search for bugs; `setup` the manifests a run starts from; `upstream/` the real
//! apiserver; `listen/` the rustls + hyper server; `oracle/` and `report/` the verdicts;
//! `sim/` the embedded simulator; `cli/` one file per verb.

pub mod admin;
pub mod certs;
pub mod cli;
pub mod demo;
pub mod duration;
pub mod envtest;
pub mod explore;
pub mod fault;
pub mod identity;
pub mod inject;
pub mod kubeconfig;
pub mod listen;
pub mod metrics;
pub mod oracle;
pub mod process;
pub mod protobuf;
pub mod proxy;
pub mod report;
pub mod request;
pub mod schedule;
pub mod server;
pub mod session;
pub mod setup;
pub mod sim;
pub mod status;
pub mod trace;
pub mod upstream;
pub mod watch;

#[cfg(test)]
mod layout_tests;
