//! `errors {verbs, status, rate, retryAfter, preconditioned}`: matching requests of the
//! target are answered with a synthetic `Status` shaped like the apiserver's own —
//! throttling, conflicts, a flaky apiserver. A `rate` below 1 fails that fraction, drawn
//! per request from the schedule's seeded generator.
//!
//! Where each answer comes from in a real kube-apiserver (v1.33,
//! `staging/src/k8s.io/apiserver/pkg/`), so a planner can inject only what one could say:
//! - 409 `Conflict`, "the object has been modified": `registry/generic/registry/store.go`
//!   (`OptimisticLockErrorMsg`) — only for writes with a precondition
//!   (`preconditioned: true`, see `proxy/precondition.rs`). A create's 409 is
//!   `AlreadyExists`, never this.
//! - 429 `TooManyRequests` with `Retry-After: 1`: `server/filters/maxinflight.go`
//!   (`tooManyRequests`, also API Priority and Fairness' rejection) — any request.
//! - 500 `InternalError`: `storage/errors/storage.go` (`InterpretCreateError`,
//!   `InterpretUpdateError`: an etcd error) — any write.
//! - 503 `ServiceUnavailable` "apiserver is shutting down" with `Retry-After: 1`:
//!   `server/filters/waitgroup.go` — any non-long-running request.
//! - 504 `Timeout` "request did not complete within requested timeout":
//!   `endpoints/handlers/finisher/finisher.go` — any write.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::behaviour::{Behaviour, Request, RequestAction};
use super::random::Random;
use crate::k8s::duration::GoDuration;
use crate::k8s::request::Verb;
use crate::k8s::status::{ApiError, GroupResource};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Errors {
    /// Verbs to fail (all when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verbs: Vec<Verb>,
    pub status: u16,
    /// Fraction of matching requests to fail (default 1).
    #[serde(default = "always")]
    pub rate: f64,
    #[serde(
        default,
        rename = "retryAfter",
        skip_serializing_if = "Option::is_none"
    )]
    pub retry_after: Option<GoDuration>,
    /// Only writes carrying a resourceVersion or uid precondition (update, an
    /// optimistic-lock patch, a delete with preconditions): the only ones a real
    /// apiserver answers 409 Conflict.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preconditioned: bool,
}

fn always() -> f64 {
    1.0
}

impl Behaviour for Errors {
    fn name(&self) -> &'static str {
        "errors"
    }

    fn check(&self) -> Vec<(String, String)> {
        let mut errs = Vec::new();
        if !matches!(self.status, 409 | 429 | 500 | 503 | 504) {
            errs.push((
                "status".into(),
                format!("{} is not one of 409, 429, 500, 503, 504", self.status),
            ));
        }
        if self.preconditioned
            && let Some(v) = self
                .verbs
                .iter()
                .find(|v| !matches!(v, Verb::Update | Verb::Patch | Verb::Delete))
        {
            errs.push((
                "preconditioned".into(),
                format!("a {v} never carries a precondition (only update, patch and delete do)"),
            ));
        }
        if !(0.0..=1.0).contains(&self.rate) {
            errs.push((
                "rate".into(),
                format!("{} is not between 0 and 1", self.rate),
            ));
        }
        errs
    }

    fn on_request(&self, r: &Request<'_>, random: &dyn Random) -> RequestAction {
        let matches = (self.verbs.is_empty() || self.verbs.contains(&r.verb))
            && (!self.preconditioned || r.precondition);
        if !matches || !random.chance(self.rate) {
            return RequestAction::Pass;
        }
        RequestAction::Answer(injected(r, self.status, self.retry_after.map(|d| d.0)))
    }
}

/// The synthetic `Status`, shaped like the apiserver's own, naming the window.
fn injected(r: &Request<'_>, code: u16, retry_after: Option<Duration>) -> ApiError {
    let gr = GroupResource {
        group: r.group,
        resource: r.resource,
    };
    let name = r.name.unwrap_or("");
    let mut e = match code {
        409 => ApiError::conflict_modified(gr, name),
        429 => ApiError::new(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
        ),
        503 => ApiError::service_unavailable("apiserver is shutting down"),
        504 => ApiError::new(
            504,
            "Timeout",
            "Timeout: request did not complete within requested timeout - context deadline exceeded",
        ),
        _ => ApiError::internal("an error on the server has prevented the request from succeeding"),
    };
    e.message = format!(
        "{} (injected by stalemate window {:?})",
        e.message, r.window
    );
    if let Some(d) = retry_after {
        let secs = d.as_secs().max(1);
        e.retry_after = Some(secs);
        e = e.with_details(serde_json::json!({"retryAfterSeconds": secs}));
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Coin(bool);
    impl Random for Coin {
        fn uniform(&self, lo: f64, _hi: f64) -> f64 {
            lo
        }
        fn chance(&self, _p: f64) -> bool {
            self.0
        }
    }

    fn req(verb: Verb) -> Request<'static> {
        Request {
            verb,
            group: "source.toolkit.fluxcd.io",
            resource: "gitrepositories",
            name: Some("podinfo"),
            precondition: false,
            window: "w",
        }
    }

    #[test]
    fn answers_matching_requests_with_the_apiservers_status() {
        let e: Errors =
            serde_json::from_str(r#"{"verbs": ["patch"], "status": 429, "retryAfter": "2s"}"#)
                .unwrap();
        assert!(matches!(
            e.on_request(&req(Verb::Get), &Coin(true)),
            RequestAction::Pass
        ));
        let RequestAction::Answer(s) = e.on_request(&req(Verb::Patch), &Coin(true)) else {
            panic!("not answered")
        };
        assert_eq!(
            (s.code, s.reason, s.retry_after),
            (429, "TooManyRequests", Some(2))
        );
        assert!(s.message.contains("window \"w\""));
        assert!(
            matches!(
                e.on_request(&req(Verb::Patch), &Coin(false)),
                RequestAction::Pass
            ),
            "rate: the coin decides"
        );
        let c: Errors = serde_json::from_str(r#"{"status": 409}"#).unwrap();
        let RequestAction::Answer(s) = c.on_request(&req(Verb::Update), &Coin(true)) else {
            panic!()
        };
        assert_eq!(s.reason, "Conflict");
        assert!(s.message.starts_with(
            "Operation cannot be fulfilled on gitrepositories.source.toolkit.fluxcd.io \"podinfo\""
        ));
        let bad: Errors = serde_json::from_str(r#"{"status": 418, "rate": 2}"#).unwrap();
        assert_eq!(bad.check().len(), 2);
    }

    /// `preconditioned`: a 409 only where a real apiserver could give one.
    #[test]
    fn a_preconditioned_conflict_spares_unconditioned_writes() {
        let c: Errors = serde_json::from_str(
            r#"{"verbs": ["update", "patch"], "status": 409, "preconditioned": true}"#,
        )
        .unwrap();
        assert!(c.check().is_empty());
        let plain = req(Verb::Patch);
        assert!(matches!(
            c.on_request(&plain, &Coin(true)),
            RequestAction::Pass
        ));
        let locked = Request {
            precondition: true,
            ..req(Verb::Update)
        };
        let RequestAction::Answer(s) = c.on_request(&locked, &Coin(true)) else {
            panic!("an update with a resourceVersion is answered")
        };
        assert_eq!((s.code, s.reason), (409, "Conflict"));
        let creates: Errors =
            serde_json::from_str(r#"{"verbs": ["create"], "status": 409, "preconditioned": true}"#)
                .unwrap();
        assert_eq!(
            creates.check(),
            vec![(
                "preconditioned".to_string(),
                "a create never carries a precondition (only update, patch and delete do)"
                    .to_string()
            )]
        );
    }
}
