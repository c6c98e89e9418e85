//! kstatus, the rules Flux, Argo and `kubectl wait` agree on for "is this object done?"
//! (sigs.k8s.io/cli-utils `pkg/kstatus/status`, generic rules): computed from the object
//! alone.

use serde_json::Value;

/// The kstatus of one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Status {
    Current,
    InProgress,
    Failed,
    Terminating,
}

/// A status and the rule that decided it, in words a report can print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub status: Status,
    pub rule: String,
}

fn verdict(status: Status, rule: impl Into<String>) -> Verdict {
    Verdict {
        status,
        rule: rule.into(),
    }
}

/// kstatus of an object, checked in this order: `deletionTimestamp` → Terminating;
/// `status.observedGeneration` ≠ `metadata.generation` (when both exist) → InProgress;
/// the first of `Reconciling=True` (InProgress) or `Stalled=True` (Failed) in the
/// conditions' array order; `Ready` True → Current, False or Unknown → InProgress; else
/// Current. Where a deciding condition carries its own `observedGeneration` and it is
/// older than the object's, it decides InProgress (see [`stale`]).
pub fn compute(obj: &Value) -> Verdict {
    let meta = &obj["metadata"];
    if !meta["deletionTimestamp"].is_null() {
        return verdict(Status::Terminating, "metadata.deletionTimestamp is set");
    }
    let status = &obj["status"];
    if let (Some(g), Some(og)) = (
        meta["generation"].as_i64(),
        status["observedGeneration"].as_i64(),
    ) && g != og
    {
        return verdict(
            Status::InProgress,
            format!("status.observedGeneration ({og}) != metadata.generation ({g})"),
        );
    }
    let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    for c in &conditions {
        let kind = c["type"].as_str();
        if c["status"].as_str() != Some("True") || !matches!(kind, Some("Reconciling" | "Stalled"))
        {
            continue;
        }
        // A Stalled or Reconciling about an older generation says nothing about this one.
        if let Some(stale) = stale(meta, c) {
            return stale;
        }
        return match kind {
            Some("Reconciling") => verdict(Status::InProgress, reason("Reconciling=True", c)),
            _ => verdict(Status::Failed, reason("Stalled=True", c)),
        };
    }
    if let Some(ready) = conditions
        .iter()
        .find(|c| c["type"].as_str() == Some("Ready"))
    {
        if let Some(stale) = stale(meta, ready) {
            return stale;
        }
        return match ready["status"].as_str() {
            Some("True") => verdict(Status::Current, "Ready=True"),
            s => verdict(
                Status::InProgress,
                reason(&format!("Ready={}", s.unwrap_or("Unknown")), ready),
            ),
        };
    }
    verdict(Status::Current, FALLBACK)
}

/// A condition that says which generation it describes, and names an older one than the
/// object's, is about a spec that is gone: a careful reader (and Flux's own kstatus use)
/// does not take it as the current answer. `Ready`, `Reconciling` or `Stalled` so stale
/// make the object InProgress: its controller has not answered for this generation yet.
fn stale(meta: &Value, c: &Value) -> Option<Verdict> {
    let (g, cg) = (
        meta["generation"].as_i64()?,
        c["observedGeneration"].as_i64()?,
    );
    (cg < g).then(|| {
        verdict(
            Status::InProgress,
            format!(
                "condition {} describes generation {cg}, metadata.generation is {g}",
                c["type"].as_str().unwrap_or("?")
            ),
        )
    })
}

/// kstatus as a reader who knows what the object's controller writes when it is done
/// — the condition types its fault-free runs ended with (`types`) — would call it: an
/// object kstatus calls Current while one of them is absent, or describes an older
/// generation, is not done yet (a status with `observedGeneration` and no conditions
/// at all is kstatus's Current, and not what this controller ends with).
pub fn compute_expecting(obj: &Value, types: &[String]) -> Verdict {
    let v = compute(obj);
    if v.status != Status::Current {
        return v;
    }
    let conditions = obj["status"]["conditions"].as_array();
    for t in types {
        let c = conditions.and_then(|cs| cs.iter().find(|c| c["type"].as_str() == Some(t)));
        match c {
            None => {
                return verdict(
                    Status::InProgress,
                    format!("condition {t} is absent (the fault-free runs end with it)"),
                );
            }
            Some(c) => {
                if let Some(stale) = stale(&obj["metadata"], c) {
                    return stale;
                }
            }
        }
    }
    v
}

/// The rule of an object kstatus calls Current for want of anything that says
/// otherwise: no Ready, Reconciling or Stalled condition.
pub const FALLBACK: &str = "no conditions that say otherwise";

/// Whether kstatus calls the object Current only by its fallback rule while its
/// controller has not written `status.observedGeneration` yet: nothing in the status
/// says anybody has looked at this generation (the readiness race).
pub fn current_unobserved(obj: &Value, v: &Verdict) -> bool {
    v.status == Status::Current
        && v.rule == FALLBACK
        && obj["status"]["observedGeneration"].is_null()
}

fn reason(what: &str, c: &Value) -> String {
    match c["reason"].as_str().filter(|r| !r.is_empty()) {
        Some(r) => format!("condition {what} ({r})"),
        None => format!("condition {what}"),
    }
}

/// The controller has written no status the readiness-race oracle can see: no
/// `observedGeneration`, no conditions.
pub fn has_no_status(obj: &Value) -> bool {
    let s = &obj["status"];
    s["observedGeneration"].is_null() && s["conditions"].as_array().is_none_or(|c| c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_ready_condition_about_an_older_generation_is_not_the_answer() {
        let stale = json!({"metadata": {"generation": 3},
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "observedGeneration": 2}]}});
        assert_eq!(
            st(stale),
            (
                Status::InProgress,
                "condition Ready describes generation 2, metadata.generation is 3".into()
            )
        );
        let fresh = json!({"metadata": {"generation": 3},
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "observedGeneration": 3}]}});
        assert_eq!(st(fresh).0, Status::Current);
    }

    #[test]
    fn any_deciding_condition_about_an_older_generation_is_not_the_answer() {
        let stalled = json!({"metadata": {"generation": 3},
            "status": {"conditions": [
                {"type": "Stalled", "status": "True", "observedGeneration": 2},
                {"type": "Ready", "status": "False", "observedGeneration": 2}]}});
        assert_eq!(
            st(stalled),
            (
                Status::InProgress,
                "condition Stalled describes generation 2, metadata.generation is 3".into()
            )
        );
        // Another type, stale, decides nothing: Ready does.
        let other = json!({"metadata": {"generation": 3},
            "status": {"conditions": [
                {"type": "ArtifactInStorage", "status": "False", "observedGeneration": 1},
                {"type": "Ready", "status": "True", "observedGeneration": 3}]}});
        assert_eq!(st(other), (Status::Current, "Ready=True".into()));
    }

    #[test]
    fn a_status_without_the_conditions_the_references_end_with_is_not_done() {
        let types = vec!["Ready".to_string(), "ArtifactInStorage".to_string()];
        // observedGeneration written, conditions not yet: kstatus's Current.
        let half = json!({"metadata": {"generation": 2},
            "status": {"observedGeneration": 2}});
        assert_eq!(st(half.clone()).0, Status::Current);
        let v = compute_expecting(&half, &types);
        assert_eq!(
            (v.status, v.rule),
            (
                Status::InProgress,
                "condition Ready is absent (the fault-free runs end with it)".into()
            )
        );
        let stale_other = json!({"metadata": {"generation": 2},
            "status": {"observedGeneration": 2, "conditions": [
                {"type": "Ready", "status": "True", "observedGeneration": 2},
                {"type": "ArtifactInStorage", "status": "True", "observedGeneration": 1}]}});
        assert_eq!(
            compute_expecting(&stale_other, &types).rule,
            "condition ArtifactInStorage describes generation 1, metadata.generation is 2"
        );
        let done = json!({"metadata": {"generation": 2},
            "status": {"observedGeneration": 2, "conditions": [
                {"type": "ArtifactInStorage", "status": "True"},
                {"type": "Ready", "status": "True", "observedGeneration": 2}]}});
        assert_eq!(
            compute_expecting(&done, &types),
            compute(&done),
            "every expected type there and about this generation: kstatus's answer"
        );
        // Not Current already: kstatus's answer stands.
        let failed = json!({"status": {"conditions": [{"type": "Stalled", "status": "True"}]}});
        assert_eq!(compute_expecting(&failed, &types).status, Status::Failed);
        // Nothing expected: kstatus.
        assert_eq!(compute_expecting(&half, &[]).status, Status::Current);
    }

    fn st(v: Value) -> (Status, String) {
        let v = compute(&v);
        (v.status, v.rule)
    }

    #[test]
    fn the_kstatus_rules_in_order() {
        // The Flux F1 bug's end state: a valid artifact, Ready=True, generation moved on.
        let stuck = json!({"metadata": {"generation": 2},
            "status": {"observedGeneration": 1, "conditions": [
                {"type": "Ready", "status": "True", "reason": "Succeeded"},
                {"type": "ArtifactInStorage", "status": "True"}]}});
        assert_eq!(
            st(stuck),
            (
                Status::InProgress,
                "status.observedGeneration (1) != metadata.generation (2)".into()
            )
        );
        // Terminating wins over everything.
        assert_eq!(
            st(json!({"metadata": {"generation": 2, "deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"observedGeneration": 1}})).0,
            Status::Terminating
        );
        // First of Reconciling/Stalled in array order.
        let both = |first: &str, second: &str| {
            json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1, "conditions": [
                {"type": first, "status": "True", "reason": "Progressing"},
                {"type": second, "status": "True"},
                {"type": "Ready", "status": "True"}]}})
        };
        assert_eq!(
            st(both("Reconciling", "Stalled")),
            (
                Status::InProgress,
                "condition Reconciling=True (Progressing)".into()
            )
        );
        assert_eq!(st(both("Stalled", "Reconciling")).0, Status::Failed);
        // Reconciling=False is not a reason to wait.
        assert_eq!(
            st(
                json!({"status": {"conditions": [{"type": "Reconciling", "status": "False"}, {"type": "Ready", "status": "True"}]}})
            ),
            (Status::Current, "Ready=True".into())
        );
        assert_eq!(
            st(
                json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "GitOperationFailed"}]}})
            ),
            (
                Status::InProgress,
                "condition Ready=False (GitOperationFailed)".into()
            )
        );
        assert_eq!(
            st(json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})).0,
            Status::InProgress
        );
        // observedGeneration without generation (or the reverse) is not compared.
        assert_eq!(
            st(json!({"status": {"observedGeneration": 3}})).0,
            Status::Current
        );
        // Nothing at all: Current — which is what the readiness-race oracle catches.
        let fresh = json!({"metadata": {"generation": 1}, "spec": {}});
        assert_eq!(st(fresh.clone()).0, Status::Current);
        assert!(has_no_status(&fresh));
        assert!(!has_no_status(
            &json!({"status": {"observedGeneration": -1}})
        ));
        assert!(!has_no_status(
            &json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        ));
    }
}
