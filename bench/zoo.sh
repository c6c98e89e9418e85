#!/usr/bin/env bash
# Bug-finding power against upstream ground truth: `stalemate explore` on four of
# kube-controller-manager's workload controllers (Job, ReplicaSet, DaemonSet,
# StatefulSet), each at several Kubernetes versions — 1.35 (before KEP-5647), 1.36 with
# its read-your-own-writes checks turned off (`1.36-off`), 1.36, 1.37 — then every
# finding's reproducer run (`stalemate run`, judged alone) on every version. A finding on
# 1.35 whose reproducer fails on 1.35 and 1.36-off and passes on 1.36 is a bug the tool
# found and upstream fixed. Prints one table (markdown) and writes DIR/zoo.json.
#
#   bash bench/zoo.sh [--controllers "job replicaset daemonset statefulset"]
#                     [--versions "1.35 1.36-off 1.36 1.37"] [--budget N] [--jobs N]
#                     [--repeat N] [--reproduce-on "VERSIONS"] [--bin STALEMATE] [--out DIR]
#                     [-- more explore flags]
#
# Setups and workloads: examples/kcm-zoo/ (README there). The figures in docs/zoo.md are
# with the workloads alone: ZOO_ACTIONS=generated adds explore's generated actions.
# Each explore runs on a real
# control plane per trial (--envtest VERSION --with kwok), built by e2e/assets/build.sh
# (~9 min per version the first time on 2 idle cores). The whole plan list unless --budget; a full run
# takes hours on 2 cores (the long freezes of round 2 take 6 minutes a trial).
# --repeat runs each reproducer that many times per version (default 2); --reproduce-on
# names the versions the reproducers run on (default: --versions); --bin runs that
# stalemate binary instead of building this checkout's.
set -euo pipefail
cd "$(dirname "$0")/.."
controllers="job replicaset daemonset statefulset"
versions="1.35 1.36-off 1.36 1.37"
budget=() jobs=2 repeat=2 out="" extra=() reproduce_on="" given_bin=""
while [ $# -gt 0 ]; do
    case $1 in
        --controllers) controllers=$2; shift 2 ;;
        --versions) versions=$2; shift 2 ;;
        --budget) budget=(--budget "$2"); shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --reproduce-on) reproduce_on=$2; shift 2 ;;
        --bin) given_bin=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        *) echo "zoo.sh: unknown flag $1" >&2; exit 2 ;;
    esac
done
reproduce_on=${reproduce_on:-$versions}
command -v python3 >/dev/null 2>&1 || { echo "zoo.sh: python3 is needed to read summary.json" >&2; exit 2; }
out=${out:-zoo-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
if [ -z "$given_bin" ]; then
    cargo build --release --bin stalemate >&2
    given_bin=target/release/stalemate
fi
# A copy: a build while the zoo runs (hours) must not change what the later runs use.
cp "$given_bin" "$out/stalemate"
bin=$PWD/$out/stalemate
case $out in /*) bin=$out/stalemate ;; esac

# The control plane of a version (`1.36-off` is 1.36's).
assets() { bash e2e/assets/build.sh "${1%-off}" | tail -n1; }
# kube-controller-manager's flags for a controller at a version: KEP-5647's checks off
# for `-off`.
gates() { # controller version
    case $2 in
        *-off) echo "--feature-gates=StaleControllerConsistencyJob=false,StaleControllerConsistencyReplicaSet=false,StaleControllerConsistencyDaemonSet=false,StaleControllerConsistencyStatefulSet=false" ;;
    esac
}

for c in $controllers; do
    [ -f "examples/kcm-zoo/$c.yaml" ] || { echo "zoo.sh: no examples/kcm-zoo/$c.yaml" >&2; exit 2; }
    for v in $versions; do
        dir="$out/$c-$v"
        echo "zoo.sh: explore $c on $v → $dir" >&2
        # shellcheck disable=SC2046 # gates is one flag or none
        "$bin" explore --envtest "$(assets "$v")" --with kwok \
            --setup "examples/kcm-zoo/$c.yaml" --workload "sh $PWD/examples/kcm-zoo/$c-workload.sh" \
            --actions "${ZOO_ACTIONS:-none}" \
            --jobs "$jobs" "${budget[@]}" ${extra[@]+"${extra[@]}"} --out "$dir" \
            -- "$PWD/examples/kcm-zoo/kcm.sh" "$c" $(gates "$c" "$v") \
            >"$dir.out" 2>"$dir.err" || true
        [ -f "$dir/summary.json" ] || { echo "zoo.sh: explore $c on $v wrote no summary (see $dir.err)" >&2; continue; }
        # Every finding's reproducer on every version, judged alone.
        python3 - "$dir/summary.json" >"$dir.findings" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for f in s["findings"]:
    print(f["number"])
PY
        # Two reproducers at a time: the long ones spend minutes with a window open and
        # little to do.
        running=0
        while read -r n; do
            for w in $reproduce_on; do
                for i in $(seq "$repeat"); do
                    argv=$(python3 - "$dir/summary.json" "$n" "$(assets "$w")" "$c" "$(gates "$c" "$w")" <<'PY'
import json, shlex, sys
s = json.load(open(sys.argv[1]))
f = next(f for f in s["findings"] if f["number"] == int(sys.argv[2]))
argv = list(f["reproduce"])
argv[argv.index("--envtest") + 1] = sys.argv[3]
cmd = argv.index("--")
argv = argv[:cmd + 1] + [argv[cmd + 1], sys.argv[4]] + ([sys.argv[5]] if sys.argv[5] else [])
print(shlex.join(argv))
PY
)
                    (
                        code=0
                        eval "$argv" >"$dir/finding-$n-on-$w-$i.out" 2>&1 || code=$?
                        echo "$n $w $i $code" >>"$dir.reproduced"
                    ) &
                    running=$((running + 1))
                    if [ "$running" -ge 2 ]; then wait -n; running=$((running - 1)); fi
                done
            done
        done <"$dir.findings"
        wait
    done
done

python3 - "$out" "$controllers" "$versions" "$reproduce_on" <<'PY'
import json, os, sys
out, controllers, versions, reproduce_on = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split()
rows = []
print("| controller | version | trials | minutes | findings | first finding (trial, s) | reproducers fail on (exit 1 / runs) |")
print("|---|---|---|---|---|---|---|")
for c in controllers:
    for v in versions:
        d = os.path.join(out, f"{c}-{v}")
        try:
            s = json.load(open(os.path.join(d, "summary.json")))
        except OSError:
            print(f"| {c} | {v} | — | — | explore failed | — | — |")
            continue
        first = None
        for t in sorted(s["trials"], key=lambda t: t["at"]):
            if t["verdict"] == "fail":
                first = (t["id"], t["at"])
                break
        runs = {}
        try:
            for line in open(d + ".reproduced"):
                n, w, _, code = line.split()
                runs.setdefault(int(n), {}).setdefault(w, []).append(int(code))
        except OSError:
            pass
        where = []
        for f in s["findings"]:
            fails = [f"{w} {sum(1 for x in runs.get(f['number'], {}).get(w, []) if x == 1)}/{len(runs.get(f['number'], {}).get(w, []))}"
                     for w in reproduce_on]
            where.append(f"#{f['number']}: " + ", ".join(fails))
        row = {
            "controller": c, "version": v, "trials": s["trialsRun"], "minutes": round(s["seconds"] / 60, 1),
            "findings": [f["title"] for f in s["findings"]], "first": first, "reproduced": runs,
            "notExercised": s.get("notExercised", 0),
        }
        rows.append(row)
        print(f"| {c} | {v} | {s['trialsRun']} | {row['minutes']} | {len(s['findings'])} | "
              f"{(f'#{first[0]}, {first[1]:.0f} s' if first else 'none')} | {'; '.join(where) or '—'} |")
json.dump(rows, open(os.path.join(out, "zoo.json"), "w"), indent=2)
for r in rows:
    for i, t in enumerate(r["findings"], 1):
        print(f"{r['controller']} {r['version']} #{i}: {t}")
PY
