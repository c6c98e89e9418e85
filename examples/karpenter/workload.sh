#!/bin/sh
# The getting-started guide's follow-up, once Karpenter has settled: scale `inflate` up
# (Karpenter launches more capacity), wait until every replica runs, then scale it down
# (the nodes left empty or underutilized are consolidated: with consolidateAfter 10s and
# the disruption controller's 10 s polling and 15 s validation, about 30-40 s later).
set -eu
cache="${TMPDIR:-/tmp}/stalemate-karpenter-workload-$$"
trap 'rm -rf "$cache"' EXIT
# dash runs the EXIT trap on a signal only if the signal's own trap exits: explore
# SIGTERMs a workload still running when its trial ends.
trap 'exit 143' TERM
trap 'exit 130' INT
k() { kubectl --cache-dir "$cache" -n inflate "$@"; }
k scale deployment inflate --replicas="${UP:-10}"
k wait --for=jsonpath='{.status.readyReplicas}'="${UP:-10}" deployment/inflate --timeout=120s
k scale deployment inflate --replicas="${DOWN:-3}"
