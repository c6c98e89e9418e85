//! `stalemate sim` driven by kube-rs (client, watcher, reflector) over real TLS.

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use common::{Sim, install_gitrepo_crd};
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;
use serde_json::json;

fn gitrepo_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("source.testbed.example.com", "v1", "GitRepository"),
        "gitrepositories",
    )
}

async fn namespace(client: &kube::Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

fn cm(name: &str, v: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"v": v}})).unwrap()
}

fn api_error(r: Result<impl std::fmt::Debug, kube::Error>) -> kube::core::Status {
    match r {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn timeout<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

#[tokio::test]
async fn crud_generation_status_split_and_conflicts() {
    let sim = Sim::start();
    install_gitrepo_crd(&sim);
    let client = sim.client().await;
    namespace(&client, "fixtures").await;
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "fixtures", &gitrepo_resource());
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "source.testbed.example.com/v1", "kind": "GitRepository",
        "metadata": {"name": "podinfo"}, "spec": {"url": "https://example.invalid/podinfo.git"},
        "status": {"observedGeneration": 7}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert!(
        created.data.get("status").is_none(),
        "create cannot set status"
    );
    let rv0 = created.metadata.resource_version.clone().unwrap();

    // Status subresource: status changes, generation does not.
    let st = api
        .patch_status(
            "podinfo",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"observedGeneration": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(st.data["status"]["observedGeneration"], 1);
    assert_eq!(st.metadata.generation, Some(1));

    // A stale PUT gets 409 Conflict, with the real message.
    let mut stale = created.clone();
    stale.data["spec"]["url"] = json!("https://example.invalid/other.git");
    let s = api_error(api.replace("podinfo", &PostParams::default(), &stale).await);
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert!(
        s.message.contains("the object has been modified"),
        "{}",
        s.message
    );

    // A PUT of a custom resource without resourceVersion: 422.
    let mut no_rv = created.clone();
    no_rv.metadata.resource_version = None;
    let s = api_error(api.replace("podinfo", &PostParams::default(), &no_rv).await);
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));

    // The optimistic-lock merge patch (controller-runtime's MergeFromWithOptimisticLock):
    // stale → 409, fresh → applied. This is what Flux's conditions patch does.
    let locked = |rv: &str| {
        Patch::Merge(
            json!({"metadata": {"resourceVersion": rv}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        )
    };
    let s = api_error(
        api.patch_status("podinfo", &PatchParams::default(), &locked(&rv0))
            .await,
    );
    assert_eq!(s.code, 409);
    let fresh = st.metadata.resource_version.clone().unwrap();
    let ok = api
        .patch_status("podinfo", &PatchParams::default(), &locked(&fresh))
        .await
        .unwrap();
    assert_eq!(ok.data["status"]["conditions"][0]["type"], "Ready");

    // A spec change through a fresh PUT bumps generation.
    let mut cur = api.get("podinfo").await.unwrap();
    cur.data["spec"]["url"] = json!("https://example.invalid/other.git");
    let put = api
        .replace("podinfo", &PostParams::default(), &cur)
        .await
        .unwrap();
    assert_eq!(put.metadata.generation, Some(2));
    assert_eq!(
        put.data["status"]["conditions"][0]["status"], "True",
        "PUT keeps status"
    );

    // A no-op write moves nothing.
    let again = api
        .replace("podinfo", &PostParams::default(), &put)
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        put.metadata.resource_version
    );

    // Missing objects: 404 NotFound.
    let s = api_error(api.get("nope").await);
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
}

#[tokio::test]
async fn watcher_sees_every_change_in_order() {
    let sim = Sim::start();
    let client = sim.client().await;
    namespace(&client, "w").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "w");
    let mut stream = watcher(api.clone(), watcher::Config::default().labels("e2e")).boxed();
    // Wait for the initial list to finish before writing.
    timeout("InitDone", async {
        while let Some(ev) = stream.try_next().await.unwrap() {
            if matches!(ev, watcher::Event::InitDone) {
                break;
            }
        }
    })
    .await;
    let pp = PatchParams::default();
    let mut expected = Vec::new();
    for i in 0..4 {
        let name = format!("c{i}");
        let mut c = cm(&name, "0");
        c.metadata.labels = Some([("e2e".to_string(), "yes".to_string())].into());
        api.create(&PostParams::default(), &c).await.unwrap();
        expected.push(format!("apply {name} 0"));
    }
    for round in 1..4 {
        for i in 0..4 {
            let name = format!("c{i}");
            api.patch(
                &name,
                &pp,
                &Patch::Merge(json!({"data": {"v": round.to_string()}})),
            )
            .await
            .unwrap();
            expected.push(format!("apply {name} {round}"));
        }
    }
    api.delete("c2", &Default::default()).await.unwrap();
    expected.push("delete c2 3".to_string());
    let mut got = Vec::new();
    timeout("all events", async {
        while got.len() < expected.len() {
            let ev = stream.try_next().await.unwrap().expect("stream ended");
            let (kind, o) = match ev {
                watcher::Event::Apply(o) => ("apply", o),
                watcher::Event::Delete(o) => ("delete", o),
                other => panic!("unexpected {other:?}"),
            };
            let v = o
                .data
                .as_ref()
                .and_then(|d| d.get("v"))
                .cloned()
                .unwrap_or_default();
            got.push(format!("{kind} {} {v}", o.metadata.name.unwrap()));
        }
    })
    .await;
    assert_eq!(got, expected);
}

#[tokio::test]
async fn watcher_relists_after_history_is_compacted() {
    let sim = Sim::start();
    let client = sim.client().await;
    namespace(&client, "r").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "r");
    api.create(&PostParams::default(), &cm("before", "1"))
        .await
        .unwrap();
    let mut stream = watcher(api.clone(), watcher::Config::default()).boxed();
    let mut inits = 0;
    loop {
        match timeout("watch event", stream.try_next())
            .await
            .unwrap()
            .expect("stream ended")
        {
            watcher::Event::Init => inits += 1,
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(inits, 1);
    // History moves past the watcher's RV (a change it does not watch) and is compacted
    // away; then its connection drops, as when an apiserver restarts.
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm("elsewhere", "1"))
        .await
        .unwrap();
    sim.admin("/_sim/compact");
    sim.admin("/_sim/close-watches?mode=abrupt");
    // kube-rs re-watches from its last RV, gets 410 Expired (surfaced as a stream error),
    // and relists.
    let mut listed = Vec::new();
    let mut expired = 0;
    loop {
        match timeout("watch event", stream.next())
            .await
            .expect("stream ended")
        {
            Err(watcher::Error::WatchError(s)) if s.code == 410 && s.reason == "Expired" => {
                expired += 1
            }
            Err(e) => panic!("unexpected error {e:?}"),
            Ok(watcher::Event::Init) => inits += 1,
            Ok(watcher::Event::InitApply(o)) => listed.push(o.metadata.name.unwrap()),
            Ok(watcher::Event::InitDone) => break,
            Ok(other) => panic!("expected a relist, got {other:?}"),
        }
    }
    assert_eq!(expired, 1, "the resume was refused with 410");
    assert_eq!(inits, 2, "one relist");
    listed.sort();
    assert_eq!(listed, ["before", "kube-root-ca.crt"]);
}

#[tokio::test]
async fn streaming_list_ends_with_the_initial_events_bookmark() {
    let sim = Sim::start();
    let client = sim.client().await;
    namespace(&client, "wl").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "wl");
    for i in 1..=3 {
        api.create(&PostParams::default(), &cm(&format!("wl-{i}"), "v"))
            .await
            .unwrap();
    }
    let mut stream = watcher(api.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut initial = Vec::new();
    timeout("streaming list", async {
        loop {
            match stream.try_next().await.unwrap().expect("stream ended") {
                watcher::Event::InitApply(o) => initial.push(o.metadata.name.unwrap()),
                watcher::Event::InitDone => break,
                _ => {}
            }
        }
    })
    .await;
    assert_eq!(initial, ["kube-root-ca.crt", "wl-1", "wl-2", "wl-3"]);
    api.patch(
        "wl-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "changed"}})),
    )
    .await
    .unwrap();
    let ev = timeout("live event", stream.try_next())
        .await
        .unwrap()
        .unwrap();
    let watcher::Event::Apply(o) = ev else {
        panic!("{ev:?}")
    };
    assert_eq!(o.data.unwrap()["v"], "changed");
}

#[tokio::test]
async fn paging_selectors_and_consistent_continue() {
    let sim = Sim::start();
    let client = sim.client().await;
    namespace(&client, "p").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "p");
    for i in 0..7 {
        let mut c = cm(&format!("c{i}"), "old");
        c.metadata.labels = Some(
            [(
                "app".to_string(),
                if i % 2 == 0 { "a" } else { "b" }.to_string(),
            )]
            .into(),
        );
        api.create(&PostParams::default(), &c).await.unwrap();
    }
    // 8 objects (kube-root-ca.crt too), pages of 3.
    let page1 = api.list(&ListParams::default().limit(3)).await.unwrap();
    let names = |l: &kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        l.items
            .iter()
            .map(|c| c.metadata.name.clone().unwrap())
            .collect()
    };
    assert_eq!(names(&page1), ["c0", "c1", "c2"]);
    assert_eq!(page1.metadata.remaining_item_count, Some(5));
    // A change between pages is not seen: continued pages are served at the first RV.
    api.patch(
        "c4",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "new"}})),
    )
    .await
    .unwrap();
    let tok = page1.metadata.continue_.clone().unwrap();
    let page2 = api
        .list(&ListParams::default().limit(3).continue_token(&tok))
        .await
        .unwrap();
    assert_eq!(names(&page2), ["c3", "c4", "c5"]);
    assert_eq!(page2.items[1].data.as_ref().unwrap()["v"], "old");
    assert_eq!(
        page2.metadata.resource_version,
        page1.metadata.resource_version
    );
    let page3 = api
        .list(
            &ListParams::default()
                .limit(3)
                .continue_token(&page2.metadata.continue_.clone().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(names(&page3), ["c6", "kube-root-ca.crt"]);
    assert!(page3.metadata.continue_.as_deref().unwrap_or("").is_empty());

    // Label and field selectors.
    let l = api
        .list(&ListParams::default().labels("app in (a),app!=b"))
        .await
        .unwrap();
    assert_eq!(names(&l), ["c0", "c2", "c4", "c6"]);
    let l = api
        .list(&ListParams::default().labels("!app"))
        .await
        .unwrap();
    assert_eq!(names(&l), ["kube-root-ca.crt"]);
    let l = api
        .list(&ListParams::default().fields("metadata.name=c3"))
        .await
        .unwrap();
    assert_eq!(names(&l), ["c3"]);
    let s = api_error(api.list(&ListParams::default().fields("data.v=old")).await);
    assert_eq!(
        (s.code, s.message.as_str()),
        (400, "field label not supported: data.v")
    );
    let s = api_error(api.list(&ListParams::default().labels("app in a")).await);
    assert_eq!(s.code, 400);
}

/// Leader election as client-go and kube-rs do it: GET the Lease, PUT it back with its RV;
/// the loser of a race gets 409. Events are stored and listed like any other kind.
#[tokio::test]
async fn lease_updates_are_optimistic_and_events_are_stored() {
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::core::v1::Event;
    let sim = Sim::start();
    let client = sim.client().await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    let l: Lease = serde_json::from_value(json!({"metadata": {"name": "ctrl"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}})).unwrap();
    leases.create(&PostParams::default(), &l).await.unwrap();
    let mut mine = leases.get("ctrl").await.unwrap();
    let mut theirs = mine.clone();
    mine.spec.as_mut().unwrap().holder_identity = Some("b".into());
    leases
        .replace("ctrl", &PostParams::default(), &mine)
        .await
        .unwrap();
    theirs.spec.as_mut().unwrap().holder_identity = Some("c".into());
    let s = api_error(
        leases
            .replace("ctrl", &PostParams::default(), &theirs)
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        leases
            .get("ctrl")
            .await
            .unwrap()
            .spec
            .unwrap()
            .holder_identity
            .as_deref(),
        Some("b")
    );

    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let e: Event = serde_json::from_value(json!({"metadata": {"name": "e1"}, "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": "default"},
        "reason": "Tested", "message": "hello", "type": "Normal"}))
    .unwrap();
    events.create(&PostParams::default(), &e).await.unwrap();
    let l = events
        .list(&ListParams::default().fields("involvedObject.name=x,reason=Tested"))
        .await
        .unwrap();
    assert_eq!(l.items.len(), 1);
    assert_eq!(l.items[0].message.as_deref(), Some("hello"));
}
