#!/usr/bin/env bash
# Where stalemate's pass-through CPU goes: `perf record` on the proxy while wrk drives it,
# then the split between the kernel, stalemate's own code (hyper, rustls, tokio and ours
# are all linked into the binary) and libc (malloc, memmove), and the top symbols.
#
#   bash bench/profile.sh [--real] [--h2] [get|list] [SECONDS]      # default: get 5
#
# --real: in front of a real kube-apiserver (bench/lib.sh start_real), the requests
# carrying a service account's token; default: the simulator. --h2: h2load -c4 -m10
# (HTTP/2) instead of wrk -t2 -c20 (HTTP/1.1). STALEMATE_BIN: another build.
#
# Needs perf (Debian: linux-perf) and wrk; uses the release binary. Read it next to
# `bash bench/run.sh`, which puts the same request side by side with nginx.
set -euo pipefail
cd "$(dirname "$0")/.."
real=false h2=false
while [ $# -gt 0 ]; do
    case $1 in
        --real) real=true; shift ;;
        --h2) h2=true; shift ;;
        *) break ;;
    esac
done
what=${1:-get}
secs=${2:-5}
for tool in perf curl $([ "$h2" = true ] && echo h2load || echo wrk); do
    command -v "$tool" >/dev/null 2>&1 || { echo "profile: $tool is not installed" >&2; exit 2; }
done
case $what in get | list) ;; *) echo "profile: get or list, not $what" >&2; exit 2 ;; esac
bin=${STALEMATE_BIN:-}
if [ -z "$bin" ]; then
    cargo build --release --locked -q --bin stalemate
    bin=target/release/stalemate
fi

# shellcheck source=bench/lib.sh
. bench/lib.sh
start_upstream "$bin"
start_proxy stalemate "$bin"
target=$proxy_url$list_path
[ "$what" = get ] && target=$proxy_url$get_path

perf record -q -F 2000 -g -p "$proxy_pid" -o "$work/perf.data" -- sleep "$secs" >/dev/null 2>&1 &
perf_pid=$!
sleep 0.2
if [ "$h2" = true ]; then
    h2load -c4 -m10 -D "$((secs - 1))" ${auth[@]+"${auth[@]}"} "$target" | grep -E '^finished in'
else
    wrk -t2 -c20 -d"$((secs - 1))s" ${auth[@]+"${auth[@]}"} "$target" | grep -E 'Requests/sec'
fi
wait "$perf_pid" || true

echo "== share of the proxy's CPU by where the code lives"
perf report -i "$work/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null \
    | awk '/%/ && !/^#/ {print "  " $1, $2}'
echo "== top symbols (self time)"
perf report -i "$work/perf.data" --no-children --sort sym --stdio -g none 2>/dev/null \
    | awk '/%/ && !/^#/' | head -30 | cut -c1-150
