//! Who is calling. The simulator authenticates but does not authorize: a bearer token
//! that is a JWT is taken at its word (its `sub` claim), anything else is anonymous. That
//! is enough for tests to check which credentials reached the upstream
//! (`authentication.k8s.io/v1 selfsubjectreviews`, `kubectl auth whoami`).

use base64::Engine;
use serde_json::{Value, json};

/// The authenticated user, as `user.Info` carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    pub fn anonymous() -> UserInfo {
        UserInfo {
            username: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
        }
    }

    pub fn to_json(&self) -> Value {
        json!({"username": self.username, "groups": self.groups})
    }
}

/// The `sub` claim of a JWT, read without verifying the signature.
pub fn jwt_subject(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (_header, payload, _sig) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims["sub"].as_str().map(str::to_string)
}

/// Apply `Impersonate-User` / `Impersonate-Group` (the apiserver's impersonation filter,
/// `filters/impersonation/impersonation.go`): an authenticated caller acts as the named
/// user. The simulator authorizes every caller to impersonate; anonymous callers may not.
pub fn impersonate(user: UserInfo, impersonate_user: Option<&str>, groups: &[&str]) -> UserInfo {
    let Some(name) = impersonate_user.filter(|n| !n.is_empty()) else {
        return user;
    };
    if user.username == "system:anonymous" {
        return user;
    }
    let mut out = UserInfo {
        username: name.to_string(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
    };
    if let Some(rest) = name.strip_prefix("system:serviceaccount:")
        && let Some((ns, _)) = rest.split_once(':')
        && groups.is_empty()
    {
        out.groups.push("system:serviceaccounts".to_string());
        out.groups.push(format!("system:serviceaccounts:{ns}"));
    }
    out.groups.push("system:authenticated".to_string());
    out
}

/// Identify a request from its `Authorization` header.
pub fn identify(authorization: Option<&str>) -> UserInfo {
    let token = authorization.and_then(|h| {
        let (scheme, tok) = h.trim().split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| tok.trim())
    });
    let Some(sub) = token.and_then(jwt_subject) else {
        return UserInfo::anonymous();
    };
    let mut groups = Vec::new();
    // Service-account tokens put their namespace in the subject; the apiserver adds the
    // service-account groups (`serviceaccount.MakeGroupNames`).
    if let Some(rest) = sub.strip_prefix("system:serviceaccount:")
        && let Some((ns, _)) = rest.split_once(':')
    {
        groups.push("system:serviceaccounts".to_string());
        groups.push(format!("system:serviceaccounts:{ns}"));
    }
    groups.push("system:authenticated".to_string());
    UserInfo {
        username: sub,
        groups,
    }
}

/// An unsigned JWT (`alg: none`) with the given subject — what the simulator's own
/// kubeconfig carries, and what tests use to act as a named user.
pub fn unsigned_jwt(sub: &str) -> String {
    let enc = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
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
    fn identities() {
        assert_eq!(identify(None), UserInfo::anonymous());
        assert_eq!(identify(Some("Bearer not-a-jwt")), UserInfo::anonymous());
        assert_eq!(identify(Some("Basic abc")), UserInfo::anonymous());
        let u = identify(Some(&format!(
            "Bearer {}",
            unsigned_jwt("system:serviceaccount:flux-system:source-controller")
        )));
        assert_eq!(
            u.username,
            "system:serviceaccount:flux-system:source-controller"
        );
        assert_eq!(
            u.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:flux-system",
                "system:authenticated"
            ]
        );
        let u = identify(Some(&format!("bearer {}", unsigned_jwt("alice"))));
        assert_eq!(u.username, "alice");
        assert_eq!(jwt_subject("a.b"), None);
        let admin = identify(Some(&format!("Bearer {}", unsigned_jwt("admin"))));
        let bob = impersonate(admin.clone(), Some("bob"), &["devs"]);
        assert_eq!(
            (bob.username.as_str(), bob.groups.as_slice()),
            (
                "bob",
                ["devs".to_string(), "system:authenticated".to_string()].as_slice()
            )
        );
        let sa = impersonate(admin, Some("system:serviceaccount:ns:x"), &[]);
        assert!(sa.groups.contains(&"system:serviceaccounts:ns".to_string()));
        assert_eq!(
            impersonate(UserInfo::anonymous(), Some("bob"), &[]),
            UserInfo::anonymous()
        );
        assert_eq!(jwt_subject("a.!!!.c"), None);
    }
}
