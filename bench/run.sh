#!/usr/bin/env bash
# Pass-through cost of stalemate, side by side with what users would otherwise put in
# front of an apiserver, in one run on one machine:
#   direct        the simulator itself (release build), HTTPS
#   stalemate     `stalemate serve` in front of it (TLS both sides, HTTP/2 to clients)
#   nginx         nginx as a TLS reverse proxy (HTTP/2 to clients, keep-alive HTTP/1.1
#                 pool to the simulator, upstream TLS verified) — config generated here
#   kubectl-proxy `kubectl proxy` (plain HTTP on the client side: no TLS there, and
#                 HTTP/1.1 only, so no h2load rows)
# Each is driven with h2load (HTTP/2) and wrk (HTTP/1.1) for a GET of one ConfigMap and a
# LIST of 500; one table with requests/s, p50/p99 (wrk), the proxy's own CPU time per
# request (from /proc/PID/stat), and ratios to direct and to nginx.
#
#   bash bench/run.sh [--quick]     # --quick: about a minute; full: a few minutes
#
# Installs h2load (nghttp2-client), wrk and nginx from Debian when missing; loopback
# only. Load generator, proxies and simulator share the machine's cores: the figures
# compare runs on the same machine, they are not absolute capacity.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=10s; requests=40000
if [ "${1:-}" = "--quick" ]; then duration=3s; requests=8000; fi

have() { command -v "$1" >/dev/null 2>&1; }
missing=()
have h2load || missing+=(nghttp2-client)
have wrk || missing+=(wrk)
have nginx || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
cargo build --release --locked -q --bin stalemate
bin=target/release/stalemate

# shellcheck source=bench/lib.sh
. bench/lib.sh
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_sim "$bin"
sim_hostport=${url#https://}
list_bytes=$(curl -sS --cacert "$work/tls/ca.crt" "$url$list_path" | wc -c)

# stalemate (STALEMATE_ARGS: extra flags, e.g. "--max-view-bytes 0")
read -r -a extra <<<"${STALEMATE_ARGS:-}"
start_proxy stalemate "$bin" ${extra[@]+"${extra[@]}"}
stalemate_pid=$proxy_pid
stalemate_url=$proxy_url

# nginx: its own certificate (from `stalemate certs`), upstream TLS verified against the
# simulator's CA, a keep-alive pool of HTTP/1.1 connections to it.
"$bin" certs --out "$work/nginx-tls" 2>/dev/null
nginx_port=$(free_port)
mkdir -p "$work/nginx"
cat >"$work/nginx/nginx.conf" <<EOF
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    upstream sim { server $sim_hostport; keepalive 64; }
    server {
        listen 127.0.0.1:$nginx_port ssl http2;
        ssl_certificate $work/nginx-tls/tls.crt;
        ssl_certificate_key $work/nginx-tls/tls.key;
        location / {
            proxy_pass https://sim;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_ssl_server_name on;
            proxy_ssl_name localhost;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate $work/tls/ca.crt;
            proxy_ssl_session_reuse on;
            proxy_buffering off;
        }
    }
}
EOF
# Each server measured in a session of its own (bench/lib.sh start_proxy says why).
start_group /dev/null "$work/nginx/stderr.log" "$nginx_bin" -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;'
nginx_pid=$group_pid
nginx_url="https://127.0.0.1:$nginx_port"
for _ in $(seq 100); do curl -fsS --cacert "$work/nginx-tls/ca.crt" -o /dev/null "$nginx_url$get_path" 2>/dev/null && break; sleep 0.05; done

# kubectl proxy (plain HTTP on its side)
kp_port=$(free_port)
start_group /dev/null /dev/null kubectl proxy --kubeconfig "$work/sim.kubeconfig" --cache-dir "$work/kubectl-cache-proxy" \
    --address 127.0.0.1 --port "$kp_port"
kp_pid=$group_pid
kp_url="http://127.0.0.1:$kp_port"
for _ in $(seq 100); do curl -fsS -o /dev/null "$kp_url$get_path" 2>/dev/null && break; sleep 0.1; done

# CPU ticks of a process and its children (nginx workers).
cpu_ticks() {
    local total=0 p
    for p in "$1" $(pgrep -P "$1" || true); do
        total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    echo "$total"
}
tick=$(getconf CLK_TCK)
results="$work/results"
: >"$results"

h2() { # target kind url requests pid
    local before=0 out rps n mean cpu="-"
    [ -n "$5" ] && before=$(cpu_ticks "$5")
    out=$(h2load -n "$4" -c 10 -m 10 "$3" 2>&1)
    rps=$(echo "$out" | awk '/^finished in/ {print $4}')
    n=$(echo "$out" | awk '/^requests:/ {print $8}')
    mean=$(echo "$out" | awk '/^time for request:/ {print $6}')
    [ -n "$5" ] && cpu=$(awk -v d="$(($(cpu_ticks "$5") - before))" -v n="$n" -v t="$tick" 'BEGIN {printf "%.3f", d / t * 1000 / (n > 0 ? n : 1)}')
    echo "$1 h2load $2 $rps mean:$mean - $cpu" >>"$results"
}
w1() { # target kind url pid
    local before=0 out rps n p50 p99 cpu="-"
    [ -n "$4" ] && before=$(cpu_ticks "$4")
    out=$(wrk -t2 -c20 -d"$duration" --latency "$3" 2>&1)
    rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
    n=$(echo "$out" | awk '/requests in/ {print $1}')
    p50=$(echo "$out" | awk '$1=="50%" {print $2}')
    p99=$(echo "$out" | awk '$1=="99%" {print $2}')
    [ -n "$4" ] && cpu=$(awk -v d="$(($(cpu_ticks "$4") - before))" -v n="$n" -v t="$tick" 'BEGIN {printf "%.3f", d / t * 1000 / (n > 0 ? n : 1)}')
    echo "$1 wrk $2 $rps $p50 $p99 $cpu" >>"$results"
}

# One request at a time (wrk -c1): the latency a proxy adds when it is not saturated.
light() { # target url
    local out p50 p99 rps
    out=$(wrk -t1 -c1 -d"$duration" --latency "$2" 2>&1)
    rps=$(echo "$out" | awk '/^Requests\/sec:/ {print $2}')
    p50=$(echo "$out" | awk '$1=="50%" {print $2}')
    p99=$(echo "$out" | awk '$1=="99%" {print $2}')
    echo "$1 wrk-c1 GET $rps $p50 $p99 -" >>"$results"
}

for target in direct stalemate nginx kubectl-proxy; do
    case $target in
        direct) base=$url pid="" ;;
        stalemate) base=$stalemate_url pid=$stalemate_pid ;;
        nginx) base=$nginx_url pid=$nginx_pid ;;
        kubectl-proxy) base=$kp_url pid=$kp_pid ;;
    esac
    if [ "$target" != kubectl-proxy ]; then
        h2 "$target" GET "$base$get_path" "$requests" "$pid"
        h2 "$target" LIST "$base$list_path" "$((requests / 10))" "$pid"
    fi
    w1 "$target" GET "$base$get_path" "$pid"
    w1 "$target" LIST "$base$list_path" "$pid"
    light "$target" "$base$get_path"
done

# One table: ratios to direct and to nginx for the same tool and request.
awk '
{ key = $2 " " $3; rps[$1 " " key] = $4; row[NR] = $0 }
END {
    printf "%-14s %-7s %-5s %10s %14s %10s %12s %9s %9s\n", "target", "tool", "req", "req/s", "p50", "p99", "CPU ms/req", "x direct", "x nginx"
    for (i = 1; i <= NR; i++) {
        split(row[i], f, " ")
        key = f[2] " " f[3]
        d = rps["direct " key]; n = rps["nginx " key]
        rd = (d > 0) ? sprintf("%.2f", f[4] / d) : "-"
        rn = (n > 0) ? sprintf("%.2f", f[4] / n) : "-"
        printf "%-14s %-7s %-5s %10.0f %14s %10s %12s %9s %9s\n", f[1], f[2], f[3], f[4], f[5], f[6], f[7], rd, rn
        if (f[2] == "wrk-c1") { p50[f[1]] = ms(f[5]); p99[f[1]] = ms(f[6]) }
    }
    printf "latency added at one request at a time (wrk -c1 GET, p50 / p99 over direct):"
    split("stalemate nginx kubectl-proxy", t, " ")
    for (i = 1; i <= 3; i++)
        if (t[i] in p99) printf " %s +%.3f / +%.3f ms;", t[i], p50[t[i]] - p50["direct"], p99[t[i]] - p99["direct"]
    printf "\n"
}
# wrk prints 812.00us, 1.20ms or 1.02s
function ms(v) {
    if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
    if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
    if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
    return v + 0
}' "$results"
echo "LIST of 500 = $list_bytes bytes; $(nproc) cores shared by load generator, proxies and simulator; wrk -t2 -c20 -d$duration, wrk-c1: -t1 -c1, h2load -c10 -m10"
