# shellcheck shell=bash disable=SC2154  # work, out, download, say: build-zoo.sh
# prometheus-operator (github.com/prometheus-operator/prometheus-operator), sourced by
# `bash e2e/assets/build-zoo.sh prometheus-operator`. Builds:
#
#   DIR/operator      cmd/operator, the one binary of the operator's image (its Dockerfile's
#                     `make operator`); run by examples/prometheus-operator/
#   DIR/crds/*.yaml   example/prometheus-operator-crd/ of the same module: the 10
#                     monitoring.coreos.com CRDs, plain YAML
#
# Not built: prometheus-config-reloader and admission-webhook (the operator only names the
# reloader's image in the pods it describes; nothing pulls it here).
#
# Why not `go install …@version`: its go.mod replaces its two API modules,
# …/pkg/apis/monitoring and …/pkg/client, with ./pkg/apis/monitoring and ./pkg/client,
# nested modules the module download leaves out (as build-flux.sh's api module). So the
# module is copied to "$work", the two nested modules of the same version put in place,
# and the binary built as the main module there. `-X …/version.Version` as the Makefile's
# GO_BUILD_LDFLAGS does: the default config-reloader image and the User-Agent are made
# from it.
#
# Measured on 2 cores shared with other builds, 2026-12-07 (v0.85.0): cold (empty module
# and build caches) 334 s, 413 MB of modules and 1.1 GB of build cache; warm (both kept,
# the output removed) 11 s. No module refused by this machine's proxy. The binary: 63.5 MB.
version=$PROMETHEUS_OPERATOR_VERSION
build() {
    local mod=github.com/prometheus-operator/prometheus-operator src apis client
    src=$(download "$mod" "$version")
    apis=$(download "$mod/pkg/apis/monitoring" "$version")
    client=$(download "$mod/pkg/client" "$version")
    if [ -z "$src" ] || [ ! -f "$src/go.mod" ] || [ -z "$apis" ] || [ ! -f "$apis/go.mod" ] ||
        [ -z "$client" ] || [ ! -f "$client/go.mod" ]; then
        say "cannot download $mod{,/pkg/apis/monitoring,/pkg/client}@$version from the Go module proxy"
        exit 1
    fi
    cp -r "$src" "$work/src"
    chmod -R u+w "$work/src"
    rm -rf "$work/src/pkg/apis/monitoring" "$work/src/pkg/client"
    mkdir -p "$work/src/pkg/apis"
    cp -r "$apis" "$work/src/pkg/apis/monitoring"
    cp -r "$client" "$work/src/pkg/client"
    chmod -R u+w "$work/src/pkg/apis/monitoring" "$work/src/pkg/client"
    (cd "$work/src" && go build -trimpath \
        -ldflags "-s -w -X github.com/prometheus/common/version.Version=${version#v}" \
        -o "$out/operator" ./cmd/operator)
    mkdir -p "$out/crds"
    cp "$work/src/example/prometheus-operator-crd/"*.yaml "$out/crds/"
}
