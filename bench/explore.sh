#!/usr/bin/env bash
# `stalemate explore` on the demo's GitRepository controller (buggy: F1) on each kind of
# upstream, one after the other in one run on this machine: the simulator and a real
# control plane per trial (--envtest) with --jobs 1 and --jobs 2, and a cluster (a real
# kube-apiserver from `stalemate envtest`, trials one at a time, put back between them).
# Seconds to the first finding, trials per minute, seconds per trial. A benchmark, not a
# test: the figures go in README "Find bugs you don't know about" and bench/README.md.
#
#   bash bench/explore.sh [--rounds N] [--budget N] [--upstreams "sim envtest cluster"]
#
# Release builds; the whole plan list unless --budget (shrinking adds a few trials).
# envtest and cluster need KUBEBUILDER_ASSETS (built by e2e/assets/build.sh if unset).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=1 budget="" upstreams="sim envtest cluster"
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --budget) budget="--budget $2"; shift 2 ;;
        --upstreams) upstreams=$2; shift 2 ;;
        *) echo "explore.sh: unknown flag $1" >&2; exit 2 ;;
    esac
done
command -v python3 >/dev/null 2>&1 || { echo "explore.sh: python3 is needed to read summary.json" >&2; exit 2; }
cargo build --release --bin stalemate --example gitrepo-controller >&2
case " $upstreams " in
    *" envtest "* | *" cluster "*)
        if [ -z "${KUBEBUILDER_ASSETS:-}" ]; then
            KUBEBUILDER_ASSETS=$(bash e2e/assets/build.sh | tail -n1)
            export KUBEBUILDER_ASSETS
        fi ;;
esac
out=$(mktemp -d)
cluster_pid=""
cleanup() {
    if [ -n "$cluster_pid" ]; then kill "$cluster_pid" 2>/dev/null || true; wait "$cluster_pid" 2>/dev/null || true; fi
    rm -rf "$out"
}
trap cleanup EXIT

# One explore; prints its row.
explore() { # upstream jobs round flags...
    local upstream=$1 jobs=$2 round=$3
    shift 3
    local dir="$out/$upstream-j$jobs-r$round"
    # shellcheck disable=SC2086 # $budget is a flag and its value, or nothing
    target/release/stalemate explore --setup examples/gitrepo/setup.yaml --jobs "$jobs" $budget "$@" \
        --out "$dir" -- target/release/examples/gitrepo-controller >/dev/null 2>&1 || true
    python3 - "$dir/summary.json" "$upstream" "$jobs" "$round" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
first = s.get("firstFindingSeconds")
trials = [t["seconds"] for t in s["trials"]]
per = sum(trials) / len(trials) if trials else 0.0
print(f"{sys.argv[2]:<8} {sys.argv[3]:<5} {sys.argv[4]:<5} {s['trialsRun']:>6} {s['seconds']:>8.1f} {s['trialsPerMinute']:>10.1f} "
      f"{per:>9.1f}s {s['referenceSeconds']:>9.1f}s {(f'{first:.1f}s' if first is not None else 'none'):>8}  ({len(s['findings'])} findings)")
PY
}

printf '%-8s %-5s %-5s %6s %8s %10s %10s %10s %8s\n' upstream jobs round trials seconds trials/min per-trial reference first
for round in $(seq "$rounds"); do
    for upstream in $upstreams; do
        case $upstream in
            sim)
                for jobs in 1 2; do explore sim "$jobs" "$round"; done ;;
            envtest)
                for jobs in 1 2; do explore envtest "$jobs" "$round" --envtest "$KUBEBUILDER_ASSETS"; done ;;
            cluster)
                # A real kube-apiserver standing in for a cluster: explore puts it back
                # between trials (deletes what each created) and runs them one at a time.
                target/release/stalemate envtest --kubeconfig-out "$out/cluster.kubeconfig" >"$out/cluster.out" 2>/dev/null &
                cluster_pid=$!
                for _ in $(seq 600); do [ -s "$out/cluster.kubeconfig" ] && grep -q '^https' "$out/cluster.out" && break; sleep 0.1; done
                explore cluster 1 "$round" --upstream-kubeconfig "$out/cluster.kubeconfig"
                kill "$cluster_pid"; wait "$cluster_pid" 2>/dev/null || true; cluster_pid="" ;;
            *) echo "explore.sh: unknown upstream $upstream (sim, envtest, cluster)" >&2; exit 2 ;;
        esac
    done
done
