#!/usr/bin/env bash
# Throughput of `stalemate sim` as a benchmark upstream, and of `stalemate serve` in front
# of it (pass-through): GET of one ConfigMap and LIST of 500, with h2load (HTTP/2) and wrk
# (HTTP/1.1), on loopback, side by side in one run. For the proxy, its own CPU time per
# request is read from /proc/<pid>/stat before and after each run.
#
#   bash bench/sim-throughput.sh [--quick]
#
# Installs h2load (nghttp2-client) and wrk from Debian when missing; builds the release
# binary. Load generator and server share the machine's cores: figures are for comparing
# runs on the same machine, not absolute capacity.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=10s; requests=20000
if [ "${1:-}" = "--quick" ]; then duration=3s; requests=5000; fi

have() { command -v "$1" >/dev/null 2>&1; }
if ! have h2load || ! have wrk; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client wrk
fi
cargo build --release --locked -q
bin=target/release/stalemate

work=$(mktemp -d)
proxy_pid=""
cleanup() {
    for p in $proxy_pid $sim_pid; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
RUST_LOG=warn,rustls=error "$bin" sim --listen 127.0.0.1:0 --tls-dir "$work/tls" --kubeconfig-out "$work/sim.kubeconfig" >"$work/url" &
sim_pid=$!
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.05; done
url=$(head -n1 "$work/url")
c() { curl -sS --cacert "$work/tls/ca.crt" -H 'Content-Type: application/json' "$@" >/dev/null; }

c -X POST "$url/api/v1/namespaces" -d '{"metadata":{"name":"bench"}}'
payload=$(printf 'x%.0s' $(seq 512))
for i in $(seq 0 498); do
    c -X POST "$url/api/v1/namespaces/bench/configmaps" \
        -d "{\"metadata\":{\"name\":\"cm-$i\",\"labels\":{\"app\":\"bench\"}},\"data\":{\"k\":\"$payload\"}}"
done
# 499 created + kube-root-ca.crt = 500 objects.
get="$url/api/v1/namespaces/bench/configmaps/cm-0"
list="$url/api/v1/namespaces/bench/configmaps"
list_bytes=$(curl -sS --cacert "$work/tls/ca.crt" "$list" | wc -c)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
tick=$(getconf CLK_TCK)
printf '%-30s %12s %12s %10s %14s\n' "run" "req/s" "p50" "p99" "proxy CPU/req"
h2() { # name url requests [pid]
    local before=0; [ -n "${4:-}" ] && before=$(cpu_ticks "$4")
    out=$(h2load -n "$3" -c 10 -m 10 "$2" 2>&1)
    rps=$(echo "$out" | awk '/^finished in/ {print $4}')
    done_n=$(echo "$out" | awk '/^requests:/ {print $8}')
    # h2load reports mean/sd, not percentiles, for request times.
    mean=$(echo "$out" | awk '/^time for request:/ {print $6}')
    cpu="-"; [ -n "${4:-}" ] && cpu=$(awk -v d="$(( $(cpu_ticks "$4") - before ))" -v n="$done_n" -v t="$tick" 'BEGIN {printf "%.3f ms", d / t * 1000 / n}')
    printf '%-30s %12s %12s %10s %14s\n' "$1" "$rps" "mean $mean" "-" "$cpu"
}
w1() { # name url [pid]
    local before=0; [ -n "${3:-}" ] && before=$(cpu_ticks "$3")
    out=$(wrk -t2 -c20 -d"$duration" --latency "$2" 2>&1)
    rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
    n=$(echo "$out" | awk '/requests in/ {print $1}')
    p50=$(echo "$out" | awk '$1=="50%" {print $2}')
    p99=$(echo "$out" | awk '$1=="99%" {print $2}')
    cpu="-"; [ -n "${3:-}" ] && cpu=$(awk -v d="$(( $(cpu_ticks "$3") - before ))" -v n="$n" -v t="$tick" 'BEGIN {printf "%.3f ms", d / t * 1000 / n}')
    printf '%-30s %12s %12s %10s %14s\n' "$1" "$rps" "$p50" "$p99" "$cpu"
}
h2 "direct  h2load GET" "$get" "$requests"
h2 "direct  h2load LIST(500)" "$list" "$((requests / 10))"
w1 "direct  wrk GET" "$get"
w1 "direct  wrk LIST(500)" "$list"

RUST_LOG=error "$bin" serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --tls-dir "$work/proxy-tls" \
    --upstream-kubeconfig "$work/sim.kubeconfig" >"$work/proxy-url" &
proxy_pid=$!
for _ in $(seq 100); do [ -s "$work/proxy-url" ] && break; sleep 0.05; done
purl=$(head -n1 "$work/proxy-url")
pget="$purl/api/v1/namespaces/bench/configmaps/cm-0"
plist="$purl/api/v1/namespaces/bench/configmaps"
h2 "serve   h2load GET" "$pget" "$requests" "$proxy_pid"
h2 "serve   h2load LIST(500)" "$plist" "$((requests / 10))" "$proxy_pid"
w1 "serve   wrk GET" "$pget" "$proxy_pid"
w1 "serve   wrk LIST(500)" "$plist" "$proxy_pid"
echo "LIST body: $list_bytes bytes; cores: $(nproc); load generator, proxy and simulator share them"
