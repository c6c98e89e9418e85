#!/usr/bin/env bash
# stalemate beside its peers in front of a REAL control plane (kube-apiserver + etcd from
# `stalemate envtest`), in one run on one machine — the table in bench/README.md:
#   direct        the kube-apiserver itself, HTTPS
#   nginx         nginx (Debian) as a TLS reverse proxy: HTTP/2 to clients, a keep-alive
#                 pool of HTTP/1.1 connections upstream, upstream TLS verified
#   kubectl-proxy `kubectl proxy` (plain HTTP on its client side, HTTP/1.1 only: no h2 rows)
#   stalemate     `stalemate serve` (TLS both sides, HTTP/2 to clients)
#   stalemate-again  (--aa) a second `stalemate serve` of the same build and flags: its
#                 ratio to the first is what two identical proxies show on this machine
#   nginx-batch, stalemate-normal  (--policies) nginx under SCHED_BATCH (`chrt --batch 0`,
#                 the policy stalemate's serving threads take by default) and stalemate
#                 under the kernel's default (`serve --scheduling normal`, nginx's): the
#                 comparison like for like under either policy, beside the one as shipped
# Workloads: GET of one ConfigMap and LIST of 500 ConfigMaps of 1 KiB in namespace
# `bench`; wrk -t1 -c8 (HTTP/1.1) and h2load -c4 -m10 (HTTP/2). Requests/s, and each
# proxy's own CPU time per request from /proc/PID/stat (user + system, its children
# included: nginx's workers); also the control plane's (apiserver + etcd) and the whole
# machine's (/proc/stat, load generator included) per request: on 2 shared cores the
# rate follows what a request costs all of them, not the proxy alone.
#
#   bash bench/peers.sh [--quick] [--rounds N] [--seconds S] [--max-steal PCT] [--aa]
#                       [--policies] [--syscalls]
#
#   --rounds N       repetitions (default 3): each round runs every (workload, protocol,
#                    target) once, targets in a rotated order, so that the machine's
#                    noise spreads over all of them; the table shows medians over rounds
#   --seconds S      length of one run (default 10)
#   --max-steal PCT  a run during which the hypervisor stole more than PCT% of the
#                    machine's CPU time (/proc/stat) is run again, at most twice (default 10)
#   --quick          --rounds 2 --seconds 2: checks the script, the figures mean little
#   --aa             also measure stalemate-again (above), and print each row's A/A ratio
#                    beside stalemate's ratio to nginx: a gap to nginx no larger than the
#                    gap between two copies of one build is not a difference
#   --policies       also measure nginx-batch and stalemate-normal (above), and print
#                    stalemate against nginx as shipped, both under the kernel's default
#                    and both under SCHED_BATCH: how much of a difference is the policy
#   --syscalls       also count, per request, each proxy's system calls that wait for
#                    events (epoll_wait), read and write sockets, and its context switches
#                    (`perf stat` on syscall tracepoints, all its threads and children):
#                    where a proxy's kernel time goes. Counting costs the proxy time per
#                    system call (more to the one that makes more): take CPU and req/s
#                    from a run without it
#   STALEMATE_BIN    the proxy binary (default: target/release/stalemate, built here);
#                    two builds compared = two runs of this script, one after the other
#   STALEMATE_ARGS   extra `stalemate serve` flags, e.g. "--max-view-bytes 0"
#
# Identity: every client carries its own service-account token (`kubectl create token`,
# one per tool and target) allowed only get/list of configmaps in `bench`. nginx and
# stalemate pass the client's Authorization through and present no client certificate
# upstream, so the apiserver authenticates and authorizes the client itself. `kubectl
# proxy` cannot do that: it authenticates with its own kubeconfig (here a token of its own
# service account, bound to the same Role, so the apiserver does the same RBAC work) and
# its clients send none. Checked before any load: GET 200 through each target, and the
# identity the apiserver sees (SelfSubjectReview) is the service account, not the admin.
#
# Prints the table (medians, ratios to direct and to nginx with the spread of each round's
# own ratio to nginx), then, as its last line, the path of a JSON result kept under
# ${STALEMATE_CACHE:-~/.cache/stalemate}/bench/.
# Installs wrk, h2load (nghttp2-client) and nginx from Debian when missing; the control
# plane comes from e2e/assets/build.sh (KUBEBUILDER_ASSETS). Loopback only; every process
# started here is stopped on exit. Load generators, proxies and the apiserver share the
# cores: compare figures within one run, they are not capacity.
set -euo pipefail
cd "$(dirname "$0")/.."

usage="usage: bash bench/peers.sh [--quick] [--rounds N] [--seconds S] [--max-steal PCT] [--aa] [--policies] [--syscalls]"
rounds=3 seconds=10 max_steal=10 attempts_max=3 aa=0 policies=0 syscalls=0
while [ $# -gt 0 ]; do
    case $1 in
        --quick) rounds=2 seconds=2; shift ;;
        --aa) aa=1; shift ;;
        --policies) policies=1; shift ;;
        --syscalls) syscalls=1; shift ;;
        --rounds | --seconds | --max-steal)
            # A whole number; 0 only for --max-steal (then any steal repeats a run).
            if [ $# -lt 2 ] || ! [[ $2 =~ ^[0-9]+$ ]] || { [ "$2" -eq 0 ] && [ "$1" != --max-steal ]; }; then
                echo "peers.sh: $1 needs a whole number (at least 1 for --rounds and --seconds), not '${2:-}'" >&2; exit 2
            fi
            case $1 in --rounds) rounds=$2 ;; --seconds) seconds=$2 ;; --max-steal) max_steal=$2 ;; esac
            shift 2 ;;
        -h | --help) echo "$usage"; exit 0 ;;
        *) echo "peers.sh: unknown argument $1" >&2; echo "$usage" >&2; exit 2 ;;
    esac
done
say() { echo "peers: $*" >&2; }
die() { echo "peers.sh: $*" >&2; exit 1; }

have() { command -v "$1" >/dev/null 2>&1; }
missing=()
have h2load || missing+=(nghttp2-client)
have wrk || missing+=(wrk)
have nginx || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]} (apt-get)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
for tool in curl python3 setsid; do have "$tool" || die "$tool is needed and not installed"; done
# The events --syscalls counts: (column, perf events summed into it).
syscall_columns=(waits reads writes switches)
declare -A syscall_events=(
    [waits]="syscalls:sys_enter_epoll_wait syscalls:sys_enter_epoll_pwait"
    [reads]="syscalls:sys_enter_read syscalls:sys_enter_readv syscalls:sys_enter_recvfrom syscalls:sys_enter_recvmsg"
    [writes]="syscalls:sys_enter_write syscalls:sys_enter_writev syscalls:sys_enter_sendto syscalls:sys_enter_sendmsg"
    [switches]="context-switches"
)
if [ "$syscalls" = 1 ]; then
    have perf || die "--syscalls needs perf (Debian: linux-perf)"
    perf stat -e syscalls:sys_enter_epoll_wait -o /dev/null -- true 2>/dev/null ||
        die "--syscalls: perf cannot count syscall tracepoints here (tracefs, and root or kernel.perf_event_paranoid=-1)"
fi

if [ -n "${STALEMATE_BIN:-}" ]; then
    bin=$STALEMATE_BIN
else
    cargo build --release --locked -q --bin stalemate
    bin=target/release/stalemate
fi
[ -x "$bin" ] || die "$bin is not an executable (STALEMATE_BIN)"
# shellcheck source=bench/lib.sh
. bench/lib.sh
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# --- the control plane -------------------------------------------------------------------
start_real "$bin"
api_hostport=${api_url#https://}
# `kubectl proxy` gets a service account of its own with the same rights.
k -n bench create serviceaccount kubectl-proxy >/dev/null
k -n bench create rolebinding kubectl-proxy --role=configmap-reader --serviceaccount=bench:kubectl-proxy >/dev/null
targets=(direct nginx kubectl-proxy stalemate)
[ "$aa" = 0 ] || targets+=(stalemate-again)
[ "$policies" = 0 ] || targets+=(nginx-batch stalemate-normal)
declare -A token
for tool in wrk h2load; do
    for target in "${targets[@]}"; do
        [ "$target" = kubectl-proxy ] && continue
        token[$tool-$target]=$(client_token)
    done
done
kp_token=$(client_token kubectl-proxy)
list_items=$(curl -fsS --cacert "$ca" -H "Authorization: Bearer ${token[wrk-direct]}" "$api_url$list_path" |
    python3 -c 'import json, sys; print(len(json.load(sys.stdin)["items"]))')
[ "$list_items" = 500 ] || die "the LIST returns $list_items ConfigMaps, not 500"

# --- stalemate ---------------------------------------------------------------------------
# Upstream: the admin kubeconfig, used only for requests that carry no Authorization; the
# clients' own tokens are forwarded unchanged (`stalemate serve --help`, "Credentials").
read -r -a extra <<<"${STALEMATE_ARGS:-}"
upstream_kubeconfig=$work/admin.kubeconfig
start_proxy stalemate "$bin" ${extra[@]+"${extra[@]}"}
stalemate_pid=$proxy_pid
stalemate_url=$proxy_url
again_pid="" again_url=""
if [ "$aa" = 1 ]; then
    start_proxy stalemate-again "$bin" ${extra[@]+"${extra[@]}"}
    again_pid=$proxy_pid
    again_url=$proxy_url
fi
normal_pid="" normal_url=""
if [ "$policies" = 1 ]; then
    start_proxy stalemate-normal "$bin" ${extra[@]+"${extra[@]}"} --scheduling normal
    normal_pid=$proxy_pid
    normal_url=$proxy_url
fi

# --- nginx -------------------------------------------------------------------------------
# Its own certificate (from `stalemate certs`), upstream TLS verified against the cluster
# CA (the apiserver's certificate names localhost), a keep-alive pool of HTTP/1.1
# connections, no buffering. The client's Authorization header goes through as it is
# (nginx's default), and nginx presents no client certificate: the client's identity.
# keepalive_requests: nginx's default (1000) closes a client connection — HTTP/2 ones too,
# with GOAWAY — and an upstream one after 1000 requests; h2load does not reconnect (its
# clients just stop), and new TLS connections are not what is compared here.
"$bin" certs --out "$work/nginx-tls" >/dev/null 2>&1
# start_nginx NAME [WRAPPER...]: nginx in $work/NAME on a free port, started through
# WRAPPER (chrt); sets $nginx_pid and $nginx_url.
start_nginx() {
    local dir=$work/$1 port
    shift
    port=$(free_port)
    mkdir -p "$dir"
    cat >"$dir/nginx.conf" <<EOF
worker_processes auto;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    upstream apiserver { server $api_hostport; keepalive 64; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:$port ssl http2;
        ssl_certificate $work/nginx-tls/tls.crt;
        ssl_certificate_key $work/nginx-tls/tls.key;
        location / {
            proxy_pass https://apiserver;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_ssl_server_name on;
            proxy_ssl_name localhost;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate $ca;
            proxy_ssl_session_reuse on;
            proxy_buffering off;
        }
    }
}
EOF
    start_group /dev/null "$dir/stderr.log" "$@" "$nginx_bin" -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;'
    nginx_pid=$group_pid
    nginx_url="https://127.0.0.1:$port"
}
batch_nginx_pid="" batch_nginx_url=""
if [ "$policies" = 1 ]; then
    # The master under SCHED_BATCH from the start: its workers inherit the policy.
    start_nginx nginx-batch chrt --batch 0
    batch_nginx_pid=$nginx_pid
    batch_nginx_url=$nginx_url
fi
start_nginx nginx

# --- kubectl proxy -----------------------------------------------------------------------
# Its own kubeconfig: the apiserver, the cluster CA and its service account's token.
# disable-compression as in the admin kubeconfig: otherwise its Go transport asks for
# gzip and the apiserver compresses every LIST, which no other target does (wrk and
# h2load do not ask for it).
cat >"$work/kubectl-proxy.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster: {server: "$api_url", certificate-authority: "$ca", disable-compression: true}
users:
- name: kubectl-proxy
  user: {token: "$kp_token"}
contexts:
- name: bench
  context: {cluster: bench, user: kubectl-proxy}
current-context: bench
EOF
start_group "$work/kubectl-proxy.out" "$work/kubectl-proxy.log" "$kubectl" proxy \
    --kubeconfig "$work/kubectl-proxy.kubeconfig" --cache-dir "$work/kubectl-cache-proxy" --address 127.0.0.1 --port 0
kp_pid=$group_pid
for _ in $(seq 200); do grep -q 'Starting to serve on' "$work/kubectl-proxy.out" && break; sleep 0.05; done
kp_addr=$(sed -n 's/^Starting to serve on //p' "$work/kubectl-proxy.out")
[ -n "$kp_addr" ] || { cat "$work/kubectl-proxy.log" >&2; die "kubectl proxy did not start"; }
kp_url="http://$kp_addr"

base_of() { case $1 in direct) echo "$api_url" ;; nginx) echo "$nginx_url" ;; kubectl-proxy) echo "$kp_url" ;; stalemate) echo "$stalemate_url" ;; stalemate-again) echo "$again_url" ;;
    nginx-batch) echo "$batch_nginx_url" ;; stalemate-normal) echo "$normal_url" ;; esac; }
pid_of() { case $1 in direct) echo "" ;; nginx) echo "$nginx_pid" ;; kubectl-proxy) echo "$kp_pid" ;; stalemate) echo "$stalemate_pid" ;; stalemate-again) echo "$again_pid" ;;
    nginx-batch) echo "$batch_nginx_pid" ;; stalemate-normal) echo "$normal_pid" ;; esac; }
# auth TOOL TARGET: the header arguments that client sends (none to kubectl proxy).
auth() { [ "$2" = kubectl-proxy ] || printf '%s\n' -H "Authorization: Bearer ${token[$1-$2]}"; }

# --- before any load: 200 with the client's token, and the apiserver sees the client -----
# curl does not verify the proxies' certificates (-k), as wrk and h2load do not.
for url in "$nginx_url" ${batch_nginx_url:+"$batch_nginx_url"}; do
    for _ in $(seq 100); do curl -ksS -o /dev/null "$url/healthz" 2>/dev/null && break; sleep 0.05; done
done
identities=()
for target in "${targets[@]}"; do
    base=$(base_of "$target")
    protos=(--http1.1)
    [ "$target" = kubectl-proxy ] || protos+=(--http2)
    for proto in "${protos[@]}"; do
        # The token wrk (HTTP/1.1) or h2load (HTTP/2) will send.
        mapfile -t hdr < <(auth "$([ "$proto" = --http2 ] && echo h2load || echo wrk)" "$target")
        code=$(curl -ksS "$proto" ${hdr[@]+"${hdr[@]}"} -o /dev/null -w '%{http_code}' "$base$get_path") || code=000
        [ "$code" = 200 ] || die "GET $get_path through $target ($proto) answered $code, not 200"
        code=$(curl -ksS "$proto" ${hdr[@]+"${hdr[@]}"} -o /dev/null -w '%{http_code}' "$base/api/v1/namespaces/bench/secrets") || code=000
        [ "$code" = 403 ] || die "GET of secrets through $target ($proto) answered $code, not 403: the apiserver does not see the service account"
    done
    who=$(curl -ksS ${hdr[@]+"${hdr[@]}"} -H 'Content-Type: application/json' -X POST \
        -d '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
        "$base/apis/authentication.k8s.io/v1/selfsubjectreviews" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["status"]["userInfo"]["username"])') ||
        die "SelfSubjectReview through $target failed"
    case $target in
        kubectl-proxy) want=system:serviceaccount:bench:kubectl-proxy ;;
        *) want=system:serviceaccount:bench:bench-client ;;
    esac
    [ "$who" = "$want" ] || die "through $target the apiserver sees $who, not $want"
    identities+=("$target=$who")
done
say "GET 200, secrets 403, identity seen by the apiserver: ${identities[*]}"
# policies PID: the scheduling policies (0 SCHED_OTHER, 3 SCHED_BATCH; field 41 of
# /proc/PID/task/TID/stat) of the threads that serve: nginx's master and workers, or
# stalemate's serving threads; distinct values, comma-separated.
policies_of() {
    local p t
    for p in "$1" $(pgrep -P "$1" || true); do
        for t in /proc/"$p"/task/*; do
            case $(cat "$t/comm" 2>/dev/null) in stalemate-serve*|nginx) ;; *) continue ;; esac
            sed 's/.*) //' "$t/stat" 2>/dev/null | awk '{print $39}'
        done
    done | sort -u | paste -sd, -
}
scheduling=()
for target in "${targets[@]}"; do
    pid=$(pid_of "$target")
    if [ -z "$pid" ] || [ "$target" = kubectl-proxy ]; then continue; fi
    got=$(policies_of "$pid")
    case $target in
        nginx-batch) [ "$got" = 3 ] || die "nginx-batch serves under policy $got, not SCHED_BATCH (3)" ;;
        stalemate-normal | nginx) [ "$got" = 0 ] || die "$target serves under policy $got, not SCHED_OTHER (0)" ;;
    esac
    scheduling+=("$target=$got")
done
say "scheduling policy of the serving threads (0 SCHED_OTHER, 3 SCHED_BATCH): ${scheduling[*]}"
get_bytes=$(curl -fsS --cacert "$ca" -H "Authorization: Bearer ${token[wrk-direct]}" "$api_url$get_path" | wc -c)
list_bytes=$(curl -fsS --cacert "$ca" -H "Authorization: Bearer ${token[wrk-direct]}" "$api_url$list_path" | wc -c)

# --- measuring ---------------------------------------------------------------------------
# CPU ticks (user + system) of a process and its children (nginx's workers).
cpu_ticks() {
    local total=0 p
    for p in "$1" $(pgrep -P "$1" || true); do
        total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    echo "$total"
}
# The machine's CPU time, the part of it stolen by the hypervisor, and the part busy
# (user, nice, system, irq, softirq: everything on it, load generator included), in ticks.
cpu_steal() { awk '/^cpu / {print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $9, $2 + $3 + $4 + $7 + $8; exit}' /proc/stat; }
tick=$(getconf CLK_TCK)

# count_syscalls PID: count (--syscalls) the events of syscall_events in PID, its threads
# and its children from now on; stop_syscalls stops and sets syscall_totals to the four
# totals, tab-separated (in this shell: perf is its child, to be waited for). perf starts disabled and is enabled through its control FIFO, which
# acknowledges: it takes ~2 s to read the tracepoints' formats, and the count must cover
# the load exactly.
count_syscalls() {
    local events="" c e attach=$1 children
    for c in "${syscall_columns[@]}"; do for e in ${syscall_events[$c]}; do events+=${events:+,}$e; done; done
    children=$(pgrep -P "$1" | paste -sd, - || true)
    [ -z "$children" ] || attach+=,$children
    rm -f "$work/perf-stat.csv" "$work/perf-ctl" "$work/perf-ack"
    mkfifo "$work/perf-ctl" "$work/perf-ack"
    perf stat -D -1 --control "fifo:$work/perf-ctl,$work/perf-ack" -x, -e "$events" -p "$attach" \
        -o "$work/perf-stat.csv" 2>>"$work/perf-stat.log" &
    perf_pid=$!
    exec 8>"$work/perf-ctl" 9<"$work/perf-ack"
    echo enable >&8
    read -r -t 60 _ <&9 || die "perf stat did not start counting (see $work/perf-stat.log)"
}
stop_syscalls() {
    local c e totals=()
    echo disable >&8
    read -r -t 60 _ <&9 || die "perf stat did not stop counting (see $work/perf-stat.log)"
    exec 8>&- 9<&-
    kill -INT "$perf_pid" 2>/dev/null || true
    wait "$perf_pid" 2>/dev/null || true
    for c in "${syscall_columns[@]}"; do
        local sum=0
        for e in ${syscall_events[$c]}; do
            sum=$((sum + $(awk -F, -v e="$e" '$3 == e && $1 ~ /^[0-9]+$/ {print $1; f = 1} END {if (!f) print 0}' "$work/perf-stat.csv")))
        done
        totals+=("$sum")
    done
    syscall_totals=$(IFS=$'\t'; echo "${totals[*]}")
}

# load WORKLOAD PROTOCOL TARGET: one run; sets rps, n (requests), bad (non-2xx or errors).
load() {
    local path=$get_path out hdr
    [ "$1" = list ] && path=$list_path
    mapfile -t hdr < <(auth "$([ "$2" = h1 ] && echo wrk || echo h2load)" "$3")
    if [ "$2" = h1 ]; then
        out=$(wrk -t1 -c8 -d"${seconds}s" ${hdr[@]+"${hdr[@]}"} "$(base_of "$3")$path" 2>&1) || die "wrk failed: $out"
        rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
        n=$(awk '/requests in/ {print $1}' <<<"$out")
        bad=$(awk '/^ *Non-2xx or 3xx responses:/ {b += $NF} /^ *Socket errors:/ {b += $4 + $6 + $8 + $10} END {print b + 0}' <<<"$out" | tr -d ',')
    else
        out=$(h2load -c4 -m10 -D "$seconds" ${hdr[@]+"${hdr[@]}"} "$(base_of "$3")$path" 2>&1) || die "h2load failed: $out"
        rps=$(awk '/^finished in/ {print $4}' <<<"$out")
        n=$(awk '/^requests:/ {print $8}' <<<"$out")
        bad=$(awk '/^requests:/ {f = $10 + $12 + $14} /^status codes:/ {s = $5 + $7 + $9} END {print f + s}' <<<"$out")
    fi
    if [ -z "$rps" ] || [ -z "$n" ]; then die "could not read the $1 $2 $3 result: $out"; fi
}

runs=$work/runs.tsv
: >"$runs"
retried=0
# run ROUND WORKLOAD PROTOCOL TARGET: one measurement, again while steal is above the limit.
run() {
    local attempt c0 c1 a0 a1 s0 s1 t0 t1 b0 b1 pid steal cpu api machine sys best="" best_steal=""
    pid=$(pid_of "$4")
    per_req() { awk -v d="$1" -v n="$n" -v t="$tick" 'BEGIN {printf "%.4f", d / t * 1000 / (n > 0 ? n : 1)}'; }
    for attempt in $(seq "$attempts_max"); do
        read -r t0 s0 b0 < <(cpu_steal)
        c0=0; [ -z "$pid" ] || c0=$(cpu_ticks "$pid")
        a0=$(cpu_ticks "$cp_pid")
        [ "$syscalls" = 0 ] || [ -z "$pid" ] || count_syscalls "$pid"
        load "$2" "$3" "$4"
        sys="-	-	-	-"
        if [ "$syscalls" = 1 ] && [ -n "$pid" ]; then
            stop_syscalls
            sys=$(echo "$syscall_totals" | awk -F'\t' -v n="$n" 'BEGIN {OFS = "\t"} {n = (n > 0 ? n : 1); for (i = 1; i <= NF; i++) $i = sprintf("%.2f", $i / n); print}')
        fi
        a1=$(cpu_ticks "$cp_pid")
        c1=0; [ -z "$pid" ] || c1=$(cpu_ticks "$pid")
        read -r t1 s1 b1 < <(cpu_steal)
        steal=$(awk -v s=$((s1 - s0)) -v t=$((t1 - t0)) 'BEGIN {printf "%.1f", (t > 0 ? 100 * s / t : 0)}')
        cpu=-
        [ -z "$pid" ] || cpu=$(per_req $((c1 - c0)))
        # The control plane's (apiserver and etcd) and the whole machine's, per request:
        # what a path through a proxy costs the others, and the machine all told.
        api=$(per_req $((a1 - a0)))
        machine=$(per_req $((b1 - b0)))
        # Keep the run with the least steal.
        if [ -z "$best" ] || awk -v a="$steal" -v b="$best_steal" 'BEGIN {exit !(a < b)}'; then
            best="$1	$2	$3	$4	$rps	$cpu	$n	$bad	$steal	$attempt	$api	$machine	$sys"
            best_steal=$steal
        fi
        awk -v a="$steal" -v m="$max_steal" 'BEGIN {exit !(a > m)}' || break
        if [ "$attempt" -lt "$attempts_max" ]; then
            say "  steal $steal% > $max_steal% during $2 $3 $4: running it again"
            retried=$((retried + 1))
        else
            say "  steal still $steal% > $max_steal% after $attempts_max runs of $2 $3 $4: keeping the one with the least"
        fi
    done
    echo "$best" >>"$runs"
    IFS=$'\t' read -r _ _ _ _ rps cpu n bad steal attempt _ _ _ _ _ _ <<<"$best"
    say "$(printf 'round %s  %-4s %s  %-15s %9.0f req/s  CPU %s ms/req  steal %s%%%s' "$1" "$2" "$3" "$4" "$rps" "$cpu" "$steal" \
        "$([ "$attempt" = 1 ] || echo " (run $attempt)")$([ "$bad" = 0 ] || echo "  $bad NON-2xx/ERRORS")")"
}

# Warm-up, not measured: connections, the apiserver's caches, nginx's upstream pool.
say "warming up (1 s per target)"
for target in "${targets[@]}"; do
    mapfile -t hdr < <(auth wrk "$target")
    wrk -t1 -c8 -d1s ${hdr[@]+"${hdr[@]}"} "$(base_of "$target")$list_path" >/dev/null 2>&1 || true
done

say "$rounds rounds of ${seconds}s runs; wrk -t1 -c8 (h1), h2load -c4 -m10 (h2)"
started=$(date +%s)
for round in $(seq "$rounds"); do
    for wp in "get h1" "get h2" "list h1" "list h2"; do
        read -r workload protocol <<<"$wp"
        # The targets in turn, starting one further each round: none always runs first.
        for i in "${!targets[@]}"; do
            target=${targets[$(((i + round - 1) % ${#targets[@]}))]}
            [ "$target" = kubectl-proxy ] && [ "$protocol" = h2 ] && continue
            run "$round" "$workload" "$protocol" "$target"
        done
    done
done
elapsed=$(($(date +%s) - started))

# --- the table and the JSON --------------------------------------------------------------
cache=${STALEMATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stalemate}
mkdir -p "$cache/bench"
result=$cache/bench/peers-$(date -u +%Y%m%dT%H%M%SZ).json
first() { "$@" 2>&1 | head -n1 || true; }
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+dirty"
# Metadata reaches Python through its environment (no quoting of version strings in code).
M_date=$(date -u +%Y-%m-%dT%H:%M:%SZ) M_kernel=$(uname -r) M_nproc=$(nproc) \
    M_cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo) M_loadavg_at_end=$(cut -d' ' -f1-3 /proc/loadavg) \
    M_aa=$aa M_policies=$policies M_syscalls=$syscalls M_rounds=$rounds M_seconds=$seconds M_max_steal_pct=$max_steal M_runs_repeated_for_steal=$retried M_elapsed_s=$elapsed \
    M_stalemate=$(first "$bin" --version) M_stalemate_bin=$bin M_stalemate_args=${STALEMATE_ARGS:-} M_commit=$commit \
    M_kube_apiserver=$(first "$KUBEBUILDER_ASSETS/kube-apiserver" --version) M_etcd=$(first "$KUBEBUILDER_ASSETS/etcd" --version) \
    M_kubectl=$(first "$kubectl" version --client) M_nginx=$(first "$nginx_bin" -v) M_wrk=$(first wrk -v) \
    M_h2load=$(first h2load --version) M_identities="${identities[*]}" M_scheduling="${scheduling[*]}" M_get_bytes=$get_bytes M_list_bytes=$list_bytes M_list_items=$list_items \
    python3 - "$runs" "$result" <<'PY'
import json, os, statistics, sys
runs_file, result = sys.argv[1], sys.argv[2]
meta = {k[2:]: v for k, v in sorted(os.environ.items()) if k.startswith("M_")}
for k in ("aa", "policies", "syscalls", "nproc", "rounds", "seconds", "max_steal_pct", "runs_repeated_for_steal", "elapsed_s", "get_bytes", "list_bytes", "list_items"):
    meta[k] = int(meta[k])
meta["h1"] = "wrk -t1 -c8"
meta["h2"] = "h2load -c4 -m10"
meta["identity"] = ("each client its own service-account token; nginx and stalemate forward it, "
                    "kubectl proxy uses its own (a service-account token in its kubeconfig)")
SYSCALL_COLUMNS = ("epoll_waits", "socket_reads", "socket_writes", "context_switches")
runs = []
for line in open(runs_file):
    r, w, p, t, rps, cpu, n, bad, steal, attempt, api, machine, *sys = line.rstrip("\n").split("\t")
    runs.append({"round": int(r), "workload": w, "protocol": p, "target": t, "req_per_s": float(rps),
                 "cpu_ms_per_req": None if cpu == "-" else float(cpu), "requests": int(n),
                 "non_2xx_or_errors": int(bad), "steal_pct": float(steal), "attempt": int(attempt),
                 "apiserver_cpu_ms_per_req": float(api), "machine_cpu_ms_per_req": float(machine)})
    if meta["syscalls"] and "-" not in sys:
        runs[-1]["syscalls_per_req"] = dict(zip(SYSCALL_COLUMNS, map(float, sys)))
targets = (["direct", "nginx", "kubectl-proxy", "stalemate"] + (["stalemate-again"] if meta["aa"] else [])
           + (["nginx-batch", "stalemate-normal"] if meta["policies"] else []))
cases = [("get", "h1"), ("get", "h2"), ("list", "h1"), ("list", "h2")]
rows = []
med = {}
for w, p in cases:
    for t in targets:
        rs = [r for r in runs if (r["workload"], r["protocol"], r["target"]) == (w, p, t)]
        if not rs:
            continue
        cpus = [r["cpu_ms_per_req"] for r in rs if r["cpu_ms_per_req"] is not None]
        row = {"workload": w, "protocol": p, "target": t,
               "req_per_s": round(statistics.median(r["req_per_s"] for r in rs), 1),
               "cpu_ms_per_req": round(statistics.median(cpus), 4) if cpus else None,
               "apiserver_cpu_ms_per_req": round(statistics.median(r["apiserver_cpu_ms_per_req"] for r in rs), 4),
               "machine_cpu_ms_per_req": round(statistics.median(r["machine_cpu_ms_per_req"] for r in rs), 4),
               "req_per_s_rounds": [r["req_per_s"] for r in rs],
               "cpu_ms_per_req_rounds": cpus,
               "non_2xx_or_errors": sum(r["non_2xx_or_errors"] for r in rs)}
        counted = [r["syscalls_per_req"] for r in rs if "syscalls_per_req" in r]
        if counted:
            row["syscalls_per_req"] = {c: round(statistics.median(s[c] for s in counted), 2) for c in SYSCALL_COLUMNS}
        rows.append(row)
        med[w, p, t] = row
# Each round's ratio to nginx, from the two runs of that round (run one after the other):
# the machine's drift over the whole run cancels out, and their spread says whether a
# difference between medians is more than noise.
by_round = {(r["workload"], r["protocol"], r["target"], r["round"]): r for r in runs}
for row in rows:
    key = (row["workload"], row["protocol"], row["target"])
    for field in ("req_per_s", "cpu_ms_per_req", "apiserver_cpu_ms_per_req", "machine_cpu_ms_per_req"):
        ratios = []
        for rnd in sorted({r["round"] for r in runs}):
            a, b = by_round.get(key + (rnd,)), by_round.get(key[:2] + ("nginx", rnd))
            if a and b and a[field] is not None and b[field]:
                ratios.append(round(a[field] / b[field], 3))
        row[field + "_ratio_to_nginx_rounds"] = ratios
        # The A/A: the same build against itself; and --policies: stalemate against nginx
        # with both under SCHED_BATCH, and with both under the kernel's default.
        for against, mine in (("stalemate", "stalemate-again"), ("nginx-batch", "stalemate"), ("nginx", "stalemate-normal")):
            if key[2] != mine:
                continue
            row[f"{field}_ratio_to_{against}_rounds"] = [
                round(a[field] / b[field], 3) for rnd in sorted({r["round"] for r in runs})
                if (a := by_round.get(key + (rnd,))) and (b := by_round.get(key[:2] + (against, rnd)))
                and a[field] is not None and b[field]]
json.dump({"rows": rows, "meta": meta, "runs": runs}, open(result, "w"), indent=1)

name = {"get": "GET", "list": "LIST-500", "h1": "HTTP/1.1", "h2": "HTTP/2"}
def line(label, cells, width=17):
    print(f"{label:<30}" + "".join(f"{c:>{width}}" for c in cells))
def fmt(v, spec):
    return "-" if v is None else format(v, spec)
def ratio(a, b):
    return "-" if a is None or not b else f"{a / b:.2f}"
print(f"medians of {meta['rounds']} rounds of {meta['seconds']} s; {meta['nproc']} cores shared by wrk/h2load, proxies and apiserver")
line("", targets)
for w, p in cases:
    line(f"{name[w]} {name[p]} req/s", [fmt(med[w, p, t]["req_per_s"], ".0f") if (w, p, t) in med else "-" for t in targets])
for label, field in (("proxy", "cpu_ms_per_req"), ("apiserver", "apiserver_cpu_ms_per_req"), ("machine", "machine_cpu_ms_per_req")):
    for w, p in cases:
        line(f"{label} ms/{name[w].split('-')[0]} {name[p]}", [fmt(med[w, p, t][field], ".3f") if (w, p, t) in med else "-" for t in targets])
print("ratio to direct (req/s)")
for w, p in cases:
    d = med.get((w, p, "direct"), {}).get("req_per_s")
    line(f"  {name[w]} {name[p]}", [ratio(med[w, p, t]["req_per_s"], d) if (w, p, t) in med else "-" for t in targets])
def to_nginx(row, field):
    rs = row.get(field + "_ratio_to_nginx_rounds") or []
    if not rs:
        return "-"
    if row["target"] == "nginx" or len(rs) == 1:
        return f"{rs[0]:.2f}"
    return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})"
print("ratio to nginx (req/s: higher is better; CPU: lower is cheaper): the median of the rounds'")
print("own ratios (each round runs the two back to back), lowest-highest in brackets: noise if it spans 1")
line("", targets, width=18)
for field, label in (("req_per_s", "req/s"), ("cpu_ms_per_req", "CPU"),
                     ("apiserver_cpu_ms_per_req", "apiserver"), ("machine_cpu_ms_per_req", "machine")):
    for w, p in cases:
        line(f"  {name[w]} {name[p]} {label}", [to_nginx(med[w, p, t], field) if (w, p, t) in med else "-"
                                                for t in targets], width=18)
def spread(rs):
    if not rs:
        return "-"
    above = sum(r > 1 for r in rs)
    return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f}) {above}/{len(rs)} >1"
if meta["aa"]:
    print("stalemate against nginx beside stalemate against a second copy of itself (A/A, the same build")
    print("and flags): each round's ratio, median (lowest-highest) and how many rounds came out above 1;")
    print("a gap to nginx the A/A shows as well is the machine, not the proxy")
    line("", ["stalemate/nginx", "A/A"], width=28)
    for field, label in (("req_per_s", "req/s"), ("cpu_ms_per_req", "CPU")):
        for w, p in cases:
            s, a = med.get((w, p, "stalemate"), {}), med.get((w, p, "stalemate-again"), {})
            line(f"  {name[w]} {name[p]} {label}", [spread(s.get(field + "_ratio_to_nginx_rounds")),
                                                    spread(a.get(field + "_ratio_to_stalemate_rounds"))], width=28)
if meta["policies"]:
    print("stalemate against nginx as each ships (stalemate's serving threads SCHED_BATCH, nginx the kernel's")
    print("default), both under the default (stalemate --scheduling normal) and both under SCHED_BATCH (nginx")
    print("started by chrt --batch 0): each round's ratio, median (lowest-highest) and rounds above 1")
    line("", ["as shipped", "both default", "both batch"], width=28)
    for field, label in (("req_per_s", "req/s"), ("cpu_ms_per_req", "CPU"), ("machine_cpu_ms_per_req", "machine")):
        for w, p in cases:
            s, n = med.get((w, p, "stalemate"), {}), med.get((w, p, "stalemate-normal"), {})
            line(f"  {name[w]} {name[p]} {label}", [spread(s.get(field + "_ratio_to_nginx_rounds")),
                                                    spread(n.get(field + "_ratio_to_nginx_rounds")),
                                                    spread(s.get(field + "_ratio_to_nginx-batch_rounds"))], width=28)
if meta["syscalls"]:
    print("per request, medians (--syscalls: perf stat on the proxy's threads and children): epoll waits /")
    print("socket reads (read, readv, recvfrom, recvmsg) / writes (write, writev, sendto, sendmsg) / context switches")
    proxies = [t for t in targets if t != "direct"]
    line("", proxies, width=24)
    for w, p in cases:
        line(f"  {name[w]} {name[p]}", ["/".join(f"{s[c]:.1f}" for c in SYSCALL_COLUMNS) if (s := med.get((w, p, t), {}).get("syscalls_per_req")) else "-"
                                        for t in proxies], width=24)
bad = sum(r["non_2xx_or_errors"] for r in runs)
high = [r for r in runs if r["steal_pct"] > meta["max_steal_pct"]]
print(f"GET {meta['get_bytes']} B, LIST of {meta['list_items']} = {meta['list_bytes']} B; {meta['h1']} (h1), {meta['h2']} (h2); "
      f"{meta['runs_repeated_for_steal']} run(s) repeated for steal > {meta['max_steal_pct']}%"
      + (f", {len(high)} kept above it" if high else "") + f"; {meta['elapsed_s']} s of runs")
print(f"{meta['kube_apiserver']}, {meta['etcd']}, {meta['nginx']}, {meta['wrk'].split(' Copyright')[0]}, {meta['h2load']}, "
      f"{meta['stalemate']} ({meta['stalemate_bin']} {meta['stalemate_args']}".rstrip() + f", {meta['commit']})")
print(f"serving threads' scheduling policy (0 SCHED_OTHER, 3 SCHED_BATCH): {meta['scheduling']}")
if bad:
    print(f"WARNING: {bad} non-2xx responses or socket errors (see runs in the JSON)")
PY
echo "$result"
