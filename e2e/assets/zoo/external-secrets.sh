# shellcheck shell=bash
# External Secrets Operator (github.com/external-secrets/external-secrets,
# EXTERNAL_SECRETS_VERSION in zoo.env), sourced by e2e/assets/build-zoo.sh external-secrets:
#
#   DIR/external-secrets   the root main: one binary with subcommands. Its default command
#                          runs the controllers (SecretStore, ClusterSecretStore,
#                          ExternalSecret, ClusterExternalSecret, PushSecret,
#                          ClusterPushSecret, GeneratorState), which is what the chart's
#                          main Deployment runs. `webhook` and `certcontroller` are the
#                          chart's two other Deployments (admission webhook, and the
#                          webhook's certificates and the CRDs' conversion caBundle): not
#                          needed here, so not used (the binary has them anyway).
#   DIR/crds/*.yaml        config/crds/bases of the same module (20 CRDs: external-secrets.io
#                          and generators.external-secrets.io), plain YAML, without the
#                          conversion webhook stanza that deploy/crds/bundle.yaml adds
#                          (it names the webhook's Service, which does not run here; with
#                          no conversion set the apiserver serves v1 and v1beta1 itself).
#
# Why v0.16.2 and not v1.3.2 (the newest the proxy serves): from v1.x the root go.mod
# replaces 57 nested modules with local paths (./apis, ./runtime, ./providers/v1/*,
# ./generators/v1/*). The module download leaves them out, and none is published on its
# own: the proxy answers 403 "This module version is not available" for
# github.com/external-secrets/external-secrets/apis@v0.0.0 (and e.g. providers/v1/aws
# @v0.0.0-20251103072335-a9b233b6936f). v0.16.2 is one module with every provider in it;
# its only replace points at another published module (github.com/external-secrets/sprig/v3),
# which still stops `go install …@v0.16.2`: so the module is copied to "$work" and the
# binary built as the main module there, unchanged.
#
# Measured 2026-12-07 on 2 cores shared with other builds (load average 9-13): cold (no
# module cached, empty build cache; 2.3 GB of modules) 1089 s; warm (modules cached,
# empty build cache) 707 s, ~7.5 CPU-minutes either way; with the build cache too, 40 s.
# Binary 155 MB (every provider's SDK is linked in).
version=$EXTERNAL_SECRETS_VERSION
# work, out, download, say: build-zoo.sh's.
# shellcheck disable=SC2154
build() {
    local src
    src=$(download github.com/external-secrets/external-secrets "$version")
    if [ -z "$src" ] || [ ! -f "$src/go.mod" ]; then
        say "cannot download github.com/external-secrets/external-secrets@$version from the Go module proxy"
        exit 1
    fi
    cp -r "$src" "$work/src"
    chmod -R u+w "$work/src"
    if [ ! -f "$work/src/apis/externalsecrets/v1/externalsecret_types.go" ]; then
        say "external-secrets $version keeps its APIs in nested modules the proxy does not serve (v1.x): use v0.16.2"
        exit 1
    fi
    (cd "$work/src" && go build -trimpath -ldflags "-s -w" -o "$out/external-secrets" .)
    mkdir -p "$out/crds"
    cp "$work/src/config/crds/bases/"*.io_*.yaml "$out/crds/"
}
