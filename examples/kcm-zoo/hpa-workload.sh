#!/bin/sh
# What a user does once the HPA has settled: the queue drains (the HPA scales to 0), fills
# again (it scales 0 → 3), then the user scales the Deployment to 0 by hand to switch
# autoscaling off — a Deployment scaled to 0 by its user is one the HPA leaves alone
# (ScalingDisabled), once it has seen its own ScaledToZero=False.
set -eu
cache="${TMPDIR:-/tmp}/stalemate-zoo-workload-$$"
trap 'rm -rf "$cache"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
k() { kubectl --cache-dir "$cache" -n demo "$@"; }
replicas() { k get deployment app -o jsonpath='{.spec.replicas}'; }
wait_for() { n=0; until [ "$(replicas)" = "$1" ]; do n=$((n + 1)); [ $n -lt 120 ] || { echo "replicas never $1" >&2; exit 1; }; sleep 0.5; done; }
k patch queue.v1beta1.external.metrics.k8s.io queue --type merge -p '{"value":"0"}'
wait_for 0
k patch queue.v1beta1.external.metrics.k8s.io queue --type merge -p '{"value":"3"}'
wait_for 3
k scale deployment app --replicas=0
