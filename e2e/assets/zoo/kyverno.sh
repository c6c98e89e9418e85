# shellcheck shell=bash disable=SC2154  # work, out, download, say: build-zoo.sh
# Kyverno's background controller (github.com/kyverno/kyverno, cmd/background-controller),
# sourced by e2e/assets/build-zoo.sh: the controller that runs generate and
# mutate-existing rules in the background (UpdateRequests), not the admission
# controller, nor the reports or cleanup controllers. Run by examples/kyverno/.
#
#   DIR/kyverno-background-controller   the binary
#   DIR/crds/*.yaml                      config/crds of the same module: kyverno.io
#                                        (ClusterPolicy, Policy, UpdateRequest, ...),
#                                        policies.kyverno.io, reports, policyreport
#
# Nothing unusual: the module's one `replace` names another module
# (k8s.io/pod-security-admission => github.com/kyverno/pod-security-admission), no local
# path, so the module is built as the main module from a writable copy. Every CRD goes
# to `--setup` as it is (ClusterPolicy and Policy are served at v1 and v2beta1 while
# kyverno.io prefers v2; stalemate finds a resource at any served version,
# crates/wire/src/k8s/discovery.rs); examples/kyverno/README.md says how to run it.
# Measured 2026-12-07 on 2 cores shared with other builds (load ~10): cold (modules not
# cached) 674 s; warm (modules and Go build cache there) 121 s. The
# binary is 137 MB (-s -w): the controller links cosign, sigstore, notary and CEL.
version=$KYVERNO_VERSION

build() {
    local src
    src=$(download github.com/kyverno/kyverno "$version")
    if [ -z "$src" ] || [ ! -f "$src/go.mod" ]; then
        say "cannot download github.com/kyverno/kyverno@$version from the Go module proxy"
        exit 1
    fi
    cp -r "$src" "$work/src"
    chmod -R u+w "$work/src"
    (cd "$work/src" && go build -trimpath -ldflags "-s -w" \
        -o "$out/kyverno-background-controller" ./cmd/background-controller)
    mkdir -p "$out/crds"
    cp "$work/src"/config/crds/*/*.yaml "$out/crds/"
}
