"""The official Python client's watch (kubernetes.watch.Watch().stream) through the proxy.

Prints one JSON line per event as it arrives: type, name, resourceVersion, the
ConfigMap's data["n"], and the wall-clock time of arrival. Prints {"ready": true} once
the watch is open (after the initial list). Ends after --events events.
Usage: python watch_lag.py NAMESPACE EVENTS   (KUBECONFIG points at the proxy)
"""
import json
import sys
import time

from kubernetes import client, config, watch


def main() -> None:
    namespace, want = sys.argv[1], int(sys.argv[2])
    config.load_kube_config()
    v1 = client.CoreV1Api()
    listed = v1.list_namespaced_config_map(namespace)
    print(json.dumps({"ready": True, "resourceVersion": listed.metadata.resource_version}), flush=True)
    seen = 0
    w = watch.Watch()
    for ev in w.stream(
        v1.list_namespaced_config_map,
        namespace,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=60,
    ):
        obj = ev["object"]
        print(
            json.dumps(
                {
                    "type": ev["type"],
                    "name": obj.metadata.name,
                    "resourceVersion": obj.metadata.resource_version,
                    "n": (obj.data or {}).get("n"),
                    "at": time.time(),
                }
            ),
            flush=True,
        )
        seen += 1
        if seen >= want:
            w.stop()
    sys.exit(0 if seen >= want else 1)


if __name__ == "__main__":
    main()
