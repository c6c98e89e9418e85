#!/bin/sh
# Flux's kustomize-controller, run locally as Flux's Deployment runs it: leader election on
# (a real Lease in flux-system, as `flux install` passes --enable-leader-election), its
# metrics and health addresses on the free loopback ports each run is given, KUBECONFIG
# from stalemate. Extra arguments are passed on (e.g. the lease's timings).
#
# controller-runtime reads the Lease's namespace from the file every pod has,
# /var/run/secrets/kubernetes.io/serviceaccount/namespace, and Flux gives no flag for it:
# the controller runs in a private mount namespace holding that file (`unshare -m`; as
# root, else in a user namespace too), so nothing on the machine changes.
# KUSTOMIZE_CONTROLLER: the binary (e2e/assets/build-flux.sh prints its directory).
: "${KUSTOMIZE_CONTROLLER:?the kustomize-controller binary}"
ns=${RUNTIME_NAMESPACE:-flux-system}
user=
[ "$(id -u)" = 0 ] || user=-r
# shellcheck disable=SC2016
exec unshare $user -m sh -c '
  mount -t tmpfs -o size=1m tmpfs /run &&
  mkdir -p /run/secrets/kubernetes.io/serviceaccount &&
  printf %s "$0" >/run/secrets/kubernetes.io/serviceaccount/namespace &&
  exec "$@"' "$ns" "$KUSTOMIZE_CONTROLLER" \
  --enable-leader-election --watch-all-namespaces=true --log-encoding=console \
  --metrics-addr="127.0.0.1:$STALEMATE_METRICS_PORT" \
  --health-addr="127.0.0.1:$STALEMATE_HEALTH_PORT" "$@"
