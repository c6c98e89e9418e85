#!/bin/sh
# What a user does once the DaemonSet controller has settled: delete the node's daemon
# pod (it must come back, once), then roll the DaemonSet to a new image.
set -eu
cache="${TMPDIR:-/tmp}/stalemate-zoo-workload-$$"
trap 'rm -rf "$cache"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
k() { kubectl --cache-dir "$cache" -n demo "$@"; }
pod=$(k get pods -l app=agent -o name | head -n 1)
k delete "$pod" --wait=false
sleep 2
k set image daemonset/agent agent=registry.example/agent:2
