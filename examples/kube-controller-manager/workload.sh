#!/bin/sh
# The workload explore starts once kube-controller-manager has settled: scale the
# Deployment to 4, wait until 4 pods are ready (kwok runs them), delete the newest.
set -eu
k() { kubectl --cache-dir "${TMPDIR:-/tmp}/stalemate-kcm-workload-$$" -n demo "$@"; }
k scale deployment web --replicas=4
k wait --for=jsonpath='{.status.readyReplicas}'=4 deployment/web --timeout=60s
newest=$(k get pods -l app=web --sort-by=.metadata.creationTimestamp -o name | tail -n 1)
k delete "$newest" --wait=false
