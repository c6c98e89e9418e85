#!/usr/bin/env bash
# `stalemate explore` on the demo's GitRepository controller (buggy: F1) on each kind of
# upstream, one after the other in one run on this machine: the simulator and a real
# control plane per trial (--envtest) with --jobs 1 and --jobs 2, and a cluster (a real
# kube-apiserver from `stalemate envtest`, trials one at a time, put back between them);
# `flux`: Flux's real source-controller (e2e/assets/build-flux.sh) on --envtest with
# --jobs 1 and 2, cloning from a git server on loopback; and `kcm`: the real
# kube-controller-manager (examples/kube-controller-manager/: a Deployment on kwok's
# node, a workload that scales it).
# Seconds to the first finding, trials per minute, seconds per trial, trials whose
# window never opened. A benchmark, not a test: the figures go in bench/README.md
# ("explore") and docs/flux.md.
#
#   bash bench/explore.sh [--rounds N] [--budget N] [--upstreams "sim envtest cluster flux kcm"]
#                         [--actions "none generated"] [--jobs "1 2"] [--metrics "off on"]
#                         [--planes "fresh reused"]
#
# --actions: each explore once per value (explore's --actions: the setup alone, or with
# the user actions it generates from the setup's objects), side by side in one run.
# --metrics: each explore once per value — `off`: trials judged as before the
# controller's metrics could say it had settled (--wait-settle; the demo controller
# serves none); `on`: the demo controller serves its workqueue metrics on the run's
# port (--metrics-bind-address) and a quiet trial is judged as soon as they say it has
# settled (no retry pending) instead of after --settle.
# --planes (envtest and flux; kcm's --with components always get fresh ones): `fresh`:
# a control plane started for every trial (--fresh-control-planes); `reused`: one put
# back between trials, as explore does by default.
# Below each row: where a trial's seconds went, on average (explore's trial phases:
# start = the upstream, proxy and setup; ready = the controller's first requests and
# lists; work = until its last write or window; quiet = the idle stretch that ended it;
# end = reading the end state; stop = stopping everything; judge = explore's own).
# Release builds; the whole plan list unless --budget (shrinking adds a few trials).
# envtest, cluster and flux need KUBEBUILDER_ASSETS (built by e2e/assets/build.sh if
# unset); flux needs git and Go (build-flux.sh, ~3 min the first time).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=1 budget="" upstreams="sim envtest cluster" actions_list="none generated" jobs_list="1 2" metrics_list="off on" planes_list="fresh reused"
while [ $# -gt 0 ]; do
    case $1 in
        --actions) actions_list=$2; shift 2 ;;
        --jobs) jobs_list=$2; shift 2 ;;
        --metrics) metrics_list=$2; shift 2 ;;
        --planes) planes_list=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --budget) budget="--budget $2"; shift 2 ;;
        --upstreams) upstreams=$2; shift 2 ;;
        *) echo "explore.sh: unknown flag $1" >&2; exit 2 ;;
    esac
done
command -v python3 >/dev/null 2>&1 || { echo "explore.sh: python3 is needed to read summary.json" >&2; exit 2; }
cargo build --release --bin stalemate --bin gitrepo-controller >&2
case " $upstreams " in
    *" envtest "* | *" cluster "* | *" flux "* | *" kcm "*)
        if [ -z "${KUBEBUILDER_ASSETS:-}" ]; then
            KUBEBUILDER_ASSETS=$(bash e2e/assets/build.sh | tail -n1)
            export KUBEBUILDER_ASSETS
        fi ;;
esac
out=$(mktemp -d)
cluster_pid=""
cleanup() {
    for p in "$cluster_pid" "$git_pid"; do
        if [ -n "$p" ]; then kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; fi
    done
    rm -rf "$out"
}
trap cleanup EXIT

# Flux's source-controller: its binary and CRDs, a bare repository with one commit served
# on loopback, the GitRepository pointed at it ($flux_setup: --setup flags).
flux_setup=()
git_pid=""
start_flux() {
    local assets
    assets=$(bash e2e/assets/build-flux.sh | tail -n1)
    export SOURCE_CONTROLLER=$assets/source-controller
    mkdir -p "$out/git/work"
    git init -q --bare -b master "$out/git/podinfo.git"
    (cd "$out/git/work" && git init -q -b master && echo podinfo >README.md && git add README.md &&
        git -c user.name=bench -c user.email=bench@stalemate.dev commit -qm 'Initial commit' &&
        git push -q ../podinfo.git master)
    python3 e2e/assets/git_http.py "$out/git" >"$out/git.url" 2>/dev/null &
    git_pid=$!
    for _ in $(seq 100); do [ -s "$out/git.url" ] && break; sleep 0.1; done
    [ -s "$out/git.url" ] || { echo "explore.sh: the git server (e2e/assets/git_http.py) did not start" >&2; exit 1; }
    sed "s|GIT_URL|$(head -n1 "$out/git.url")podinfo.git|" examples/flux/gitrepository.yaml >"$out/gitrepository.yaml"
    for f in "$assets"/crds/*.yaml "$out/gitrepository.yaml"; do flux_setup+=(--setup "$f"); done
}

# One explore; prints its row. The controller is the demo's unless $controller is set
# (then the flags carry its setup).
explore() { # upstream jobs round flags...
    local upstream=$1 jobs=$2 round=$3
    shift 3
    local actions metrics planes planes_for=-
    case $upstream in envtest | flux) planes_for=$planes_list ;; esac
    for metrics in $metrics_list; do
        for actions in $actions_list; do
            for planes in $planes_for; do explore_one "$upstream" "$jobs" "$round" "$actions" "$metrics" "$planes" "$@"; done
        done
    done
}

explore_one() { # upstream jobs round actions metrics planes flags...
    local upstream=$1 jobs=$2 round=$3 actions=$4 metrics=$5 planes=$6
    shift 6
    local dir="$out/$upstream-j$jobs-r$round-$actions-$metrics-$planes"
    local setup=(--setup examples/gitrepo/setup.yaml) controller=(target/release/gitrepo-controller)
    if [ "$metrics" = on ]; then
        # shellcheck disable=SC2016 # the controller's shell expands it, per run
        controller=(sh -c 'exec target/release/gitrepo-controller --metrics-bind-address=127.0.0.1:$STALEMATE_METRICS_PORT')
    fi
    if [ "$upstream" = flux ]; then setup=("${flux_setup[@]}"); controller=(examples/flux/source-controller.sh); fi
    if [ "$upstream" = kcm ]; then
        setup=(--setup examples/kube-controller-manager/deployment.yaml --workload "sh $PWD/examples/kube-controller-manager/workload.sh")
        controller=("$PWD/examples/kube-controller-manager/kube-controller-manager.sh")
        if [ "$metrics" = on ]; then
            # Its workqueue metrics on its secure port (a self-signed certificate; an
            # anonymous GET of /metrics let through), read by --idle-url.
            # shellcheck disable=SC2016 # the controller's shell and stalemate expand them, per run
            controller=(sh -c "exec $PWD/examples/kube-controller-manager/kube-controller-manager.sh"' --secure-port=$STALEMATE_METRICS_PORT --bind-address=127.0.0.1 --authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics')
            # shellcheck disable=SC2016 # stalemate expands it, per run
            setup+=(--idle-url 'https://127.0.0.1:$STALEMATE_METRICS_PORT/metrics')
        fi
    fi
    local judged=()
    [ "$metrics" = on ] || judged=(--wait-settle)
    if [ "$planes" = fresh ]; then judged+=(--fresh-control-planes); fi
    # shellcheck disable=SC2086 # $budget is a flag and its value, or nothing
    target/release/stalemate explore "${setup[@]}" --jobs "$jobs" $budget --actions "$actions" "${judged[@]}" "$@" \
        --out "$dir" -- "${controller[@]}" >/dev/null 2>&1 || true
    python3 - "$dir/summary.json" "$upstream" "$jobs" "$round" "$actions" "$metrics" "$planes" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
first = s.get("firstFindingSeconds")
trials = [t["seconds"] for t in s["trials"]]
per = sum(trials) / len(trials) if trials else 0.0
seqs = s.get("sequences", [])
reached = sum(1 for q in seqs if q["status"] != "not reached")
dropped = sum(1 for q in seqs if q["status"].startswith("dropped"))
print(f"{sys.argv[2]:<8} {sys.argv[3]:<5} {sys.argv[4]:<5} {sys.argv[5]:<9} {sys.argv[6]:<7} {sys.argv[7]:<7} {f'{reached}/{len(seqs)}' if seqs else '-':>7} {s['trialsRun']:>6} {s['seconds']:>8.1f} {s['trialsPerMinute']:>10.1f} "
      f"{per:>9.1f}s {s['referenceSeconds']:>9.1f}s {(f'{first:.1f}s' if first is not None else 'none'):>8}  "
      f"({len(s['findings'])} findings, {len(s.get('withoutFaults', []))} without faults, {s.get('notExercised', 0)} not exercised, {dropped} sequences dropped)")
phased = [t["phases"] for t in s["trials"] if t.get("phases")]
if phased:
    keys = ["start", "ready", "work", "quiet", "endState", "stop", "judge"]
    mean = {k: sum(p[k] for p in phased) / len(phased) for k in keys}
    print("    per trial: " + ", ".join(f"{k} {mean[k]:.2f}s" for k in keys))
for f in s["findings"]:
    print(f"    finding: {f['title'][:150]}" + (f" — after: {f['actions']}" if f.get("actions") else ""))
for f in s.get("withoutFaults", []):
    print(f"    without faults: {f['message'][:150]}")
PY
}

printf '%-8s %-5s %-5s %-9s %-7s %-7s %7s %6s %8s %10s %10s %10s %8s\n' upstream jobs round actions metrics planes reached trials seconds trials/min per-trial reference first
for round in $(seq "$rounds"); do
    for upstream in $upstreams; do
        case $upstream in
            sim)
                for jobs in $jobs_list; do explore sim "$jobs" "$round"; done ;;
            envtest)
                for jobs in $jobs_list; do explore envtest "$jobs" "$round" --envtest "$KUBEBUILDER_ASSETS"; done ;;
            cluster)
                # A real kube-apiserver standing in for a cluster: explore puts it back
                # between trials (deletes what each created) and runs them one at a time.
                target/release/stalemate envtest --kubeconfig-out "$out/cluster.kubeconfig" >"$out/cluster.out" 2>/dev/null &
                cluster_pid=$!
                for _ in $(seq 600); do [ -s "$out/cluster.kubeconfig" ] && grep -q '^https' "$out/cluster.out" && break; sleep 0.1; done
                explore cluster 1 "$round" --upstream-kubeconfig "$out/cluster.kubeconfig"
                kill "$cluster_pid"; wait "$cluster_pid" 2>/dev/null || true; cluster_pid="" ;;
            flux)
                [ ${#flux_setup[@]} -gt 0 ] || start_flux
                for jobs in $jobs_list; do
                    # shellcheck disable=SC2016 # stalemate expands it, per run
                    explore flux "$jobs" "$round" --envtest "$KUBEBUILDER_ASSETS" --quiet 2s \
                        --idle-url 'http://127.0.0.1:$STALEMATE_METRICS_PORT/metrics' \
                        --converge gitrepositories.source.toolkit.fluxcd.io
                done ;;
            kcm)
                # kube-controller-manager (all its controllers) with kwok's node and
                # kube-scheduler: a Deployment scaled by the workload
                # (examples/kube-controller-manager/).
                for jobs in $jobs_list; do explore kcm "$jobs" "$round" --envtest "$KUBEBUILDER_ASSETS" --with kwok; done ;;
            *) echo "explore.sh: unknown upstream $upstream (sim, envtest, cluster, flux, kcm)" >&2; exit 2 ;;
        esac
    done
done
