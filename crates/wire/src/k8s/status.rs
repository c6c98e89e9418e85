//! Kubernetes `Status` objects: the body of every API failure.
//!
//! Clients decide what to do from `reason` and `code` (client-go's `apierrors.IsConflict`,
//! kube-rs's `ErrorResponse`), and people read `message`, so the shapes here follow
//! apimachinery's `pkg/api/errors/errors.go` field for field. The recorded bodies in
//! `fixtures/kube-apiserver-1.28/*` (404, 409, 410, 415, 422, 504) are the reference; the
//! conformance tests compare against them.

use serde_json::{Map, Value, json};

/// The group and resource an error is about, as apimachinery's `GroupResource` prints it
/// (`gitrepositories.source.testbed.example.com`, or `configmaps` for the core group).
#[derive(Debug, Clone, Copy)]
pub struct GroupResource<'a> {
    pub group: &'a str,
    pub resource: &'a str,
}

impl std::fmt::Display for GroupResource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// The reason of [`ApiError::page_not_found`]; never sent as a `Status` reason.
pub const PAGE_NOT_FOUND: &str = "PageNotFound";

/// A failure status, ready to be sent: HTTP code plus the `Status` body.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Box<Value>>,
    /// `Retry-After` header value in seconds, when the reason asks the client to retry.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// The `Status` object, keys in the order the apiserver writes them.
    pub fn to_status(&self) -> Value {
        let mut m = Map::new();
        m.insert("kind".into(), "Status".into());
        m.insert("apiVersion".into(), "v1".into());
        m.insert("metadata".into(), json!({}));
        m.insert("status".into(), "Failure".into());
        if !self.message.is_empty() {
            m.insert("message".into(), self.message.clone().into());
        }
        if !self.reason.is_empty() {
            m.insert("reason".into(), self.reason.into());
        }
        if let Some(d) = &self.details {
            m.insert("details".into(), (**d).clone());
        }
        m.insert("code".into(), self.code.into());
        Value::Object(m)
    }

    pub fn not_found(gr: GroupResource<'_>, name: &str) -> Self {
        ApiError::new(404, "NotFound", format!("{gr} \"{name}\" not found"))
            .with_details(details(gr, name))
    }

    pub fn already_exists(gr: GroupResource<'_>, name: &str) -> Self {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{gr} \"{name}\" already exists"),
        )
        .with_details(details(gr, name))
    }

    /// The 409 an optimistic-concurrency failure gets (`NewConflict` + `OptimisticLockErrorMsg`).
    pub fn conflict_modified(gr: GroupResource<'_>, name: &str) -> Self {
        Self::conflict(
            gr,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    pub fn conflict(gr: GroupResource<'_>, name: &str, why: &str) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {gr} \"{name}\": {why}"),
        )
        .with_details(details(gr, name))
    }

    /// 422 `Invalid` with one cause per field (`NewInvalid`).
    pub fn invalid(
        kind_or_gr: &str,
        group: &str,
        kind: &str,
        name: &str,
        causes: &[FieldError],
    ) -> Self {
        let summary: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let summary = if summary.len() == 1 {
            summary[0].clone()
        } else {
            format!("[{}]", summary.join(", "))
        };
        let mut d = Map::new();
        if !name.is_empty() {
            d.insert("name".into(), name.into());
        }
        if !group.is_empty() {
            d.insert("group".into(), group.into());
        }
        d.insert("kind".into(), kind.into());
        d.insert(
            "causes".into(),
            Value::Array(
                causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect(),
            ),
        );
        ApiError::new(
            422,
            "Invalid",
            format!("{kind_or_gr} \"{name}\" is invalid: {summary}"),
        )
        .with_details(Value::Object(d))
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    pub fn forbidden(gr: GroupResource<'_>, name: &str, why: &str) -> Self {
        ApiError::new(
            403,
            "Forbidden",
            format!("{gr} \"{name}\" is forbidden: {why}"),
        )
        .with_details(details(gr, name))
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        ApiError::new(405, "MethodNotAllowed", message)
    }

    /// The generic 404 for a path nothing serves (`NewNotFound` with an empty resource).
    /// A path no API serves. kube-apiserver's mux answers it with Go's plain
    /// `http.NotFound` — `404 page not found`, text/plain — not with a `Status`; a
    /// server that answers such errors renders [`PAGE_NOT_FOUND`] that way.
    pub fn page_not_found() -> Self {
        ApiError::new(404, PAGE_NOT_FOUND, "404 page not found")
    }

    /// Whether this is [`ApiError::page_not_found`].
    pub fn is_page_not_found(&self) -> bool {
        self.reason == PAGE_NOT_FOUND
    }

    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    pub fn not_acceptable(accepted: &[&str]) -> Self {
        ApiError::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {}",
                accepted.join(", ")
            ),
        )
    }

    pub fn entity_too_large(limit: usize) -> Self {
        ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// The watch-from-an-old-RV failure (`cacher.go newErrWatcher` → `NewResourceExpired`).
    pub fn expired(message: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", message)
    }

    /// 504 for an RV the server has not reached (`storage.NewTooLargeResourceVersionError`).
    pub fn too_large_resource_version(asked: u64, current: u64) -> Self {
        let mut e = ApiError::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {asked}, current: {current}"),
        )
        .with_details(json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1
        }));
        e.retry_after = Some(1);
        e
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(500, "InternalError", message)
    }

    pub fn service_unavailable(message: impl Into<String>) -> Self {
        ApiError::new(503, "ServiceUnavailable", message)
    }

    /// What the simulator does not do (a real apiserver would answer it).
    pub fn not_implemented(what: &str) -> Self {
        ApiError::new(
            501,
            "NotImplemented",
            format!(
                "the stalemate simulator does not answer {what}; run against a real kube-apiserver (--envtest)"
            ),
        )
    }
}

/// One entry of `details.causes` in a 422.
#[derive(Debug, Clone)]
pub struct FieldError {
    pub reason: &'static str,
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn required(field: &str, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueRequired",
            field: field.into(),
            message: format!("Required value: {detail}"),
        }
    }
    pub fn invalid(field: &str, value: &str, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueInvalid",
            field: field.into(),
            message: format!("Invalid value: {value}: {detail}"),
        }
    }
    pub fn forbidden(field: &str, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueForbidden",
            field: field.into(),
            message: format!("Forbidden: {detail}"),
        }
    }
}

fn details(gr: GroupResource<'_>, name: &str) -> Value {
    let mut d = Map::new();
    if !name.is_empty() {
        d.insert("name".into(), name.into());
    }
    if !gr.group.is_empty() {
        d.insert("group".into(), gr.group.into());
    }
    d.insert("kind".into(), gr.resource.into());
    Value::Object(d)
}

/// The `Status` a successful DELETE returns when the object is gone at once.
pub fn delete_success(gr: GroupResource<'_>, name: &str, uid: &str) -> Value {
    let mut d = details(gr, name);
    if let Some(m) = d.as_object_mut() {
        m.insert("uid".into(), uid.into());
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": d})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_matches_recorded_body() {
        let gr = GroupResource {
            group: "source.testbed.example.com",
            resource: "gitrepositories",
        };
        let got = ApiError::conflict_modified(gr, "podinfo").to_status();
        let want: Value = serde_json::from_str(include_str!(
            "../../../../fixtures/kube-apiserver-1.28/cr-put-stale-rv.body"
        ))
        .unwrap();
        assert_eq!(got, want);
        // Key order matters to people diffing bodies: kind first, code last.
        let keys: Vec<_> = got.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "kind",
                "apiVersion",
                "metadata",
                "status",
                "message",
                "reason",
                "details",
                "code"
            ]
        );
    }

    #[test]
    fn not_found_and_too_large_match_recorded_bodies() {
        let gr = GroupResource {
            group: "source.testbed.example.com",
            resource: "gitrepositories",
        };
        let want: Value = serde_json::from_str(include_str!(
            "../../../../fixtures/kube-apiserver-1.28/cr-get-missing.body"
        ))
        .unwrap();
        assert_eq!(ApiError::not_found(gr, "nope").to_status(), want);
        let want: Value = serde_json::from_str(include_str!(
            "../../../../fixtures/kube-apiserver-1.28/cr-list-too-large-rv.body"
        ))
        .unwrap();
        assert_eq!(
            ApiError::too_large_resource_version(999999999, 578).to_status(),
            want
        );
    }

    #[test]
    fn invalid_matches_recorded_body() {
        let want: Value = serde_json::from_str(include_str!(
            "../../../../fixtures/kube-apiserver-1.28/cr-put-no-rv.body"
        ))
        .unwrap();
        let got = ApiError::invalid(
            "gitrepositories.source.testbed.example.com",
            "source.testbed.example.com",
            "gitrepositories",
            "podinfo",
            &[FieldError::invalid(
                "metadata.resourceVersion",
                "0x0",
                "must be specified for an update",
            )],
        )
        .to_status();
        assert_eq!(got, want);
    }
}
