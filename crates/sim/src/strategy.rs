//! What differs by kind on a write or a delete, as kube-apiserver's registry strategies
//! (`pkg/registry/*/strategy.go`) and REST storages have it: a [`Strategy`] per kind
//! with special rules (`kinds/`), [`DefaultStrategy`] for every other. The generic
//! operations (`write.rs`, `delete.rs`) look the strategy up by the resource and call its
//! hooks, in the order the real registry store does; every hook defaults to "nothing
//! special".

use std::sync::Arc;

use serde_json::Value;

use super::meta;
use super::resource_type::ResourceType;
use super::store::{State, Stored};
use stalemate_wire::k8s::status::{ApiError, FieldError};

/// The strategy of each resource type (`kinds::strategy`). The generic operations are
/// handed it rather than importing it, so that a kind whose objects reach others — a
/// namespace creating its service account, emptying itself when deleted — can call them
/// back without an import circle.
pub(crate) type Strategies = fn(&ResourceType) -> &'static dyn Strategy;

/// One kind's rules. Hooks run in this order on a create: `name_problem`,
/// `prepare_for_create`, (field management), `defaults`, `admit`, `validate_create`,
/// (store), `after_create`; on an update: `prepare_for_status_update` (a status write),
/// `prepare_for_update`, `defaults`, `validate_update` or `validate_status`,
/// `spec_changed`, (store), `after_update`; on a delete: `has_finalizers`, then either
/// `prepare_for_delete` and `after_delete_marked`, or `deleted_gracefully`; and
/// `after_remove` once the object is gone.
pub(crate) trait Strategy: Sync {
    /// Why `name` cannot name an object of this kind (most take DNS subdomains).
    fn name_problem(&self, name: &str) -> Option<String> {
        meta::name_problem(name, false)
    }

    /// Metadata set on a new object before field management sees it, so that the
    /// writer owns it.
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// The defaulting functions, on every write; on `create`, also the status the
    /// strategy resets.
    fn defaults(&self, _obj: &mut Value, _create: bool) {}

    /// What admission and the REST storage add to a new object, or why they refuse it.
    fn admit(&self, _st: &State, _ns: &str, _obj: &mut Value) -> Result<(), ApiError> {
        Ok(())
    }

    /// What a new object breaks.
    fn validate_create(&self, _obj: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// What an update of the object itself breaks: the create checks, and what may not
    /// change once set.
    fn validate_update(&self, _old: &Value, new: &Value) -> Vec<FieldError> {
        self.validate_create(new)
    }

    /// What a status write breaks.
    fn validate_status(&self, _obj: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// What every update (main resource or status) keeps of the old object that the
    /// request left out.
    fn prepare_for_update(&self, _old: &Value, _new: &mut Value) {}

    /// What a status write keeps of the old object beyond its spec (the generic rule
    /// keeps everything but metadata and status).
    fn prepare_for_status_update(&self, _old: &Value, _new: &mut Value) {}

    /// Whether an update moves `metadata.generation`.
    fn spec_changed(&self, rt: &ResourceType, old: &Value, new: &Value) -> bool {
        meta::spec_changed(rt, old, new)
    }

    /// What follows a stored create (the controllers the simulator runs in-line).
    fn after_create(&self, _st: &mut State, _kinds: Strategies, _created: &Stored) {}

    /// What follows a stored update.
    fn after_update(&self, _st: &mut State) {}

    /// Whether a delete must wait: the object is only marked while this holds.
    fn has_finalizers(&self, obj: &Value) -> bool {
        obj["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    }

    /// What marking an object deleted sets besides `deletionTimestamp` (and the
    /// generation bump of types that track it).
    fn prepare_for_delete(&self, obj: &mut Value) {
        obj["metadata"]["deletionGracePeriodSeconds"] = 0.into();
    }

    /// What follows a stored deletion mark; returns the object as it is then.
    fn after_delete_marked(
        &self,
        _st: &mut State,
        _kinds: Strategies,
        marked: Arc<Stored>,
    ) -> Arc<Stored> {
        marked
    }

    /// Whether an object without finalizers is deleted gracefully — marked (one
    /// MODIFIED), then removed — rather than removed at once.
    fn deleted_gracefully(&self) -> bool {
        false
    }

    /// What follows the removal of an object (cascades).
    fn after_remove(&self, _st: &mut State, _gone: &Stored) {}
}

/// The strategy of every kind without special rules, custom resources included.
pub(crate) struct DefaultStrategy;

impl Strategy for DefaultStrategy {}
