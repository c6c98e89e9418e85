#!/bin/sh
# External Secrets Operator's controller (the binary's default command), run locally as
# the Helm chart's external-secrets Deployment runs it: the chart's default args
# (--concurrent=1, --loglevel=info, --zap-time-encoding=epoch; leader election off, the
# chart's leaderElect: false; every reconciler on: SecretStore, ClusterSecretStore,
# ExternalSecret, ClusterExternalSecret, PushSecret, ClusterPushSecret, GeneratorState),
# KUBECONFIG from stalemate.
#
# What differs from the chart, and why:
# - --metrics-addr: the chart's :8080 becomes 127.0.0.1:$STALEMATE_METRICS_PORT, the free
#   loopback port each run is given (controller-runtime's metrics, with workqueue_depth
#   for --idle-url).
# - no health port: this version's controller has no health probe flag (only the
#   webhook and cert-controller, not run here, have --healthz-addr).
# Extra arguments are passed on (later flags win: --enable-leader-election=true,
# --zap-time-encoding=iso8601, --loglevel=debug ...). With leader election on, the Lease
# (external-secrets-controller) goes in the namespace of the pod's service-account file,
# which a machine has not; see examples/flux/kustomize-controller.sh for how to give it one.
# EXTERNAL_SECRETS: the binary (bash e2e/assets/build-zoo.sh external-secrets prints its
# directory).
: "${EXTERNAL_SECRETS:?the external-secrets binary (bash e2e/assets/build-zoo.sh external-secrets)}"
: "${KUBECONFIG:?a kubeconfig (stalemate sets it)}"
exec "$EXTERNAL_SECRETS" \
  --concurrent=1 \
  --metrics-addr="127.0.0.1:${STALEMATE_METRICS_PORT:-8080}" \
  --loglevel=info --zap-time-encoding=epoch \
  "$@"
