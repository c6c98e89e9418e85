#!/bin/sh
# cert-manager's controller v1.11.5, run locally as the Helm chart of the same version
# (deploy/charts/cert-manager, default values) runs it: every default controller; leader
# election on, with a real Lease (kube-system/cert-manager-controller; the namespace is the
# chart's global.leaderElection.namespace; lease 60s, renew 40s, retry 15s are the binary's
# defaults, cmd/util/defaults.go:26-28, which the chart leaves alone); ClusterIssuer
# resources in the release's namespace (the chart passes
# --cluster-resource-namespace=$(POD_NAMESPACE)); log level 2; the acmesolver image of the
# same version; 60 concurrent challenges. Changed for a laptop: the kubeconfig is
# stalemate's (cert-manager does not read KUBECONFIG: without --kubeconfig it wants an
# in-cluster config), and the metrics server (chart: 9402 on all addresses) is on the free
# loopback port each run is given. v1.11.5 has no health server (and its chart no
# probes). The webhook and cainjector are not run. Extra arguments are passed on (e.g.
# --leader-elect=false, --feature-gates=StableCertificateRequestName=true).
# CERT_MANAGER: the controller binary (`bash e2e/assets/build-zoo.sh cert-manager`
# prints its directory); POD_NAMESPACE: the release's namespace (cert-manager).
: "${CERT_MANAGER:?the cert-manager controller binary (DIR/cert-manager-controller)}"
: "${KUBECONFIG:?a kubeconfig (stalemate sets it)}"
ns=${POD_NAMESPACE:-cert-manager}
exec "$CERT_MANAGER" \
  --v=2 \
  --kubeconfig="$KUBECONFIG" \
  --cluster-resource-namespace="$ns" \
  --leader-election-namespace=kube-system \
  --acme-http01-solver-image=quay.io/jetstack/cert-manager-acmesolver:v1.11.5 \
  --max-concurrent-challenges=60 \
  --metrics-listen-address="127.0.0.1:${STALEMATE_METRICS_PORT:-9402}" \
  "$@"
