//! The kinds with rules of their own, one file each, as kube-apiserver's
//! `pkg/registry/<group>/<kind>/strategy.go`: each a [`Strategy`] whose hooks the
//! generic writes and deletes call. [`strategy`] looks one up by resource type; every
//! other kind, custom resources included, gets [`DefaultStrategy`].

pub(crate) mod configmaps;
pub(crate) mod crds;
pub(crate) mod cronjobs;
pub(crate) mod daemonsets;
pub(crate) mod deployments;
pub(crate) mod jobs;
pub(crate) mod namespaces;
pub(crate) mod persistentvolumeclaims;
pub(crate) mod persistentvolumes;
pub(crate) mod pods;
pub(crate) mod podtemplates;
pub(crate) mod replicasets;
pub(crate) mod replicationcontrollers;
pub(crate) mod rolebindings;
pub(crate) mod roles;
pub(crate) mod secrets;
pub(crate) mod services;
pub(crate) mod statefulsets;
#[cfg(test)]
mod tests;
mod workloads;

use crate::resource_type::ResourceType;
use crate::strategy::{DefaultStrategy, Strategy};

/// The strategy of objects of type `rt` (every version of a kind shares one).
pub(crate) fn strategy(rt: &ResourceType) -> &'static dyn Strategy {
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
