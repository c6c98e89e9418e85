# shellcheck shell=bash disable=SC2034  # variables set here are read by the scripts that source it
# Shared by the bench scripts (sourced, not run): a work directory removed on exit with
# every process started here, the simulator seeded with the benchmark's objects, and
# stalemate proxies in front of it. Loopback only.

work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
wait_file() { for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done; echo "bench: $1 never appeared" >&2; return 1; }

get_path=/api/v1/namespaces/bench/configmaps/cm-0
list_path=/api/v1/namespaces/bench/configmaps

# start_sim BIN: `stalemate sim` on a free port (CA in $work/tls/ca.crt, kubeconfig in
# $work/sim.kubeconfig; sets $url) with 499 ConfigMaps of ~0.6 KiB in namespace `bench`
# (+ kube-root-ca.crt = 500 objects in the LIST).
start_sim() {
    RUST_LOG=warn,rustls=error "$1" sim --listen 127.0.0.1:0 --tls-dir "$work/tls" --kubeconfig-out "$work/sim.kubeconfig" >"$work/url" &
    pids+=($!)
    wait_file "$work/url"
    url=$(head -n1 "$work/url")
    curl -sS --cacert "$work/tls/ca.crt" -H 'Content-Type: application/json' -o /dev/null \
        -X POST "$url/api/v1/namespaces" -d '{"metadata":{"name":"bench"}}'
    local payload
    payload=$(printf 'x%.0s' $(seq 512))
    seq 0 498 | xargs -P 8 -I{} curl -sS --cacert "$work/tls/ca.crt" -H 'Content-Type: application/json' -o /dev/null \
        -X POST "$url$list_path" \
        -d "{\"metadata\":{\"name\":\"cm-{}\",\"labels\":{\"app\":\"bench\"}},\"data\":{\"k\":\"$payload\"}}"
}

# start_proxy NAME BIN [FLAGS...]: `stalemate serve` in front of the simulator; sets
# $proxy_pid and $proxy_url.
start_proxy() {
    local name=$1 bin=$2
    shift 2
    RUST_LOG=error "$bin" serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --tls-dir "$work/tls-$name" \
        --upstream-kubeconfig "$work/sim.kubeconfig" "$@" >"$work/$name.url" &
    proxy_pid=$!
    pids+=("$proxy_pid")
    wait_file "$work/$name.url"
    proxy_url=$(head -n1 "$work/$name.url")
}
