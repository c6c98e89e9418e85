//! The kinds with rules of their own, one file each, as kube-apiserver's
//! `pkg/registry/<group>/<kind>/strategy.go`: each a [`Strategy`] whose hooks the
//! generic writes and deletes call. [`strategy`] looks one up by resource type; every
//! other kind, custom resources included, gets [`DefaultStrategy`].

pub mod configmaps;
pub mod crds;
pub mod cronjobs;
pub mod daemonsets;
pub mod deployments;
pub mod jobs;
pub mod namespaces;
pub mod persistentvolumeclaims;
pub mod persistentvolumes;
pub mod pods;
pub mod podtemplates;
pub mod replicasets;
pub mod replicationcontrollers;
pub mod rolebindings;
pub mod roles;
pub mod secrets;
pub mod services;
pub mod statefulsets;
#[cfg(test)]
mod tests;
mod workloads;

use crate::sim::resource_type::ResourceType;
use crate::sim::strategy::{DefaultStrategy, Strategy};

/// The strategy of objects of type `rt` (every version of a kind shares one).
pub fn strategy(rt: &ResourceType) -> &'static dyn Strategy {
    if rt.custom {
        return &DefaultStrategy;
    }
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "ConfigMap") => &configmaps::ConfigMaps,
        ("", "Namespace") => &namespaces::Namespaces,
        ("", "PersistentVolume") => &persistentvolumes::PersistentVolumes,
        ("", "PersistentVolumeClaim") => &persistentvolumeclaims::PersistentVolumeClaims,
        ("", "Pod") => &pods::Pods,
        ("", "PodTemplate") => &podtemplates::PodTemplates,
        ("", "ReplicationController") => &replicationcontrollers::ReplicationControllers,
        ("", "Secret") => &secrets::Secrets,
        ("", "Service") => &services::Services,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => &crds::Crds,
        ("apps", "DaemonSet") => &daemonsets::DaemonSets,
        ("apps", "Deployment") => &deployments::Deployments,
        ("apps", "ReplicaSet") => &replicasets::ReplicaSets,
        ("apps", "StatefulSet") => &statefulsets::StatefulSets,
        ("batch", "CronJob") => &cronjobs::CronJobs,
        ("batch", "Job") => &jobs::Jobs,
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => &roles::Roles,
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            &rolebindings::RoleBindings
        }
        _ => &DefaultStrategy,
    }
}
