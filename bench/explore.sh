#!/usr/bin/env bash
# `stalemate explore` on the demo's GitRepository controller (buggy: F1), with --jobs 1
# and --jobs 2 one after the other on this machine: seconds to the first finding, trials
# per minute, and the ratio between the two. A benchmark, not a test: the figures go in
# README "Find bugs you don't know about" and bench/README.md.
#
#   bash bench/explore.sh [--rounds N] [--budget N]
#
# Release builds; the whole plan list unless --budget (shrinking adds a few trials).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=1 budget=""
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --budget) budget="--budget $2"; shift 2 ;;
        *) echo "explore.sh: unknown flag $1" >&2; exit 2 ;;
    esac
done
command -v python3 >/dev/null 2>&1 || { echo "explore.sh: python3 is needed to read summary.json" >&2; exit 2; }
cargo build --release --bin stalemate --example gitrepo-controller >&2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-6s %-5s %8s %8s %10s %12s\n' jobs round trials seconds trials/min first-finding
for round in $(seq "$rounds"); do
    for jobs in 1 2; do
        dir="$out/j$jobs-r$round"
        # shellcheck disable=SC2086 # $budget is a flag and its value, or nothing
        target/release/stalemate explore --setup examples/gitrepo/setup.yaml --jobs "$jobs" $budget \
            --out "$dir" -- target/release/examples/gitrepo-controller >/dev/null 2>&1 || true
        python3 - "$dir/summary.json" "$jobs" "$round" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
first = s.get("firstFindingSeconds")
print(f"{sys.argv[2]:<6} {sys.argv[3]:<5} {s['trialsRun']:>8} {s['seconds']:>8.1f} {s['trialsPerMinute']:>10.1f} "
      f"{(f'{first:.1f}s' if first is not None else 'none'):>12}  ({len(s['findings'])} findings)")
PY
    done
done
