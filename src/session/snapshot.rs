//! The end state of a run, from ground truth: every object of the resources a run's
//! clients touched, in the namespaces they touched — what `explore`'s differential oracle
//! compares between a faulted run and the fault-free ones, and what it deletes between
//! trials on a real cluster.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context, Result};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::discovery::{ApiCapabilities, Scope};
use serde_json::Value;

use crate::oracle::ObjectRef;

/// Resources never compared: what the API writes about itself, not what a controller does.
pub const IGNORED: &[&str] = &[
    "events",
    "events.events.k8s.io",
    "leases.coordination.k8s.io",
    "tokenreviews.authentication.k8s.io",
    "subjectaccessreviews.authorization.k8s.io",
    "selfsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectrulesreviews.authorization.k8s.io",
    "selfsubjectreviews.authentication.k8s.io",
];

/// What a run left: objects by (resource, namespace, name).
pub type Snapshot = BTreeMap<ObjectRef, Value>;

/// What to look at: resources (`plural.group`) and the namespaces of namespaced ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extent {
    pub resources: BTreeSet<String>,
    pub namespaces: BTreeSet<String>,
}

/// Where a resource name is served, looked up once per run.
pub struct Resolver {
    served: BTreeMap<String, (ApiResource, ApiCapabilities)>,
}

impl Resolver {
    /// Everything the cluster serves (one discovery).
    pub async fn discover(client: &kube::Client) -> Result<Resolver> {
        let discovery = kube::Discovery::new(client.clone())
            .run()
            .await
            .context("discovering the cluster's resources")?;
        let mut served = BTreeMap::new();
        for group in discovery.groups() {
            for (ar, caps) in crate::k8s::discovery::resources(group) {
                served.insert(crate::setup::resource_name(&ar), (ar, caps));
            }
        }
        Ok(Resolver { served })
    }

    pub fn get(&self, resource: &str) -> Option<&(ApiResource, ApiCapabilities)> {
        self.served.get(resource)
    }

    /// The APIs to list `resource` in `extent` (one per namespace, or one cluster-wide).
    pub fn apis(
        &self,
        client: &kube::Client,
        resource: &str,
        namespaces: &BTreeSet<String>,
    ) -> Vec<Api<DynamicObject>> {
        let Some((ar, caps)) = self.get(resource) else {
            return vec![];
        };
        match caps.scope {
            Scope::Cluster => vec![Api::all_with(client.clone(), ar)],
            Scope::Namespaced => namespaces
                .iter()
                .map(|ns| Api::namespaced_with(client.clone(), ns, ar))
                .collect(),
        }
    }
}

/// The base resource of a trace's resource (`gitrepositories.x/status` → `gitrepositories.x`).
pub fn base_resource(resource: &str) -> &str {
    resource.split('/').next().unwrap_or(resource)
}

/// The longest reading the end state may take. It takes milliseconds; an apiserver that
/// has lost its etcd answers each list with a 504 after its own 60 s, and a trial would
/// wait that long for every resource and namespace — and a search told to stop, for it.
const TAKE_TIMEOUT: Duration = Duration::from_secs(60);

/// Read every object of `extent` from the cluster, as JSON.
pub async fn take(client: &kube::Client, extent: &Extent) -> Result<Snapshot> {
    tokio::time::timeout(TAKE_TIMEOUT, read(client, extent))
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "reading the end state from the apiserver took over {}s: is it still answering (its etcd, for one)?",
                TAKE_TIMEOUT.as_secs()
            )
        })?
}

async fn read(client: &kube::Client, extent: &Extent) -> Result<Snapshot> {
    let resolver = Resolver::discover(client).await?;
    let mut out = Snapshot::new();
    for resource in &extent.resources {
        if IGNORED.contains(&resource.as_str()) {
            continue;
        }
        for api in resolver.apis(client, resource, &extent.namespaces) {
            let list = match api.list(&ListParams::default()).await {
                Ok(l) => l,
                // Not listable (a review resource, a forbidden one): nothing to compare.
                Err(kube::Error::Api(e)) if (403..=405).contains(&e.code) => continue,
                Err(e) => return Err(e).with_context(|| format!("listing {resource}")),
            };
            for o in list.items {
                let key = ObjectRef {
                    resource: resource.clone(),
                    namespace: o.metadata.namespace.clone().unwrap_or_default(),
                    name: o.metadata.name.clone().unwrap_or_default(),
                };
                out.insert(key, serde_json::to_value(&o).unwrap_or(Value::Null));
            }
        }
    }
    Ok(out)
}
