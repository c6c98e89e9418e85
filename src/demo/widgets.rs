//! Two small Widget controllers with staleness bugs of other classes than F1's, for
//! `explore` to find (`examples/child-creator.rs`, `examples/orphan-cleaner.rs`):
//!
//! - **child creator** — every Widget gets one child ConfigMap. Buggy: it creates one
//!   (with `generateName`) whenever its *cache* shows none, so a cache that has not seen
//!   the child yet makes it create a second (the class of duplicate-creation bugs Sieve
//!   found in operators). Fixed: the child's name is derived from the Widget's, and
//!   AlreadyExists means done.
//! - **orphan cleaner** — ConfigMaps labelled `widget=NAME` belong to that Widget; those
//!   whose Widget is gone are deleted. Buggy: "gone" means "not in my cache", so a child
//!   that shows up before its Widget does in a stale cache is deleted (a deletion based on
//!   a stale read). Fixed: a live GET of the Widget before deleting.
//!
//! - **generation memo** — remembers the generation of each Widget it has reconciled, so
//!   a pass skips Widgets it has done; a Widget's DELETED event clears its entry. Buggy:
//!   the memo is keyed by name, so a Widget deleted and created again under the same
//!   name whose DELETED event the controller never sees (a relist, or events coalesced
//!   as a relisting client sees them) is the old one to it: generation 1, done — the new
//!   Widget never gets a status. Only a user action (delete and recreate) can show it.
//!   Fixed: keyed by UID.
//!
//! All are the same loop — two informers (Widgets, ConfigMaps), a change on either
//! schedules one pass over every Widget after a short debounce — and both write the
//! Widget's status (`observedGeneration`, a Ready condition) only when it changes, so a
//! run goes quiet.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

use super::controller::Log;

pub const GROUP: &str = "demo.stalemate.dev";
pub const RESOURCE: &str = "widgets.demo.stalemate.dev";
/// The label that names a ConfigMap's Widget.
pub const LABEL: &str = "widget";

/// The Widget CustomResourceDefinition.
pub const CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.demo.stalemate.dev"},
  "spec": {
    "group": "demo.stalemate.dev",
    "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
    }]
  }
}"#;

pub fn api_resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: "v1".into(),
        api_version: format!("{GROUP}/v1"),
        kind: "Widget".into(),
        plural: "widgets".into(),
    }
}

/// Which controller, buggy or fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ChildCreator { fixed: bool },
    OrphanCleaner { fixed: bool },
    GenerationMemo { fixed: bool },
}

/// The generation memo's entries: the generation reconciled, by name or by UID.
type Memo = Arc<std::sync::Mutex<BTreeMap<String, i64>>>;

/// How long after a change the pass runs: changes that arrive together are one pass,
/// and a fault-free run sees every object the change implies.
const DEBOUNCE: Duration = Duration::from_millis(200);

/// The first retry of a failed pass, and the longest.
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(8);

struct Ctx {
    client: kube::Client,
    widgets: Store<DynamicObject>,
    configmaps: Store<ConfigMap>,
    kind: Kind,
    log: Log,
    memo: Memo,
}

/// The `main` of `examples/child-creator.rs` and `examples/orphan-cleaner.rs`: `--fixed`
/// or nothing as the only argument, the kubeconfig from `KUBECONFIG`, a line per step on
/// stdout, until SIGINT/SIGTERM.
pub async fn example_main(program: &str, kind: fn(bool) -> Kind) -> std::process::ExitCode {
    let fixed = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--fixed") => true,
        Some(other) => {
            eprintln!("{program}: unknown argument {other:?} (use --fixed)");
            return std::process::ExitCode::from(2);
        }
    };
    let client = match kube::Client::try_default().await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{program}: no usable kubeconfig: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let log: Log = Arc::new(|line| println!("{line}"));
    tokio::select! {
        _ = run(client, kind(fixed), log) => {}
        _ = crate::process::shutdown_signal() => {}
    }
    std::process::ExitCode::SUCCESS
}

/// Run until the future is dropped.
pub async fn run(client: kube::Client, kind: Kind, log: Log) {
    let ar = api_resource();
    let widgets_api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let cm_api: Api<ConfigMap> = Api::all(client.clone());
    let wwriter = reflector::store::Writer::<DynamicObject>::new(ar.clone());
    let widgets = wwriter.as_reader();
    let (configmaps, cwriter) = reflector::store::<ConfigMap>();
    let changed = Arc::new(tokio::sync::Notify::new());
    let memo: Memo = Default::default();
    let forget = memo.clone();
    let w = reflector::reflector(wwriter, watcher(widgets_api, watcher::Config::default()))
        .default_backoff()
        .map(move |ev| {
            // A Widget gone is forgotten — by what the memo is keyed by.
            if let Ok(watcher::Event::Delete(o)) = &ev {
                let mut m = forget.lock().unwrap_or_else(|p| p.into_inner());
                m.remove(&memo_key(o, kind == Kind::GenerationMemo { fixed: true }));
            }
        });
    let c = reflector::reflector(
        cwriter,
        watcher(cm_api, watcher::Config::default().labels(LABEL)),
    )
    .default_backoff()
    .map(|_| ());
    let notify = changed.clone();
    tokio::spawn(futures_util::stream::select(w, c).for_each(move |()| {
        notify.notify_one();
        async {}
    }));
    let _ = widgets.wait_until_ready().await;
    let _ = configmaps.wait_until_ready().await;
    let ctx = Ctx {
        client,
        widgets,
        configmaps,
        kind,
        log,
        memo,
    };
    // A failed pass is retried with a back-off that doubles (1 s, 2 s, 4 s, 8 s at most),
    // as controller-runtime's and Flux's rate limiters do: while it waits, the
    // controller makes no request at all — quiet, with work still to do.
    let mut backoff = RETRY_FIRST;
    loop {
        changed.notified().await;
        tokio::time::sleep(DEBOUNCE).await;
        match pass(&ctx).await {
            Ok(()) => backoff = RETRY_FIRST,
            Err(e) => {
                (ctx.log)(format!("pass failed: {e}; again in {}s", backoff.as_secs()));
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(RETRY_MAX);
                changed.notify_one();
            }
        }
    }
}

/// One pass over what the caches hold.
async fn pass(ctx: &Ctx) -> Result<(), kube::Error> {
    if let Kind::OrphanCleaner { fixed } = ctx.kind {
        clean_orphans(ctx, fixed).await?;
    }
    for w in ctx.widgets.state() {
        let ns = w.metadata.namespace.clone().unwrap_or_default();
        let name = w.metadata.name.clone().unwrap_or_default();
        if w.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let child = match ctx.kind {
            Kind::ChildCreator { fixed } => Some(ensure_child(ctx, &w, &ns, &name, fixed).await?),
            Kind::OrphanCleaner { .. } => None,
            Kind::GenerationMemo { fixed } => {
                let key = memo_key(&w, fixed);
                let generation = w.metadata.generation.unwrap_or(0);
                let done = ctx
                    .memo
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&key)
                    .is_some_and(|g| *g >= generation);
                if done {
                    continue;
                }
                write_status(ctx, &w, &ns, &name, None).await?;
                ctx.memo
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key, generation);
                continue;
            }
        };
        write_status(ctx, &w, &ns, &name, child).await?;
    }
    Ok(())
}

/// The generation memo's key for a Widget: its namespace/name (the bug) or its UID.
fn memo_key(w: &DynamicObject, by_uid: bool) -> String {
    if by_uid {
        w.metadata.uid.clone().unwrap_or_default()
    } else {
        format!(
            "{}/{}",
            w.metadata.namespace.as_deref().unwrap_or(""),
            w.metadata.name.as_deref().unwrap_or("")
        )
    }
}

async fn ensure_child(
    ctx: &Ctx,
    w: &DynamicObject,
    ns: &str,
    name: &str,
    fixed: bool,
) -> Result<String, kube::Error> {
    let mine = |cm: &Arc<ConfigMap>| {
        cm.metadata.namespace.as_deref() == Some(ns)
            && cm
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(LABEL))
                .map(String::as_str)
                == Some(name)
    };
    if let Some(cm) = ctx.configmaps.state().iter().find(|cm| mine(cm)) {
        return Ok(cm.metadata.name.clone().unwrap_or_default());
    }
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), ns);
    let owner = json!([{
        "apiVersion": format!("{GROUP}/v1"), "kind": "Widget", "name": name,
        "uid": w.metadata.uid.clone().unwrap_or_default(), "controller": true
    }]);
    let mut cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"labels": {LABEL: name}, "ownerReferences": owner},
        "data": {"widget": name}
    }))
    .map_err(kube::Error::SerdeError)?;
    if fixed {
        // One name per Widget: a second create is AlreadyExists, which means done (a
        // create's 409 from a real apiserver is never anything else).
        let child = format!("{name}-child");
        cm.metadata.name = Some(child.clone());
        match api.create(&PostParams::default(), &cm).await {
            Ok(_) => (ctx.log)(format!("{ns}/{name}: created child {child}")),
            Err(kube::Error::Api(e)) if e.code == 409 && e.reason == "AlreadyExists" => {}
            Err(e) => return Err(e),
        }
        Ok(child)
    } else {
        // The bug: no child in the cache means no child.
        cm.metadata.generate_name = Some(format!("{name}-"));
        let made = api.create(&PostParams::default(), &cm).await?;
        let child = made.metadata.name.unwrap_or_default();
        (ctx.log)(format!("{ns}/{name}: created child {child}"));
        Ok(child)
    }
}

async fn clean_orphans(ctx: &Ctx, fixed: bool) -> Result<(), kube::Error> {
    let known: std::collections::BTreeSet<(String, String)> = ctx
        .widgets
        .state()
        .iter()
        .map(|w| {
            (
                w.metadata.namespace.clone().unwrap_or_default(),
                w.metadata.name.clone().unwrap_or_default(),
            )
        })
        .collect();
    for cm in ctx.configmaps.state() {
        let ns = cm.metadata.namespace.clone().unwrap_or_default();
        let Some(owner) = cm.metadata.labels.as_ref().and_then(|l| l.get(LABEL)) else {
            continue;
        };
        if known.contains(&(ns.clone(), owner.clone())) {
            continue;
        }
        if fixed {
            // The cache may be behind: ask the API before deleting anything.
            let widgets: Api<DynamicObject> =
                Api::namespaced_with(ctx.client.clone(), &ns, &api_resource());
            if widgets.get_opt(owner).await?.is_some() {
                continue;
            }
        }
        let name = cm.metadata.name.clone().unwrap_or_default();
        let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => (ctx.log)(format!("{ns}/{name}: deleted (its widget {owner} is gone)")),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `observedGeneration` and Ready, written only when they change.
async fn write_status(
    ctx: &Ctx,
    w: &DynamicObject,
    ns: &str,
    name: &str,
    child: Option<String>,
) -> Result<(), kube::Error> {
    let generation = w.metadata.generation.unwrap_or(0);
    let status = &w.data["status"];
    let ready = status["conditions"][0]["status"] == "True";
    let same_child = child
        .as_deref()
        .is_none_or(|c| status["child"].as_str() == Some(c));
    if status["observedGeneration"].as_i64() == Some(generation) && ready && same_child {
        return Ok(());
    }
    let mut s: BTreeMap<&str, serde_json::Value> = BTreeMap::new();
    s.insert("observedGeneration", json!(generation));
    s.insert(
        "conditions",
        json!([{"type": "Ready", "status": "True", "reason": "Reconciled", "message": "widget reconciled"}]),
    );
    if let Some(c) = child {
        s.insert("child", json!(c));
    }
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), ns, &api_resource());
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": s})),
    )
    .await?;
    (ctx.log)(format!(
        "{ns}/{name}: status written (generation {generation})"
    ));
    Ok(())
}
