//! Which resources the simulator serves: every built-in type of the pinned Kubernetes
//! version (`builtins.rs`: the real apiserver's discovery, generated) plus every version
//! of every CustomResourceDefinition that has been created, each a [`ResourceType`]
//! (`resource_type.rs`).

use std::sync::Arc;

use serde_json::Value;

use super::resource_type::{Printer, PrinterColumn, ResourceType, Subresource};

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

/// The built-in types, in the order discovery lists them (`builtins.rs`).
pub(crate) fn builtins() -> Vec<ResourceType> {
    super::builtins::types()
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
pub(crate) fn version_priority(v: &str) -> (u8, u32, u32) {
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
pub(crate) fn from_crd(crd: &Value) -> Vec<ResourceType> {
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
        let columns = printer_columns(v);
        out.push(ResourceType {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            singular: singular.clone(),
            kind: kind.into(),
            namespaced,
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            verbs: CR_VERBS.iter().map(|v| v.to_string()).collect(),
            subresources: if status {
                vec![Subresource {
                    name: "status".into(),
                    kind: (group.into(), version.into(), kind.into()),
                    verbs: ["get", "patch", "update"].map(String::from).to_vec(),
                }]
            } else {
                vec![]
            },
            status_subresource: status,
            generation: true,
            custom: true,
            virtual_create: false,
            returns_deleted: false,
            printer: Printer::Columns(columns),
        });
    }
    out
}

/// A string array's strings (anything else: none).
fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A CRD version's `additionalPrinterColumns` (those without a name or a jsonPath are
/// left out).
fn printer_columns(v: &Value) -> Vec<PrinterColumn> {
    v["additionalPrinterColumns"]
        .as_array()
        .map(|cols| {
            cols.iter()
                .filter_map(|c| {
                    Some(PrinterColumn {
                        name: c["name"].as_str()?.to_string(),
                        type_: c["type"].as_str().unwrap_or("string").to_string(),
                        format: c["format"].as_str().unwrap_or("").to_string(),
                        description: c["description"]
                            .as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| {
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
        .unwrap_or_default()
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
