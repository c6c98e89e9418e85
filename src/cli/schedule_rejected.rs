//! A sidecar whose schedule does not load. Out of a cluster, `serve` stops on a bad
//! schedule: the user is at the terminal. In a pod (`--in-cluster`), stopping would take
//! the controller down with it — its API traffic goes through the sidecar — and a
//! crash-looping sidecar reads like a stalemate bug. So the sidecar serves without faults
//! or oracles, logs every error, and records a Warning event on its own pod, where
//! `kubectl describe pod` and `kubectl get events` show it: the ConfigMap can be fixed and
//! the pod restarted.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};

/// The event's reason (`kubectl get events --field-selector reason=ScheduleRejected`).
pub const REASON: &str = "ScheduleRejected";

/// Where `stalemate inject` puts the pod's own name, namespace and UID (the downward API):
/// the event's involved object.
pub use crate::server::inject::{POD_NAME_ENV, POD_NAMESPACE_ENV, POD_UID_ENV};

/// The pod the sidecar runs in, from the downward API; `None` outside one.
#[derive(Clone, Debug, PartialEq)]
pub struct ThisPod {
    pub name: String,
    pub namespace: String,
    pub uid: Option<String>,
}

impl ThisPod {
    pub fn from_env() -> Option<ThisPod> {
        let var = |k| std::env::var(k).ok().filter(|v: &String| !v.is_empty());
        Some(ThisPod {
            name: var(POD_NAME_ENV)?,
            namespace: var(POD_NAMESPACE_ENV)?,
            uid: var(POD_UID_ENV),
        })
    }
}

/// The Warning event for a schedule that did not load: `message` is the loader's error,
/// cut to what the API accepts (an event message is at most 1 KiB when shown).
pub fn event(pod: &ThisPod, message: &str, now: std::time::SystemTime) -> Event {
    let now = k8s_openapi::jiff::Timestamp::try_from(now)
        .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    let mut message =
        format!("the schedule did not load; serving with no faults and no oracles: {message}");
    if message.len() > 1024 {
        let mut cut = 1021;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push_str("...");
    }
    Event {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}.", pod.name)),
            namespace: Some(pod.namespace.clone()),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(pod.name.clone()),
            namespace: Some(pod.namespace.clone()),
            uid: pod.uid.clone(),
            field_path: Some("spec.containers{stalemate}".into()),
            ..ObjectReference::default()
        },
        reason: Some(REASON.into()),
        message: Some(message),
        type_: Some("Warning".into()),
        source: Some(EventSource {
            component: Some("stalemate".into()),
            host: None,
        }),
        reporting_component: Some("stalemate".into()),
        reporting_instance: Some(pod.name.clone()),
        action: Some("LoadSchedule".into()),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        event_time: Some(MicroTime(now)),
        count: Some(1),
        ..Event::default()
    }
}

/// Records the event with the sidecar's own credentials (the pod's service account, as
/// the kubelet mounted it). A failure (no RBAC for events, say) is logged, never fatal:
/// the log already has the errors.
pub async fn record(client: kube::Client, pod: ThisPod, message: String) {
    let api: kube::Api<Event> = kube::Api::namespaced(client, &pod.namespace);
    let event = event(&pod, &message, std::time::SystemTime::now());
    match api.create(&kube::api::PostParams::default(), &event).await {
        Ok(_) => {
            tracing::info!(pod = %pod.name, reason = REASON, "recorded a Warning event on the pod")
        }
        Err(e) => {
            tracing::warn!(pod = %pod.name, error = %e, "could not record the ScheduleRejected event")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> ThisPod {
        ThisPod {
            name: "source-controller-7d9f-abcde".into(),
            namespace: "flux-system".into(),
            uid: Some("0b6c".into()),
        }
    }

    #[test]
    fn the_event_names_the_pod_the_reason_and_the_errors() {
        let e = event(
            &pod(),
            "schedule.json has 1 error(s):\n  windows[0]: no fault",
            std::time::UNIX_EPOCH,
        );
        assert_eq!(e.involved_object.kind.as_deref(), Some("Pod"));
        assert_eq!(
            e.involved_object.name.as_deref(),
            Some("source-controller-7d9f-abcde")
        );
        assert_eq!(e.involved_object.uid.as_deref(), Some("0b6c"));
        assert_eq!(e.metadata.namespace.as_deref(), Some("flux-system"));
        assert_eq!(e.reason.as_deref(), Some(REASON));
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        let m = e.message.unwrap_or_default();
        assert!(
            m.contains("windows[0]: no fault") && m.contains("no faults"),
            "{m}"
        );
    }

    #[test]
    fn a_long_message_is_cut_on_a_character_boundary() {
        let long = "é".repeat(2000);
        let m = event(&pod(), &long, std::time::UNIX_EPOCH)
            .message
            .unwrap_or_default();
        assert!(m.len() <= 1024 && m.ends_with("..."), "{}", m.len());
    }
}
