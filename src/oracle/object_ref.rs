//! How the oracles name an object.

use serde::{Deserialize, Serialize};

/// One object, as the report names it.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct ObjectRef {
    pub resource: String,
    pub namespace: String,
    pub name: String,
}
