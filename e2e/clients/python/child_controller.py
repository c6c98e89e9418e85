"""A Widget controller written with the official Python client (`kubernetes` on PyPI),
the way small operators are: two watches keep caches, a worker reconciles.

Every Widget in namespace `demo` (examples/widgets/setup.yaml) gets one child ConfigMap,
labelled `widget=NAME`, and its status names the child.

The bug (default): a Widget whose child is not in the ConfigMap cache gets a new child,
named by the apiserver (generateName). When that cache is behind — the child's ADDED event
not yet delivered when the status patch brings the Widget round again — it makes a second.
With --fixed the child's name is derived from the Widget's, and a create's 409 means it is
already there (a real apiserver's 409 on a create is AlreadyExists and nothing else).

Like client-go controllers, the worker starts once both caches have synced; and a key is
reconciled a moment after it was first queued, so events that arrive together are one
reconcile (kopf batches an object's events the same way, for 0.1 s after the last). Without that moment the bug is a race
against the scheduler even with no fault: the child's ADDED reaches its cache only
~30-40 ms before the status patch brings the Widget round, and a busy machine starving
one Python thread that long makes a second child in a fault-free run — which explore
rightly reports as a controller whose fault-free runs disagree. A held watch, not a
descheduled thread, is what should find it.

Usage: python child_controller.py [--fixed]    (KUBECONFIG points at stalemate)
"""
import heapq
import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

GROUP, VERSION, PLURAL = "demo.stalemate.dev", "v1", "widgets"
NAMESPACE = "demo"
LABEL = "widget"

FIXED = "--fixed" in sys.argv[1:]


class Caches:
    """What the watches have delivered: Widgets by name, children by name -> Widget."""

    def __init__(self):
        self.lock = threading.Lock()
        self.widgets = {}
        self.children = {}

    def widget(self, name):
        with self.lock:
            return self.widgets.get(name)

    def children_of(self, name):
        with self.lock:
            return sorted(c for c, owner in self.children.items() if owner == name)


class Queue:
    """A work queue that holds each key once, like client-go's, and hands a key out
    BATCH seconds after it was first queued: what else is queued meanwhile joins it."""

    BATCH = 0.2

    def __init__(self):
        self.ready = threading.Condition()
        self.due = []  # (monotonic time due, key), a heap
        self.queued = set()

    def add(self, key):
        with self.ready:
            if key in self.queued:
                return
            self.queued.add(key)
            heapq.heappush(self.due, (time.monotonic() + self.BATCH, key))
            self.ready.notify()

    def get(self):
        with self.ready:
            while True:
                wait = self.due[0][0] - time.monotonic() if self.due else None
                if wait is not None and wait <= 0:
                    _, key = heapq.heappop(self.due)
                    self.queued.discard(key)
                    return key
                self.ready.wait(wait)


def informer(name, list_fn, on_event, synced):
    """List, then watch from the list's resourceVersion; on any error (a 410 Gone, a
    broken stream) list again after a second, as a reflector does. `synced` is set once
    the first list is in the cache."""
    api = client.ApiClient()
    while True:
        try:
            listed = list_fn()
            if not isinstance(listed, dict):
                listed = api.sanitize_for_serialization(listed)
            on_event("SYNC", listed.get("items", []))
            synced.set()
            rv = listed["metadata"]["resourceVersion"]
            for ev in watch.Watch().stream(list_fn, resource_version=rv, timeout_seconds=300):
                obj = ev["object"]
                if not isinstance(obj, dict):
                    obj = api.sanitize_for_serialization(obj)
                on_event(ev["type"], obj)
        except ApiException as e:
            print(f"{name} watch ended: {e.status} {e.reason}; relisting", flush=True)
            time.sleep(1)
        except Exception as e:  # noqa: BLE001 - a reflector relists on anything
            print(f"{name} watch broke: {e!r}; relisting", flush=True)
            time.sleep(1)


def main():
    config.load_kube_config()
    core = client.CoreV1Api()
    custom = client.CustomObjectsApi()
    caches, work = Caches(), Queue()

    def on_widget(kind, obj):
        with caches.lock:
            if kind == "SYNC":
                caches.widgets = {o["metadata"]["name"]: o for o in obj}
            elif kind == "DELETED":
                caches.widgets.pop(obj["metadata"]["name"], None)
            elif kind in ("ADDED", "MODIFIED"):
                caches.widgets[obj["metadata"]["name"]] = obj
        for o in obj if kind == "SYNC" else [obj]:
            if "metadata" in o:
                work.add(o["metadata"]["name"])

    def on_configmap(kind, obj):
        def owner(o):
            return (o["metadata"].get("labels") or {}).get(LABEL)

        with caches.lock:
            if kind == "SYNC":
                caches.children = {o["metadata"]["name"]: owner(o) for o in obj if owner(o)}
            elif kind == "DELETED":
                caches.children.pop(obj["metadata"]["name"], None)
            elif kind in ("ADDED", "MODIFIED") and owner(obj):
                caches.children[obj["metadata"]["name"]] = owner(obj)
        for o in obj if kind == "SYNC" else [obj]:
            if "metadata" in o and owner(o):
                work.add(owner(o))

    widgets_synced, configmaps_synced = threading.Event(), threading.Event()
    threading.Thread(
        target=informer,
        args=(
            "widgets",
            lambda **kw: custom.list_namespaced_custom_object(
                GROUP, VERSION, NAMESPACE, PLURAL, **kw
            ),
            on_widget,
            widgets_synced,
        ),
        daemon=True,
    ).start()
    threading.Thread(
        target=informer,
        args=(
            "configmaps",
            lambda **kw: core.list_namespaced_config_map(
                NAMESPACE, label_selector=LABEL, **kw
            ),
            on_configmap,
            configmaps_synced,
        ),
        daemon=True,
    ).start()
    # WaitForCacheSync: a worker that runs before the ConfigMap cache has listed once
    # would take "not listed yet" for "no child".
    widgets_synced.wait()
    configmaps_synced.wait()

    while True:
        name = work.get()
        try:
            reconcile(core, custom, caches, name)
        except ApiException as e:
            print(f"reconcile {name}: {e.status} {e.reason}; again in a second", flush=True)
            threading.Timer(1.0, work.add, args=(name,)).start()


def reconcile(core, custom, caches, name):
    w = caches.widget(name)
    if w is None:
        return
    owner = [{
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "name": name,
        "uid": w["metadata"]["uid"], "controller": True,
    }]
    body = {
        "metadata": {"labels": {LABEL: name}, "ownerReferences": owner},
        "data": {"widget": name},
    }
    children = caches.children_of(name)
    if FIXED:
        child = f"{name}-child"
        if child not in children:
            body["metadata"]["name"] = child
            try:
                core.create_namespaced_config_map(NAMESPACE, body)
                print(f"{name}: created child {child}", flush=True)
            except ApiException as e:
                if e.status != 409:  # AlreadyExists: done
                    raise
    elif children:
        child = children[0]
    else:
        # The bug: not in the cache means not there.
        body["metadata"]["generateName"] = f"{name}-"
        made = core.create_namespaced_config_map(NAMESPACE, body)
        child = made.metadata.name
        print(f"{name}: created child {child}", flush=True)
    status = {"child": child, "observedGeneration": w["metadata"].get("generation")}
    if w.get("status") != status:
        custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, NAMESPACE, PLURAL, name, {"status": status}
        )


if __name__ == "__main__":
    main()
