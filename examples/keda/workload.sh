#!/bin/sh
# What a KEDA user does to hold an app at a fixed size for a while (an incident, a release;
# kedacore/keda#4044, #6982 and #7663 are about these annotations), then hand it back:
#
#   workload.sh pause           # annotate the ScaledObject autoscaling.keda.sh/paused-replicas=3
#   workload.sh pause-here      # annotate it autoscaling.keda.sh/paused=true (hold where it is)
#   workload.sh resume          # remove both annotations
#   workload.sh create-paused   # delete the ScaledObject, create it again already paused (#6421)
#
# Paused at 3, KEDA writes Paused=True, stops the scale loop, deletes its HPA, scales the
# Deployment to 3 itself (deployments/scale) and writes status.pausedReplicaCount: 3.
# Resumed, it writes Paused=False, clears pausedReplicaCount, makes the HPA again and starts
# the scale loop, which (the cron window being closed) scales the Deployment back to 0.
# Give each as a step of its own, so the operator settles in between:
#
#   --workload 'examples/keda/workload.sh pause' --workload 'examples/keda/workload.sh resume'
#
# (examples/keda/actions.yaml has these as explore sequences.) No argument: pause, 5 s,
# resume.
set -eu
cache="${TMPDIR:-/tmp}/stalemate-keda-workload-$$"
trap 'rm -rf "$cache"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
k() { kubectl --cache-dir "$cache" -n demo "$@"; }
pause() { k annotate scaledobject web autoscaling.keda.sh/paused-replicas=3 --overwrite; }
resume() { k annotate scaledobject web autoscaling.keda.sh/paused-replicas- autoscaling.keda.sh/paused-; }
case "${1:-both}" in
pause) pause ;;
pause-here) k annotate scaledobject web autoscaling.keda.sh/paused=true --overwrite ;;
resume) resume ;;
create-paused)
  # The setup's ScaledObject, as a user's GitOps tool would apply it with the annotation.
  k delete scaledobject web --wait=true
  k create -f - <<'YAML'
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: web
  namespace: demo
  annotations:
    autoscaling.keda.sh/paused: "true"
spec:
  scaleTargetRef:
    name: web
  pollingInterval: 2
  minReplicaCount: 0
  maxReplicaCount: 5
  triggers:
    - type: cron
      metadata:
        timezone: UTC
        start: 0 0 1 1 *
        end: 1 0 1 1 *
        desiredReplicas: "3"
YAML
  ;;
both)
  pause
  sleep 5
  resume
  ;;
*)
  echo "usage: workload.sh [pause|pause-here|resume|create-paused]" >&2
  exit 2
  ;;
esac
