//! A small GitRepository controller with Flux source-controller's patch pattern — the
//! pattern behind fluxcd/source-controller#2012:
//!
//! 1. the artifact is written with a plain merge patch on `status` (no version check);
//! 2. the conditions are written with an optimistic-lock merge patch (the cached object's
//!    `resourceVersion` in the payload), retried 5 times 100–200 ms apart, re-reading the
//!    object from the controller's own informer cache each time;
//! 3. `observedGeneration` is written only when the reconcile succeeded **and** the
//!    in-memory object had conditions — the guard that makes the bug stick.
//!    `Behaviour::Fixed` writes it whenever the work succeeded.
//!
//! The in-memory object has conditions when the cached one had them, or when the
//! controller marked it `Reconciling` in memory before fetching — which it does only when
//! no artifact is stored yet (Flux's progressive status: a new revision is progress). So a
//! fault-free run converges: the first reconcile marks, fetches, patches, and writes
//! `observedGeneration`. But a reconcile that stored the artifact and then lost the
//! conditions patch (five 409s against a stale cache, or a crash between the two patches)
//! leaves an object the next reconcile finds with an artifact and no conditions: nothing
//! marks it, the guard fails, and `observedGeneration` is never written.
//!
//! Status-only changes do not trigger work (a generation predicate, as Flux's), and a
//! successful reconcile requeues after the interval (10 min), so a stuck object stays
//! stuck for the length of any demo. `Behaviour::HotLoop` instead stamps a timestamp
//! annotation on every reconcile, which triggers the next one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use serde_json::json;

pub const GROUP: &str = "source.toolkit.fluxcd.io";
pub const RESOURCE: &str = "gitrepositories.source.toolkit.fluxcd.io";

/// The CustomResourceDefinition the controller reconciles (GitRepository-shaped).
pub const CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "gitrepositories.source.toolkit.fluxcd.io"},
  "spec": {
    "group": "source.toolkit.fluxcd.io",
    "scope": "Namespaced",
    "names": {"plural": "gitrepositories", "singular": "gitrepository", "kind": "GitRepository", "shortNames": ["gitrepo"]},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
      "additionalPrinterColumns": [
        {"name": "URL", "type": "string", "jsonPath": ".spec.url"},
        {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}
      ]
    }]
  }
}"#;

/// The annotation the hot-loop controller stamps.
pub const STAMP: &str = "demo.stalemate.dev/reconciled-at";

pub fn api_resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: "v1".into(),
        api_version: format!("{GROUP}/v1"),
        kind: "GitRepository".into(),
        plural: "gitrepositories".into(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Flux's guard: observedGeneration only if the in-memory object had conditions.
    Buggy,
    /// observedGeneration whenever the work succeeded.
    Fixed,
    /// A timestamp annotation on every reconcile.
    HotLoop,
}

/// Where the controller reports what it does (a line per step).
pub type Log = Arc<dyn Fn(String) + Send + Sync>;

const INTERVAL: Duration = Duration::from_secs(600);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Kube(#[from] kube::Error),
    #[error("the conditions patch got 409 Conflict on all 5 attempts")]
    Conflicts,
}

struct Ctx {
    client: kube::Client,
    store: Store<DynamicObject>,
    behaviour: Behaviour,
    log: Log,
    /// Generations reconciled successfully: the generation predicate.
    done: Mutex<HashMap<(String, String), i64>>,
    stamps: std::sync::atomic::AtomicU64,
    /// What its metrics show (`metrics.rs`).
    queue: Arc<super::metrics::Queue>,
}

fn conditions(revision: &str) -> serde_json::Value {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    json!([
        {"type": "Ready", "status": "True", "reason": "Succeeded", "message": format!("stored artifact for revision '{revision}'"), "lastTransitionTime": now},
        {"type": "ArtifactInStorage", "status": "True", "reason": "Succeeded", "message": format!("stored artifact for revision '{revision}'"), "lastTransitionTime": now}
    ])
}

/// The object one reconcile works on, and the API it is written through.
struct Target<'a> {
    ctx: &'a Ctx,
    api: Api<DynamicObject>,
    ar: ApiResource,
    ns: String,
    name: String,
}

async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let _work = ctx.queue.start();
    let ns = obj.metadata.namespace.clone().unwrap_or_default();
    let name = obj.metadata.name.clone().unwrap_or_default();
    let ar = api_resource();
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), &ns, &ar);
    let t = Target {
        ctx: &ctx,
        api,
        ar,
        ns,
        name,
    };
    let (ns, name) = (&t.ns, &t.name);
    let log = &ctx.log;
    if ctx.behaviour == Behaviour::HotLoop {
        return stamp(&t).await;
    }
    let generation = obj.metadata.generation.unwrap_or(0);
    let key = (ns.clone(), name.clone());
    if ctx.done.lock().unwrap_or_else(|p| p.into_inner()).get(&key) == Some(&generation) {
        return Ok(Action::requeue(INTERVAL));
    }
    let status = obj.data.get("status").cloned().unwrap_or(json!({}));
    let had_conditions = in_memory_conditions(&t, generation, &status);
    // The work: "fetch" the revision — from a URL it can fetch from. One it cannot is
    // rejected as Flux rejects it: Stalled, with no retry until the spec changes.
    let url = obj.data["spec"]["url"].as_str().unwrap_or("").to_string();
    if !["http://", "https://", "ssh://"]
        .iter()
        .any(|scheme| url.starts_with(scheme))
    {
        reject(&t.api, name, generation, &url).await?;
        log(format!(
            "{ns}/{name}: Stalled: URL {url:?} is not http, https or ssh; not retried until the spec changes"
        ));
        ctx.done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, generation);
        return Ok(Action::await_change());
    }
    let revision = format!("main@sha1:{:016x}", fxhash(&url));
    tokio::time::sleep(Duration::from_millis(20)).await;
    store_artifact(&t, &status, &revision).await?;
    let written = write_conditions(&t, &revision).await?;
    write_observed_generation(&t, generation, written, had_conditions).await?;
    if !written {
        log(format!(
            "{ns}/{name}: reconcile failed: conditions not written after 5 conflicts; requeue in 2s"
        ));
        return Err(Error::Conflicts);
    }
    ctx.done
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, generation);
    Ok(Action::requeue(INTERVAL))
}

/// `Behaviour::HotLoop`: stamp the annotation (a write that triggers the next reconcile).
async fn stamp(t: &Target<'_>) -> Result<Action, Error> {
    let (ns, name, log) = (&t.ns, &t.name, &t.ctx.log);
    let stamp = humantime::format_rfc3339_nanos(std::time::SystemTime::now()).to_string();
    t.api
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {STAMP: stamp}}})),
        )
        .await?;
    let n = t
        .ctx
        .stamps
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    if n <= 3 || n.is_power_of_two() {
        log(format!(
            "{ns}/{name}: patched annotation {STAMP} (write #{n})"
        ));
    }
    Ok(Action::await_change())
}

/// Whether the in-memory object has conditions (the guard's question), logged.
fn in_memory_conditions(t: &Target, generation: i64, status: &serde_json::Value) -> bool {
    let (ns, name, log) = (&t.ns, &t.name, &t.ctx.log);
    let cached_conditions = status["conditions"]
        .as_array()
        .is_some_and(|c| !c.is_empty());
    // Progressive status: a reconcile that has a new artifact to store marks the object
    // Reconciling in memory first; one that finds an artifact stored does not.
    let marked_reconciling = status.get("artifact").is_none();
    log(format!(
        "{ns}/{name}: reconcile generation {generation} (in-memory object has {})",
        match (cached_conditions, marked_reconciling) {
            (true, _) => "its conditions",
            (false, true) => "a Reconciling condition: no artifact stored yet",
            (false, false) => "no conditions: an artifact is stored, nothing to mark",
        }
    ));
    cached_conditions || marked_reconciling
}

/// Step 1, the artifact, with a plain merge patch.
async fn store_artifact(
    t: &Target<'_>,
    status: &serde_json::Value,
    revision: &str,
) -> Result<(), Error> {
    let (ns, name, log) = (&t.ns, &t.name, &t.ctx.log);
    let observed = status["observedGeneration"].as_i64().unwrap_or(0);
    t.api
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "observedGeneration": observed,
                "artifact": {"revision": revision, "path": format!("gitrepository/{ns}/{name}/{revision}.tar.gz")}
            }})),
        )
        .await?;
    log(format!(
        "{ns}/{name}: status patch (artifact {revision}) → 200"
    ));
    Ok(())
}

/// Step 2, the conditions, with the optimistic lock, re-reading the informer cache:
/// whether they were written within 5 attempts.
async fn write_conditions(t: &Target<'_>, revision: &str) -> Result<bool, Error> {
    let (ns, name, log) = (&t.ns, &t.name, &t.ctx.log);
    for attempt in 1..=5 {
        let cached = t
            .ctx
            .store
            .get(&ObjectRef::new_with(name, t.ar.clone()).within(ns));
        let rv = cached
            .as_ref()
            .and_then(|o| o.metadata.resource_version.clone())
            .unwrap_or_default();
        let patch = json!({"metadata": {"resourceVersion": rv}, "status": {"conditions": conditions(revision)}});
        match t
            .api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
        {
            Ok(_) => {
                log(format!(
                    "{ns}/{name}: conditions patch (optimistic lock, cached rv {rv}) → 200"
                ));
                return Ok(true);
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                log(format!(
                    "{ns}/{name}: conditions patch (optimistic lock, cached rv {rv}) → 409 Conflict (attempt {attempt}/5)"
                ));
                let jitter = 100 + (fxhash(&format!("{name}{attempt}")) % 100);
                tokio::time::sleep(Duration::from_millis(jitter)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(false)
}

/// Step 3, observedGeneration: always, or under Flux's guard (`Behaviour::Buggy`) only
/// when the conditions were written and the in-memory object had conditions.
async fn write_observed_generation(
    t: &Target<'_>,
    generation: i64,
    written: bool,
    had_conditions: bool,
) -> Result<(), Error> {
    let (ns, name, log) = (&t.ns, &t.name, &t.ctx.log);
    let set_observed = match t.ctx.behaviour {
        Behaviour::Buggy => written && had_conditions,
        _ => true,
    };
    if set_observed {
        t.api
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"observedGeneration": generation}})),
            )
            .await?;
        log(format!(
            "{ns}/{name}: status patch (observedGeneration {generation}) → 200"
        ));
    } else if written {
        log(format!(
            "{ns}/{name}: observedGeneration not written: the in-memory object had no conditions (the guard)"
        ));
    }
    Ok(())
}

/// A spec the controller cannot act on: `Stalled=True` and `Ready=False` for this
/// generation (kstatus: Failed — its right answer, not a failure).
async fn reject(
    api: &Api<DynamicObject>,
    name: &str,
    generation: i64,
    url: &str,
) -> Result<(), Error> {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let message = format!("URL {url:?} is not http, https or ssh");
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {
            "observedGeneration": generation,
            "conditions": [
                {"type": "Stalled", "status": "True", "reason": "URLInvalid", "message": message, "lastTransitionTime": now},
                {"type": "Ready", "status": "False", "reason": "URLInvalid", "message": message, "lastTransitionTime": now}
            ]
        }})),
    )
    .await?;
    Ok(())
}

/// A stable, dependency-free hash for fake revisions and jitter.
fn fxhash(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

fn error_policy(_obj: Arc<DynamicObject>, _e: &Error, ctx: Arc<Ctx>) -> Action {
    ctx.queue.retry();
    Action::requeue(Duration::from_secs(2))
}

/// Run the controller until the future is dropped.
pub async fn run(client: kube::Client, behaviour: Behaviour, log: Log) {
    let queue = Arc::new(super::metrics::Queue::new("gitrepository"));
    run_with_metrics(client, behaviour, log, queue).await
}

/// Run the controller until the future is dropped, its work counted on `queue`.
pub async fn run_with_metrics(
    client: kube::Client,
    behaviour: Behaviour,
    log: Log,
    queue: Arc<super::metrics::Queue>,
) {
    let ar = api_resource();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let controller = Controller::new_with(api, watcher::Config::default(), ar);
    let ctx = Arc::new(Ctx {
        client,
        store: controller.store(),
        behaviour,
        log: log.clone(),
        done: Mutex::new(HashMap::new()),
        stamps: std::sync::atomic::AtomicU64::new(0),
        queue,
    });
    controller
        .run(reconcile, error_policy, ctx)
        .for_each(|r| {
            if let Err(e) = r {
                tracing::debug!(error = %e, "reconcile");
            }
            async {}
        })
        .await;
}
