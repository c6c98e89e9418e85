//! An object a fault names, as kubectl names it (`touch`'s objects).

use serde::{Deserialize, Serialize};

/// One object, as kubectl names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Object {
    /// `plural.group` (core: `plural`).
    pub resource: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.resource, self.name)
        } else {
            write!(f, "{} {}/{}", self.resource, self.namespace, self.name)
        }
    }
}
