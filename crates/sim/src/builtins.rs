//! The built-in resources of the pinned Kubernetes version, as the real kube-apiserver
//! lists them: `builtin-resources.json` is its aggregated discovery (`/api`, `/apis`),
//! generated from a live one and checked against it by `e2e/sim_builtins.rs`
//! (`STALEMATE_REGENERATE=1 cargo test --test sim_builtins` rewrites it when
//! `e2e/assets/versions.env` moves). Group, version, kind, scope, singular and short
//! names, categories, verbs and subresources come from there; what discovery does not
//! say comes from the registry strategies, here (`generation`).

use std::sync::LazyLock;

use serde::Deserialize;

use super::resource_type::{Printer, ResourceType, Subresource};

const TABLE: &str = include_str!("builtin-resources.json");

/// The resources whose registry strategy sets `metadata.generation` on create and bumps
/// it when the spec changes (`pkg/registry/*/*/strategy.go` of the pinned version:
/// `PrepareForCreate` sets `Generation = 1`), as `storage_key`s.
const GENERATION: &[&str] = &[
    "admissionregistration.k8s.io/mutatingadmissionpolicies",
    "admissionregistration.k8s.io/mutatingadmissionpolicybindings",
    "admissionregistration.k8s.io/mutatingwebhookconfigurations",
    "admissionregistration.k8s.io/validatingadmissionpolicies",
    "admissionregistration.k8s.io/validatingadmissionpolicybindings",
    "admissionregistration.k8s.io/validatingwebhookconfigurations",
    "apiextensions.k8s.io/customresourcedefinitions",
    "apps/daemonsets",
    "apps/deployments",
    "apps/replicasets",
    "apps/statefulsets",
    // Since 1.37 (HPAGeneration, beta, on by default).
    "autoscaling/horizontalpodautoscalers",
    "batch/cronjobs",
    "batch/jobs",
    "/pods",
    "/podtemplates",
    "/replicationcontrollers",
    "discovery.k8s.io/endpointslices",
    "flowcontrol.apiserver.k8s.io/flowschemas",
    "flowcontrol.apiserver.k8s.io/prioritylevelconfigurations",
    "networking.k8s.io/ingresses",
    "networking.k8s.io/ingressclasses",
    "networking.k8s.io/networkpolicies",
    "policy/poddisruptionbudgets",
    "resource.k8s.io/deviceclasses",
    "resource.k8s.io/devicetaintrules",
    "resource.k8s.io/resourceslices",
    "scheduling.k8s.io/priorityclasses",
];

/// The resources whose REST storage answers a DELETE with the deleted object rather than
/// a `Status` (`ReturnDeletedObject: true` in `pkg/registry/*/*/storage/storage.go`).
const RETURNS_DELETED: &[&str] = &[
    "/namespaces",
    "/persistentvolumes",
    "/persistentvolumeclaims",
    "/pods",
    "/podtemplates",
    "/resourcequotas",
    "/services",
    "/serviceaccounts",
    "resource.k8s.io/deviceclasses",
    "resource.k8s.io/resourceclaims",
    "resource.k8s.io/resourceclaimtemplates",
    "resource.k8s.io/resourcepoolstatusrequests",
    "resource.k8s.io/resourceslices",
    "storage.k8s.io/csidrivers",
    "storage.k8s.io/csinodes",
    "storage.k8s.io/storageclasses",
    "storage.k8s.io/volumeattachments",
    "storage.k8s.io/volumeattributesclasses",
];

#[derive(Deserialize)]
struct Table {
    kubernetes: String,
    groups: Vec<Group>,
}

#[derive(Deserialize)]
struct Group {
    group: String,
    versions: Vec<Version>,
}

#[derive(Deserialize)]
struct Version {
    version: String,
    resources: Vec<Resource>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Resource {
    resource: String,
    response_kind: Kind,
    scope: String,
    singular_resource: String,
    verbs: Vec<String>,
    #[serde(default)]
    short_names: Vec<String>,
    #[serde(default)]
    categories: Vec<String>,
    #[serde(default)]
    subresources: Vec<Sub>,
}

#[derive(Deserialize)]
struct Kind {
    group: String,
    version: String,
    kind: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sub {
    subresource: String,
    response_kind: Kind,
    verbs: Vec<String>,
}

static PARSED: LazyLock<(String, Vec<ResourceType>)> = LazyLock::new(|| {
    // The table is compiled in and checked by the suite: a parse failure is a build
    // defect, and `types_parse` catches it before it ships.
    let table: Table = serde_json::from_str(TABLE).unwrap_or_else(|e| {
        tracing::error!(error = %e, "builtin-resources.json does not parse");
        Table {
            kubernetes: String::new(),
            groups: vec![],
        }
    });
    let mut out = Vec::new();
    for g in &table.groups {
        for v in &g.versions {
            for r in &v.resources {
                out.push(resource_type(&g.group, &v.version, r));
            }
        }
    }
    (table.kubernetes, out)
});

fn resource_type(group: &str, version: &str, r: &Resource) -> ResourceType {
    let subresources: Vec<Subresource> = r
        .subresources
        .iter()
        .map(|s| Subresource {
            name: s.subresource.clone(),
            kind: (
                s.response_kind.group.clone(),
                s.response_kind.version.clone(),
                s.response_kind.kind.clone(),
            ),
            verbs: s.verbs.clone(),
        })
        .collect();
    let key = format!("{group}/{}", r.resource);
    // Create-only resources (reviews, bindings) store nothing.
    let virtual_create = r.verbs == ["create"];
    ResourceType {
        group: group.into(),
        version: version.into(),
        plural: r.resource.clone(),
        singular: r.singular_resource.clone(),
        kind: r.response_kind.kind.clone(),
        namespaced: r.scope == "Namespaced",
        short_names: r.short_names.clone(),
        categories: r.categories.clone(),
        verbs: r.verbs.clone(),
        status_subresource: subresources.iter().any(|s| s.name == "status"),
        subresources,
        generation: GENERATION.contains(&key.as_str()),
        custom: false,
        virtual_create,
        returns_deleted: RETURNS_DELETED.contains(&key.as_str()),
        printer: Printer::Builtin,
    }
}

/// The built-in types, in discovery order.
pub(crate) fn types() -> Vec<ResourceType> {
    PARSED.1.clone()
}

/// The Kubernetes version the table was generated from (`v1.37.2`).
pub(crate) fn kubernetes_version() -> &'static str {
    &PARSED.0
}

/// Its minor (37): the version the simulator reports unless told otherwise.
pub(crate) fn kubernetes_minor() -> u32 {
    let minor = kubernetes_version()
        .trim_start_matches("v1.")
        .split('.')
        .next();
    minor.and_then(|m| m.parse().ok()).unwrap_or(DEFAULT_MINOR)
}

/// `stalemate sim --kube-version`'s default, as clap needs it: a literal, which
/// `the_default_version_is_the_tables` keeps equal to the table's.
pub const DEFAULT_KUBE_VERSION: &str = "1.37";
const DEFAULT_MINOR: u32 = 37;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_version_is_the_tables() {
        assert_eq!(format!("1.{}", kubernetes_minor()), DEFAULT_KUBE_VERSION);
        assert_eq!(kubernetes_minor(), DEFAULT_MINOR);
    }

    #[test]
    fn types_parse() {
        assert!(kubernetes_version().starts_with("v1."));
        let all = types();
        assert!(all.len() > 50, "{}", all.len());
        let find = |g: &str, p: &str| all.iter().find(|t| t.group == g && t.plural == p);
        let d = find("apps", "deployments").expect("deployments");
        assert!(d.namespaced && d.generation && d.status_subresource);
        assert_eq!(d.short_names, ["deploy"]);
        let scale = d.subresource("scale").expect("scale");
        assert_eq!(scale.kind.2, "Scale");
        let cm = find("", "configmaps").expect("configmaps");
        assert!(!cm.generation && !cm.status_subresource);
        assert!(
            find("authentication.k8s.io", "selfsubjectreviews").is_some_and(|t| t.virtual_create)
        );
        // The generation list names only what the table serves (or what later
        // versions add behind feature gates).
        for key in GENERATION {
            let known = all.iter().any(|t| t.storage_key() == *key);
            assert!(
                known || key.starts_with("resource.k8s.io/") || key.contains("mutatingadmission"),
                "{key}"
            );
        }
    }
}
