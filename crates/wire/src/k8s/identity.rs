//! Who a request says it is, on the wire: its `User-Agent`, and the service account in
//! its bearer token. Which schedule client that makes it is the proxy's business
//! (`proxy/identity.rs`), which also knows the listener a request came in on.
//!
//! The token is read without verifying it (the upstream verifies; the proxy only needs a
//! name to match windows by) and is never logged (docs/DESIGN.md "Vocabulary").

use base64::Engine as _;
use http::HeaderMap;
use serde_json::{Value, json};

/// The request's `User-Agent` (empty when it has none, or none in ASCII).
pub fn user_agent(headers: &HeaderMap) -> &str {
    headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The service account (`namespace:name`) its bearer token's subject names
/// (`system:serviceaccount:NAMESPACE:NAME`), read without verifying the token.
pub fn service_account(headers: &HeaderMap) -> Option<String> {
    headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' ').map(|(_, t)| t.trim()))
        .and_then(jwt_subject)
        .and_then(|sub| {
            sub.strip_prefix("system:serviceaccount:")
                .map(str::to_string)
        })
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

/// The `sub` claim of a JWT, read without verifying the signature.
pub fn jwt_subject(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (_header, payload, _sig) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = b64().decode(payload.trim_end_matches('=')).ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims["sub"].as_str().map(str::to_string)
}

/// An unsigned JWT (`alg: none`) with the given subject: for tests of what reads a token
/// without verifying it. A real apiserver (and the simulator) refuses it.
pub fn unsigned_jwt(sub: &str) -> String {
    let enc = |v: &Value| b64().encode(v.to_string());
    format!(
        "{}.{}.",
        enc(&json!({"alg": "none", "typ": "JWT"})),
        enc(&json!({"sub": sub, "iss": "stalemate-sim"}))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_service_account_of_a_bearer_token() {
        let mut h = HeaderMap::new();
        let tok = unsigned_jwt("system:serviceaccount:kube-system:gc");
        h.insert("authorization", format!("Bearer {tok}").parse().unwrap());
        assert_eq!(service_account(&h).as_deref(), Some("kube-system:gc"));
        assert_eq!(service_account(&HeaderMap::new()), None);
        assert_eq!(jwt_subject("a.b"), None);
        assert_eq!(jwt_subject("a.!!!.c"), None);
    }
}
