#!/usr/bin/env bash
# A kind cluster made on this machine with no image registry: Docker from Debian's
# packages, kind from the Go module proxy, and every image built here — a Debian root
# filesystem debootstrapped from Debian's mirror, the node image (e2e/kind/node/), the
# control plane's images from the binaries e2e/assets/build.sh makes, and stalemate's
# sidecar and explore images (e2e/kind/stalemate.Dockerfile).
#
#   bash e2e/kind/cluster.sh node      # Docker, kind, the node image and the control plane's
#   bash e2e/kind/cluster.sh images    # the same, and stalemate's sidecar and explore images
#   bash e2e/kind/cluster.sh create    # the images, then a one-node cluster ($CLUSTER)
#   bash e2e/kind/cluster.sh delete    # deletes the cluster
#   bash e2e/kind/cluster.sh env       # KIND=…, the images' names, for `eval`
#
# CLUSTER names the cluster (default stalemate); STALEMATE_BINARY is the stalemate the images
# hold (default: `cargo build --release`; they are rebuilt when it changes). Run as root (it installs Debian packages
# and starts dockerd when they are missing). Cached outside the clone in
# ${STALEMATE_CACHE:-~/.cache/stalemate}/kind/ (kind, containerd, crictl, the root
# filesystems as tarballs); Docker keeps the images. Times on 2 cores (2026-12-07): `node`
# with an empty cache and no images but warm Go caches 3.4 min (two debootstraps, most of
# it); with cold Go caches add containerd and crictl (2.8 min) and kubelet, kubeadm and
# kube-proxy (2.3 min beside a built kube-apiserver): about 8.5 min. Warm: 2 s. `create`
# then takes 40-50 s; stalemate's images 20 s.
#
# With internet, none of this is needed: `kind create cluster` pulls kind's own node
# image, and the repository's Dockerfile builds stalemate's images (deploy/README.md).
#
# What differs from kind's own node image: Debian's runc and CNI plugins; no kindnetd and
# no CoreDNS (their images are not built here): the pod network is a static ptp +
# host-local configuration in the image (one node only), and pods have no cluster DNS;
# the control plane's images are imported into containerd at boot (stalemate-images.service).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=e2e/assets/versions.env
. "$repo/e2e/assets/versions.env"

cluster=${CLUSTER:-stalemate}
cache=${STALEMATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stalemate}
kdir="$cache/kind"
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
kube_version=$KUBERNETES_VERSION
kind="$kdir/$KIND_VERSION/kind"
node_bin="$kdir/node-bin/containerd-$CONTAINERD_VERSION+crictl-$CRICTL_VERSION"
# What each root filesystem holds beyond debootstrap's minbase: the base of every other
# image (curl: the walkthrough asks the apiserver who a pod is from inside it), and what
# kind's images/base/Dockerfile installs, with Debian's runc and CNI plugins.
base_packages="ca-certificates,iptables,conntrack,curl"
node_packages="systemd,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,bash,ca-certificates,curl,jq,procps,e2fsprogs,socat,runc,containernetworking-plugins"
# A root filesystem's tag names its package list, so that changing the list rebuilds it.
packages_tag() { printf '%s-%s' "$DEBIAN_SUITE" "$(printf '%s' "$1" | sha256sum | cut -c1-8)"; }
base_image="stalemate.local/debian:$(packages_tag "$base_packages")"
node_rootfs_image="stalemate.local/kind-node-rootfs:$(packages_tag "$node_packages")"
node_image="stalemate.local/kind-node:$kube_version"
sidecar_image="stalemate.local/stalemate:dev"
explore_image="stalemate.local/stalemate-explore:dev"

say() { echo "cluster.sh: $*" >&2; }
die() {
    say "$*"
    exit 1
}
have() { command -v "$1" >/dev/null 2>&1; }
apt_install() {
    have apt-get || die "$* missing, and no apt-get to install it"
    [ "$(id -u)" = 0 ] || die "$* missing: run as root to install it (apt-get install $*)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# Is this process's capability bounding set short of what the kernel knows? (These
# machines drop CAP_SYS_RESOURCE; a --privileged container then cannot start: runc-bounded.)
caps_short() {
    local bnd last
    bnd=$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status)
    last=$(cat /proc/sys/kernel/cap_last_cap)
    [ "$((16#$bnd))" -ne "$(((1 << (last + 1)) - 1))" ]
}

ensure_docker() {
    have dockerd || apt_install docker.io
    have docker || die "docker.io installed no docker client"
    local runtime=()
    if caps_short; then
        mkdir -p "$kdir"
        cp "$here/runc-bounded" "$kdir/runc-bounded"
        runtime=(--add-runtime "runc-bounded=$kdir/runc-bounded" --default-runtime runc-bounded)
    fi
    if docker info >/dev/null 2>&1; then
        if [ ${#runtime[@]} -gt 0 ] && [ "$(docker info -f '{{.DefaultRuntime}}')" != runc-bounded ]; then
            die "this machine's capability bounding set is short, so Docker cannot start a --privileged container (a kind node); restart dockerd with: ${runtime[*]}"
        fi
        return
    fi
    # No systemd in the machines' containers: start the daemon ourselves. /run is on disk
    # here, so a daemon that did not stop cleanly leaves its pid files behind, and dockerd
    # refuses to start if another process has that pid by now.
    if ! pgrep -x dockerd >/dev/null; then
        rm -f /var/run/docker.pid /var/run/docker/containerd/containerd.pid
    fi
    say "starting dockerd ${runtime[*]} (log: $kdir/dockerd.log)"
    mkdir -p "$kdir"
    setsid dockerd "${runtime[@]}" >"$kdir/dockerd.log" 2>&1 </dev/null &
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && return
        sleep 1
    done
    tail -n 20 "$kdir/dockerd.log" >&2
    die "dockerd did not come up in 60 s"
}

ensure_kind() {
    [ -x "$kind" ] && return
    say "building kind $KIND_VERSION from the Go module proxy"
    GOFLAGS='' GOBIN="$(dirname "$kind")" CGO_ENABLED=0 go install "sigs.k8s.io/kind@$KIND_VERSION"
}

# The module's directory in the Go module cache: kind's base image files come from it.
module_dir() { (cd "$kdir" && GOFLAGS='' go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'); }

ensure_node_bin() {
    [ -x "$node_bin/containerd" ] && [ -x "$node_bin/crictl" ] && return
    say "building containerd $CONTAINERD_VERSION and crictl $CRICTL_VERSION from the Go module proxy"
    mkdir -p "$node_bin.part"
    # kind's base image builds containerd with these tags (images/base/Dockerfile).
    GOFLAGS='' GOBIN="$node_bin.part" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
        -tags "no_aufs no_zfs no_btrfs no_devmapper" \
        "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
        "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION" \
        "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION"
    GOFLAGS='' GOBIN="$node_bin.part" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
        "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
    rm -rf "$node_bin" && mv "$node_bin.part" "$node_bin"
}

# rootfs TAG PACKAGES: a Debian root filesystem (debootstrap, minbase and PACKAGES) as a
# tarball in the cache, docker-imported as TAG.
rootfs() {
    local tag=$1 packages=$2
    local name=${tag#stalemate.local/}
    name=${name/:/-}
    local tar="$kdir/rootfs/$name.tar"
    image_exists "$tag" && return
    if [ ! -f "$tar" ]; then
        have debootstrap || apt_install debootstrap
        say "debootstrap $DEBIAN_SUITE ($name) from $mirror"
        local dir="$kdir/rootfs/$name.part"
        rm -rf "$dir" && mkdir -p "$dir"
        debootstrap --variant=minbase --include="$packages" "$DEBIAN_SUITE" "$dir" "$mirror" >"$kdir/rootfs/$name.log" 2>&1 ||
            { tail -n 20 "$kdir/rootfs/$name.log" >&2; die "debootstrap $name failed (log: $kdir/rootfs/$name.log)"; }
        # What an image does not need: apt's lists and caches, documentation.
        rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/* "$dir"/usr/share/doc/* \
            "$dir"/usr/share/man/* "$dir"/usr/share/locale/* "$dir"/var/log/*
        tar -C "$dir" --numeric-owner -cf "$tar.part" . && mv "$tar.part" "$tar"
        rm -rf "$dir"
    fi
    docker import --change 'CMD ["/bin/bash"]' "$tar" "$tag" >/dev/null
}

# component NAME TAG: a control-plane image from build.sh's binary.
component() {
    local bin=$1 tag=$2 ctx="$kdir/ctx/$1"
    image_exists "$tag" && return
    rm -rf "$ctx" && mkdir -p "$ctx"
    cp "$kube_dir/$bin" "$ctx/$bin"
    docker build -q -f "$here/node/component.Dockerfile" --build-arg BASE="$base_image" \
        --build-arg BIN="$bin" -t "$tag" "$ctx" >/dev/null
}

pause_image() {
    local tag=$1 ctx="$kdir/ctx/pause"
    image_exists "$tag" && return
    rm -rf "$ctx" && mkdir -p "$ctx"
    local src
    src=$(module_dir "k8s.io/kubernetes@$kube_version")
    [ -f "$src/build/pause/linux/pause.c" ] || die "no build/pause/linux/pause.c in k8s.io/kubernetes@$kube_version"
    have gcc || apt_install gcc libc6-dev
    gcc -Os -Wall -Werror -static -DVERSION="stalemate-$kube_version" -o "$ctx/pause" "$src/build/pause/linux/pause.c"
    docker build -q -f "$here/node/pause.Dockerfile" -t "$tag" "$ctx" >/dev/null
}

node_image() {
    image_exists "$node_image" && return
    rootfs "$node_rootfs_image" "$node_packages"
    local ctx="$kdir/ctx/node" kindsrc
    kindsrc=$(module_dir "sigs.k8s.io/kind@$KIND_VERSION")
    [ -d "$kindsrc/images/base/files" ] || die "no images/base/files in sigs.k8s.io/kind@$KIND_VERSION"
    rm -rf "$ctx" && mkdir -p "$ctx/bin" "$ctx/kube" "$ctx/images"
    cp -r "$kindsrc/images/base/files" "$ctx/files"
    chmod -R u+w "$ctx/files"
    cp "$node_bin"/{containerd,ctr,containerd-shim-runc-v2,crictl} "$ctx/bin/"
    cp "$kube_dir"/{kubelet,kubeadm,kubectl} "$ctx/kube/"
    cp -r "$here/node/manifests" "$here/node/stalemate-images.service" "$here/node/10-stalemate.conflist" "$ctx/"
    # kind's runtime spec: containerd's default with kind's mount hook, no rlimits.
    "$node_bin/ctr" oci spec | python3 -c '
import json, sys
spec = json.load(sys.stdin)
spec.setdefault("hooks", {}).setdefault("createContainer", []).append({"path": "/kind/bin/mount-product-files.sh"})
spec["process"].pop("rlimits", None)
json.dump(spec, sys.stdout, indent=2)' >"$ctx/cri-base.json"
    # The images kubeadm asks for, and the sandbox image kind's containerd config names.
    local image tags=()
    while read -r image; do
        case "$image" in
        */coredns/*) continue ;; # not built here: no cluster DNS (see the header)
        */pause:*)
            # kind's containerd configuration names its own pause (sandbox_image).
            pause_image "$image"
            docker tag "$image" registry.k8s.io/pause:3.10
            tags+=("$image" registry.k8s.io/pause:3.10)
            ;;
        */etcd:*) component etcd "$image"; tags+=("$image") ;;
        *)
            local bin=${image##*/}
            component "${bin%%:*}" "$image"
            tags+=("$image")
            ;;
        esac
    done < <("$kube_dir/kubeadm" config images list --kubernetes-version "$kube_version")
    say "saving the control plane's images into the node image"
    docker save "${tags[@]}" -o "$ctx/images/control-plane.tar"
    docker build -q -f "$here/node/Dockerfile" --build-arg ROOTFS="$node_rootfs_image" \
        --build-arg KUBERNETES_VERSION="$kube_version" -t "$node_image" "$ctx" >/dev/null
    rm -rf "$ctx"
}

# The label an image of stalemate's carries: the binary it holds, by its digest.
binary_label() { docker image inspect -f '{{index .Config.Labels "stalemate.binary"}}' "$1" 2>/dev/null || true; }

stalemate_images() {
    local binary=${STALEMATE_BINARY:-}
    if [ -z "$binary" ]; then
        say "building stalemate (cargo build --release) for its images"
        (cd "$repo" && cargo build --release --locked --bin stalemate >/dev/null 2>&1) ||
            die "cargo build --release --bin stalemate failed (run it in $repo to see why)"
        binary="$repo/target/release/stalemate"
    fi
    [ -x "$binary" ] || die "STALEMATE_BINARY $binary is not an executable"
    local sum
    sum=$(sha256sum "$binary" | cut -c1-16)
    [ "$(binary_label "$sidecar_image")" = "$sum" ] && [ "$(binary_label "$explore_image")" = "$sum" ] && return
    say "stalemate's images, with $binary"
    local ctx="$kdir/ctx/stalemate"
    rm -rf "$ctx" && mkdir -p "$ctx/kube"
    cp "$binary" "$ctx/stalemate"
    # The explore image's control plane: envtest's binaries, not the node's.
    cp "$kube_dir"/{etcd,kube-apiserver,kube-controller-manager,kube-scheduler,kubectl,kwok} "$ctx/kube/"
    docker build -q -f "$here/stalemate.Dockerfile" --build-arg BASE="$base_image" --target explore \
        --label "stalemate.binary=$sum" -t "$explore_image" "$ctx" >/dev/null
    docker build -q -f "$here/stalemate.Dockerfile" --build-arg BASE="$base_image" \
        --label "stalemate.binary=$sum" -t "$sidecar_image" "$ctx" >/dev/null
    rm -rf "$ctx"
}

# Everything but stalemate's own images (which need its binary).
build_node() {
    ensure_docker
    ensure_kind
    ensure_node_bin
    kube_dir=$(bash "$repo/e2e/assets/build.sh" node | tail -n1)
    rootfs "$base_image" "$base_packages"
    node_image
}

images() {
    build_node
    stalemate_images
}

create() {
    images
    if "$kind" get clusters 2>/dev/null | grep -qx "$cluster"; then
        say "cluster $cluster exists; delete it first (bash e2e/kind/cluster.sh delete)"
        exit 2
    fi
    local config="$kdir/cluster-$cluster.yaml"
    # kubelet >= 1.35 refuses cgroup v1 unless told not to (these machines mount v1); no
    # CoreDNS (its image is not built here).
    cat >"$config" <<'YAML'
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
  - role: control-plane
kubeadmConfigPatches:
  - |
    kind: KubeletConfiguration
    failCgroupV1: false
  - |
    kind: InitConfiguration
    skipPhases:
      - preflight
      - addon/coredns
YAML
    "$kind" create cluster --name "$cluster" --image "$node_image" --config "$config" --wait 180s
    "$kind" load docker-image --name "$cluster" "$sidecar_image" "$explore_image"
}

case "${1:-}" in
node) build_node ;;
images) images ;;
create) create ;;
delete)
    ensure_kind
    "$kind" delete cluster --name "$cluster"
    ;;
env)
    echo "KIND=$kind"
    echo "NODE_IMAGE=$node_image"
    echo "SIDECAR_IMAGE=$sidecar_image"
    echo "EXPLORE_IMAGE=$explore_image"
    echo "BASE_IMAGE=$base_image"
    ;;
*)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
