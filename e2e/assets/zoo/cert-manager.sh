# shellcheck shell=bash disable=SC2154  # version, work, out, download, say: build-zoo.sh
# cert-manager's controller (github.com/cert-manager/cert-manager, cmd/controller), for
# `bash e2e/assets/build-zoo.sh cert-manager` (sourced there; see that script):
#
#   DIR/cert-manager-controller   the controller binary (only it: not the webhook, not
#                                 cainjector, not the ACME solver)
#   DIR/crds/*.yaml               deploy/crds of the same module (the Helm chart's CRDs,
#                                 plain)
#
# Why v1.11.5, the last release of 1.11 (2023): it is the newest whose controller is in the
# module the proxy serves. From v1.12 on, cmd/controller is a nested module of its own,
# github.com/cert-manager/cert-manager/controller-binary (`replace …cert-manager =>
# ../../`): its module path is not its directory, so no module proxy serves it (this one
# answers 403 for v1.12.17, and for later ones tries to clone github.com, which is not
# reachable), and the root module's download leaves cmd/ out. Building a newer one would
# mean copying those four files out of git, which this project does not do (what it
# builds comes from the registries). v1.21.x would also need
# github.com/Venafi/vcert/v5@v5.13.7, which the proxy refuses (403).
#
# The root module of v1.11.5 has one `replace` (github.com/miekg/dns, a published
# module), which `go install …@version` refuses: the module is copied and built as the
# main module, its own go.mod and go.sum. Version stamped as its Makefile does
# (-X …/pkg/util.AppVersion): it is in the controller's User-Agent.
#
# Measured on 2 cores (2026-12-07): 101 s with the k8s.io modules already in the module
# cache (cert-manager's own downloaded, its packages not in the build cache); a fully cold
# build was not measured. Binary: 62.6 MB.
version=$CERT_MANAGER_VERSION

build() {
    local src
    src=$(download github.com/cert-manager/cert-manager "$version")
    if [ -z "$src" ] || [ ! -f "$src/go.mod" ] || [ ! -d "$src/cmd/controller" ]; then
        say "cannot download github.com/cert-manager/cert-manager@$version with its cmd/controller from the Go module proxy (from v1.12 on it is a nested module the proxy does not serve)"
        exit 1
    fi
    cp -r "$src" "$work/src"
    chmod -R u+w "$work/src"
    (cd "$work/src" && GOFLAGS=-mod=mod go build -trimpath \
        -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$version" \
        -o "$out/cert-manager-controller" ./cmd/controller)
    mkdir -p "$out/crds"
    cp "$work/src/deploy/crds/"*.yaml "$out/crds/"
    # v1.11's deploy/crds are the chart's templates: their labels are Helm expressions,
    # which the apiserver refuses (422 on metadata.labels). Filled in as the release's
    # static manifests have them (cert-manager.yaml of the release).
    for f in "$out/crds/"*.yaml; do
        sed -i -e "s/'{{ template \"cert-manager.name\" . }}'/cert-manager/" \
            -e "s/'{{ .Release.Name }}'/cert-manager/" \
            -e "s/# Generated labels {{- include \"labels\" . | nindent 4 }}/app.kubernetes.io\/version: \"$version\"/" "$f"
    done
    if grep -l '{{' "$out/crds/"*.yaml >&2; then
        say "the CRDs above still hold Helm template expressions"
        exit 1
    fi
}
