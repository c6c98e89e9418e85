#!/bin/sh
# What a user does once the quick start has synced: the value behind /foo/bar v1 is
# rotated at the provider (here the fake SecretStore's spec: HELLO1 → HELLO3), and,
# rather than wait for the next refresh (refreshInterval 1h), they ask for a sync now with
# the annotation the docs give for it (any change to an ExternalSecret's labels or
# annotations makes it refresh). Then Secret demo/secret-to-be-created holds
# foo_bar=HELLO3.
#
# Steps, so each can be its own --workload (explore and run start each once the
# controller has settled after the one before):
#   workload.sh rotate   change the value in the SecretStore
#   workload.sh sync     annotate the ExternalSecret (force-sync)
#   workload.sh          both, one right after the other
set -eu
cache="${TMPDIR:-/tmp}/stalemate-eso-workload-$$"
trap 'rm -rf "$cache"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
k() { kubectl --cache-dir "$cache" -n demo "$@"; }
rotate() {
  k patch secretstores.external-secrets.io fake --type=json \
    -p '[{"op":"replace","path":"/spec/provider/fake/data/0/value","value":"HELLO3"}]'
}
sync() {
  k annotate externalsecrets.external-secrets.io example force-sync=1 --overwrite
}
case "${1:-all}" in
rotate) rotate ;;
sync) sync ;;
all) rotate && sync ;;
*)
  echo "usage: workload.sh [rotate|sync]" >&2
  exit 2
  ;;
esac
