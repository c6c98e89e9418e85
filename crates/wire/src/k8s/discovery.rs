//! Which version of each resource of a group to use: the group's preferred version, and
//! for a resource that version does not serve, its most stable other one.
//!
//! A group's preferred version need not serve every resource of the group: Kyverno's
//! `kyverno.io` prefers `v2`, which serves UpdateRequests and CleanupPolicies but not
//! ClusterPolicies (served at `v1` and `v2beta1` only). kube-rs's
//! `ApiGroup::recommended_resources` (the preferred version's) would call
//! `clusterpolicies.kyverno.io` not served at all, though `kubectl get clusterpolicies`
//! works: `kubectl` resolves each resource on its own, as this does.

use kube::discovery::{ApiCapabilities, ApiGroup, ApiResource};

/// Every resource the group serves, once each, by plural: at the preferred version where
/// it serves it, else at the most stable version that does.
pub fn resources(group: &ApiGroup) -> Vec<(ApiResource, ApiCapabilities)> {
    let mut out = group.recommended_resources();
    for (ar, caps) in group.resources_by_stability() {
        if !out.iter().any(|(a, _)| a.plural == ar.plural) {
            out.push((ar, caps));
        }
    }
    out.sort_by(|a, b| a.0.plural.cmp(&b.0.plural));
    out
}
