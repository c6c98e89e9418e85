#!/bin/sh
# What a user does once the Job controller has settled: start a second Job like the
# first, and once it has started raise its parallelism to 3.
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
    metadata: {labels: {app: pi2}}
    spec:
      restartPolicy: Never
      containers: [{name: pi, image: registry.example/pi:1}]
JOB
k patch job pi2 --type=merge -p '{"spec":{"parallelism":3}}'
