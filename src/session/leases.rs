//! The leader-election Leases the controllers under test hold, and for how long each
//! lasts without renewal (`spec.leaseDurationSeconds`): how long the apiserver must be
//! unreachable for a controller to lose its leadership — and, under client-go's
//! `leaderelection`, exit — which `explore`'s partition plans are sized from. Every
//! controller chooses its own: controller-runtime's default is 15 s, Flux's 35 s,
//! kube-controller-manager's 15 s.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

use crate::trace::{Record, Stamped};

/// One Lease a controller under test wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    /// The controller (`controller`, or an other's name).
    pub controller: String,
    pub namespace: String,
    pub name: String,
    /// `spec.leaseDurationSeconds` while it was held, before the run's end.
    pub duration: Option<Duration>,
}

const LEASES: &str = "leases.coordination.k8s.io";

/// Reading them takes milliseconds; an upstream that stopped answering is not waited
/// for (this only sizes plans and allowances).
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Every Lease in the cluster that someone holds, with its duration — read while the
/// controllers still run: one stopped with `ReleaseOnCancel` (controller-runtime's
/// option, which Flux sets) releases its Lease on the way out, leaving a record with no
/// holder and a duration of 1 s. One list; what cannot be read is left out (a missing
/// figure makes explore fall back to its defaults).
pub async fn durations(client: &kube::Client) -> BTreeMap<(String, String), Duration> {
    let api: Api<Lease> = Api::all(client.clone());
    let list = match tokio::time::timeout(READ_TIMEOUT, api.list(&Default::default())).await {
        Ok(Ok(l)) => l,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "listing Leases");
            return BTreeMap::new();
        }
        Err(_) => return BTreeMap::new(),
    };
    list.items
        .into_iter()
        .filter_map(|l| {
            let spec = l.spec?;
            spec.holder_identity.filter(|h| !h.is_empty())?;
            let secs = u64::try_from(spec.lease_duration_seconds?).ok()?;
            Some((
                (l.metadata.namespace?, l.metadata.name?),
                Duration::from_secs(secs),
            ))
        })
        .collect()
}

/// The Leases `controllers` wrote (2xx) in `trace`, with their durations as
/// [`durations`] read them.
pub fn held(
    trace: &[Stamped],
    controllers: &[&str],
    durations: &BTreeMap<(String, String), Duration>,
) -> Vec<Held> {
    written(trace, controllers)
        .into_iter()
        .map(|(controller, namespace, name)| Held {
            duration: durations.get(&(namespace.clone(), name.clone())).copied(),
            controller,
            namespace,
            name,
        })
        .collect()
}

/// (controller, namespace, name) of every Lease a controller under test wrote.
fn written(trace: &[Stamped], controllers: &[&str]) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for s in trace {
        match &s.record {
            Record::Request {
                client,
                verb,
                resource,
                namespace: Some(namespace),
                name: Some(name),
                code,
                ..
            } if resource == LEASES
                && controllers.contains(&client.as_str())
                && matches!(*verb, "update" | "patch")
                && (200..300).contains(code) =>
            {
                out.insert((client.clone(), namespace.clone(), name.clone()));
            }
            Record::Created {
                client,
                resource,
                namespace,
                name,
                ..
            } if resource == LEASES && controllers.contains(&client.as_str()) => {
                out.insert((client.clone(), namespace.clone(), name.clone()));
            }
            _ => {}
        }
    }
    out
}
