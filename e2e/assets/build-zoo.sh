#!/usr/bin/env bash
# Builds one operator of the zoo (docs/zoo.md) from the Go module proxy at the version
# zoo.env pins, with its CRDs from the same module:
#
#   bash e2e/assets/build-zoo.sh NAME     # builds what is missing; prints the directory last
#   bash e2e/assets/build-zoo.sh list     # the operators it knows
#   DIR/<binaries>  DIR/crds/*.yaml       # what the recipe (e2e/assets/zoo/NAME.sh) puts there
#
# Cached outside the clone: ${STALEMATE_CACHE:-~/.cache/stalemate}/zoo/NAME-VERSION/; a
# second call costs a second. One build at a time (a build of a big module takes GiBs).
# Each recipe's header says how long its cold build took.
#
# A recipe (e2e/assets/zoo/NAME.sh) is sourced here. It sets `version` (from zoo.env)
# and defines `build`, which builds into "$out" (an empty directory) and may use
# "$work" (scratch, emptied first) and `download MODULE VERSION` (prints the module's
# read-only directory, as `go mod download` leaves it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e/assets/zoo.env
. "$here/zoo.env"
say() { echo "build-zoo.sh: $*" >&2; }
name=${1:-}
if [ -z "$name" ] || [ "$name" = list ]; then
    for r in "$here"/zoo/*.sh; do basename "$r" .sh; done
    [ -n "$name" ] && exit 0
    say "usage: build-zoo.sh NAME (one of the above)"
    exit 2
fi
recipe="$here/zoo/$name.sh"
if [ ! -f "$recipe" ]; then
    known=$(for r in "$here"/zoo/*.sh; do basename "$r" .sh; done | tr '\n' ' ')
    say "no recipe for '$name' (e2e/assets/zoo/$name.sh); known: $known"
    exit 2
fi
command -v go >/dev/null 2>&1 || {
    say "no Go toolchain on the PATH ($name needs Go >= 1.26)"
    exit 1
}
version=
# shellcheck source=/dev/null
. "$recipe"
[ -n "$version" ] || { say "$recipe sets no version"; exit 2; }
cache=${STALEMATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stalemate}
dir="$cache/zoo/$name-$version"
mkdir -p "$cache/zoo"
if [ -f "$dir/.version" ] && [ "$(cat "$dir/.version")" = "$name-$version" ]; then
    echo "$dir"
    exit 0
fi
exec 9>"$cache/zoo/.lock"
flock 9
if [ -f "$dir/.version" ] && [ "$(cat "$dir/.version")" = "$name-$version" ]; then
    echo "$dir"
    exit 0
fi
export GOTOOLCHAIN=local CGO_ENABLED=0
work="$cache/zoo/build-$name"
out="$dir.new"
rm -rf "$work" "$out"
mkdir -p "$work" "$out"
download() {
    (cd "$work" && go mod download -json "$1@$2" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}
started=$SECONDS
say "building $name $version from the Go module proxy"
build
echo "$name-$version" >"$out/.version"
rm -rf "$dir"
mv "$out" "$dir"
rm -rf "$work"
say "built $name $version in $((SECONDS - started)) s into $dir"
echo "$dir"
