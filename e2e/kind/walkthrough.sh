#!/usr/bin/env bash
# stalemate as a sidecar in front of Flux's source-controller in a kind cluster, with no
# internet: the cluster and every image from e2e/kind/cluster.sh, source-controller and its
# CRDs from the Go module proxy (e2e/assets/build-flux.sh; its module's own config/, with
# kubectl's kustomize), a git server on the host. Each step checks what a user would look
# at, and the script stops at the first that does not hold:
#
#   1. the controller's identity, asked from inside its pod (SelfSubjectReview), before
#      the sidecar;
#   2. `stalemate certs --kubernetes`, the schedule ConfigMap (config/flux-f1.json: a
#      1.5 s freeze of the GitRepository after its first status patch), `stalemate inject`;
#      the same identity through the sidecar;
#   3. a GitRepository from the git server; Prometheus (Debian's) scrapes the sidecar with
#      deploy/prometheus's rules loaded and sees the window open; the verdict from the
#      sidecar's /v1/report is pass, and the GitRepository is Ready;
#   4. the sidecar killed mid-run (SIGKILL): the kubelet restarts it, the controller
#      handles a new reconcile request through it, and the new report starts after the
#      kill (it claims nothing from before);
#   5. a schedule that does not load: the sidecar logs it, records a ScheduleRejected
#      Warning event on its pod, and still serves the controller;
#   6. a controller that does not recover (the demo's buggy GitRepository controller,
#      examples/gitrepo-controller.rs, with the same window): its sidecar's verdict is
#      fail, and Prometheus fires StalemateViolation for the convergence oracle.
#
#   bash e2e/kind/walkthrough.sh          # cluster name: stalemate-walkthrough
#   KEEP=1 bash e2e/kind/walkthrough.sh   # leave the cluster (and its kubeconfig) behind
#
# STALEMATE: the stalemate binary for `certs`/`inject` and the images (default: cargo build
# --release, with the example); CONTROLLER: the demo controller (default: the
# gitrepo-controller beside STALEMATE); STALEMATE_FLUX_ASSETS: build-flux.sh's directory. Run as root.
# Time on 2 cores, images built: 2 minutes (cluster included).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=e2e/assets/versions.env
. e2e/assets/versions.env
export CLUSTER=${CLUSTER:-stalemate-walkthrough}
# shellcheck source=e2e/kind/lib.sh
. e2e/kind/lib.sh
kind_script walkthrough
ns="flux-system"
on_failure() {
    k -n "$ns" get pods,gitrepositories -o wide
    k -n "$ns" logs deploy/source-controller -c stalemate --tail 30
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

new_cluster

step "source-controller $SOURCE_CONTROLLER_VERSION: its image, and its module's CRDs, RBAC and Deployment"
flux=${STALEMATE_FLUX_ASSETS:-$(bash e2e/assets/build-flux.sh | tail -n1)}
sc_image="stalemate.local/source-controller:$SOURCE_CONTROLLER_VERSION"
mkdir -p "$work/sc-image"
cp "$flux/source-controller" "$work/sc-image/"
docker build -q -f e2e/kind/source-controller.Dockerfile --build-arg BASE="$BASE_IMAGE" -t "$sc_image" "$work/sc-image" >/dev/null
"$KIND" load docker-image --name "$CLUSTER" "$sc_image" >/dev/null
module=$(cd "$work" && GOFLAGS='' go mod download -json "github.com/fluxcd/source-controller@$SOURCE_CONTROLLER_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$module/config/manager" ] || fail "no config/ in github.com/fluxcd/source-controller@$SOURCE_CONTROLLER_VERSION"
mkdir -p "$work/sc"
cp -r "$module/config/crd" "$module/config/rbac" "$module/config/manager" "$work/sc/"
chmod -R u+w "$work/sc"
cat >"$work/sc/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: $ns
resources: [crd, rbac, manager]
images:
  - name: fluxcd/source-controller
    newName: ${sc_image%:*}
    newTag: $SOURCE_CONTROLLER_VERSION
YAML
k create namespace "$ns" >/dev/null
k apply -k "$work/sc" >/dev/null
k -n "$ns" rollout status deploy/source-controller --timeout=180s

# whoami CONTAINER: the username and groups the apiserver sees for the pod's client, asked
# from inside the container with its own mounted credentials and KUBERNETES_SERVICE_*.
whoami() {
    # shellcheck disable=SC2016 # expanded in the container, by its shell
    k -n "$ns" exec deploy/source-controller -c "$1" -- sh -c '
        d=/var/run/secrets/kubernetes.io/serviceaccount
        curl -fsS --cacert "$d/ca.crt" -H "Authorization: Bearer $(cat "$d/token")" \
            -H "Content-Type: application/json" -X POST \
            -d "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}" \
            "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/apis/authentication.k8s.io/v1/selfsubjectreviews"' |
        python3 -c 'import json, sys; u = json.load(sys.stdin)["status"]["userInfo"]; print(u["username"], sorted(u.get("groups", [])))'
}
direct=$(whoami manager) || fail "SelfSubjectReview from the controller's container, direct"
echo "   direct: $direct"

step "stalemate certs, the schedule ConfigMap, stalemate inject"
"$stalemate" certs --kubernetes --namespace "$ns" | k apply -f - >/dev/null
k -n "$ns" create configmap stalemate-schedule --from-file=schedule.json=config/flux-f1.json --dry-run=client -o yaml | k apply -f - >/dev/null
k -n "$ns" get deploy source-controller -o yaml |
    "$stalemate" inject --image "$SIDECAR_IMAGE" --containers manager | k apply -f - >/dev/null
k -n "$ns" rollout status deploy/source-controller --timeout=180s
proxied=$(whoami manager) || fail "SelfSubjectReview from the controller's container, through the sidecar"
echo "   through the sidecar: $proxied"
[ "$proxied" = "$direct" ] || fail "the controller is not who it was: direct $direct, through the sidecar $proxied"
[ "$(k -n "$ns" exec deploy/source-controller -c manager -- printenv KUBERNETES_SERVICE_HOST)" = 127.0.0.1 ] ||
    fail "the controller's container does not reach the sidecar (KUBERNETES_SERVICE_HOST)"

step "Prometheus scraping the sidecar, deploy/prometheus/stalemate-rules.yaml loaded"
admin_port=$(free_port)
# The demo controller's sidecar (step 6), scraped from the start: down until then.
demo_port=$(free_port)
k -n "$ns" port-forward deploy/source-controller "$admin_port:9464" >"$work/port-forward.log" 2>&1 &
pids+=($!)
until_ok 30 "port-forward to the sidecar's admin port" curl -fsS "http://127.0.0.1:$admin_port/readyz"
prom_port=$(free_port)
cat >"$work/prometheus.yml" <<YAML
global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: [$repo/deploy/prometheus/stalemate-rules.yaml]
scrape_configs:
  - job_name: stalemate
    static_configs: [{ targets: ["127.0.0.1:$admin_port", "127.0.0.1:$demo_port"] }]
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prometheus" \
    --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)
promql() {
    curl -fsS "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1" |
        python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}
# test_promql QUERY VALUE: the query's first sample is VALUE.
test_promql() { [ "$(promql "$1")" = "$2" ]; }
until_ok 60 "Prometheus scraping the sidecar" test_promql "up{instance=\"127.0.0.1:$admin_port\"}" 1
rules=$(curl -fsS "http://127.0.0.1:$prom_port/api/v1/rules" | python3 -c 'import json, sys; print(" ".join(r["name"] for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"]))')
echo "   rules loaded: $rules"
case "$rules" in *StalemateViolation*StalemateWindowOverdue*) ;; *) fail "deploy/prometheus's rules are not loaded: $rules" ;; esac

step "a GitRepository from a git server on the host"
gateway=$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Gateway}} {{end}}' | tr ' ' '\n' | grep -m1 '\.')
mkdir -p "$work/git/work"
git -C "$work/git" init -q --bare -b master podinfo.git
git -C "$work/git/work" init -q -b master
echo podinfo >"$work/git/work/README.md"
git -C "$work/git/work" add README.md
git -C "$work/git/work" -c user.name=walkthrough -c user.email=walkthrough@localhost commit -q -m "Initial commit"
git -C "$work/git/work" push -q ../podinfo.git master
python3 e2e/assets/git_http.py "$work/git" 0 "$gateway" >"$work/git.url" 2>"$work/git.log" &
pids+=($!)
until_ok 10 "the git server" test -s "$work/git.url"
url="$(head -n1 "$work/git.url")podinfo.git"
k apply -f - >/dev/null <<YAML
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: podinfo
  namespace: $ns
spec:
  interval: 10m
  url: $url
  ref:
    branch: master
YAML

step "the verdict: the window, the settle time (30 s), /v1/report"
ready() { [ "$(k -n "$ns" get gitrepository podinfo -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
until_ok 120 "the GitRepository Ready" ready
until_ok 60 "Prometheus seeing the window open" test_promql 'max_over_time(stalemate_window_active{window="f1-stale-gitrepository"}[10m])' 1
echo "   Prometheus: stalemate_windows_opened_total = $(promql 'sum(stalemate_windows_opened_total)')"
report() { curl -fsS "http://127.0.0.1:$admin_port/v1/report"; }
verdict() { report | python3 -c 'import json, sys; print(json.load(sys.stdin)["verdict"])'; }
judged() { case "$(verdict)" in pass | fail) ;; *) return 1 ;; esac; }
until_ok 90 "a verdict" judged
echo "   verdict: $(verdict)"
[ "$(verdict)" = pass ] || { report; fail "source-controller did not recover from the freeze"; }

step "the sidecar killed mid-run"
restarts() { k -n "$ns" get pod -l app=source-controller -o jsonpath='{.items[0].status.containerStatuses[?(@.name=="stalemate")].restartCount}'; }
before=$(restarts)
killed_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
sleep 1
docker exec "$CLUSTER-control-plane" pkill -KILL -f 'stalemate serve' || fail "no sidecar process to kill"
restarted() { [ "$(restarts)" -gt "$before" ]; }
until_ok 60 "the kubelet restarting the sidecar" restarted
k -n "$ns" wait pod -l app=source-controller --for=condition=Ready --timeout=60s >/dev/null
kill "${pids[0]}" 2>/dev/null || true
k -n "$ns" port-forward deploy/source-controller "$admin_port:9464" >"$work/port-forward.log" 2>&1 &
pids[0]=$!
until_ok 30 "port-forward to the restarted sidecar" curl -fsS "http://127.0.0.1:$admin_port/readyz"
asked=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
k -n "$ns" annotate gitrepository podinfo --overwrite "reconcile.fluxcd.io/requestedAt=$asked" >/dev/null
handled() { [ "$(k -n "$ns" get gitrepository podinfo -o jsonpath='{.status.lastHandledReconcileAt}')" = "$asked" ]; }
until_ok 60 "source-controller handling a reconcile request through the restarted sidecar" handled
started=$(report | python3 -c 'import json, sys; print(json.load(sys.stdin)["startedAt"])')
echo "   killed at $killed_at; the new report starts at $started"
[[ "$started" > "$killed_at" ]] || fail "the report after the restart claims a start before the kill ($started)"
ready || fail "the GitRepository is not Ready after the sidecar's restart"
echo "   restarts: $(k -n "$ns" get pod -l app=source-controller -o jsonpath='{range .items[0].status.containerStatuses[*]}{.name}={.restartCount} {end}')"

step "a schedule that does not load"
k -n "$ns" create configmap stalemate-schedule --dry-run=client -o yaml \
    --from-literal=schedule.json='{"windows": [{"name": "typo", "fault": {"freez": {}}}]}' | k apply -f - >/dev/null
k -n "$ns" rollout restart deploy/source-controller >/dev/null
k -n "$ns" rollout status deploy/source-controller --timeout=180s
logs=$(k -n "$ns" logs deploy/source-controller -c stalemate)
grep -q "the schedule did not load" <<<"$logs" || fail "no error in the sidecar's log: $logs"
pod=$(k -n "$ns" get pod -l app=source-controller --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}')
event() { k -n "$ns" get events --field-selector "reason=ScheduleRejected,involvedObject.name=$pod" -o jsonpath='{.items[0].message}'; }
has_event() { [ -n "$(event)" ]; }
until_ok 30 "a ScheduleRejected event on $pod" has_event
echo "   event: $(event)"
asked=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
k -n "$ns" annotate gitrepository podinfo --overwrite "reconcile.fluxcd.io/requestedAt=$asked" >/dev/null
until_ok 60 "source-controller served with the bad schedule" handled
served=$(whoami manager) || fail "SelfSubjectReview through the sidecar with the bad schedule"
[ "$served" = "$direct" ] || fail "the controller is not who it was: $served"

step "a controller that does not recover: Prometheus fires StalemateViolation"
# One controller of GitRepositories at a time: source-controller lets go of its object
# (its finalizer) and stops.
k -n "$ns" delete gitrepository podinfo --timeout=60s >/dev/null
k -n "$ns" scale deploy/source-controller --replicas 0 >/dev/null
demo_image=stalemate.local/gitrepo-controller:dev
mkdir -p "$work/demo-image"
cp "$controller" "$work/demo-image/gitrepo-controller"
printf 'FROM %s\nCOPY gitrepo-controller /usr/local/bin/gitrepo-controller\nUSER 65532:65532\n' "$BASE_IMAGE" >"$work/demo-image/Dockerfile"
docker build -q -t "$demo_image" "$work/demo-image" >/dev/null
"$KIND" load docker-image --name "$CLUSTER" "$demo_image" >/dev/null
k create namespace demo >/dev/null
"$stalemate" certs --kubernetes --namespace demo | k apply -f - >/dev/null
# config/flux-f1.json's window for every client: this controller is not source-controller.
k -n demo create configmap stalemate-schedule --from-literal=schedule.json='{
  "windows": [{"name": "f1-stale-gitrepository", "resources": ["gitrepositories.source.toolkit.fluxcd.io"],
    "fault": {"freeze": {}}, "duration": "1500ms",
    "trigger": {"afterRequests": {"verb": "patch", "resource": "gitrepositories.source.toolkit.fluxcd.io", "subresource": "status", "count": 1}}}],
  "oracles": {"convergence": {"resources": ["gitrepositories.source.toolkit.fluxcd.io"], "settle": "30s"}}
}' >/dev/null
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: gitrepo-controller, namespace: demo}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: demo-gitrepo-controller}
rules:
  - apiGroups: [source.toolkit.fluxcd.io]
    resources: [gitrepositories, gitrepositories/status]
    verbs: [get, list, watch, patch, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: demo-gitrepo-controller}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: demo-gitrepo-controller}
subjects: [{kind: ServiceAccount, name: gitrepo-controller, namespace: demo}]
YAML
cat >"$work/demo.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: gitrepo-controller, namespace: demo}
spec:
  selector: {matchLabels: {app: gitrepo-controller}}
  template:
    metadata: {labels: {app: gitrepo-controller}}
    spec:
      serviceAccountName: gitrepo-controller
      containers:
        - name: manager
          image: $demo_image
          command: [/usr/local/bin/gitrepo-controller]
YAML
"$stalemate" inject --image "$SIDECAR_IMAGE" --containers manager <"$work/demo.yaml" | k apply -f - >/dev/null
k -n demo rollout status deploy/gitrepo-controller --timeout=180s
k -n demo port-forward deploy/gitrepo-controller "$demo_port:9464" >"$work/port-forward-demo.log" 2>&1 &
pids+=($!)
until_ok 30 "port-forward to the demo controller's sidecar" curl -fsS "http://127.0.0.1:$demo_port/readyz"
k apply -f - >/dev/null <<YAML
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: podinfo, namespace: demo}
spec: {url: "http://example.invalid/podinfo.git", interval: 10m, ref: {branch: master}}
YAML
demo_verdict() { curl -fsS "http://127.0.0.1:$demo_port/v1/report" | python3 -c 'import json, sys; print(json.load(sys.stdin)["verdict"])'; }
failed() { [ "$(demo_verdict)" = fail ]; }
until_ok 120 "the demo controller's verdict: fail (stuck after the window and 30 s of settle)" failed
firing() {
    curl -fsS "http://127.0.0.1:$prom_port/api/v1/alerts" | python3 -c '
import json, sys
alerts = json.load(sys.stdin)["data"]["alerts"]
sys.exit(not any(a["labels"].get("alertname") == "StalemateViolation" and a["labels"].get("oracle") == "convergence" and a["state"] == "firing" for a in alerts))'
}
until_ok 60 "Prometheus firing StalemateViolation" firing
echo "   verdict: fail; Prometheus: StalemateViolation firing for oracle=convergence, instance 127.0.0.1:$demo_port"

step "walkthrough: every step held"
