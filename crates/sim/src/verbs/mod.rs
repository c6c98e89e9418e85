//! The HTTP verbs on a resource, each answering one request given its [`Ctx`]: reads
//! (get, list, as Tables too), watches, writes (create, update, patch), deletes, and the
//! subresources answered beyond `status` (scale, a pod's binding and eviction). What
//! differs by kind is not here: the writes and deletes go through the generic rules
//! (`write.rs`, `delete.rs`), which call each kind's strategy (`kinds/`).
//!
//! [`Ctx`]: crate::ctx::Ctx

pub(crate) mod delete;
pub(crate) mod pods;
pub(crate) mod read;
pub(crate) mod scale;
pub(crate) mod watch;
pub(crate) mod write;
