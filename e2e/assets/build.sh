#!/usr/bin/env bash
# Builds a real control plane from the Go module proxy, the envtest way: a directory
# holding etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok, at the versions
# pinned in versions.env, for KUBEBUILDER_ASSETS and `stalemate run/explore --envtest`.
#
#   bash e2e/assets/build.sh          # the default version; prints the directory last
#   bash e2e/assets/build.sh 1.35     # a pinned version by its minor (or v1.35.4); no kubectl
#   bash e2e/assets/build.sh all      # every pinned version; prints each directory
#   bash e2e/assets/build.sh suite    # the versions the suite tests (SUITE_VERSIONS)
#   bash e2e/assets/build.sh node     # the default, and kubelet, kubeadm and kube-proxy beside
#                                     # it: what a kind node runs (e2e/kind/cluster.sh)
#   export KUBEBUILDER_ASSETS=$(bash e2e/assets/build.sh | tail -n1)
#
# Cached outside the clone: ${STALEMATE_CACHE:-~/.cache/stalemate}/kube/<version>/. A
# binary already there at its pinned version is not built again, so a second call costs
# a second. A cold build takes several minutes on 2 cores (docs/testing.md).
#
# Why a generated go.mod: k8s.io/kubernetes cannot be `go install`ed — its go.mod points
# the k8s.io/* staging modules at ./staging, which a module download does not have — so
# a scratch module requires k8s.io/kubernetes and replaces each staging module with its
# published v0.X.Y. etcd's server module has the same kind of replace directives; kwok
# installs as it is.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e/assets/versions.env
. "$here/versions.env"

# The version asked for: none (the default), a minor (1.35), or a pinned version (v1.35.4).
node=
case "${1:-}" in
"") ;;
node) node=1 ;;
all)
    for v in $KUBERNETES_VERSIONS; do bash "$0" "$v"; done
    exit 0
    ;;
suite)
    for v in $SUITE_VERSIONS; do bash "$0" "$v"; done
    exit 0
    ;;
*)
    want=${1#v}
    found=
    for v in $KUBERNETES_VERSIONS; do
        case "${v#v}" in "$want" | "$want".*) found=$v ;; esac
    done
    if [ -z "$found" ]; then
        echo "build.sh: no pinned Kubernetes version matches '$1' (versions.env pins: $KUBERNETES_VERSIONS)" >&2
        exit 2
    fi
    KUBERNETES_VERSION=$found
    ;;
esac
minor=${KUBERNETES_VERSION#v1.}
minor=${minor%%.*}
etcd_var="ETCD_VERSION_v1_$minor"
ETCD_VERSION=${!etcd_var:-}
if [ -z "$ETCD_VERSION" ]; then
    echo "build.sh: versions.env pins no etcd for Kubernetes $KUBERNETES_VERSION ($etcd_var)" >&2
    exit 2
fi

command -v go >/dev/null 2>&1 || {
    echo "build.sh: no Go toolchain on the PATH (Kubernetes $KUBERNETES_VERSION needs Go >= 1.26)" >&2
    exit 1
}
cache=${STALEMATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stalemate}
dir="$cache/kube/$KUBERNETES_VERSION"
work="$cache/kube/build"
mkdir -p "$dir" "$work"
# One build at a time (two test binaries, or a user and the suite, may ask together).
exec 9>"$cache/kube/.lock"
flock 9

export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
say() { echo "build.sh: $*" >&2; }
# have NAME VERSION: the binary is there and was built at that version.
have() { [ -x "$dir/$1" ] && [ "$(cat "$dir/.$1.version" 2>/dev/null)" = "$2" ]; }
# done_ NAME VERSION: moves the freshly built binary into place (never a half-built one).
done_() { mv -f "$work/out/$1" "$dir/$1" && echo "$2" >"$dir/.$1.version"; }
started=$SECONDS

kube=(kube-apiserver kube-controller-manager kube-scheduler)
# kubectl only beside the default: nothing here runs an older one (the machines' kubectl
# dispatcher brings its own), and it is a minute of a cold build.
default_version=$(sed -n 's/^KUBERNETES_VERSION=//p' "$here/versions.env")
[ "$KUBERNETES_VERSION" = "$default_version" ] && kube+=(kubectl)
# A node's own binaries, only when asked: a kind node image needs them, nothing else does.
[ -n "$node" ] && kube+=(kubelet kubeadm kube-proxy)
missing=()
for b in "${kube[@]}"; do have "$b" "$KUBERNETES_VERSION" || missing+=("$b"); done
if [ ${#missing[@]} -gt 0 ]; then
    say "building ${missing[*]} $KUBERNETES_VERSION from the Go module proxy"
    mod="$work/kubernetes-$KUBERNETES_VERSION"
    mkdir -p "$mod" "$work/out"
    src=$(cd "$mod" && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    if [ -z "$src" ] || [ ! -f "$src/go.mod" ]; then
        say "cannot download k8s.io/kubernetes@$KUBERNETES_VERSION from the Go module proxy"
        exit 1
    fi
    staging_version="v0.${KUBERNETES_VERSION#v1.}"
    {
        echo "module stalemate.local/kube-build"
        echo
        echo "go $(sed -n 's/^go //p' "$src/go.mod")"
        echo
        echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
        echo
        echo "replace ("
        # Each `k8s.io/x => ./staging/src/k8s.io/x` becomes `k8s.io/x => k8s.io/x v0.Y.Z`.
        sed -n '/^replace (/,/^)/p' "$src/go.mod" | awk -v v="$staging_version" '$2 == "=>" && $3 ~ /^\.\/staging\// { printf "\t%s => %s %s\n", $1, $1, v }'
        echo ")"
    } >"$mod/go.mod.new"
    cmp -s "$mod/go.mod.new" "$mod/go.mod" 2>/dev/null || { mv "$mod/go.mod.new" "$mod/go.mod"; rm -f "$mod/go.sum"; }
    rm -f "$mod/go.mod.new"
    # What hack/lib/version.sh stamps: kubectl's dispatcher picks its kubectl by the
    # server's /version, and a v0.0.0-master server breaks it.
    ldflags="-s -w"
    for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
        ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
        ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
    done
    pkgs=()
    for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
    (cd "$mod" && go build -trimpath -ldflags "$ldflags" -o "$work/out/" "${pkgs[@]}")
    for b in "${missing[@]}"; do done_ "$b" "$KUBERNETES_VERSION"; done
fi

if ! have etcd "$ETCD_VERSION"; then
    say "building etcd $ETCD_VERSION from the Go module proxy"
    mod="$work/etcd-$ETCD_VERSION"
    mkdir -p "$mod" "$work/out"
    printf 'module stalemate.local/etcd-build\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$mod/go.mod.new"
    cmp -s "$mod/go.mod.new" "$mod/go.mod" 2>/dev/null || { mv "$mod/go.mod.new" "$mod/go.mod"; rm -f "$mod/go.sum"; }
    rm -f "$mod/go.mod.new"
    (cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$work/out/etcd" go.etcd.io/etcd/server/v3)
    done_ etcd "$ETCD_VERSION"
fi

if ! have kwok "$KWOK_VERSION"; then
    say "building kwok $KWOK_VERSION from the Go module proxy"
    mkdir -p "$work/out"
    (cd "$work" && GOFLAGS='' GOBIN="$work/out" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION")
    done_ kwok "$KWOK_VERSION"
fi

if [ $((SECONDS - started)) -gt 2 ]; then
    say "built in $((SECONDS - started)) s into $dir"
fi
echo "$dir"
