//! Discovery: `/version`, `/api`, `/apis`, group and group-version documents, and the
//! aggregated form (`apidiscovery.k8s.io` v2 / v2beta1) that kubectl ≥ 1.28 asks for
//! first. Shapes follow `fixtures/.../discovery-*.body`.

use serde_json::{Map, Value, json};

use super::negotiate::media_ranges;
use super::registry::Registry;
use super::resource_type::ResourceType;

pub(crate) fn version(minor: u32) -> Value {
    // The table's own patch release when reporting its minor (v1.37.2), else `.0`.
    let table = super::builtins::kubernetes_version();
    let git_version = match minor == super::builtins::kubernetes_minor() {
        true => table.to_string(),
        false => format!("v1.{minor}.0"),
    };
    json!({
        "major": "1",
        "minor": minor.to_string(),
        "gitVersion": git_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// The aggregated-discovery version the client asked for, if any (client order).
pub(crate) fn aggregated_version(accept: Option<&str>) -> Option<&'static str> {
    for r in media_ranges(accept?) {
        if r.media != "application/json"
            || r.param("g") != Some("apidiscovery.k8s.io")
            || r.param("as") != Some("APIGroupDiscoveryList")
        {
            continue;
        }
        match r.param("v") {
            Some("v2") => return Some("v2"),
            Some("v2beta1") => return Some("v2beta1"),
            _ => {}
        }
    }
    None
}

pub(crate) fn aggregated_content_type(v: &str) -> String {
    format!("application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList")
}

pub(crate) fn api_versions(server_address: &str) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]})
}

fn group_doc(group: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    json!({"name": group, "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(gv).unwrap_or(Value::Null)})
}

pub(crate) fn api_group_list(reg: &Registry) -> Value {
    let groups: Vec<Value> = reg
        .groups()
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, vs)| group_doc(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub(crate) fn api_group(reg: &Registry, group: &str) -> Option<Value> {
    let groups = reg.groups();
    let (_, vs) = groups.iter().find(|(g, _)| g == group && !g.is_empty())?;
    let mut doc = group_doc(group, vs);
    let m = doc.as_object_mut()?;
    let mut out = Map::new();
    out.insert("kind".into(), "APIGroup".into());
    out.insert("apiVersion".into(), "v1".into());
    out.extend(std::mem::take(m));
    Some(Value::Object(out))
}

fn resource_entry(t: &ResourceType) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), t.plural.clone().into());
    m.insert("singularName".into(), t.singular.clone().into());
    m.insert("namespaced".into(), t.namespaced.into());
    m.insert("kind".into(), t.kind.clone().into());
    m.insert("verbs".into(), json!(t.verbs));
    if !t.short_names.is_empty() {
        m.insert("shortNames".into(), json!(t.short_names));
    }
    if !t.categories.is_empty() {
        m.insert("categories".into(), json!(t.categories));
    }
    Value::Object(m)
}

pub(crate) fn api_resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for t in reg.in_group_version(group, version) {
        resources.push(resource_entry(t));
        for sub in &t.subresources {
            let (g, v, kind) = &sub.kind;
            let mut entry = Map::new();
            entry.insert("name".into(), format!("{}/{}", t.plural, sub.name).into());
            entry.insert("singularName".into(), "".into());
            entry.insert("namespaced".into(), t.namespaced.into());
            // Only a kind of another group/version is named (`deployments/scale`:
            // autoscaling/v1 Scale), in APIResource's field order.
            if !g.is_empty() && (g != &t.group || v != &t.version) {
                entry.insert("group".into(), g.clone().into());
                entry.insert("version".into(), v.clone().into());
            }
            entry.insert("kind".into(), kind.clone().into());
            entry.insert("verbs".into(), json!(sub.verbs));
            resources.push(Value::Object(entry));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

fn aggregated_resource(t: &ResourceType) -> Value {
    // Built-in kinds leave group and version empty ("same as the resource"); the
    // apiextensions-apiserver fills them for custom resources.
    let kind = if t.custom {
        json!({"group": t.group, "version": t.version, "kind": t.kind})
    } else {
        json!({"group": "", "version": "", "kind": t.kind})
    };
    let mut m = Map::new();
    m.insert("resource".into(), t.plural.clone().into());
    m.insert("responseKind".into(), kind.clone());
    m.insert(
        "scope".into(),
        if t.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        }
        .into(),
    );
    m.insert("singularResource".into(), t.singular.clone().into());
    m.insert("verbs".into(), json!(t.verbs));
    if !t.short_names.is_empty() {
        m.insert("shortNames".into(), json!(t.short_names));
    }
    if !t.categories.is_empty() {
        m.insert("categories".into(), json!(t.categories));
    }
    if !t.subresources.is_empty() {
        let subs: Vec<Value> = t
            .subresources
            .iter()
            .map(|s| {
                let (g, v, k) = &s.kind;
                json!({"subresource": s.name, "responseKind": {"group": g, "version": v, "kind": k},
                    "verbs": s.verbs})
            })
            .collect();
        m.insert("subresources".into(), Value::Array(subs));
    }
    Value::Object(m)
}

/// `APIGroupDiscoveryList` for the core group (`/api`) or all named groups (`/apis`).
pub(crate) fn aggregated(reg: &Registry, core: bool, api_version: &str) -> Value {
    let items: Vec<Value> = reg
        .groups()
        .iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, vs)| {
            let versions: Vec<Value> = vs
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = reg
                        .in_group_version(g, v)
                        .map(|t| aggregated_resource(t))
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": g}, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": format!("apidiscovery.k8s.io/{api_version}"),
        "metadata": {}, "items": items})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_request_forms() {
        assert_eq!(
            aggregated_version(Some(
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
            )),
            Some("v2beta1")
        );
        assert_eq!(
            aggregated_version(Some(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
            )),
            Some("v2")
        );
        assert_eq!(aggregated_version(Some("application/json")), None);
        assert_eq!(aggregated_version(None), None);
    }

    #[test]
    fn crd_group_version_matches_recorded_shape() {
        let crd = json!({"spec": {"group": "source.testbed.example.com", "scope": "Namespaced",
            "names": {"plural": "gitrepositories", "singular": "gitrepository", "kind": "GitRepository", "shortNames": ["gitrepo"]},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}}]}});
        let reg = Registry::new(&[crd]);
        let mut want: Value = serde_json::from_str(include_str!(
            "../../../fixtures/kube-apiserver-1.28/discovery-crd-group-version.body"
        ))
        .unwrap();
        // storageVersionHash is an opaque digest of the storage version; we do not compute it.
        want["resources"][0]
            .as_object_mut()
            .unwrap()
            .remove("storageVersionHash");
        assert_eq!(
            api_resource_list(&reg, "source.testbed.example.com", "v1").unwrap(),
            want
        );
        let agg = aggregated(&reg, false, "v2beta1");
        let recorded: Value = serde_json::from_str(include_str!(
            "../../../fixtures/kube-apiserver-1.28/discovery-apis-aggregated.body"
        ))
        .unwrap();
        let find = |v: &Value| {
            v["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["metadata"]["name"] == "source.testbed.example.com")
                .cloned()
                .unwrap()
        };
        // 1.28 wrote the group's zero creationTimestamp as null; since 1.35 it is left
        // out (omitzero), as the simulator does.
        let mut recorded = find(&recorded);
        recorded["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("creationTimestamp");
        assert_eq!(find(&agg), recorded);
    }
}
