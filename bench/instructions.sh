#!/usr/bin/env bash
# User-space instructions per request of two (or more) builds of the proxy, counted by
# valgrind's callgrind: the A/B that machine noise cannot move. CPU time per request
# (bench/ab.sh) moves ±5% between rounds on a shared 2-core VM; the instructions of an
# HTTP/1.1 GET move by 0.2–2%, so a change worth 2–5% of the proxy's user-space work
# shows as such in one run (a LIST — few of them in a run — and HTTP/2, whose batching
# changes with timing, move more: ±5%). It says nothing about the kernel's share
# (syscalls, wake-ups: about half of the proxy's CPU, bench/profile.sh) nor about cache
# misses or timing — use it to see whether a change to stalemate's own code does less,
# and ab.sh or peers.sh to see what that is worth.
#
#   bash bench/instructions.sh [--rounds N] [--seconds S] [--list] [--connections C] [--h2] [--real] BIN...
#
# Each round starts each build under callgrind (instrumentation off), warms it up with
# 2 s of load, counts instructions over S seconds of load (default 6) and divides by the
# requests answered; rounds alternate the builds (default 2 rounds). Under callgrind the
# proxy is ~50× slower and is itself the bottleneck, so its event loop batches more
# than at full speed: compare builds with each other, not with a CPU profile.
# --real, --list, --h2, --connections: as for bench/ab.sh (default 8 connections).
# Callgrind's files live in $work (removed at exit); set STALEMATE_CALLGRIND_DIR to keep
# them (callgrind.A, … of the last round; callgrind_annotate reads them).
# Needs valgrind (Debian `valgrind`), wrk or h2load, curl; loopback only.
set -euo pipefail
# A failed wrk or h2load inside $(…) stops the script too.
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
usage="usage: bash bench/instructions.sh [--rounds N] [--seconds S] [--list] [--connections C] [--h2] [--real] BIN..."
rounds=2 seconds=6 what=get conns=8 real=false h2=false
while [ $# -gt 0 ]; do
    case $1 in
        --rounds | --seconds | --connections)
            if [ $# -lt 2 ] || ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then
                echo "instructions.sh: $1 needs a whole number of at least 1, not '${2:-}'" >&2; exit 2
            fi
            case $1 in --rounds) rounds=$2 ;; --seconds) seconds=$2 ;; --connections) conns=$2 ;; esac
            shift 2 ;;
        --list) what=list; shift ;;
        --real) real=true; shift ;;
        --h2) h2=true; shift ;;
        -h | --help) echo "$usage"; exit 0 ;;
        -*) echo "instructions.sh: unknown flag $1" >&2; echo "$usage" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
bins=("$@")
for b in "${bins[@]}"; do [ -x "$b" ] || { echo "instructions.sh: $b is not an executable" >&2; exit 2; }; done
tools=(curl valgrind callgrind_control)
if [ "$h2" = true ]; then tools+=(h2load); else tools+=(wrk); fi
for tool in "${tools[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "instructions.sh: $tool is not installed (Debian: valgrind, wrk, nghttp2-client)" >&2; exit 2; }
done

# shellcheck source=bench/lib.sh
. bench/lib.sh
start_upstream "${bins[0]}"
path=$list_path
[ "$what" = get ] && path=$get_path
upstream=${upstream_kubeconfig:-$work/sim.kubeconfig}

# load SECONDS URL: one run; prints the number of requests answered.
load() {
    local out
    if [ "$h2" = true ]; then
        out=$(h2load -c"$conns" -m10 -D "$1" ${auth[@]+"${auth[@]}"} "$2$path")
        awk '/^requests:/ {print $8}' <<<"$out"
    else
        out=$(wrk -t1 -c"$conns" -d"$1s" ${auth[@]+"${auth[@]}"} "$2$path")
        awk '/requests in/ {print $1}' <<<"$out"
    fi
}

echo "$what on $([ "$real" = true ] && echo "a real kube-apiserver" || echo "the simulator"), $([ "$h2" = true ] && echo "h2load -c$conns -m10" || echo "wrk -t1 -c$conns"), ${seconds}s counted, $rounds rounds"
printf '%-5s %-4s %12s %14s  %s\n' round side requests "instr/req" build
sides=(A B C D E F G H)
for r in $(seq "$rounds"); do
    for i in "${!bins[@]}"; do
        bin=${bins[$i]} side=${sides[$i]:-$i}
        out=$work/callgrind.$side
        rm -f "$out" "$out".*
        RUST_LOG=error valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
            "$bin" serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --tls-dir "$work/tls-cg-$side" \
            --upstream-kubeconfig "$upstream" >"$work/cg-$side.url" 2>"$work/cg-$side.log" &
        vg=$!
        pids+=("$vg")
        for _ in $(seq 600); do [ -s "$work/cg-$side.url" ] && break; sleep 0.1; done
        [ -s "$work/cg-$side.url" ] || { cat "$work/cg-$side.log" >&2; echo "instructions.sh: $bin did not start under valgrind" >&2; exit 1; }
        url=$(head -n1 "$work/cg-$side.url")
        load 2 "$url" >/dev/null
        # callgrind_control exits 0 even when it reached nothing: its "OK" is the answer.
        instrument() {
            callgrind_control -i "$1" "$vg" 2>&1 | grep -q OK ||
                { cat "$work/cg-$side.log" >&2; echo "instructions.sh: callgrind_control -i $1 did not reach $bin" >&2; exit 1; }
        }
        instrument on
        n=$(load "$seconds" "$url")
        instrument off
        # Written at exit: everything counted while instrumentation was on.
        kill "$vg" 2>/dev/null || { cat "$work/cg-$side.log" >&2; echo "instructions.sh: $bin under valgrind died" >&2; exit 1; }
        wait "$vg" 2>/dev/null || true
        # Reaped: not for cleanup to signal again (its PID may be someone else's by then).
        live=()
        for p in "${pids[@]}"; do [ "$p" = "$vg" ] || live+=("$p"); done
        pids=(${live[@]+"${live[@]}"})
        dumps=()
        for f in "$out" "$out".*; do [ -f "$f" ] && dumps+=("$f"); done
        ir=0
        [ "${#dumps[@]}" -eq 0 ] || ir=$(awk '/^totals:/ {s += $2} END {printf "%.0f\n", s}' "${dumps[@]}")
        if [ "${n:-0}" -le 0 ] || [ "$ir" -le 0 ]; then
            cat "$work/cg-$side.log" >&2
            echo "instructions.sh: nothing counted for $bin ($n requests, $ir instructions)" >&2
            exit 1
        fi
        awk -v r="$r" -v s="$side" -v n="$n" -v ir="$ir" -v b="$bin" \
            'BEGIN {printf "%-5s %-4s %12d %14.0f  %s\n", r, s, n, ir / n, b}'
        if [ -n "${STALEMATE_CALLGRIND_DIR:-}" ]; then
            mkdir -p "$STALEMATE_CALLGRIND_DIR"
            for f in "${dumps[@]}"; do cp "$f" "$STALEMATE_CALLGRIND_DIR/$(basename "$f")"; done
        fi
    done
done
