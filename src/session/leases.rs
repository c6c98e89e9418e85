//! The leader-election Leases the controllers under test hold, and for how long each
//! lasts without renewal (`spec.leaseDurationSeconds`): how long the apiserver must be
//! unreachable for a controller to lose its leadership — and, under client-go's
//! `leaderelection`, exit — which `explore`'s partition plans are sized from. Every
//! controller chooses its own: controller-runtime's default is 15 s, Flux's 35 s,
//! kube-controller-manager's 15 s.

use std::collections::BTreeSet;
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
    /// `spec.leaseDurationSeconds` as the run left it.
    pub duration: Option<Duration>,
}

const LEASES: &str = "leases.coordination.k8s.io";

/// Reading them takes milliseconds; an upstream that stopped answering is not waited
/// for (this only sizes plans).
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The Leases `controllers` wrote (2xx) in `trace`, read from the cluster. What cannot
/// be read is left out: a missing figure makes explore fall back to its default.
pub async fn read(client: &kube::Client, trace: &[Stamped], controllers: &[&str]) -> Vec<Held> {
    let written = written(trace, controllers);
    let mut out = Vec::new();
    for (controller, namespace, name) in written {
        let api: Api<Lease> = Api::namespaced(client.clone(), &namespace);
        let duration = match tokio::time::timeout(READ_TIMEOUT, api.get_opt(&name)).await {
            Ok(Ok(Some(l))) => l
                .spec
                .and_then(|s| s.lease_duration_seconds)
                .and_then(|s| u64::try_from(s).ok())
                .map(Duration::from_secs),
            Ok(Ok(None)) => None,
            Ok(Err(e)) => {
                tracing::debug!(lease = %name, error = %e, "reading a controller's Lease");
                None
            }
            Err(_) => break,
        };
        out.push(Held {
            controller,
            namespace,
            name,
            duration,
        });
    }
    out
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
