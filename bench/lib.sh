# shellcheck shell=bash disable=SC2034  # variables set here are read by the scripts that source it
# Shared by the bench scripts (sourced, not run): a work directory removed on exit with
# every process started here, the simulator or a real control plane seeded with the
# benchmark's objects, and stalemate proxies in front of it. Loopback only.

work=$(mktemp -d)
pids=()
# Processes with children of their own (the control plane, nginx, kubectl proxy) start in
# a session of their own (`start_group`): on exit their whole group is stopped, so an
# apiserver or etcd is not left behind even if its parent died first.
groups=()
cleanup() {
    local p g _ alive
    for g in ${groups[@]+"${groups[@]}"}; do kill -TERM -- "-$g" 2>/dev/null || true; done
    for p in ${pids[@]+"${pids[@]}"}; do kill "$p" 2>/dev/null || true; done
    # Up to 5 s to stop; then whatever ignored SIGTERM is killed.
    for _ in $(seq 50); do
        alive=false
        for p in ${pids[@]+"${pids[@]}"}; do kill -0 "$p" 2>/dev/null && alive=true; done
        [ "$alive" = true ] || break
        sleep 0.1
    done
    for g in ${groups[@]+"${groups[@]}"}; do kill -KILL -- "-$g" 2>/dev/null || true; done
    for p in ${pids[@]+"${pids[@]}"}; do kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# start_group OUT ERR CMD...: CMD in a session of its own (`setsid` from a shell without
# job control execs in place, so $! is the process itself and its group id); sets
# $group_pid.
start_group() {
    local out=$1 err=$2
    shift 2
    setsid "$@" >"$out" 2>"$err" &
    group_pid=$!
    pids+=("$group_pid")
    groups+=("$group_pid")
}
wait_file() { for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done; echo "bench: $1 never appeared" >&2; return 1; }

get_path=/api/v1/namespaces/bench/configmaps/cm-0
list_path=/api/v1/namespaces/bench/configmaps

# start_sim BIN: `stalemate sim` on a free port (CA in $work/tls/ca.crt, kubeconfig in
# $work/sim.kubeconfig; sets $url) with 499 ConfigMaps of ~0.6 KiB in namespace `bench`
# (+ kube-root-ca.crt = 500 objects in the LIST).
start_sim() {
    # In a session of its own, as everything these scripts start and measure (start_proxy).
    start_group "$work/url" "$work/sim.log" env RUST_LOG=warn,rustls=error "$1" sim --listen 127.0.0.1:0 \
        --tls-dir "$work/tls" --kubeconfig-out "$work/sim.kubeconfig"
    wait_file "$work/url" || { cat "$work/sim.log" >&2; return 1; }
    url=$(head -n1 "$work/url")
    curl -sS --cacert "$work/tls/ca.crt" -H 'Content-Type: application/json' -o /dev/null \
        -X POST "$url/api/v1/namespaces" -d '{"metadata":{"name":"bench"}}'
    local payload
    payload=$(printf 'x%.0s' $(seq 512))
    seq 0 498 | xargs -P 8 -I{} curl -sS --cacert "$work/tls/ca.crt" -H 'Content-Type: application/json' -o /dev/null \
        -X POST "$url$list_path" \
        -d "{\"metadata\":{\"name\":\"cm-{}\",\"labels\":{\"app\":\"bench\"}},\"data\":{\"k\":\"$payload\"}}"
}

# start_real BIN: a real control plane (`stalemate envtest`: kube-apiserver + etcd from
# $KUBEBUILDER_ASSETS, built by e2e/assets/build.sh when unset) with 500 ConfigMaps of
# 1 KiB in namespace `bench`, and a service account `bench-client` that may only get and
# list them. Sets $api_url, $ca, $upstream_kubeconfig (admin: start_proxy puts stalemate
# in front of it), $kubectl and $cp_pid; `k` runs kubectl as the admin (its own cache
# directory); `client_token [SA]` prints a new token of bench-client (or SA, which
# `k -n bench create serviceaccount` made and a rolebinding allows).
start_real() {
    local bin=$1 payload i
    if [ -z "${KUBEBUILDER_ASSETS:-}" ]; then
        KUBEBUILDER_ASSETS=$(bash e2e/assets/build.sh | tail -n1)
    fi
    export KUBEBUILDER_ASSETS
    [ -x "$KUBEBUILDER_ASSETS/kube-apiserver" ] || { echo "bench: no kube-apiserver in KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS (bash e2e/assets/build.sh builds it)" >&2; return 1; }
    # The kubectl built with the apiserver (same version), else the one on the PATH.
    kubectl=$KUBEBUILDER_ASSETS/kubectl
    [ -x "$kubectl" ] || kubectl=$(command -v kubectl) || { echo "bench: no kubectl in $KUBEBUILDER_ASSETS nor on the PATH" >&2; return 1; }
    echo "bench: starting kube-apiserver + etcd ($KUBEBUILDER_ASSETS)" >&2
    start_group "$work/cp.out" "$work/cp.log" env RUST_LOG=warn "$bin" envtest --dir "$work/cp" --kubeconfig-out "$work/admin.kubeconfig"
    cp_pid=$group_pid
    # First line: the apiserver's URL; the kubeconfig is written once it is ready.
    for _ in $(seq 1800); do
        [ -s "$work/admin.kubeconfig" ] && grep -q '^https://' "$work/cp.out" && break
        kill -0 "$cp_pid" 2>/dev/null || { cat "$work/cp.log" >&2; echo "bench: stalemate envtest exited before the apiserver was ready" >&2; return 1; }
        sleep 0.1
    done
    if ! api_url=$(grep -m1 '^https://' "$work/cp.out") || [ ! -s "$work/admin.kubeconfig" ]; then
        echo "bench: the apiserver was not ready in 3 minutes (log: $work/cp.log)" >&2
        return 1
    fi
    ca=$work/cp/ca.crt
    [ -s "$ca" ] || { echo "bench: no cluster CA at $ca" >&2; return 1; }
    upstream_kubeconfig=$work/admin.kubeconfig
    echo "bench: creating namespace bench, 500 ConfigMaps of 1 KiB and the service account bench-client" >&2
    k create namespace bench >/dev/null
    payload=$(printf 'x%.0s' $(seq 1024))
    for i in $(seq 0 499); do
        printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: bench, labels: {app: bench}}\ndata: {k: %s}\n' "$i" "$payload"
    done | k create -f - >/dev/null
    k -n bench create serviceaccount bench-client >/dev/null
    k -n bench create role configmap-reader --verb=get,list --resource=configmaps >/dev/null
    k -n bench create rolebinding configmap-reader --role=configmap-reader --serviceaccount=bench:bench-client >/dev/null
}
# start_upstream BIN: start_real when $real is true (and $auth: a token header for wrk
# and h2load), else start_sim (no token).
start_upstream() {
    auth=()
    if [ "${real:-false}" = true ]; then
        start_real "$1"
        auth=(-H "Authorization: Bearer $(client_token bench-client)")
    else
        start_sim "$1"
    fi
}
# kubectl with its own cache directory (not ~/.kube/cache) and the admin kubeconfig.
k() { "$kubectl" --kubeconfig "$work/admin.kubeconfig" --cache-dir "$work/kubectl-cache" "$@"; }
# Tokens live in $work only (gone on exit); 6 hours outlast any run of these scripts.
client_token() { k -n bench create token "${1:-bench-client}" --duration 6h; }

# start_proxy NAME BIN [FLAGS...]: `stalemate serve` in front of the simulator (or of the
# kubeconfig in $upstream_kubeconfig when set); sets $proxy_pid and $proxy_url. In a
# session of its own, as nginx, `kubectl proxy` and the control plane are: with the
# kernel's autogroup scheduling (kernel.sched_autogroup_enabled, on by default) a session
# is a scheduling group, and a proxy in this script's session would share one group's
# CPU share with the load generator instead of having its own.
start_proxy() {
    local name=$1 bin=$2
    shift 2
    start_group "$work/$name.url" "$work/$name.log" env RUST_LOG=error "$bin" serve --listen 127.0.0.1:0 \
        --admin-listen 127.0.0.1:0 --tls-dir "$work/tls-$name" \
        --upstream-kubeconfig "${upstream_kubeconfig:-$work/sim.kubeconfig}" "$@"
    proxy_pid=$group_pid
    wait_file "$work/$name.url" || { cat "$work/$name.log" >&2; return 1; }
    proxy_url=$(head -n1 "$work/$name.url")
}
