#!/bin/sh
# kube-controller-manager as the controller under test, all its controllers on, given
# its control plane's CA and service-account key by `stalemate ... --envtest`.
exec "$KUBEBUILDER_ASSETS/kube-controller-manager" --kubeconfig="$KUBECONFIG" \
  --root-ca-file="$STALEMATE_CONTROL_PLANE/ca.crt" \
  --service-account-private-key-file="$STALEMATE_CONTROL_PLANE/sa.key" \
  --use-service-account-credentials=false \
  --leader-elect=false --secure-port=0 "$@"
