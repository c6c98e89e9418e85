//! Ground truth: the oracles' resources watched on the upstream directly, with stalemate's
//! own credentials, by kube-rs watchers — never through a window, so the oracles judge
//! what the cluster holds, not what a stale controller was shown.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};

use super::Oracles;

/// `plural.group` (core: `plural`) → (group, plural).
fn split(resource: &str) -> (&str, &str) {
    match resource.split_once('.') {
        Some((plural, group)) => (group, plural),
        None => ("", resource),
    }
}

/// Find the served resource, retrying: a CRD may be created after the run starts.
async fn resolve(client: &kube::Client, resource: &str) -> ApiResource {
    let (group, plural) = split(resource);
    let mut logged = false;
    loop {
        if let Ok(g) = kube::discovery::group(client, group).await
            && let Some((ar, _)) = crate::k8s::discovery::resources(&g)
                .into_iter()
                .find(|(ar, _)| ar.plural == plural)
        {
            return ar;
        }
        if !logged {
            tracing::info!(%resource, "oracle: resource not served (yet); retrying");
            logged = true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Watch every resource the oracles need until the returned tasks are aborted.
pub fn spawn(
    client: kube::Client,
    resources: BTreeSet<String>,
    oracles: Arc<Oracles>,
) -> Vec<tokio::task::JoinHandle<()>> {
    resources
        .into_iter()
        .map(|resource| {
            let (client, oracles) = (client.clone(), oracles.clone());
            tokio::spawn(async move {
                let ar = resolve(&client, &resource).await;
                let api: Api<DynamicObject> = Api::all_with(client, &ar);
                let mut stream = watcher(api, watcher::Config::default())
                    .default_backoff()
                    .boxed();
                // Objects listed since the last (re)list: what is missing was deleted
                // while the watch was down.
                let mut listing: Option<BTreeSet<(String, String)>> = None;
                while let Some(ev) = stream.next().await {
                    let now = SystemTime::now();
                    match ev {
                        Ok(watcher::Event::Apply(o)) => apply(&oracles, &resource, &o, now),
                        Ok(watcher::Event::InitApply(o)) => {
                            if let Some(l) = listing.as_mut() {
                                l.insert(key(&o));
                            }
                            apply(&oracles, &resource, &o, now);
                        }
                        Ok(watcher::Event::Delete(o)) => {
                            let (ns, name) = key(&o);
                            oracles.on_delete(&resource, &ns, &name, now);
                        }
                        Ok(watcher::Event::Init) => listing = Some(BTreeSet::new()),
                        Ok(watcher::Event::InitDone) => {
                            if let Some(present) = listing.take() {
                                oracles.on_resync(&resource, &present, now);
                            }
                        }
                        // A watch from a resourceVersion etcd has compacted away
                        // (410 Expired) is how watches end; the watcher relists.
                        Err(watcher::Error::WatchError(s)) if s.code == 410 => {
                            tracing::debug!(%resource, reason = %s.message, "oracle: ground-truth watch expired; relisting")
                        }
                        Err(e) => tracing::warn!(%resource, error = %e, "oracle: ground-truth watch failed; retrying"),
                    }
                }
            })
        })
        .collect()
}

fn key(o: &DynamicObject) -> (String, String) {
    (
        o.metadata.namespace.clone().unwrap_or_default(),
        o.metadata.name.clone().unwrap_or_default(),
    )
}

fn apply(oracles: &Oracles, resource: &str, o: &DynamicObject, now: SystemTime) {
    match serde_json::to_value(o) {
        Ok(v) => oracles.on_object(resource, &v, now),
        Err(e) => tracing::warn!(%resource, error = %e, "oracle: cannot read an object"),
    }
}
