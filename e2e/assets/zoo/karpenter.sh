# shellcheck shell=bash disable=SC2154  # work, out, download, say: build-zoo.sh
# Karpenter with its kwok cloud provider (sigs.k8s.io/karpenter, KARPENTER_VERSION in
# zoo.env), sourced by e2e/assets/build-zoo.sh karpenter:
#
#   DIR/karpenter        sigs.k8s.io/karpenter/kwok, the binary the kwok chart deploys
#                        (kwok/main.go: Karpenter's core controllers + the kwok provider,
#                        which makes Node objects itself, annotated kwok.x-k8s.io/node=fake)
#   DIR/crds/*.yaml      NodePool and NodeClaim (kwok/charts/crds) and the provider's
#                        KWOKNodeClass (kwok/apis/crds), from the same module version: what
#                        the binary watches with the chart's feature gates
#   DIR/gated-crds/*.yaml the chart's other two, NodeOverlay (karpenter.sh/v1alpha1) and
#                        CapacityBuffer (autoscaling.x-k8s.io): watched only behind the alpha
#                        gates NodeOverlay and CapacityBuffer, off in the chart, so kept apart
#                        (the zoo's search, docs/zoo.md, gave crds/ only). `--setup` takes
#                        them too, e.g. with the gates turned on: stalemate finds a resource
#                        at any served version (crates/wire/src/k8s/discovery.rs), so NodeOverlay,
#                        v1alpha1 only in a group that prefers v1, is seen served
#
# Unusual: v1.15.0's go.mod says `go 1.26.9` and this machine's toolchain is older
# (1.26.8, GOTOOLCHAIN=local). A patch release of the toolchain changes no language
# feature, so the module is copied to "$work", its go line lowered to the local
# toolchain's version, and the binary built as the main module there. Nothing else is
# changed (go.sum as released; no replace directives).
#
# Measured 2026-12-07 on the 2-core machine, other work running beside it (load 3-5):
# cold, with an empty module cache and build cache, 263 s (305 MB of modules, 1.2 GB of
# build cache); warm, modules cached and the build cache empty, 221 s; with both cached,
# 6 s. The binary is 43 MB (-s -w), the same bytes each time.
version=$KARPENTER_VERSION

build() {
    local src local_go want
    # `go mod download` unpacks the module but, as its go line is newer than the
    # toolchain, reports an error and no Dir: take the directory it unpacked.
    src=$(download sigs.k8s.io/karpenter "$version" || true)
    [ -n "$src" ] || src="$(go env GOMODCACHE)/sigs.k8s.io/karpenter@$version"
    if [ -z "$src" ] || [ ! -f "$src/go.mod" ]; then
        say "cannot download sigs.k8s.io/karpenter@$version from the Go module proxy"
        exit 1
    fi
    cp -r "$src" "$work/src"
    chmod -R u+w "$work/src"
    local_go=$(go env GOVERSION | sed 's/^go//')
    want=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$work/src/go.mod")
    # sort -V: the lower of the two; lower the go line only when the module asks for more.
    if [ "$(printf '%s\n%s\n' "$want" "$local_go" | sort -V | head -n1)" != "$want" ]; then
        say "go.mod asks for go $want, the toolchain is $local_go: building with go $local_go"
        (cd "$work/src" && go mod edit -go="$local_go")
    fi
    (cd "$work/src" && go build -trimpath -ldflags "-s -w" -o "$out/karpenter" ./kwok)
    mkdir -p "$out/crds" "$out/gated-crds"
    cp "$work/src/kwok/charts/crds/karpenter.sh_nodepools.yaml" \
        "$work/src/kwok/charts/crds/karpenter.sh_nodeclaims.yaml" \
        "$work/src/kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml" "$out/crds/"
    cp "$work/src/kwok/charts/crds/karpenter.sh_nodeoverlays.yaml" \
        "$work/src/kwok/charts/crds/autoscaling.x-k8s.io_capacitybuffers.yaml" "$out/gated-crds/"
}
