# shellcheck shell=bash disable=SC2154  # work, out, download, say: build-zoo.sh
# KEDA's operator (github.com/kedacore/keda/v2, cmd/operator): the controllers of
# ScaledObjects (each makes an HPA keda-hpa-<name>), ScaledJobs, TriggerAuthentications,
# ClusterTriggerAuthentications and CloudEventSources, and the scalers' gRPC server the
# metrics apiserver asks. Not built: the metrics apiserver (cmd/adapter) and the admission
# webhooks (cmd/webhooks). Sourced by build-zoo.sh (e2e/assets/build-zoo.sh keda):
#
#   DIR/keda-operator   DIR/crds/*.yaml (config/crd/bases: keda.sh and eventing.keda.sh)
#
# Why not `go install …/cmd/operator@version`: KEDA's go.mod has a `replace` (and an
# `exclude`), which `go install pkg@version` refuses. So the module is copied to $work and
# built there as the main module (as `make build` does, version stamped the same way).
# v2.21.1 is not built: its go.mod says `go 1.27.4` (this machine has Go 1.26; the
# module download itself refuses it with GOTOOLCHAIN=local), so zoo.env pins v2.21.0.
# KEDA links every scaler's SDK (Azure, AWS, GCP, Kafka, …): 3338 packages, a 177 MB
# binary. Measured on 2 cores shared with other builds (load 10), 2026-12-07: cold 1130 s
# (32 s of module downloads, then 1098 s of build with no build cache for KEDA's packages;
# k8s.io modules were already in the module cache); warm (modules and build cache there)
# 33 s, the same binary byte for byte.
version=$KEDA_VERSION
build() {
    local src
    src=$(download github.com/kedacore/keda/v2 "$version")
    if [ -z "$src" ] || [ ! -f "$src/go.mod" ]; then
        say "cannot download github.com/kedacore/keda/v2@$version from the Go module proxy"
        exit 1
    fi
    cp -r "$src" "$work/src"
    chmod -R u+w "$work/src"
    (cd "$work/src" && go build -trimpath \
        -ldflags "-s -w -X=github.com/kedacore/keda/v2/version.Version=$version" \
        -o "$out/keda-operator" ./cmd/operator)
    mkdir -p "$out/crds"
    cp "$work/src/config/crd/bases/"*.yaml "$out/crds/"
}
