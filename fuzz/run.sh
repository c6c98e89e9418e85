#!/usr/bin/env bash
# Fuzz every target for a while: bash fuzz/run.sh [SECONDS_PER_TARGET] (default 60).
# Needs a nightly toolchain and cargo-fuzz:
#   rustup toolchain install nightly && cargo install cargo-fuzz --locked
# Seeds come from the recorded real exchanges in fixtures/. Crashes land in
# fuzz/artifacts/TARGET/ and make this script fail.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz/run.sh: needs a nightly toolchain and cargo-fuzz (see the top of this file)" >&2
  exit 2
fi
fixtures=fixtures/kube-apiserver-1.28
seed() { # seed TARGET FILE...
  local t="$1"
  shift
  mkdir -p "fuzz/corpus/$t"
  cp "$@" "fuzz/corpus/$t/"
}
seed watch_json "$fixtures"/cr-watch-json.body "$fixtures"/cm-watch-expired.body "$fixtures"/cm-watchlist-json.body
seed watch_proto "$fixtures"/cm-watch-protobuf.body "$fixtures"/cm-watch-expired-protobuf.body "$fixtures"/cm-watchlist-protobuf.body
seed watch_gzip "$fixtures"/cm-list-gzip.body
seed view_bodies "$fixtures"/cm-list-json-limit.body "$fixtures"/cm-list-protobuf.body "$fixtures"/cr-list-rv0.body
seed schedule config/*.json
seed request "$fixtures"/client-go-request-shapes.jsonl
for t in watch_json watch_proto watch_gzip view_bodies schedule request; do
  echo "== $t (${secs}s)"
  cargo +nightly fuzz run "$t" "fuzz/corpus/$t" -- -max_total_time="$secs" -max_len=1048576 2>&1 | tail -n 3
done
