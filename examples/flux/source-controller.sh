#!/bin/sh
# Flux's source-controller, run locally as its users run controllers under stalemate:
# leader election off, storage in a temporary directory, its storage, metrics and health
# addresses on the free loopback ports each run is given, KUBECONFIG from stalemate.
# SOURCE_CONTROLLER: the binary (e2e/assets/build-flux.sh prints its directory).
storage=$(mktemp -d)
trap 'rm -rf "$storage"' EXIT
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
rm -rf "$storage"
exit $status
