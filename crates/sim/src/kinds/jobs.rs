//! Jobs: their defaults, and on create the selector generated from their uid; a pod
//! template that restarts `OnFailure` or `Never`, and that may not change but for a
//! suspended Job's scheduling directives and resources.

use serde_json::{Value, json};

use crate::defaults::{default, object, template};
use crate::strategy::Strategy;
use stalemate_wire::k8s::status::FieldError;

pub(crate) struct Jobs;

impl Strategy for Jobs {
    fn defaults(&self, obj: &mut Value, create: bool) {
        job(obj, create);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let policy = &obj["spec"]["template"]["spec"]["restartPolicy"];
        if !matches!(policy.as_str(), Some("OnFailure" | "Never")) {
            errs.push(FieldError {
                reason: "FieldValueRequired",
                field: "spec.template.spec.restartPolicy".into(),
                message: "Required value: valid values: \"OnFailure\", \"Never\"".into(),
            });
        }
        errs
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        if old["spec"]["template"] != new["spec"]["template"] {
            errs.extend(template_update(old, new));
        }
        errs
    }
}

/// Job defaults, and on create the selector the strategy generates from the uid (unless
/// `manualSelector`), its labels on the template and, when it has none, on the Job.
fn job(obj: &mut Value, create: bool) {
    let uid = obj["metadata"]["uid"].clone();
    let name = obj["metadata"]["name"].clone();
    let spec = object(obj, "spec");
    if spec["parallelism"].is_null() && spec["completions"].is_null() {
        spec["parallelism"] = json!(1);
        spec["completions"] = json!(1);
    }
    default(spec, "parallelism", json!(1));
    default(spec, "backoffLimit", json!(6));
    default(spec, "completionMode", json!("NonIndexed"));
    default(spec, "suspend", json!(false));
    if spec["podFailurePolicy"].is_null() {
        default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    }
    template(object(spec, "template"));
    if create && spec["manualSelector"] != json!(true) {
        default(spec, "manualSelector", json!(false));
        let labels = json!({
            "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
            "controller-uid": uid, "job-name": name,
        });
        spec["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
        let tl = object(object(object(spec, "template"), "metadata"), "labels");
        for (k, v) in labels.as_object().into_iter().flatten() {
            tl[k] = v.clone();
        }
    }
    // SetDefaults_Job: a Job without labels takes its template's, on every write (a
    // manual selector's too).
    let template_labels = obj["spec"]["template"]["metadata"]["labels"].clone();
    let meta = object(obj, "metadata");
    if meta["labels"].as_object().is_none_or(|l| l.is_empty()) && template_labels.is_object() {
        meta["labels"] = template_labels;
    }
    if create {
        obj["status"] = json!({});
    }
}

/// A Job's pod template is immutable (`validatePodTemplateUpdate`), but for a suspended
/// Job that has not started (or says it is suspended) and has no active pods, whose
/// scheduling directives and container resources may change (1.36+:
/// MutableSchedulingDirectivesForSuspendedJobs, MutablePodResourcesForSuspendedJobs).
fn template_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let status = &old["status"];
    let suspended_condition = (status["conditions"].as_array().into_iter().flatten())
        .any(|c| c["type"] == "Suspended" && c["status"] == "True");
    let mutable = old["spec"]["suspend"] == true
        && (status["startTime"].is_null() || suspended_condition)
        && status["active"].as_i64().unwrap_or(0) == 0;
    if !mutable {
        return vec![FieldError::invalid(
            "spec.template",
            "the pod template",
            "field is immutable",
        )];
    }
    let (new_spec, mut was) = (
        &new["spec"]["template"]["spec"],
        old["spec"]["template"]["spec"].clone(),
    );
    for k in ["nodeSelector", "tolerations", "schedulingGates"] {
        was[k] = new_spec[k].clone();
    }
    if !was["affinity"].is_null() || !new_spec["affinity"].is_null() {
        was["affinity"]["nodeAffinity"] = new_spec["affinity"]["nodeAffinity"].clone();
    }
    for list in ["containers", "initContainers"] {
        let theirs = new_spec[list].as_array().cloned().unwrap_or_default();
        if let Some(ours) = was[list].as_array_mut().filter(|o| o.len() == theirs.len()) {
            for (o, n) in ours
                .iter_mut()
                .zip(&theirs)
                .filter(|(o, n)| o["name"] == n["name"])
            {
                o["resources"] = n["resources"].clone();
            }
        }
    }
    // Nulls left by the copies are absent fields.
    let tidy = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.retain(|_, x| !x.is_null());
            if m.get("affinity").is_some_and(|a| {
                a.as_object()
                    .is_some_and(|a| a.values().all(Value::is_null))
            }) {
                m.shift_remove("affinity");
            }
        }
        v
    };
    if tidy(&was) == tidy(new_spec) {
        return Vec::new();
    }
    vec![FieldError::invalid(
        "spec.template.spec",
        "the pod spec",
        "field is immutable",
    )]
}
