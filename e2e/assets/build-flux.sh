#!/usr/bin/env bash
# Builds Flux's source-controller and kustomize-controller from the Go module proxy at
# the versions pinned in versions.env, with their CRDs from the same modules:
#
#   bash e2e/assets/build-flux.sh     # builds what is missing; prints the directory last
#   DIR/source-controller             # the binaries
#   DIR/kustomize-controller
#   DIR/crds/*.yaml                   # source-controller's config/crd/bases
#   DIR/kustomize-crds/*.yaml         # kustomize-controller's
#
# Cached outside the clone:
# ${STALEMATE_CACHE:-~/.cache/stalemate}/flux/source-controller-<v>+kustomize-controller-<v>/;
# a second call costs a second. Cold: about 3 minutes each and 700 MB of modules on 2
# cores (source-controller v1.9.1: 231 s on 2026-11-27; kustomize-controller v1.9.6: 180 s
# on 2026-11-28; with the modules cached, 24 s for both).
#
# Why not `go install …@version`: each go.mod replaces its own …/api module with ./api,
# a nested module the module download leaves out. So the module is copied to a scratch
# directory, the api module of the same version put in ./api, and the binary built as
# the main module there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e/assets/versions.env
. "$here/versions.env"
command -v go >/dev/null 2>&1 || {
    echo "build-flux.sh: no Go toolchain on the PATH (Flux's controllers need Go >= 1.26)" >&2
    exit 1
}
cache=${STALEMATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stalemate}
versions="source-controller-$SOURCE_CONTROLLER_VERSION+kustomize-controller-$KUSTOMIZE_CONTROLLER_VERSION"
dir="$cache/flux/$versions"
work="$cache/flux/build"
mkdir -p "$cache/flux"
exec 9>"$cache/flux/.lock"
flock 9
say() { echo "build-flux.sh: $*" >&2; }
if [ -x "$dir/source-controller" ] && [ -x "$dir/kustomize-controller" ] &&
    [ -f "$dir/.version" ] && [ "$(cat "$dir/.version")" = "$versions" ]; then
    echo "$dir"
    exit 0
fi
export GOTOOLCHAIN=local CGO_ENABLED=0
rm -rf "$work" "$dir.new"
mkdir -p "$work" "$dir.new"
# Module directories of a version, as `go mod download` puts them (read-only).
download() {
    (cd "$work" && go mod download -json "$1@$2" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}
# build NAME VERSION CRD-DIR: github.com/fluxcd/NAME at VERSION into $dir.new.
build() {
    local name=$1 version=$2 crds=$3 started=$SECONDS src api
    say "building $name $version from the Go module proxy"
    src=$(download "github.com/fluxcd/$name" "$version")
    api=$(download "github.com/fluxcd/$name/api" "$version")
    if [ -z "$src" ] || [ ! -f "$src/go.mod" ] || [ -z "$api" ] || [ ! -f "$api/go.mod" ]; then
        say "cannot download github.com/fluxcd/$name{,/api}@$version from the Go module proxy"
        exit 1
    fi
    rm -rf "$work/src"
    cp -r "$src" "$work/src"
    chmod -R u+w "$work/src"
    rm -rf "$work/src/api"
    cp -r "$api" "$work/src/api"
    chmod -R u+w "$work/src/api"
    (cd "$work/src" && go build -trimpath -ldflags "-s -w" -o "$dir.new/$name" .)
    mkdir -p "$dir.new/$crds"
    cp "$work/src/config/crd/bases/"*.yaml "$dir.new/$crds/"
    say "built $name in $((SECONDS - started)) s"
}
build source-controller "$SOURCE_CONTROLLER_VERSION" crds
build kustomize-controller "$KUSTOMIZE_CONTROLLER_VERSION" kustomize-crds
echo "$versions" >"$dir.new/.version"
rm -rf "$dir"
mv "$dir.new" "$dir"
rm -rf "$work"
echo "$dir"
