#!/bin/sh
# Flux's source-controller, run locally as its users run controllers under stalemate:
# leader election off, its storage, metrics and health addresses on the free loopback
# ports each run is given, KUBECONFIG from stalemate. Its artifact storage is the run's
# STALEMATE_DATA_DIR: in a Deployment it is an emptyDir, which a container restart keeps
# (a restart fault is one), so it must outlive this process; without stalemate, a
# temporary directory of its own.
# SOURCE_CONTROLLER: the binary (e2e/assets/build-flux.sh prints its directory).
if [ -n "${STALEMATE_DATA_DIR:-}" ]; then
  storage=$STALEMATE_DATA_DIR/storage
  mkdir -p "$storage"
  own=
else
  storage=$(mktemp -d)
  own=1
  trap 'rm -rf "$storage"' EXIT
fi
"${SOURCE_CONTROLLER:?the source-controller binary}" \
  --enable-leader-election=false --watch-all-namespaces=true --log-encoding=console \
  --storage-path="$storage" \
  --storage-addr="127.0.0.1:$STALEMATE_PORT" --storage-adv-addr="127.0.0.1:$STALEMATE_PORT" \
  --metrics-addr="127.0.0.1:$STALEMATE_METRICS_PORT" \
  --health-addr="127.0.0.1:$STALEMATE_HEALTH_PORT" "$@" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' TERM INT
wait $pid
status=$?
[ -n "$own" ] && rm -rf "$storage"
exit $status
