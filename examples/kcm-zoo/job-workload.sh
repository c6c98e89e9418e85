#!/bin/sh
# What a user does once the Job controller has settled: start a second Job like the
# first and delete one of its pods as soon as it runs (a pod lost to eviction, say; it
# runs 3 s before it completes, so it is deleted running).
set -eu
cache="${TMPDIR:-/tmp}/stalemate-zoo-workload-$$"
trap 'rm -rf "$cache"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
k() { kubectl --cache-dir "$cache" -n demo "$@"; }
k create -f - <<'JOB'
apiVersion: batch/v1
kind: Job
metadata: {name: pi2}
spec:
  completions: 6
  parallelism: 2
  backoffLimit: 6
  template:
    metadata:
      labels: {app: pi2}
      annotations: {pod-complete.stage.kwok.x-k8s.io/delay: 3s}
    spec:
      restartPolicy: Never
      containers: [{name: pi, image: registry.example/pi:1}]
JOB
for _ in $(seq 100); do
    pod=$(k get pods -l app=pi2 --field-selector=status.phase=Running -o name | head -n 1)
    [ -n "$pod" ] && break
    sleep 0.1
done
[ -n "$pod" ] && k delete "$pod" --wait=false
