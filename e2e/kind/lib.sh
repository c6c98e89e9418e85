# shellcheck shell=bash
# What walkthrough.sh and explore-job.sh share, sourced from the repository's root after
# `CLUSTER` is set: the images' names (cluster.sh env), a scratch directory, a cleanup
# that stops what the script started and deletes its cluster (KEEP=1 leaves both), the
# step/fail/k/until_ok helpers, the binaries under test, and a fresh cluster.
#
#   kind_script NAME   # NAME prefixes failures and the scratch directory
#
# A script may define `on_failure` (what to print about the cluster when a step failed)
# and add to `pids` what it starts in the background.

# shellcheck disable=SC2034 # repo, pids, stalemate and controller are the scripts'
kind_script() {
    script_name=$1
    repo=$PWD
    eval "$(bash e2e/kind/cluster.sh env)"
    work=$(mktemp -d "${TMPDIR:-/tmp}/stalemate-$script_name.XXXXXX")
    pids=()
    trap kind_script_cleanup EXIT
    # The binaries under test: stalemate (certs, inject, explore and the images) and the
    # demo's GitRepository controller.
    stalemate=${STALEMATE:-}
    if [ -z "$stalemate" ]; then
        cargo build --release --locked --bin stalemate --bin gitrepo-controller
        stalemate=$repo/target/release/stalemate
    fi
    controller=${CONTROLLER:-$(dirname "$stalemate")/gitrepo-controller}
    [ -x "$controller" ] || fail "no controller at $controller (cargo build --bin gitrepo-controller, or CONTROLLER=…)"
}

kind_script_cleanup() {
    local rc=$?
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    if [ "$rc" -ne 0 ] && [ -s "$work/kubeconfig" ] && declare -F on_failure >/dev/null; then
        echo "== what the cluster looked like" >&2
        on_failure >&2 || true
    fi
    if [ -z "${KEEP:-}" ]; then
        "$KIND" delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
        rm -rf "$work"
    else
        echo "== kept: KUBECONFIG=$work/kubeconfig, files in $work (kind delete cluster --name $CLUSTER)"
    fi
}

step() { echo "== $*"; }
fail() {
    echo "$script_name: FAILED: $*" >&2
    exit 1
}
k() { kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/kcache" "$@"; }

# until_ok SECONDS WHAT COMMAND...: retries COMMAND (a function too) each second until it
# succeeds; fails the script naming WHAT when SECONDS pass.
until_ok() {
    local limit=$1 what=$2
    local deadline=$((SECONDS + limit))
    shift 2
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || fail "$what (gave up after $limit s)"
        sleep 1
    done
}

# A cluster of the script's own, with stalemate's images made from the binary under test.
new_cluster() {
    step "a kind cluster, every image built here (e2e/kind/cluster.sh)"
    "$KIND" delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
    STALEMATE_BINARY=$stalemate bash e2e/kind/cluster.sh create
    "$KIND" get kubeconfig --name "$CLUSTER" >"$work/kubeconfig"
}
