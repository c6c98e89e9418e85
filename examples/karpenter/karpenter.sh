#!/bin/sh
# Karpenter with its kwok cloud provider (sigs.k8s.io/karpenter/kwok), run locally as the
# kwok chart (kwok/charts) runs it: the chart's environment, leader election on (a real
# Lease, karpenter-leader-election, in kube-system as the kwok Makefile installs it),
# its metrics and health probe on the free ports each run is given, KUBECONFIG from
# stalemate. Extra arguments are passed on (e.g. --feature-gates=StaticCapacity=true,
# --log-level=debug).
#
# Changed from the chart, and why:
# - the Lease's namespace is given (LEADER_ELECTION_NAMESPACE, Karpenter's flag "if
#   running outside the cluster"), where a pod has it from its service-account files;
# - METRICS_PORT/HEALTH_PROBE_PORT are the run's ports, not 8080/8081. Karpenter takes
#   a port only and binds it on every interface (":PORT");
# - no MEMORY_LIMIT/CPU_REQUESTS from a resource spec: CPU_REQUESTS is the default, 1000;
# - FEATURE_GATES holds only the three gates the chart's values.yaml sets (all off, as by
#   default). The chart's template also names StaticCapacity and CapacityBuffer, which
#   its values.yaml at v1.15.0 does not set: rendered as "StaticCapacity=,", which
#   Karpenter's parser refuses. Leaving them out gives their defaults (off).
#
# KARPENTER: the binary (`bash e2e/assets/build-zoo.sh karpenter` prints its directory).
: "${KARPENTER:?the karpenter binary (DIR/karpenter, DIR from e2e/assets/build-zoo.sh karpenter)}"
ns=${KARPENTER_NAMESPACE:-kube-system}
exec env \
  KUBERNETES_MIN_VERSION=1.19.0-0 \
  KARPENTER_SERVICE=karpenter \
  LOG_LEVEL="${LOG_LEVEL:-info}" \
  METRICS_PORT="${STALEMATE_METRICS_PORT:-8080}" \
  HEALTH_PROBE_PORT="${STALEMATE_HEALTH_PORT:-8081}" \
  SYSTEM_NAMESPACE="$ns" \
  LEADER_ELECTION_NAMESPACE="$ns" \
  CPU_REQUESTS=1000 \
  BATCH_MAX_DURATION=10s \
  BATCH_IDLE_DURATION=1s \
  PREFERENCE_POLICY=Respect \
  MIN_VALUES_POLICY=Strict \
  FEATURE_GATES=SpotToSpotConsolidation=false,NodeRepair=false,PodDeletionCostManagement=false \
  "$KARPENTER" "$@"
