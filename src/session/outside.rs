//! What a run's windows act on outside the proxy: the controller process (`restart`)
//! and the user's side of the cluster (`touch`) — the engine holds one of these where
//! `serve` would hold nothing.

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

use super::snapshot::Resolver;
use crate::fault::touch::{ANNOTATION, Object};
use crate::process::Controller;

pub(super) struct Outside {
    pub controller: Arc<Controller>,
    /// The other controllers under test, by name (`--controller NAME=CMD`).
    pub others: Vec<(String, Arc<Controller>)>,
    /// The upstream, with the run's own credentials: a user's writes.
    pub client: kube::Client,
}

impl crate::fault::Process for Outside {
    /// The controller the window's client names; `*`: every one (a node going down);
    /// any other client (one a schedule defines by user agent, say): the controller
    /// after `--`, the only one there was before several could be run.
    fn restart(&self, window: &str, client: &str, down: Duration) {
        let named = self.others.iter().filter(|(n, _)| n == client);
        let chosen: Vec<&Arc<Controller>> = if client == "*" {
            std::iter::once(&self.controller)
                .chain(self.others.iter().map(|(_, c)| c))
                .collect()
        } else if let Some((_, c)) = named.into_iter().next() {
            vec![c]
        } else {
            vec![&self.controller]
        };
        for c in chosen {
            crate::fault::Process::restart(&**c, window, client, down);
        }
    }

    fn touch(&self, window: &str, objects: &[Object]) {
        let (client, objects, window) = (self.client.clone(), objects.to_vec(), window.to_string());
        tokio::spawn(async move {
            if let Err(e) = touch(&client, &objects).await {
                tracing::warn!(window, error = %format!("{e:#}"), "touch");
            }
        });
    }
}

/// Annotate each object, then take the annotation off: two writes its watchers see,
/// nothing left behind. An object that is gone is skipped (a user touches what is there).
async fn touch(client: &kube::Client, objects: &[Object]) -> anyhow::Result<()> {
    let resolver = Resolver::discover(client).await?;
    for o in objects {
        let Some((ar, caps)) = resolver.get(&o.resource) else {
            tracing::warn!(object = %o, "touch: the cluster does not serve this resource");
            continue;
        };
        let api: Api<DynamicObject> = match caps.scope {
            kube::discovery::Scope::Namespaced => {
                Api::namespaced_with(client.clone(), &o.namespace, ar)
            }
            kube::discovery::Scope::Cluster => Api::all_with(client.clone(), ar),
        };
        let stamp = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        for value in [json!(stamp), serde_json::Value::Null] {
            let patch = json!({"metadata": {"annotations": {ANNOTATION: value}}});
            match api
                .patch(&o.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => break,
                Err(e) => return Err(anyhow::Error::new(e).context(format!("touching {o}"))),
            }
        }
        tracing::info!(object = %o, "touched");
    }
    Ok(())
}
