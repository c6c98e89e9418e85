#!/bin/sh
# What a user does once the ReplicaSet controller has settled: scale to 5, then delete
# one of the pods (a node drained, say).
set -eu
cache="${TMPDIR:-/tmp}/stalemate-zoo-workload-$$"
trap 'rm -rf "$cache"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
k() { kubectl --cache-dir "$cache" -n demo "$@"; }
k scale replicaset web --replicas=5
sleep 2
pod=$(k get pods -l app=web -o name | head -n 1)
k delete "$pod" --wait=false
