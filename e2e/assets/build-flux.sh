#!/usr/bin/env bash
# Builds Flux's source-controller from the Go module proxy at the version pinned in
# versions.env, with its CRDs from the same module:
#
#   bash e2e/assets/build-flux.sh     # builds what is missing; prints the directory last
#   DIR/source-controller             # the binary
#   DIR/crds/*.yaml                   # config/crd/bases of that version
#
# Cached outside the clone: ${STALEMATE_CACHE:-~/.cache/stalemate}/flux/source-controller-<version>/;
# a second call costs a second. Cold: about 3 minutes and 330 MB of modules on 2 cores.
#
# Why not `go install …@version`: its go.mod replaces github.com/fluxcd/source-controller/api
# with ./api, a nested module the module download leaves out. So the module is copied
# to a scratch directory, the api module of the same version put in ./api, and the
# binary built as the main module there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e/assets/versions.env
. "$here/versions.env"
command -v go >/dev/null 2>&1 || {
    echo "build-flux.sh: no Go toolchain on the PATH (source-controller $SOURCE_CONTROLLER_VERSION needs Go >= 1.26)" >&2
    exit 1
}
cache=${STALEMATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stalemate}
dir="$cache/flux/source-controller-$SOURCE_CONTROLLER_VERSION"
work="$cache/flux/build"
mkdir -p "$cache/flux"
exec 9>"$cache/flux/.lock"
flock 9
say() { echo "build-flux.sh: $*" >&2; }
if [ -x "$dir/source-controller" ] && [ -f "$dir/.version" ] &&
    [ "$(cat "$dir/.version")" = "$SOURCE_CONTROLLER_VERSION" ]; then
    echo "$dir"
    exit 0
fi
started=$SECONDS
say "building source-controller $SOURCE_CONTROLLER_VERSION from the Go module proxy"
export GOTOOLCHAIN=local CGO_ENABLED=0
rm -rf "$work"
mkdir -p "$work"
# Module directories of a version, as `go mod download` puts them (read-only).
download() {
    (cd "$work" && go mod download -json "$1@$SOURCE_CONTROLLER_VERSION" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}
src=$(download github.com/fluxcd/source-controller)
api=$(download github.com/fluxcd/source-controller/api)
if [ -z "$src" ] || [ ! -f "$src/go.mod" ] || [ -z "$api" ] || [ ! -f "$api/go.mod" ]; then
    say "cannot download github.com/fluxcd/source-controller{,/api}@$SOURCE_CONTROLLER_VERSION from the Go module proxy"
    exit 1
fi
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
rm -rf "$work/src/api"
cp -r "$api" "$work/src/api"
chmod -R u+w "$work/src/api"
(cd "$work/src" && go build -trimpath -ldflags "-s -w" -o "$work/source-controller" .)
rm -rf "$dir.new"
mkdir -p "$dir.new/crds"
mv "$work/source-controller" "$dir.new/source-controller"
cp "$work/src/config/crd/bases/"*.yaml "$dir.new/crds/"
echo "$SOURCE_CONTROLLER_VERSION" >"$dir.new/.version"
rm -rf "$dir"
mv "$dir.new" "$dir"
rm -rf "$work"
say "built in $((SECONDS - started)) s into $dir"
echo "$dir"
