#!/usr/bin/env bash
# Where stalemate's pass-through CPU goes: `perf record` on the proxy while wrk drives it,
# then the split between the kernel, stalemate's own code (hyper, rustls, tokio and ours
# are all linked into the binary) and libc (malloc, memmove), and the top symbols.
#
#   bash bench/profile.sh [get|list] [SECONDS]      # default: get 5
#
# Needs perf (Debian: linux-perf) and wrk; uses the release binary. Read it next to
# `bash bench/run.sh`, which puts the same request side by side with nginx.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-get}
secs=${2:-5}
for tool in perf wrk curl; do
    command -v "$tool" >/dev/null 2>&1 || { echo "profile: $tool is not installed" >&2; exit 2; }
done
case $what in get | list) ;; *) echo "profile: get or list, not $what" >&2; exit 2 ;; esac
cargo build --release --locked -q --bin stalemate
bin=target/release/stalemate

work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
wait_file() { for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done; echo "profile: $1 never appeared" >&2; return 1; }

RUST_LOG=warn,rustls=error "$bin" sim --listen 127.0.0.1:0 --tls-dir "$work/tls" --kubeconfig-out "$work/sim.kubeconfig" >"$work/url" &
pids+=($!)
wait_file "$work/url"
url=$(head -n1 "$work/url")
curl -sS --cacert "$work/tls/ca.crt" -H 'Content-Type: application/json' -o /dev/null \
    -X POST "$url/api/v1/namespaces" -d '{"metadata":{"name":"bench"}}'
payload=$(printf 'x%.0s' $(seq 512))
seq 0 498 | xargs -P 8 -I{} curl -sS --cacert "$work/tls/ca.crt" -H 'Content-Type: application/json' -o /dev/null \
    -X POST "$url/api/v1/namespaces/bench/configmaps" \
    -d "{\"metadata\":{\"name\":\"cm-{}\"},\"data\":{\"k\":\"$payload\"}}"

RUST_LOG=error "$bin" serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --tls-dir "$work/proxy-tls" \
    --upstream-kubeconfig "$work/sim.kubeconfig" >"$work/proxy-url" &
proxy_pid=$!
pids+=("$proxy_pid")
wait_file "$work/proxy-url"
target=$(head -n1 "$work/proxy-url")/api/v1/namespaces/bench/configmaps
[ "$what" = get ] && target=$target/cm-0

perf record -q -F 2000 -g -p "$proxy_pid" -o "$work/perf.data" -- sleep "$secs" >/dev/null 2>&1 &
perf_pid=$!
sleep 0.2
wrk -t2 -c20 -d"$((secs - 1))s" "$target" | grep -E 'Requests/sec'
wait "$perf_pid" || true

echo "== share of the proxy's CPU by where the code lives"
perf report -i "$work/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null \
    | awk '/%/ && !/^#/ {print "  " $1, $2}'
echo "== top symbols (self time)"
perf report -i "$work/perf.data" --no-children --sort sym --stdio -g none 2>/dev/null \
    | awk '/%/ && !/^#/' | head -30 | cut -c1-150
