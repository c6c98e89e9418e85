#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what is missing, then format check,
# clippy and every test (`cargo test --locked --all-targets`); what it builds from the Go
# module proxy it builds after clippy, so a lint error is told in minutes. README "Set up",
# command 2; CI (.ci/run) calls it.
#
# What it installs, when missing: curl, kubectl, chromium (the HTML report is checked in
# a headless browser), shellcheck, prometheus + promtool (Debian); kopf and the official
# Python client in e2e/clients/python/.venv and @kubernetes/client-node in
# e2e/clients/node/node_modules (pinned by lock files, nothing global); and the real
# control planes — etcd, kube-apiserver, kube-controller-manager, kube-scheduler (kubectl
# beside the default) and kwok, at each version versions.env's SUITE_VERSIONS names, built from the Go
# module proxy by e2e/assets/build.sh into ~/.cache/stalemate/kube/ (minutes each the
# first time, a second after) — the default of which the tests find through
# KUBEBUILDER_ASSETS; Flux's source-controller and kustomize-controller, built the same way
# by e2e/assets/build-flux.sh into ~/.cache/stalemate/flux/ (STALEMATE_FLUX_ASSETS), git
# (its loopback git server, e2e/assets/git_http.py, is Debian's `git http-backend`) and
# unshare (util-linux: kustomize-controller's leader election wants a pod's namespace file);
# prometheus-operator, one of the zoo's operators, built the same way by
# e2e/assets/build-zoo.sh into ~/.cache/stalemate/zoo/ (STALEMATE_ZOO_PROMETHEUS_OPERATOR);
# and for the kind tests (e2e/kind.rs), Docker and debootstrap (Debian), kind, containerd and
# crictl (Go module proxy), a node image and the control plane's images built here
# (e2e/kind/cluster.sh; dockerd is started if it is not running, and left running).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# One build, run once: incremental compilation's caches would add 2.4 GB to target/ for
# nothing (with the dev profile's line tables, Cargo.toml, a fresh target/ is 3.2 GB, not 12).
export CARGO_INCREMENTAL=0

have() { command -v "$1" >/dev/null 2>&1; }
apt_updated=""
apt_install() {
    if ! have apt-get; then
        echo "suite.sh: $* missing and no apt-get to install it" >&2
        return 1
    fi
    if [ -z "$apt_updated" ]; then
        apt-get update -qq
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

have curl || apt_install curl
# The machines ship a kubectl dispatcher (bundled 1.27–1.33, picked by the server's
# /version); Debian's kubernetes-client (kubectl 1.20) is the last resort.
have kubectl || apt_install kubectl || apt_install kubernetes-client
# The HTML report is checked in a real headless browser (e2e/oracles.rs).
have chromium || have chromium-browser || have google-chrome || apt_install --no-install-recommends chromium
# The shell scripts (kind walkthrough, fuzz, bench, this file) are shellchecked in the suite.
have shellcheck || apt_install shellcheck
# A real Prometheus scrapes the proxy, and promtool checks and tests the alerting rules
# (e2e/prometheus.rs): Debian's prometheus package has both.
{ have prometheus && have promtool; } || apt_install --no-install-recommends prometheus
# Clients from other ecosystems (e2e/clients.rs), from the package registries, pinned by
# lock files, installed inside the repository (no global installs): kopf and the
# official Python client in a virtual environment, @kubernetes/client-node with npm ci.
have python3 || apt_install python3
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || apt_install python3-venv
if [ ! -x e2e/clients/python/.venv/bin/kopf ]; then
    python3 -m venv e2e/clients/python/.venv
    e2e/clients/python/.venv/bin/pip install -q --disable-pip-version-check -r e2e/clients/python/requirements.lock
fi
{ have node && have npm; } || apt_install --no-install-recommends nodejs npm
if [ ! -d e2e/clients/node/node_modules/@kubernetes/client-node ]; then
    (cd e2e/clients/node && npm ci --no-audit --no-fund --loglevel=error)
fi
# Flux's controllers (e2e/flux.rs) clone from a loopback git server; kustomize-controller's
# leader election wants a pod's namespace file (unshare).
have git || apt_install --no-install-recommends git
have unshare || apt_install --no-install-recommends util-linux
have go || { echo "suite.sh: no Go toolchain (go) on this machine: Kubernetes is built from the Go module proxy" >&2; exit 1; }
have cargo || { echo "suite.sh: no Rust toolchain (cargo) on this machine" >&2; exit 1; }
if have rustup; then
    rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi

echo "== cargo fmt --check, at $SECONDS s"
cargo fmt --check
echo "== cargo clippy"
cargo clippy --locked --all-targets -- -D warnings
echo "== building the tests (cargo test --locked --all-targets --no-run)"
cargo test --locked --all-targets --no-run

# Then what is built from the Go module proxy, one after the other after cargo: on 2 cores
# both sides are CPU-bound, and run side by side they took longer than one after the other
# (a cold run: cargo 685 s beside the Go builds, 202 s alone; Kubernetes 832 s beside
# cargo, 524 s alone). Cargo first, so a clippy error is told in minutes.
# The real control planes (e2e/proxy_real.rs, e2e/envtest.rs, explore --envtest): the
# suite's versions, and the default, which the tests find through KUBEBUILDER_ASSETS.
# kube-controller-manager of each runs on the simulator (e2e/sim_builtins.rs).
echo "== real control planes (e2e/assets/build.sh suite: $(sed -n 's/^SUITE_VERSIONS=//p' e2e/assets/versions.env)), at $SECONDS s"
bash e2e/assets/build.sh suite >/dev/null
KUBEBUILDER_ASSETS=$(bash e2e/assets/build.sh | tail -n1)
export KUBEBUILDER_ASSETS
# Flux's controllers (e2e/flux.rs).
echo "== Flux source-controller and kustomize-controller (e2e/assets/build-flux.sh), at $SECONDS s"
STALEMATE_FLUX_ASSETS=$(bash e2e/assets/build-flux.sh | tail -n1)
export STALEMATE_FLUX_ASSETS
# The operator of the zoo the suite searches (e2e/operator_zoo.rs; docs/zoo.md has them all):
# prometheus-operator, the cheapest of the six to build.
echo "== the zoo's prometheus-operator (e2e/assets/build-zoo.sh), at $SECONDS s"
STALEMATE_ZOO_PROMETHEUS_OPERATOR=$(bash e2e/assets/build-zoo.sh prometheus-operator | tail -n1)
export STALEMATE_ZOO_PROMETHEUS_OPERATOR
# The sidecar and `explore job` in a real kind cluster (e2e/kind.rs): Docker from Debian,
# kind, containerd and the node's Kubernetes binaries from the Go module proxy, every image
# built here (no image registry); stalemate's own images are built by the tests, from the
# binary they test.
echo "== kind: Docker, the node image, the control plane's images (e2e/kind/cluster.sh node), at $SECONDS s"
bash e2e/kind/cluster.sh node

echo "== kubectl: $(kubectl version --client 2>/dev/null | head -n1)"
echo "== control plane: $("$KUBEBUILDER_ASSETS/kube-apiserver" --version), $("$KUBEBUILDER_ASSETS/etcd" --version | head -n1) in $KUBEBUILDER_ASSETS"
echo "== tests (cargo test --locked --all-targets), at $SECONDS s"
log=$(mktemp)
# Each line shown with the suite's elapsed seconds: how long each test binary and test took
# is in the CI log (libtest prints no times of its own).
cargo test --locked --all-targets 2>&1 | tee "$log" | while IFS= read -r line; do
    printf '[%5d s] %s\n' "$SECONDS" "$line"
done
# One closing line for the whole suite (cargo prints one per test binary).
awk -v s="$SECONDS" '/^test result:/ { p += $4; f += $6 } END { printf "tests: %d passed, %d failed; the suite took %d s\n", p, f, s; exit (f > 0 || p == 0) }' "$log"
