#!/usr/bin/env bash
# `stalemate explore job` for real, in a kind cluster built here (e2e/kind/cluster.sh): the
# demo's buggy GitRepository controller (examples/gitrepo-controller.rs) in an image FROM
# the explore image; `explore job --shards 2 --parallelism 2 … | kubectl apply -f -`; each
# pod runs its shard on a control plane of its own (etcd and kube-apiserver from the
# image); `explore gather` reads the pods' logs and merges them; the merge must find what
# the same explore finds run here, unsharded, on this machine's control plane.
#
#   bash e2e/kind/explore-job.sh          # cluster name: stalemate-explore-job
#   KEEP=1 bash e2e/kind/explore-job.sh   # leave the cluster and the results behind
#
# STALEMATE: the stalemate binary (default: cargo build --release, with the example);
# CONTROLLER: the controller binary (default: the gitrepo-controller beside
# STALEMATE); KUBEBUILDER_ASSETS: the local run's control plane (default:
# e2e/assets/build.sh's). Run as root (cluster.sh). Time on 2 cores, images built: 2
# minutes (cluster included; the Job's two pods take 50 s).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CLUSTER=${CLUSTER:-stalemate-explore-job}
# shellcheck source=e2e/kind/lib.sh
. e2e/kind/lib.sh
kind_script explore-job
on_failure() {
    k get jobs,pods -o wide
    k logs job/stalemate-explore --tail 20
}
export KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-$(bash e2e/assets/build.sh | tail -n1)}

# What both explores share: small, no action plans, no long replays (as
# e2e/explore_shards.rs); the pods add --envtest and their shard.
flags=(--setup examples/gitrepo/setup.yaml --actions none --quiet 3s --settle 5s --budget 3 --shrink-steps 1 --replay 0)

new_cluster

step "the controller's image, FROM $EXPLORE_IMAGE"
image=stalemate.local/gitrepo-controller-explore:dev
mkdir -p "$work/image"
cp "$controller" "$work/image/gitrepo-controller"
printf 'FROM %s\nCOPY gitrepo-controller /usr/local/bin/gitrepo-controller\n' "$EXPLORE_IMAGE" >"$work/image/Dockerfile"
docker build -q -t "$image" "$work/image" >/dev/null
"$KIND" load docker-image --name "$CLUSTER" "$image" >/dev/null

step "stalemate explore job --shards 2 --parallelism 2 | kubectl apply -f -"
"$stalemate" explore job --shards 2 --parallelism 2 --image "$image" "${flags[@]}" \
    -- /usr/local/bin/gitrepo-controller >"$work/job.yaml"
k apply -f "$work/job.yaml"
# Meanwhile, the same explore here, unsharded: what the merge must find.
"$stalemate" explore --envtest "$KUBEBUILDER_ASSETS" --out "$work/local" "${flags[@]}" \
    -- "$controller" >"$work/local.log" 2>&1 || [ $? -eq 1 ] || {
    tail -n 20 "$work/local.log" >&2
    fail "the local explore failed"
}
k wait --for=condition=complete job/stalemate-explore --timeout=900s ||
    fail "the Job did not complete"
k get pods -l job-name=stalemate-explore -o wide

step "stalemate explore gather"
# Exit 1: findings (as explore's own).
KUBECONFIG=$work/kubeconfig "$stalemate" explore gather stalemate-explore --out "$work/results" || [ $? -eq 1 ] ||
    fail "explore gather failed"
signatures() {
    python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(json.dumps(sorted(sorted(f.get("signatures", [])) for f in s.get("findings", []))))' "$1"
}
local_found=$(signatures "$work/local/summary.json")
merged_found=$(signatures "$work/results/merged/summary.json")
echo "   here, unsharded: $local_found"
echo "   the Job, merged: $merged_found"
[ "$local_found" != "[]" ] || fail "the local explore found nothing to compare with"
[ "$merged_found" = "$local_found" ] || fail "the Job's shards found something else than the local explore"
for i in 0 1; do
    [ -f "$work/results/shard-$i/summary.json" ] || fail "no summary from shard $i"
done

step "explore job: the pods found what a local explore finds"
