#!/bin/sh
# The workload explore starts once kube-controller-manager has settled: scale the
# Deployment to 4, wait until 4 pods are ready (kwok runs them), delete the newest.
set -eu
cache="${TMPDIR:-/tmp}/stalemate-kcm-workload-$$"
trap 'rm -rf "$cache"' EXIT
# dash runs the EXIT trap on a signal only if the signal's own trap exits: explore
# SIGTERMs a workload still running when its trial ends.
trap 'exit 143' TERM
trap 'exit 130' INT
k() { kubectl --cache-dir "$cache" -n demo "$@"; }
k scale deployment web --replicas=4
k wait --for=jsonpath='{.status.readyReplicas}'=4 deployment/web --timeout=60s
newest=$(k get pods -l app=web --sort-by=.metadata.creationTimestamp -o name | tail -n 1)
k delete "$newest" --wait=false
