"""A Widget controller written with the official Python client (`kubernetes` on PyPI),
the way small operators are: two watches keep caches, a worker reconciles.

Every Widget in namespace `demo` (examples/widgets/setup.yaml) gets one child ConfigMap,
labelled `widget=NAME`, and its status names the child.

The bug (default): a Widget whose child is not in the ConfigMap cache gets a new child,
named by the apiserver (generateName). When that cache is behind — the child's ADDED event
not yet delivered when the status patch brings the Widget round again — it makes a second.
With --fixed the child's name is derived from the Widget's, and a create's 409 means it is
already there (a real apiserver's 409 on a create is AlreadyExists and nothing else).

Usage: python child_controller.py [--fixed]    (KUBECONFIG points at stalemate)
"""
import queue
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
    """A work queue that holds each key once, like client-go's."""

    def __init__(self):
        self.q = queue.Queue()
        self.queued = set()
        self.lock = threading.Lock()

    def add(self, key):
        with self.lock:
            if key in self.queued:
                return
            self.queued.add(key)
        self.q.put(key)

    def get(self):
        key = self.q.get()
        with self.lock:
            self.queued.discard(key)
        return key


def informer(name, list_fn, on_event):
    """List, then watch from the list's resourceVersion; on any error (a 410 Gone, a
    broken stream) list again after a second, as a reflector does."""
    api = client.ApiClient()
    while True:
        try:
            listed = list_fn()
            if not isinstance(listed, dict):
                listed = api.sanitize_for_serialization(listed)
            on_event("SYNC", listed.get("items", []))
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

    threading.Thread(
        target=informer,
        args=(
            "widgets",
            lambda **kw: custom.list_namespaced_custom_object(
                GROUP, VERSION, NAMESPACE, PLURAL, **kw
            ),
            on_widget,
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
        ),
        daemon=True,
    ).start()

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
