//! One served group/version/resource and the per-type rules the real registry
//! strategies encode as data: whether `metadata.generation` is tracked, whether `status`
//! is a subresource, which subresources and verbs it has, and how it is printed as a
//! Table. Built from the built-ins' discovery (`builtins.rs`) and from CRDs
//! (`registry.rs`); what differs by kind beyond this data is in `kinds/`.

/// How to print objects of a type as a `meta.k8s.io` Table (`kubectl get`).
#[derive(Debug, Clone, PartialEq)]
pub enum Printer {
    /// The apiserver's compiled-in printer for a built-in kind (`pkg/printers/internalversion`).
    Builtin,
    /// A CRD version's `additionalPrinterColumns` (name, type, jsonPath, description, priority).
    Columns(Vec<PrinterColumn>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

/// A subresource of a type: what discovery says of it, and how the simulator answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct Subresource {
    pub name: String,
    /// The kind it answers with, as (group, version, kind); an empty group and version
    /// mean "the resource's own" (`deployments/status` answers Deployments).
    pub kind: (String, String, String),
    pub verbs: Vec<String>,
}

/// How the simulator answers a subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `status`: the object, with writes limited to its status.
    Status,
    /// `scale`: an `autoscaling/v1` Scale of the object's replicas.
    Scale,
    /// `serviceaccounts/token`: a TokenRequest.
    Token,
    /// `pods/binding` (and the `bindings` resource): the pod assigned to a node.
    Binding,
    /// `pods/eviction`: the pod deleted.
    Eviction,
    /// `namespaces/finalize`: the namespace's spec.finalizers.
    Finalize,
    /// What the simulator does not do (logs, exec, attach, port-forward, proxies, ...):
    /// answered 501 and recorded, so `run` and `explore` stop and say so.
    Unsupported,
}

impl Subresource {
    pub fn answer(&self, resource: &str) -> Answer {
        match (self.name.as_str(), resource) {
            ("status", _) => Answer::Status,
            ("scale", _) => Answer::Scale,
            ("token", "serviceaccounts") => Answer::Token,
            ("binding", "pods") => Answer::Binding,
            ("eviction", "pods") => Answer::Eviction,
            ("finalize", "namespaces") => Answer::Finalize,
            _ => Answer::Unsupported,
        }
    }
}

/// One served group/version/resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub verbs: Vec<String>,
    /// Subresources beyond the object itself (`status`, `scale`, `finalize`, ...).
    pub subresources: Vec<Subresource>,
    /// `status` is written only through `/status` (and dropped from main-resource writes).
    pub status_subresource: bool,
    /// `metadata.generation` is set and bumped on spec changes.
    pub generation: bool,
    /// A custom resource: stored as unstructured JSON (keys sorted like Go maps), no
    /// strategic merge patch, updates must carry a resourceVersion.
    pub custom: bool,
    /// Virtual, create-only resources (reviews): nothing is stored.
    pub virtual_create: bool,
    /// A DELETE that removes the object answers it, not a `Status` (the REST storage's
    /// `ReturnDeletedObject`).
    pub returns_deleted: bool,
    pub printer: Printer,
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// Objects of every version of a resource share one store, keyed by group and plural.
    pub fn storage_key(&self) -> String {
        format!("{}/{}", self.group, self.plural)
    }

    pub fn group_resource(&self) -> stalemate_wire::k8s::status::GroupResource<'_> {
        stalemate_wire::k8s::status::GroupResource {
            group: &self.group,
            resource: &self.plural,
        }
    }

    pub fn subresource(&self, name: &str) -> Option<&Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }

    /// Whether discovery lists `verb` for the resource itself.
    pub fn allows(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }
}
