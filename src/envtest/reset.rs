//! Putting a control plane back as it was when it was ready, so the next trial can have it
//! instead of a new one (explore, `--envtest` with no `--with`).
//!
//! Starting a control plane costs ~2.4 s of the same 2 cores the trials run on; putting
//! one back costs two listings of what it serves and the deletes. "As it was" is checked,
//! not hoped for:
//! - [`Baseline`] is every object the apiserver served once it was ready (the setup's
//!   definitions on): each one's uid and who had written it (its `managedFields`).
//! - [`put_back`] deletes every object that is not in it — finalizers cleared first, as
//!   no controller is left to clear them; namespaces finalized as kube-controller-manager's
//!   namespace controller would (there is none); definitions last, after their objects —
//!   and lists again until none is left.
//! - It refuses (an error: the caller stops that control plane and starts a fresh one) when
//!   a baseline object is gone, or was written since by anyone but the apiserver itself
//!   (manager `kube-apiserver`: its own leases and bookkeeping, which a fresh one writes
//!   too). A trial that changed what it found is not undone by guessing.
//!
//! Not for a control plane with `--with` components: kube-controller-manager, the
//! scheduler and kwok hold state of their own (informers, leases, tokens, a node) that no
//! delete puts back.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::discovery::{Scope, verbs};
use serde_json::json;

/// The manager name of the apiserver's own writes.
const APISERVER: &str = "kube-apiserver";

/// How long the deleted objects may take to go before the control plane is given up on.
const GONE_WITHIN: Duration = Duration::from_secs(30);

/// What a control plane held when it was ready.
#[derive(Debug, Clone)]
pub struct Baseline {
    /// By uid: where it is, and its writers other than the apiserver.
    objects: BTreeMap<String, (Place, Writers)>,
}

/// An object's `managedFields` entries but the apiserver's own.
type Writers = Vec<ManagedFieldsEntry>;

/// One object, found by listing.
#[derive(Debug, Clone)]
struct Found {
    place: Place,
    uid: String,
    finalizers: bool,
    writers: Writers,
}

/// Where an object is: its resource (`plural.group`), namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    resource: String,
    namespace: Option<String>,
    name: String,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.resource, self.name),
            None => write!(f, "{} {}", self.resource, self.name),
        }
    }
}

/// A resource the apiserver serves, listable and deletable.
struct Served {
    resource: String,
    ar: ApiResource,
    namespaced: bool,
}

impl Baseline {
    /// Everything `client`'s apiserver serves now.
    pub async fn take(client: &kube::Client) -> Result<Baseline> {
        let served = served(client).await?;
        let objects = list_all(client, &served)
            .await?
            .into_iter()
            .map(|f| (f.uid, (f.place, f.writers)))
            .collect();
        Ok(Baseline { objects })
    }
}

/// Put `client`'s apiserver back to `baseline`, or say why it cannot be.
pub async fn put_back(client: &kube::Client, baseline: &Baseline) -> Result<()> {
    let served = served(client).await?;
    let now = list_all(client, &served).await?;
    check_kept(baseline, &now)?;
    let mut extra: Vec<&Found> = now
        .iter()
        .filter(|f| !baseline.objects.contains_key(&f.uid))
        .collect();
    if extra.is_empty() {
        return Ok(());
    }
    let by_resource: BTreeMap<&str, &Served> =
        served.iter().map(|s| (s.resource.as_str(), s)).collect();
    // Objects first, then the namespaces they were in, then the definitions of the
    // custom ones (deleting a definition waits for its objects to go).
    let order = |f: &&Found| match f.place.resource.as_str() {
        "namespaces" => 1,
        "customresourcedefinitions.apiextensions.k8s.io" => 2,
        _ => 0,
    };
    extra.sort_by_key(order);
    for f in extra {
        let Some(s) = by_resource.get(f.place.resource.as_str()) else {
            continue;
        };
        remove(client, s, f)
            .await
            .with_context(|| format!("deleting {}", f.place))?;
    }
    wait_gone(client, &served, baseline).await
}

/// Every baseline object still there, and written by nobody but the apiserver since.
fn check_kept(baseline: &Baseline, now: &[Found]) -> Result<()> {
    let now: BTreeMap<&str, &Found> = now.iter().map(|f| (f.uid.as_str(), f)).collect();
    for (uid, (place, writers)) in &baseline.objects {
        match now.get(uid.as_str()) {
            None => bail!("{place}, there when the control plane was ready, was deleted"),
            Some(f) if &f.writers != writers => bail!(
                "{place}, there when the control plane was ready, was written since (by {})",
                managers(&f.writers)
            ),
            Some(_) => {}
        }
    }
    Ok(())
}

fn managers(writers: &Writers) -> String {
    let names: BTreeSet<&str> = writers
        .iter()
        .filter_map(|m| m.manager.as_deref())
        .collect();
    names.into_iter().collect::<Vec<_>>().join(", ")
}

/// Delete one object at once, with nothing left to hold it.
async fn remove(client: &kube::Client, s: &Served, f: &Found) -> Result<()> {
    let api: Api<DynamicObject> = match (&f.place.namespace, s.namespaced) {
        (Some(ns), true) => Api::namespaced_with(client.clone(), ns, &s.ar),
        _ => Api::all_with(client.clone(), &s.ar),
    };
    let name = f.place.name.as_str();
    if f.finalizers {
        let clear = Patch::Merge(json!({"metadata": {"finalizers": null}}));
        ok_if_gone(api.patch(name, &PatchParams::default(), &clear).await)?;
    }
    let params = DeleteParams {
        // A pod bound to a node nobody runs would otherwise wait for its kubelet.
        grace_period_seconds: Some(0),
        ..DeleteParams::background()
    };
    ok_if_gone(api.delete(name, &params).await.map(|_| ()))?;
    if f.place.resource == "namespaces" {
        finalize_namespace(client, name).await?;
    }
    Ok(())
}

/// What kube-controller-manager's namespace controller does once a namespace is empty: its
/// `kubernetes` finalizer removed, so the apiserver deletes it.
async fn finalize_namespace(client: &kube::Client, name: &str) -> Result<()> {
    use k8s_openapi::api::core::v1::Namespace;
    let api: Api<Namespace> = Api::all(client.clone());
    let Some(mut ns) = api.get_opt(name).await? else {
        return Ok(());
    };
    if let Some(spec) = ns.spec.as_mut() {
        spec.finalizers = Some(Vec::new());
    }
    ok_if_gone(
        api.replace_subresource("finalize", name, &Default::default(), &ns)
            .await
            .map(|_| ()),
    )
}

fn ok_if_gone<T>(r: kube::Result<T>) -> Result<()> {
    match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// List until nothing but the baseline is left (a resource whose definition has gone
/// since is answered 404, and skipped).
async fn wait_gone(client: &kube::Client, served: &[Served], baseline: &Baseline) -> Result<()> {
    let deadline = tokio::time::Instant::now() + GONE_WITHIN;
    loop {
        let now = list_all(client, served).await?;
        let left: Vec<&Found> = now
            .iter()
            .filter(|f| !baseline.objects.contains_key(&f.uid))
            .collect();
        if left.is_empty() {
            return check_kept(baseline, &now);
        }
        if tokio::time::Instant::now() >= deadline {
            let names: Vec<String> = left.iter().take(5).map(|f| f.place.to_string()).collect();
            bail!(
                "{} object(s) still there {}s after they were deleted: {}",
                left.len(),
                GONE_WITHIN.as_secs(),
                names.join(", ")
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What the apiserver serves that can be listed and deleted (each resource once, at its
/// preferred version where it serves it: `k8s::discovery`).
async fn served(client: &kube::Client) -> Result<Vec<Served>> {
    let discovery = kube::Discovery::new(client.clone())
        .run()
        .await
        .context("discovering the control plane's resources")?;
    let mut out = Vec::new();
    for group in discovery.groups() {
        for (ar, caps) in crate::k8s::discovery::resources(group) {
            if caps.supports_operation(verbs::LIST) && caps.supports_operation(verbs::DELETE) {
                out.push(Served {
                    resource: crate::setup::resource_name(&ar),
                    namespaced: caps.scope == Scope::Namespaced,
                    ar,
                });
            }
        }
    }
    Ok(out)
}

/// How many lists are asked at once.
const LISTS_AT_ONCE: usize = 8;

/// Every object of every served resource, each once (`events` is served in two groups).
async fn list_all(client: &kube::Client, served: &[Served]) -> Result<Vec<Found>> {
    use futures_util::stream::{self, StreamExt, TryStreamExt};
    // Owned futures (an API and a name each): borrowed ones are not `Send` for every
    // lifetime, which a spawned task needs.
    let asks: Vec<_> = served
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &s.ar);
            let resource = s.resource.clone();
            async move {
                match api.list(&ListParams::default()).await {
                    Ok(l) => Ok((i, l.items)),
                    // Its definition has gone.
                    Err(kube::Error::Api(e)) if e.code == 404 => Ok((i, Vec::new())),
                    Err(e) => Err(anyhow::Error::from(e).context(format!("listing {resource}"))),
                }
            }
        })
        .collect();
    let lists: Vec<(usize, Vec<DynamicObject>)> = stream::iter(asks)
        .buffered(LISTS_AT_ONCE)
        .try_collect()
        .await?;
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (i, items) in lists {
        let s = &served[i];
        for o in items {
            let m = &o.metadata;
            let Some(uid) = m.uid.clone() else { continue };
            if !seen.insert(uid.clone()) {
                continue;
            }
            let writers: Writers = m
                .managed_fields
                .iter()
                .flatten()
                .filter(|e| e.manager.as_deref() != Some(APISERVER))
                .cloned()
                .collect();
            out.push(Found {
                place: Place {
                    resource: s.resource.clone(),
                    namespace: m.namespace.clone(),
                    name: m.name.clone().unwrap_or_default(),
                },
                uid,
                finalizers: m.finalizers.as_ref().is_some_and(|f| !f.is_empty()),
                writers,
            });
        }
    }
    Ok(out)
}
