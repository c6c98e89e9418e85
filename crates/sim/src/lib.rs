//! `stalemate sim`: an in-memory Kubernetes API server.
//!
//! The embedded upstream for `stalemate demo`, the end-to-end tests and the benchmarks.
//! Real clients — `kubectl`, kube-rs, client-go — talk to it over HTTPS (HTTP/1.1 and
//! HTTP/2) and should not be able to tell it from a small real cluster for everything
//! stalemate exercises: discovery, CRUD with optimistic concurrency, the status
//! subresource, generation, finalizers, selectors, paging, and every watch form with
//! bookmarks, WatchList and `410 Expired`. `fixtures/kube-apiserver-1.28/` holds the real
//! exchanges it is checked against (`e2e/sim_conformance.rs`).
//!
//! It serves every built-in resource of the pinned Kubernetes version (`builtins.rs`:
//! the real apiserver's discovery, generated), with what the real apiserver does by kind
//! — defaults, admission, validation, cascades — in one strategy per kind (`kinds/`;
//! `strategy.rs`), the `scale`, binding and eviction subresources (`verbs/`), the
//! built-in printers (`printers.rs`) and protobuf request bodies of every built-in kind
//! (`proto_body/`); `e2e/sim_differential.rs`
//! keeps all of it honest against a real kube-apiserver. What it cannot answer — logs,
//! exec, proxies, protobuf bodies of kinds it does not serve — is answered 501/415/406
//! and recorded ([`Sim::unanswered`]): `run` and `explore` stop on it.
//!
//! Authentication is real (`auth.rs`: client certificates, then tokens it signed; 401
//! for anything else). Not simulated: authorization (every identity, anonymous
//! included, may do everything), validation beyond the kinds' own, schema
//! validation/pruning/defaulting of custom resources, protobuf and CBOR serving,
//! controllers other than the namespace lifecycle and the service-account/root-CA
//! publishers, field-ownership conflicts of server-side apply.
//!
//! ```text
//!  client ─TLS─► serve ─► http::handle ─┬─ /_sim/...      misbehave on request
//!                  (router, builds Ctx) ├─ discovery, /version, openapi
//!                                       └─ verbs/: read (get, list, Table), watch,
//!                                          write (create, update, patch), delete,
//!                                          scale, binding, eviction
//!                                            │
//!                     write.rs, delete.rs ◄──┘ generic rules; per kind, the hooks of
//!                            │                 kinds::strategy(rt) (strategy.rs)
//!                            ▼
//!            store::State (one mutex: objects, RV, history, broadcast; instance::Sim)
//! ```
//!
//! Layers, each using only those below it (`layout_tests.rs` checks there is no
//! circle): `instance`, `serve`, `http` → `ctx`, `verbs/` → `bootstrap`, `write`,
//! `delete` → `kinds/` → `strategy`, `namespace_lifecycle`, `defaults`, `validate` →
//! `store`, `registry`, `meta`, the rest. The generic writes are handed the kinds'
//! lookup rather than importing it, so that a kind can call them back (a namespace fills
//! and empties itself through them).

// `pub` here means API: what the crates above use. Everything else is `pub(crate)`, and
// the compiler says so when an item is `pub` but out of their reach.
#![warn(unreachable_pub)]

mod age;
mod auth;
mod bootstrap;
mod builtins;
mod ctx;
mod defaults;
mod delete;
mod discovery;
mod http;
mod instance;
mod kinds;
mod kubeconfig;
mod local;
mod meta;
mod namespace_lifecycle;
mod negotiate;
mod openapi;
mod patch;
mod printers;
pub mod proto_body;
mod registry;
mod resource_type;
#[cfg(test)]
mod robustness_tests;
mod selector;
mod serve;
mod store;
mod strategy;
mod table;
mod validate;
mod verbs;
mod write;

pub use builtins::DEFAULT_KUBE_VERSION;
pub use instance::{CloseMode, Sim, SimConfig, WatchEncoding};
pub use kubeconfig::{ADMIN_GROUP, ADMIN_USER, KubeconfigAuth, write_kubeconfig};
pub use local::Local;
pub use serve::serve;
pub use store::HistoryLimits;
