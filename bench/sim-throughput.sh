#!/usr/bin/env bash
# Throughput of `stalemate sim` as a benchmark upstream: GET of one ConfigMap and LIST of
# 500, with h2load (HTTP/2) and wrk (HTTP/1.1), on loopback.
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
trap 'kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
RUST_LOG=warn,rustls=error "$bin" sim --listen 127.0.0.1:0 --tls-dir "$work/tls" >"$work/url" &
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

printf '%-22s %12s %10s %10s\n' "run" "req/s" "p50" "p99"
h2() { # name url requests
    out=$(h2load -n "$3" -c 10 -m 10 "$2" 2>&1)
    rps=$(echo "$out" | awk '/^finished in/ {print $4}')
    # h2load reports mean/sd, not percentiles, for request times.
    mean=$(echo "$out" | awk '/^time for request:/ {print $6}')
    printf '%-22s %12s %10s %10s\n' "$1" "$rps" "mean $mean" "-"
}
w1() { # name url
    out=$(wrk -t2 -c20 -d"$duration" --latency "$2" 2>&1)
    rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
    p50=$(echo "$out" | awk '$1=="50%" {print $2}')
    p99=$(echo "$out" | awk '$1=="99%" {print $2}')
    printf '%-22s %12s %10s %10s\n' "$1" "$rps" "$p50" "$p99"
}
h2 "h2load GET" "$get" "$requests"
h2 "h2load LIST(500)" "$list" "$((requests / 10))"
w1 "wrk GET" "$get"
w1 "wrk LIST(500)" "$list"
echo "LIST body: $list_bytes bytes; cores: $(nproc)"
