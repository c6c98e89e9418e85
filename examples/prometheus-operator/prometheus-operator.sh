#!/bin/sh
# prometheus-operator, run locally as its Deployment runs it
# (example/rbac/prometheus-operator/prometheus-operator-deployment.yaml, v0.85.0): the same
# four flags, GOGC=30, every namespace watched, no leader election (the operator has none:
# one replica). KUBECONFIG from stalemate (the operator reads it, k8sutil.NewClusterConfig).
# Its one web listener (/metrics, /healthz, the admission webhook's endpoints) on the free
# loopback port each run is given, not :8080. No state on disk. Extra arguments are passed on.
#
# The config-reloader image is only written into the pods' spec; nothing pulls it.
# PROMETHEUS_OPERATOR: the binary (`bash e2e/assets/build-zoo.sh prometheus-operator`
# prints its directory).
: "${PROMETHEUS_OPERATOR:?the prometheus-operator binary (DIR/operator of build-zoo.sh prometheus-operator)}"
GOGC=${GOGC:-30}
export GOGC
exec "$PROMETHEUS_OPERATOR" \
  --kubelet-service=kube-system/kubelet \
  --prometheus-config-reloader="${PROMETHEUS_CONFIG_RELOADER:-quay.io/prometheus-operator/prometheus-config-reloader:v0.85.0}" \
  --kubelet-endpoints=true \
  --kubelet-endpointslice=false \
  --web.listen-address="127.0.0.1:${STALEMATE_METRICS_PORT:-8080}" "$@"
