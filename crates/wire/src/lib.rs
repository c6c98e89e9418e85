//! stalemate's wire floor, below everything else: what Kubernetes says on the wire and
//! how a TLS server listens.
//!
//! - `k8s/`: request parsing (verb, resource, watch parameters), `Status` errors, the
//!   protobuf envelope, client identities (certificate subjects, tokens), certificates and
//!   kubeconfigs;
//! - `listen/`: the rustls + hyper server the proxy and the simulator both serve with,
//!   its serving threads, and the loopback network the `partition` fault cuts.
//!
//! It knows nothing of faults, schedules or the simulator: the proxy (the `stalemate`
//! crate) and the simulator (`stalemate-sim`) both build on it, and the compiler keeps it
//! that way (docs/ARCHITECTURE.md, "Crates").

// `pub` here means API: what the crates above use. Everything else is `pub(crate)`, and
// the compiler says so when an item is `pub` but out of their reach.
#![warn(unreachable_pub)]

pub mod k8s;
pub mod listen;
