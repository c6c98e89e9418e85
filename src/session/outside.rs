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
    /// The upstream, with the run's own credentials: a user's writes.
    pub client: kube::Client,
}

impl crate::fault::Process for Outside {
    fn restart(&self, window: &str, down: Duration) {
        crate::fault::Process::restart(&*self.controller, window, down);
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
