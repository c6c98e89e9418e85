//! stalemate: make Kubernetes controllers see a stale cluster on a schedule, through a
//! TLS-terminating proxy in front of a real kube-apiserver, and judge whether they recover.
//!
//! Layout (DESIGN.md "Inside"): `cli/` one file per verb; `listen/` the rustls + hyper
//! server; `request` classifies requests; `upstream/` reaches the real apiserver; `proxy`
//! forwards; `sim/` is the embedded API simulator.

pub mod admin;
pub mod certs;
pub mod cli;
pub mod demo;
pub mod duration;
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
pub mod sim;
pub mod status;
pub mod trace;
pub mod upstream;
pub mod watch;

#[cfg(test)]
mod layout_tests;
