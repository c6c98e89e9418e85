//! Which resources the simulator serves, and how each behaves.
//!
//! A small, fixed set of built-in types (what controllers under test read and write:
//! namespaces, configmaps, secrets, serviceaccounts, events, leases, deployments, CRDs)
//! plus every version of every CustomResourceDefinition that has been created. A
//! [`ResourceType`] carries the per-type rules the real registry strategies encode:
//! whether `metadata.generation` is tracked, whether `status` is a subresource, whether an
//! update may omit the resourceVersion, and how the type is printed as a Table.

use std::sync::Arc;

use serde_json::Value;

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
    pub verbs: Vec<&'static str>,
    /// Subresources beyond the object itself (`status`, `finalize`).
    pub subresources: Vec<&'static str>,
    /// `status` is written only through `/status` (and dropped from main-resource writes).
    pub status_subresource: bool,
    /// `metadata.generation` is set and bumped on spec changes.
    pub generation: bool,
    /// A custom resource: stored as unstructured JSON (keys sorted like Go maps), no
    /// strategic merge patch, updates must carry a resourceVersion.
    pub custom: bool,
    /// Virtual, create-only resources (reviews): nothing is stored.
    pub virtual_create: bool,
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

    pub fn group_resource(&self) -> crate::status::GroupResource<'_> {
        crate::status::GroupResource {
            group: &self.group,
            resource: &self.plural,
        }
    }
}

const RW_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// The order the apiextensions-apiserver lists verbs in for custom resources.
const CR_VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

#[allow(clippy::too_many_arguments)]
fn builtin(
    group: &str,
    version: &str,
    plural: &str,
    singular: &str,
    kind: &str,
    namespaced: bool,
    short_names: &[&str],
    subresources: &[&'static str],
    generation: bool,
) -> ResourceType {
    ResourceType {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
        singular: singular.into(),
        kind: kind.into(),
        namespaced,
        short_names: short_names.iter().map(|s| s.to_string()).collect(),
        categories: vec![],
        verbs: RW_VERBS.to_vec(),
        subresources: subresources.to_vec(),
        status_subresource: subresources.contains(&"status"),
        generation,
        custom: false,
        virtual_create: false,
        printer: Printer::Builtin,
    }
}

fn review(group: &str, plural: &str, kind: &str) -> ResourceType {
    ResourceType {
        verbs: vec!["create"],
        virtual_create: true,
        ..builtin(
            group,
            "v1",
            plural,
            &kind.to_ascii_lowercase(),
            kind,
            false,
            &[],
            &[],
            false,
        )
    }
}

/// The built-in types, in the order discovery lists them.
pub fn builtins() -> Vec<ResourceType> {
    let mut deployments = builtin(
        "apps",
        "v1",
        "deployments",
        "deployment",
        "Deployment",
        true,
        &["deploy"],
        &["status"],
        true,
    );
    deployments.categories = vec!["all".into()];
    let mut crds = builtin(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "customresourcedefinition",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        &["status"],
        true,
    );
    crds.categories = vec!["api-extensions".into()];
    let mut namespaces = builtin(
        "",
        "v1",
        "namespaces",
        "namespace",
        "Namespace",
        false,
        &["ns"],
        &["finalize", "status"],
        false,
    );
    // Namespaces cannot be deleted as a collection (`discovery-api-v1.body`).
    namespaces.verbs.retain(|v| *v != "deletecollection");
    vec![
        builtin(
            "",
            "v1",
            "configmaps",
            "configmap",
            "ConfigMap",
            true,
            &["cm"],
            &[],
            false,
        ),
        builtin(
            "",
            "v1",
            "events",
            "event",
            "Event",
            true,
            &["ev"],
            &[],
            false,
        ),
        namespaces,
        builtin(
            "",
            "v1",
            "secrets",
            "secret",
            "Secret",
            true,
            &[],
            &[],
            false,
        ),
        builtin(
            "",
            "v1",
            "serviceaccounts",
            "serviceaccount",
            "ServiceAccount",
            true,
            &["sa"],
            &["token"],
            false,
        ),
        deployments,
        review(
            "authentication.k8s.io",
            "selfsubjectreviews",
            "SelfSubjectReview",
        ),
        review(
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
        ),
        review(
            "authorization.k8s.io",
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
        ),
        builtin(
            "coordination.k8s.io",
            "v1",
            "leases",
            "lease",
            "Lease",
            true,
            &[],
            &[],
            false,
        ),
        crds,
    ]
}

/// The served resources: built-ins first, then the versions of every established CRD.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    types: Vec<Arc<ResourceType>>,
}

impl Registry {
    pub fn new(crds: &[Value]) -> Self {
        let mut types: Vec<Arc<ResourceType>> = builtins().into_iter().map(Arc::new).collect();
        for crd in crds {
            types.extend(from_crd(crd).into_iter().map(Arc::new));
        }
        Registry { types }
    }

    pub fn all(&self) -> &[Arc<ResourceType>] {
        &self.types
    }

    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceType>> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// Groups in discovery order, each with its versions (preferred first).
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for t in &self.types {
            match out.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) => {
                    if !versions.contains(&t.version) {
                        versions.push(t.version.clone());
                    }
                }
                None => out.push((t.group.clone(), vec![t.version.clone()])),
            }
        }
        for (_, versions) in &mut out {
            versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        }
        out
    }

    /// Every served type of one group/version.
    pub fn in_group_version<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a Arc<ResourceType>> + 'a {
        self.types
            .iter()
            .filter(move |t| t.group == group && t.version == version)
    }
}

/// Kubernetes version ordering for discovery (`v1` > `v1beta2` > `v1beta1` > `v1alpha1`),
/// as in apimachinery's `version.CompareKubeAwareVersionStrings`.
pub fn version_priority(v: &str) -> (u8, u32, u32) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let Ok(major) = digits.parse::<u32>() else {
        return (0, 0, 0);
    };
    let tail = &rest[digits.len()..];
    let (rank, sub) = if tail.is_empty() {
        (3, 0)
    } else if let Some(n) = tail.strip_prefix("beta") {
        (2, n.parse().unwrap_or(0))
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, n.parse().unwrap_or(0))
    } else {
        return (0, 0, 0);
    };
    (rank, major, sub)
}

/// The served versions of a CRD as resource types. A CRD that does not parse serves
/// nothing (validation on create rejects such CRDs; this is the defensive path).
pub fn from_crd(crd: &Value) -> Vec<ResourceType> {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let names = &spec["names"];
    let (Some(plural), Some(kind)) = (names["plural"].as_str(), names["kind"].as_str()) else {
        return vec![];
    };
    if group.is_empty() {
        return vec![];
    }
    let singular = names["singular"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_ascii_lowercase());
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    let mut out = Vec::new();
    for v in spec["versions"].as_array().into_iter().flatten() {
        if v["served"].as_bool() != Some(true) {
            continue;
        }
        let Some(version) = v["name"].as_str() else {
            continue;
        };
        let status = v["subresources"].get("status").is_some();
        let columns = v["additionalPrinterColumns"]
            .as_array()
            .map(|cols| {
                cols.iter()
                    .filter_map(|c| {
                        Some(PrinterColumn {
                            name: c["name"].as_str()?.to_string(),
                            type_: c["type"].as_str().unwrap_or("string").to_string(),
                            format: c["format"].as_str().unwrap_or("").to_string(),
                            description: c["description"].as_str().map(str::to_string).unwrap_or_else(|| {
                                format!(
                                    "Custom resource definition column (in JSONPath format): {}",
                                    c["jsonPath"].as_str().unwrap_or("")
                                )
                            }),
                            priority: c["priority"].as_i64().unwrap_or(0),
                            json_path: c["jsonPath"].as_str()?.to_string(),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push(ResourceType {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            singular: singular.clone(),
            kind: kind.into(),
            namespaced,
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            verbs: CR_VERBS.to_vec(),
            subresources: if status { vec!["status"] } else { vec![] },
            status_subresource: status,
            generation: true,
            custom: true,
            virtual_create: false,
            printer: Printer::Columns(columns),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn crd_versions_become_types() {
        let crd = json!({"spec": {"group": "source.testbed.example.com", "scope": "Namespaced",
        "names": {"plural": "gitrepositories", "singular": "gitrepository", "kind": "GitRepository", "shortNames": ["gitrepo"]},
        "versions": [
            {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
             "additionalPrinterColumns": [{"name": "URL", "type": "string", "jsonPath": ".spec.url"}]},
            {"name": "v1beta2", "served": true, "storage": false},
            {"name": "v1alpha1", "served": false, "storage": false}
        ]}});
        let reg = Registry::new(&[crd]);
        let v1 = reg
            .find("source.testbed.example.com", "v1", "gitrepositories")
            .unwrap();
        assert!(v1.status_subresource && v1.custom && v1.generation && v1.namespaced);
        assert_eq!(v1.short_names, ["gitrepo"]);
        let Printer::Columns(cols) = &v1.printer else {
            panic!()
        };
        assert_eq!(
            cols[0].description,
            "Custom resource definition column (in JSONPath format): .spec.url"
        );
        let b = reg
            .find("source.testbed.example.com", "v1beta2", "gitrepositories")
            .unwrap();
        assert!(!b.status_subresource);
        assert!(
            reg.find("source.testbed.example.com", "v1alpha1", "gitrepositories")
                .is_none()
        );
        let groups = reg.groups();
        let (_, versions) = groups
            .iter()
            .find(|(g, _)| g == "source.testbed.example.com")
            .unwrap();
        assert_eq!(versions, &["v1", "v1beta2"]);
    }

    #[test]
    fn version_ordering() {
        let mut v = vec!["v1alpha1", "v2", "v1beta2", "v1", "v1beta1", "foo"];
        v.sort_by_key(|x| std::cmp::Reverse(version_priority(x)));
        assert_eq!(v, ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]);
    }
}
