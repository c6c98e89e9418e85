#!/bin/sh
# Kyverno's background controller (cmd/background-controller: generate and
# mutate-existing rules, through UpdateRequests), run locally as the Helm chart's
# kyverno-background-controller Deployment runs it: the chart's args and environment,
# leader election as it ships (always on: a Lease kyverno/kyverno-background-controller,
# 2 s retry period, 10 s renew deadline, 12 s lease), KUBECONFIG from stalemate.
#
# What differs from the chart, and why:
# - --kubeconfig: out of a cluster Kyverno reads no KUBECONFIG variable, only this flag
#   (without it, the in-cluster config).
# - its Prometheus metrics (OTel exporter, --metricsPort, chart 8000) on
#   127.0.0.1:$STALEMATE_PORT, and controller-runtime's metrics server (the chart's
#   --controllerRuntimeMetricsAddress=:8080) on 127.0.0.1:$STALEMATE_METRICS_PORT: that
#   one carries client-go's workqueue metrics (workqueue_depth{name="background"},
#   "policy", ...) for --idle-url. It only listens once this process leads.
# - --enableReporting without `generate` (the chart: validate,mutate,mutateExisting,
#   imageVerify,generate): each generate would leave a ClusterEphemeralReport per trigger,
#   which in a real install the reports controller (not run here) folds into a
#   PolicyReport and deletes. Here they would pile up, one more per UpdateRequest, and
#   every restart or retry would differ from the fault-free runs by reports alone.
# - KYVERNO_POD_NAME (the chart's downward API metadata.name, the Lease holder's
#   identity): a fixed pod-like name, so a restart of this process is a container
#   restart in the same pod, as kubelet does it.
# The environment the chart gives (KYVERNO_NAMESPACE and friends) may be overridden.
# Extra arguments are passed on.
# KYVERNO_BACKGROUND: the binary (e2e/assets/build-zoo.sh kyverno prints its directory).
: "${KYVERNO_BACKGROUND:?the kyverno-background-controller binary (bash e2e/assets/build-zoo.sh kyverno)}"
: "${KUBECONFIG:?a kubeconfig (stalemate sets it)}"
export KYVERNO_NAMESPACE="${KYVERNO_NAMESPACE:-kyverno}"
export KYVERNO_SERVICEACCOUNT_NAME="${KYVERNO_SERVICEACCOUNT_NAME:-kyverno-background-controller}"
export KYVERNO_DEPLOYMENT="${KYVERNO_DEPLOYMENT:-kyverno-background-controller}"
export KYVERNO_POD_NAME="${KYVERNO_POD_NAME:-kyverno-background-controller-6d9c7f8b5-q4x2m}"
export INIT_CONFIG="${INIT_CONFIG:-kyverno}"
export METRICS_CONFIG="${METRICS_CONFIG:-kyverno-metrics}"
exec "$KYVERNO_BACKGROUND" \
  --kubeconfig="$KUBECONFIG" \
  --disableMetrics=false --otelConfig=prometheus \
  --metricsHost=127.0.0.1 --metricsPort="${STALEMATE_PORT:-8000}" \
  --resyncPeriod=15m \
  --enableConfigMapCaching=true \
  --controllerRuntimeMetricsAddress="127.0.0.1:${STALEMATE_METRICS_PORT:-8080}" \
  --enableDeferredLoading=true \
  --maxAPICallResponseLength=2000000 --apiCallTimeout=30s --maxGlobalContextEntries=0 \
  --loggingFormat=text --v=2 \
  --omitEvents=PolicyApplied,PolicySkipped \
  --enablePolicyException=false \
  --enableReporting=validate,mutate,mutateExisting,imageVerify \
  "$@"
