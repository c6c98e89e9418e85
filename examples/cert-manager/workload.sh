#!/bin/sh
# A user's follow-up to the quick-start: renew the leaf Certificate by hand, as
# `cmctl renew example-com -n sandbox` does (cmctl sets the Issuing=True condition,
# reason ManuallyTriggered, on the Certificate's status: cmd/ctl/pkg/renew/renew.go:202-204
# at v1.11.5). A CertificateRequest for revision 2 and a new certificate follow. At
# v1.11.5 the key is kept (no spec.privateKey.rotationPolicy means Never) and revision 1's
# CertificateRequest stays (no spec.revisionHistoryLimit means no garbage collection).
# kubectl only: once the Certificate is Ready, one JSON patch of its status subresource.
#   stalemate run … --workload examples/cert-manager/workload.sh -- …
# Arguments: the Certificate and its namespace (default example-com, sandbox).
set -eu
crt=${1:-example-com}
ns=${2:-sandbox}
kubectl wait --for=condition=Ready --timeout=120s -n "$ns" "certificate/$crt"
gen=$(kubectl get -n "$ns" "certificate/$crt" -o jsonpath='{.metadata.generation}')
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kubectl patch -n "$ns" "certificate/$crt" --subresource=status --type=json -p "[{\"op\": \"add\", \"path\": \"/status/conditions/-\", \"value\": {\"type\": \"Issuing\", \"status\": \"True\", \"reason\": \"ManuallyTriggered\", \"message\": \"Certificate re-issuance manually triggered\", \"lastTransitionTime\": \"$now\", \"observedGeneration\": $gen}}]"
