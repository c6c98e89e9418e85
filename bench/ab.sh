#!/usr/bin/env bash
# Two builds (or two flag sets) of the proxy side by side on one simulator, driven by
# alternating wrk runs, so that both see the same machine noise: requests/s, p99, the
# proxy's CPU time and page faults per request, round by round. The way the figures in
# bench/README.md "Changes the benchmarks led to" were measured.
#
#   bash bench/ab.sh [--rounds N] [--seconds S] [--list] [--connections C] [--h2] [--real] BIN_A BIN_B
#
# --real: in front of a real kube-apiserver (bench/lib.sh start_real: 500 ConfigMaps of
# 1 KiB), wrk carrying a service account's token as a controller's requests do; default:
# the simulator, no token. --h2: h2load -cC -m10 (HTTP/2) instead of wrk (HTTP/1.1), no p99.
#
# STALEMATE_ARGS_A / STALEMATE_ARGS_B: extra `serve` flags for either side, e.g.
#   STALEMATE_ARGS_B="--max-view-bytes 0" bash bench/ab.sh --list target/release/stalemate target/release/stalemate
# --connections 1 measures one request at a time. Needs wrk and curl; loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 seconds=5 what=get conns=20 real=false h2=false
while [ $# -gt 2 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --connections) conns=$2; shift 2 ;;
        --list) what=list; shift ;;
        --real) real=true; shift ;;
        --h2) h2=true; shift ;;
        *) echo "ab: unknown flag $1" >&2; exit 2 ;;
    esac
done
[ $# -eq 2 ] || { echo "usage: bash bench/ab.sh [--rounds N] [--seconds S] [--list] [--connections C] [--h2] [--real] BIN_A BIN_B" >&2; exit 2; }
bin_a=$1 bin_b=$2
for b in "$bin_a" "$bin_b"; do [ -x "$b" ] || { echo "ab: $b is not an executable" >&2; exit 2; }; done
tools=(curl)
if [ "$h2" = true ]; then tools+=(h2load); else tools+=(wrk); fi
for tool in "${tools[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "ab: $tool is not installed" >&2; exit 2; }
done

# shellcheck source=bench/lib.sh
. bench/lib.sh
start_upstream "$bin_a"
path=$list_path
[ "$what" = get ] && path=$get_path

declare -A pid base
read -r -a flags_a <<<"${STALEMATE_ARGS_A:-}"
read -r -a flags_b <<<"${STALEMATE_ARGS_B:-}"
start_proxy A "$bin_a" ${flags_a[@]+"${flags_a[@]}"}
pid[A]=$proxy_pid base[A]=$proxy_url
start_proxy B "$bin_b" ${flags_b[@]+"${flags_b[@]}"}
pid[B]=$proxy_pid base[B]=$proxy_url

stat_field() { awk -v f="$2" '{print $f}' "/proc/$1/stat"; }
threads=2
[ "$conns" -lt 2 ] && threads=1
load="wrk -t$threads -c$conns"
[ "$h2" = false ] || load="h2load -c$conns -m10"
echo "$what on $([ "$real" = true ] && echo "a real kube-apiserver" || echo "the simulator"), $load -d${seconds}s, $rounds rounds; A=$bin_a ${STALEMATE_ARGS_A:-}; B=$bin_b ${STALEMATE_ARGS_B:-}"
printf '%-5s %-3s %10s %10s %14s %16s\n' round side req/s p99 "CPU us/req" "page faults/req"
for r in $(seq "$rounds"); do
    for side in A B; do
        p=${pid[$side]}
        cpu0=$(( $(stat_field "$p" 14) + $(stat_field "$p" 15) )); flt0=$(stat_field "$p" 10)
        if [ "$h2" = true ]; then
            out=$(h2load -c"$conns" -m10 -D "$seconds" ${auth[@]+"${auth[@]}"} "${base[$side]}$path")
            n=$(echo "$out" | awk '/^requests:/ {print $8}')
            rps=$(echo "$out" | awk '/^finished in/ {print $4}')
            p99=-
        else
            out=$(wrk -t"$threads" -c"$conns" -d"${seconds}s" --latency ${auth[@]+"${auth[@]}"} "${base[$side]}$path")
            n=$(echo "$out" | awk '/requests in/ {print $1}')
            rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
            p99=$(echo "$out" | awk '$1=="99%" {print $2}')
        fi
        cpu1=$(( $(stat_field "$p" 14) + $(stat_field "$p" 15) )); flt1=$(stat_field "$p" 10)
        awk -v r="$r" -v s="$side" -v rps="$rps" -v p99="$p99" -v c=$((cpu1 - cpu0)) -v f=$((flt1 - flt0)) \
            -v n="$n" -v t="$(getconf CLK_TCK)" \
            'BEGIN {n = (n > 0 ? n : 1); printf "%-5s %-3s %10.0f %10s %14.1f %16.1f\n", r, s, rps, p99, c / t * 1e6 / n, f / n}'
    done
done
