#!/bin/sh
# KEDA's operator (keda-operator), run locally as KEDA's Helm chart runs it: leader
# election on (a real Lease, operator.keda.sh, in the `keda` namespace: POD_NAMESPACE,
# which the chart sets from the pod's namespace), every namespace watched
# (WATCH_NAMESPACE=""), the chart's log flags; its metrics and health addresses and the
# scalers' gRPC server (the metrics apiserver's, 9666 in the chart) on the free loopback
# ports each run is given, KUBECONFIG from stalemate. Extra arguments are passed on.
#
# One change from the chart: --enable-cert-rotation=false. With it on, the operator
# writes a CA and a serving certificate into the Secret keda/kedaorg-certs, exits (status
# 0: "exiting so pod can be restarted"), and then waits for the kubelet to project that
# Secret into --cert-dir, which no kubelet does here. Off, it is the chart's
# bring-your-own-certificates mode: the gRPC server reads ca.crt, tls.crt and tls.key from
# --cert-dir. This script makes a self-signed pair there once, in STALEMATE_DATA_DIR, which
# outlives a restart as a pod's volume does (without stalemate, a temporary directory).
# Nothing here talks to that server (no metrics apiserver runs).
#
# KEDA_CLUSTER_OBJECT_NAMESPACE: where ClusterTriggerAuthentications' Secrets are read; in a
# pod the operator reads it from the service-account namespace file (as `make run` does).
# KEDA_OPERATOR: the binary (`bash e2e/assets/build-zoo.sh keda` prints its directory).
: "${KEDA_OPERATOR:?the keda-operator binary (e2e/assets/build-zoo.sh keda)}"
if [ -n "${STALEMATE_DATA_DIR:-}" ]; then
  certs=$STALEMATE_DATA_DIR/certs
  own=
else
  certs=$(mktemp -d)
  own=1
fi
if [ ! -s "$certs/ca.crt" ]; then
  mkdir -p "$certs"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj /CN=keda-operator.keda.svc -addext subjectAltName=DNS:keda-operator.keda.svc,IP:127.0.0.1 \
    -addext extendedKeyUsage=serverAuth,clientAuth \
    -keyout "$certs/tls.key" -out "$certs/tls.crt" 2>/dev/null || exit 1
  cp "$certs/tls.crt" "$certs/ca.crt"
fi
export POD_NAMESPACE="${POD_NAMESPACE:-keda}" WATCH_NAMESPACE='' \
  KEDA_CLUSTER_OBJECT_NAMESPACE="${KEDA_CLUSTER_OBJECT_NAMESPACE:-keda}" \
  KEDA_HTTP_DEFAULT_TIMEOUT=3000 KEDA_HTTP_MIN_TLS_VERSION=TLS12 OPERATOR_NAME=keda-operator
set -- "$KEDA_OPERATOR" \
  --leader-elect --disable-compression=true \
  --zap-log-level=info --zap-encoder=console --zap-time-encoding=rfc3339 \
  --cert-dir="$certs" --enable-cert-rotation=false --cert-secret-name=kedaorg-certs \
  --operator-service-name=keda-operator --metrics-server-service-name=keda-operator-metrics-apiserver \
  --webhooks-service-name=keda-admission-webhooks --k8s-cluster-domain=cluster.local \
  --metrics-bind-address="127.0.0.1:${STALEMATE_METRICS_PORT:-8080}" \
  --health-probe-bind-address="127.0.0.1:${STALEMATE_HEALTH_PORT:-8081}" \
  --metrics-service-bind-address="127.0.0.1:${STALEMATE_PORT:-9666}" "$@"
[ -n "$own" ] || exec "$@"
trap 'rm -rf "$certs"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
"$@"
