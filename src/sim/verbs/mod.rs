//! The HTTP verbs on a resource, each answering one request given its [`Ctx`]: reads
//! (get, list, as Tables too), watches, writes (create, update, patch), deletes, and the
//! subresources answered beyond `status` (scale, a pod's binding and eviction). What
//! differs by kind is not here: the writes and deletes go through the generic rules
//! (`write.rs`, `delete.rs`), which call each kind's strategy (`kinds/`).
//!
//! [`Ctx`]: crate::sim::ctx::Ctx

pub mod delete;
pub mod pods;
pub mod read;
pub mod scale;
pub mod watch;
pub mod write;
