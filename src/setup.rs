//! `--setup FILE...`: the manifests a run starts from — the CRDs a controller needs, its
//! namespace, the custom resources it reconciles. YAML or JSON, several documents per
//! file, `kind: List` unwrapped. Applied in the order a person would: CRDs first (and
//! waited for until their resources are served), then namespaces, then everything else
//! as written. An object that exists already is merge-patched with the manifest, as
//! `kubectl apply` would leave it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, Scope};
use serde_json::Value;

use crate::spans::{self, Located};

/// One object of a setup file.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Where it came from, for errors: `setup.yaml, document 2`.
    pub origin: String,
    pub object: Value,
}

impl Manifest {
    pub fn kind(&self) -> &str {
        self.object["kind"].as_str().unwrap_or("")
    }

    pub fn api_version(&self) -> &str {
        self.object["apiVersion"].as_str().unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or("")
    }

    pub fn namespace(&self) -> Option<&str> {
        self.object["metadata"]["namespace"].as_str()
    }

    pub fn is_crd(&self) -> bool {
        self.kind() == "CustomResourceDefinition"
            && self.api_version().starts_with("apiextensions.k8s.io/")
    }

    pub fn is_namespace(&self) -> bool {
        self.kind() == "Namespace" && self.api_version() == "v1"
    }

    /// `kind namespace/name`, as messages name it.
    pub fn describe(&self) -> String {
        match self.namespace() {
            Some(ns) => format!("{} {ns}/{}", self.kind(), self.name()),
            None => format!("{} {}", self.kind(), self.name()),
        }
    }

    /// For a CRD: the resource it serves, as kubectl names it (`plural.group`).
    pub fn crd_resource(&self) -> Option<String> {
        if !self.is_crd() {
            return None;
        }
        let spec = &self.object["spec"];
        Some(format!(
            "{}.{}",
            spec["names"]["plural"].as_str()?,
            spec["group"].as_str()?
        ))
    }
}

/// Read the manifests of `paths`, in order; every error of every file in the message,
/// each at its line and column.
pub fn load(paths: &[PathBuf]) -> Result<Vec<Manifest>> {
    let mut out = Vec::new();
    let mut errs = Vec::new();
    for p in paths {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("--setup {}", p.display()))?;
        match parse_all(&text, &p.display().to_string()) {
            Ok(m) => out.extend(m),
            Err(e) => errs.extend(e),
        }
    }
    match errs.first() {
        None => Ok(out),
        Some(first) if errs.iter().all(|e| e.file == first.file) => {
            Err(spans::report(&format!("--setup {}", first.file), &errs))
        }
        Some(_) => Err(spans::report("--setup", &errs)),
    }
}

/// Parse one file's documents. `source` names it in errors.
pub fn parse(text: &str, source: &str) -> Result<Vec<Manifest>> {
    parse_all(text, source).map_err(|errs| spans::report(source, &errs))
}

/// One file's documents, or all their errors: a syntax error stops there (which
/// document it is in is named); otherwise each document is checked.
fn parse_all(text: &str, source: &str) -> Result<Vec<Manifest>, Vec<Located>> {
    let written = written_documents(text);
    let docs = spans::yaml_documents(text, source).map_err(|mut e| {
        if let Some(at) = e.at {
            e.path = format!("document {}", document_at(text, at.line));
        }
        e.message = format!("not YAML or JSON: {}", e.message);
        vec![e]
    })?;
    // The parser skips documents with nothing but comments; number them as written.
    let numbers: Vec<usize> = if written.len() == docs.len() {
        written
    } else {
        (1..=docs.len()).collect()
    };
    let mut out = Vec::new();
    let mut errs = Vec::new();
    for (doc, n) in docs.into_iter().zip(numbers) {
        let origin = format!("document {n}");
        if doc.value.is_null() {
            continue;
        }
        // Placed at the field at fault, named by its document (and item).
        let err = |path: &str, what: String, message: String| Located {
            file: source.to_string(),
            at: doc.spans.locate(path, &message),
            path: what,
            message,
        };
        let v = &doc.value;
        let is_list =
            v["kind"].as_str().is_some_and(|k| k.ends_with("List")) && v.get("items").is_some();
        if !is_list {
            match check(v, "") {
                Ok(()) => out.push(Manifest {
                    origin: format!("{source}, {origin}"),
                    object: doc.value.clone(),
                }),
                Err((path, m)) => errs.push(err(&path, origin, m)),
            }
            continue;
        }
        let Some(items) = v["items"].as_array() else {
            errs.push(err("items", origin, "`items` is not a list".into()));
            continue;
        };
        for (j, item) in items.iter().enumerate() {
            let at = spans::item("items", j);
            match check(item, &at) {
                Ok(()) => out.push(Manifest {
                    origin: format!("{source}, {origin}, item {}", j + 1),
                    object: item.clone(),
                }),
                Err((path, m)) => errs.push(err(&path, format!("{origin}, item {}", j + 1), m)),
            }
        }
    }
    if errs.is_empty() { Ok(out) } else { Err(errs) }
}

/// The number (from 1, as [`written_documents`] counts) of the document holding `line`.
fn document_at(text: &str, line: u32) -> usize {
    1 + text
        .lines()
        .take(line.saturating_sub(1) as usize)
        .filter(|l| {
            l.strip_prefix("---")
                .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']))
        })
        .count()
}

/// The numbers (from 1) of the documents in `text` that hold more than comments: a
/// `---` line at column 0 starts a new one (YAML allows it nowhere else).
fn written_documents(text: &str) -> Vec<usize> {
    let mut numbers = Vec::new();
    let (mut n, mut content) = (1, false);
    for line in text.lines() {
        let rest = line.strip_prefix("---");
        if let Some(rest) = rest.filter(|r| r.is_empty() || r.starts_with([' ', '\t'])) {
            if content {
                numbers.push(n);
            }
            n += 1;
            content = !rest.trim().is_empty() && !rest.trim_start().starts_with('#');
            continue;
        }
        let t = line.trim();
        if !t.is_empty() && !t.starts_with('#') && !t.starts_with('%') && t != "..." {
            content = true;
        }
    }
    if content {
        numbers.push(n);
    }
    numbers
}

/// An object fit to apply, or (the path of what is wrong, under `at`; the message).
fn check(object: &Value, at: &str) -> Result<(), (String, String)> {
    if !object.is_object() {
        return Err((
            at.to_string(),
            "not an object (a Kubernetes manifest is a mapping)".into(),
        ));
    }
    for (field, v) in [
        ("apiVersion", &object["apiVersion"]),
        ("kind", &object["kind"]),
        ("metadata.name", &object["metadata"]["name"]),
    ] {
        if v.as_str().is_none_or(str::is_empty) {
            return Err((
                spans::join(at, field),
                format!(
                    "`{field}` is missing (every setup object needs apiVersion, kind and metadata.name)"
                ),
            ));
        }
    }
    Ok(())
}

/// The served resource of an object's kind, looked up once per kind.
#[derive(Default)]
pub struct Kinds {
    known: BTreeMap<(String, String), (ApiResource, ApiCapabilities)>,
}

impl Kinds {
    pub async fn resolve(
        &mut self,
        client: &kube::Client,
        api_version: &str,
        kind: &str,
    ) -> Result<(ApiResource, ApiCapabilities)> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(k) = self.known.get(&key) {
            return Ok(k.clone());
        }
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let found = kube::discovery::pinned_kind(client, &gvk)
            .await
            .with_context(|| format!("the cluster does not serve {kind} ({api_version})"))?;
        self.known.insert(key, found.clone());
        Ok(found)
    }

    /// The API of the object `m` names (its namespace, or `default`, for namespaced kinds).
    pub async fn api_for(
        &mut self,
        client: &kube::Client,
        m: &Manifest,
    ) -> Result<(Api<DynamicObject>, ApiResource, Scope)> {
        let (ar, caps) = self.resolve(client, m.api_version(), m.kind()).await?;
        let api = match caps.scope {
            Scope::Namespaced => {
                Api::namespaced_with(client.clone(), m.namespace().unwrap_or("default"), &ar)
            }
            Scope::Cluster => Api::all_with(client.clone(), &ar),
        };
        Ok((api, ar, caps.scope))
    }
}

/// `plural.group` (core: `plural`), as kubectl and schedules name a resource.
pub fn resource_name(ar: &ApiResource) -> String {
    if ar.group.is_empty() {
        ar.plural.clone()
    } else {
        format!("{}.{}", ar.plural, ar.group)
    }
}

/// Resources that say where things are, not what they are: a setup's CRDs and
/// namespaces own nothing the controller makes.
pub const SCAFFOLDING: &[&str] = &[
    "customresourcedefinitions.apiextensions.k8s.io",
    "namespaces",
];

/// Where a manifest went: its resource (`plural.group`) and namespace (cluster-scoped:
/// none), so a run knows which resources and namespaces its objects live in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Applied {
    pub resource: String,
    pub namespace: Option<String>,
    pub name: String,
}

/// Apply the manifests: CRDs (waited for), namespaces, then the rest in order.
pub async fn apply(client: &kube::Client, manifests: &[Manifest]) -> Result<Vec<Applied>> {
    let mut kinds = Kinds::default();
    let mut applied = Vec::new();
    let crds: Vec<&Manifest> = manifests.iter().filter(|m| m.is_crd()).collect();
    for m in &crds {
        applied.push(apply_one(client, &mut kinds, m).await?);
    }
    for m in &crds {
        wait_served(client, m).await?;
    }
    for m in manifests.iter().filter(|m| m.is_namespace()) {
        applied.push(apply_one(client, &mut kinds, m).await?);
    }
    for m in manifests
        .iter()
        .filter(|m| !m.is_crd() && !m.is_namespace())
    {
        applied.push(apply_one(client, &mut kinds, m).await?);
    }
    Ok(applied)
}

async fn apply_one(client: &kube::Client, kinds: &mut Kinds, m: &Manifest) -> Result<Applied> {
    let what = || format!("{} ({})", m.origin, m.describe());
    let (api, ar, scope) = kinds.api_for(client, m).await.with_context(what)?;
    let obj: DynamicObject = serde_json::from_value(m.object.clone()).with_context(what)?;
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {
            api.patch(m.name(), &PatchParams::default(), &Patch::Merge(&m.object))
                .await
                .with_context(what)?;
        }
        Err(e) => return Err(e).with_context(what),
    }
    Ok(Applied {
        resource: resource_name(&ar),
        namespace: match scope {
            Scope::Namespaced => Some(m.namespace().unwrap_or("default").to_string()),
            Scope::Cluster => None,
        },
        name: m.name().to_string(),
    })
}

/// Start the storage of every CRD among `manifests` (applied and served), and wait until
/// it is ready. kube-apiserver creates a custom resource's storage — and its watch cache
/// — on the first request for it, and until the cache has its initial list, a watch or a
/// list from the cache is answered 429 "storage is (re)initializing" with a Retry-After
/// of 1 s (`apiextensions-apiserver/pkg/apiserver/customresource_handler.go`
/// `getOrCreateServingInfoFor`; the cacher's readiness, `storage/cacher/ready.go`): a
/// controller starting on a fresh control plane lost 1–2 s to it, each retry a second.
/// Done ahead (on a spare control plane), the controller finds them ready.
pub async fn warm(client: &kube::Client, manifests: &[Manifest]) -> Result<()> {
    for m in manifests.iter().filter(|m| m.is_crd()) {
        let (group, plural) = crd_resource(m);
        let Some(version) = m.object["spec"]["versions"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["served"] == true))
            .and_then(|v| v["name"].as_str())
        else {
            continue;
        };
        let path = format!("/apis/{group}/{version}/{plural}?resourceVersion=0&limit=1");
        for _ in 0..100 {
            let req = http::Request::get(&path).body(Vec::new())?;
            match client.request_text(req).await {
                Ok(_) => break,
                Err(kube::Error::Api(e)) if e.code == 429 => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(e) => return Err(e).with_context(|| format!("listing {plural}.{group}")),
            }
        }
    }
    Ok(())
}

/// A CRD's group and plural.
fn crd_resource(m: &Manifest) -> (&str, &str) {
    let spec = &m.object["spec"];
    (
        spec["group"].as_str().unwrap_or(""),
        spec["names"]["plural"].as_str().unwrap_or(""),
    )
}

/// Wait until the CRD's resource is served (its `Established` condition, as a client
/// sees it: discovery lists it).
async fn wait_served(client: &kube::Client, m: &Manifest) -> Result<()> {
    let (group, plural) = crd_resource(m);
    for _ in 0..600 {
        if let Ok(g) = kube::discovery::group(client, group).await
            && crate::k8s::discovery::resources(&g)
                .iter()
                .any(|(ar, _)| ar.plural == plural)
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bail!(
        "{}: the CRD {plural}.{group} was created but is not served after 30s",
        m.origin
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const GITREPO_CRD: &str = r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "gitrepositories.source.toolkit.fluxcd.io"},
      "spec": {"group": "source.toolkit.fluxcd.io", "scope": "Namespaced",
        "names": {"plural": "gitrepositories", "singular": "gitrepository", "kind": "GitRepository"},
        "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}"#;

    #[test]
    fn yaml_and_json_documents_and_lists() {
        let m = parse(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n---\n# nothing\n---\n{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"a\", \"namespace\": \"demo\"}}]}\n",
            "s.yaml",
        )
        .unwrap();
        assert_eq!(m.len(), 2);
        assert!(m[0].is_namespace());
        assert_eq!(m[1].describe(), "ConfigMap demo/a");
        assert_eq!(m[1].origin, "s.yaml, document 3, item 1");
    }

    #[test]
    fn bad_manifests_are_named_each_at_its_line_and_column() {
        let e = parse(
            "kind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: \"\"}\n- 7\n",
            "s.yaml",
        )
        .unwrap_err();
        let why = "is missing (every setup object needs apiVersion, kind and metadata.name)";
        assert_eq!(
            e.to_string(),
            format!(
                "s.yaml has 3 error(s):\n  s.yaml:1:1: document 1: `apiVersion` {why}\n  s.yaml:9:20: document 2, item 1: `metadata.name` {why}\n  s.yaml:10:3: document 2, item 2: not an object (a Kubernetes manifest is a mapping)"
            )
        );
        let e = parse("a: 1\n---\nb: [1, 2\nc: d\n", "s.yaml").unwrap_err();
        assert!(
            e.to_string()
                .contains("\n  s.yaml:4:2: document 2: not YAML or JSON: "),
            "{e}"
        );
    }

    #[test]
    fn crds_name_their_resource() {
        let m = parse(GITREPO_CRD, "crd.json").unwrap();
        assert_eq!(
            m[0].crd_resource().as_deref(),
            Some("gitrepositories.source.toolkit.fluxcd.io")
        );
    }

    /// Against the simulator: CRD first and waited for, then its object; applying again
    /// patches what exists.
    #[tokio::test]
    async fn applies_in_order_and_again() {
        let dir = tempfile::tempdir().unwrap();
        let local = crate::sim::Local::start(dir.path(), Default::default())
            .await
            .unwrap();
        let c = crate::k8s::kubeconfig::client(&local.kubeconfig, None)
            .await
            .unwrap();
        let mut docs = vec![
            r#"{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository", "metadata": {"name": "podinfo", "namespace": "demo"}, "spec": {"url": "https://a"}}"#.to_string(),
            r#"{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}"#.to_string(),
        ];
        docs.push(GITREPO_CRD.to_string());
        let manifests = parse(&docs.join("\n---\n"), "setup").unwrap();
        let applied = apply(&c, &manifests).await.unwrap();
        let order: Vec<(&str, Option<&str>)> = applied
            .iter()
            .map(|a| (a.resource.as_str(), a.namespace.as_deref()))
            .collect();
        assert_eq!(
            order,
            [
                ("customresourcedefinitions.apiextensions.k8s.io", None),
                ("namespaces", None),
                ("gitrepositories.source.toolkit.fluxcd.io", Some("demo")),
            ]
        );
        let mut kinds = Kinds::default();
        let (api, ar, _) = kinds.api_for(&c, &manifests[0]).await.unwrap();
        assert_eq!(
            resource_name(&ar),
            "gitrepositories.source.toolkit.fluxcd.io"
        );
        let o = api.get("podinfo").await.unwrap();
        assert_eq!(o.data["spec"]["url"], "https://a");
        let changed = parse(&docs[0].replace("https://a", "https://b"), "setup").unwrap();
        apply(&c, &changed).await.unwrap();
        assert_eq!(
            api.get("podinfo").await.unwrap().data["spec"]["url"],
            "https://b"
        );
        let unknown = parse(
            r#"{"apiVersion": "example.com/v1", "kind": "Nope", "metadata": {"name": "x"}}"#,
            "setup",
        )
        .unwrap();
        let e = apply(&c, &unknown).await.unwrap_err();
        assert!(
            format!("{e:#}").contains("setup, document 1 (Nope x)"),
            "{e:#}"
        );
        local.stop().await;
    }
}
