#!/bin/sh
# kube-controller-manager as the controller under test, running one of its controllers:
#
#   kcm.sh job|replicaset|daemonset|statefulset [more kube-controller-manager flags]
#
# The binary is the one of the control plane `stalemate ... --envtest DIR|VERSION` runs
# (KUBEBUILDER_ASSETS), so the version under test is the --envtest one. Give
# `--feature-gates=StaleControllerConsistencyJob=false` (and so on) to run 1.36+ with
# KEP-5647's read-your-own-writes checks off.
set -eu
controller=$1
shift
exec "$KUBEBUILDER_ASSETS/kube-controller-manager" --kubeconfig="$KUBECONFIG" \
  --controllers="$controller" \
  --root-ca-file="$STALEMATE_CONTROL_PLANE/ca.crt" \
  --service-account-private-key-file="$STALEMATE_CONTROL_PLANE/sa.key" \
  --use-service-account-credentials=false \
  --leader-elect=false --secure-port=0 "$@"
