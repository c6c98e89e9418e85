#!/bin/sh
# A user's follow-up to the quick start: the platform team relaxes the policy to deny
# ingress only. With `synchronize: true` the background controller's policy controller
# sees the policy change and creates an UpdateRequest for the NetworkPolicies it made
# (found by their generate.kyverno.io/* labels), and its UpdateRequest controller
# updates each in place: policyTypes [Ingress].
# Run it as `stalemate run … --workload examples/kyverno/workload.sh` (KUBECONFIG is the
# workload's listener of the proxy).
exec kubectl patch clusterpolicies.kyverno.io add-networkpolicy --type=json \
  -p '[{"op":"replace","path":"/spec/rules/0/generate/data/spec/policyTypes","value":["Ingress"]}]'
