#!/bin/sh
# What a user does once the StatefulSet controller has settled: scale to 5, delete its
# first pod (it must come back under the same name), then roll it to a new image (the
# controller deletes each pod of the old revision, highest ordinal first, and creates
# it again at the new one).
set -eu
cache="${TMPDIR:-/tmp}/stalemate-zoo-workload-$$"
trap 'rm -rf "$cache"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
k() { kubectl --cache-dir "$cache" -n demo "$@"; }
k scale statefulset db --replicas=5
sleep 2
k delete pod db-0 --wait=false
sleep 2
k set image statefulset/db db=registry.example/db:2
