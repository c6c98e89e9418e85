#!/usr/bin/env bash
# Put stalemate in front of Flux's source-controller in a kind cluster, freeze its view
# of a GitRepository right after its first status patch (config/flux-f1.json), and print
# the verdict. Needs Docker and internet (images, the Flux CLI's install manifests).
#
#   bash e2e/kind/walkthrough.sh            # cluster name: stalemate
#   KEEP=1 bash e2e/kind/walkthrough.sh     # leave the cluster running afterwards
set -euo pipefail
cd "$(dirname "$0")/../.."

cluster="${CLUSTER:-stalemate}"
image="${IMAGE:-stalemate:dev}"

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "walkthrough: needs $1 on the PATH ($2)" >&2
    exit 2
  fi
}
need docker "https://docs.docker.com/engine/install/"
need kind "https://kind.sigs.k8s.io/docs/user/quick-start/#installation"
need kubectl "https://kubernetes.io/docs/tasks/tools/"
need flux "https://fluxcd.io/flux/installation/#install-the-flux-cli"
need cargo "https://rustup.rs"
if ! docker info >/dev/null 2>&1; then
  echo "walkthrough: docker is installed but its daemon is not reachable" >&2
  exit 2
fi

cleanup() {
  if [ -z "${KEEP:-}" ]; then
    kind delete cluster --name "$cluster" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

echo "== building $image"
docker build -t "$image" .
cargo build --release --bin stalemate
stalemate=target/release/stalemate

echo "== kind cluster $cluster"
kind create cluster --name "$cluster" --wait 120s
kind load docker-image "$image" --name "$cluster"

echo "== Flux (source-controller only)"
flux install --components=source-controller

echo "== stalemate in front of source-controller"
"$stalemate" certs --kubernetes --namespace flux-system | kubectl apply -f -
kubectl -n flux-system create configmap stalemate-schedule \
  --from-file=schedule.json=config/flux-f1.json --dry-run=client -o yaml | kubectl apply -f -
kubectl -n flux-system get deployment source-controller -o yaml \
  | "$stalemate" inject --image "$image" --containers manager \
  | kubectl apply -f -
kubectl -n flux-system rollout status deployment/source-controller --timeout=180s

echo "== a GitRepository"
kubectl apply -f - <<'YAML'
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: podinfo
  namespace: flux-system
spec:
  interval: 10m
  url: https://github.com/stefanprodan/podinfo
  ref:
    branch: master
YAML

echo "== waiting for the window and the settle time (about a minute)"
kubectl -n flux-system port-forward deployment/source-controller 19464:9464 >/dev/null 2>&1 &
pf=$!
trap 'kill "$pf" 2>/dev/null || true; cleanup' EXIT
sleep 5
deadline=$((SECONDS + 180))
verdict=""
while [ "$SECONDS" -lt "$deadline" ]; do
  report=$(curl -fsS localhost:19464/v1/report || true)
  verdict=$(printf '%s' "$report" | sed -n 's/.*"verdict":"\([^"]*\)".*/\1/p')
  if [ "$verdict" = "pass" ] || [ "$verdict" = "fail" ]; then
    break
  fi
  sleep 5
done
kubectl -n flux-system get gitrepository podinfo -o wide || true
echo "== verdict: ${verdict:-not judged}"
printf '%s\n' "$report"
[ "$verdict" = "pass" ]
