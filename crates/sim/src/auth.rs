//! Who is calling. The simulator authenticates as kube-apiserver does, in its order
//! (`pkg/kubeapiserver/authenticator/config.go`: the x509 authenticator comes before the
//! token ones), and does not authorize:
//!
//! 1. a TLS client certificate signed by the simulator's CA (checked in the handshake,
//!    `--client-ca-file`): the user is its `CN`, the groups its `O`s;
//! 2. a bearer token the simulator signed itself — the one in the kubeconfig it writes,
//!    or a service-account token it issued through TokenRequest
//!    (`POST .../serviceaccounts/NAME/token`, what `kubectl create token` sends);
//! 3. no credentials at all: `system:anonymous` (anonymous auth is on by default).
//!
//! Anything else — a token it did not sign, an expired one, another scheme — is 401
//! `Unauthorized`, the same `Status` a real server sends. That is what makes it possible
//! to test, against the simulator, that a proxy never swaps a client's identity for its
//! own (docs/DESIGN.md "Credentials").

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use stalemate_wire::k8s::status::ApiError;

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

    /// A token's subject as the apiserver's user: service-account subjects get the
    /// service-account groups (`serviceaccount.MakeGroupNames`).
    fn from_subject(sub: &str) -> UserInfo {
        let mut groups = Vec::new();
        if let Some(rest) = sub.strip_prefix("system:serviceaccount:")
            && let Some((ns, _)) = rest.split_once(':')
        {
            groups.push("system:serviceaccounts".to_string());
            groups.push(format!("system:serviceaccounts:{ns}"));
        }
        groups.push("system:authenticated".to_string());
        UserInfo {
            username: sub.to_string(),
            groups,
        }
    }
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

/// Apply `Impersonate-User` / `Impersonate-Group` (the apiserver's impersonation filter,
/// `filters/impersonation/impersonation.go`): an authenticated caller acts as the named
/// user. The simulator authorizes every caller to impersonate; anonymous callers may not.
pub(crate) fn impersonate(
    user: UserInfo,
    impersonate_user: Option<&str>,
    groups: &[&str],
) -> UserInfo {
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

/// The issuer of every token the simulator signs.
const ISSUER: &str = "stalemate-sim";

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    iat: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exp: Option<u64>,
}

/// The 401 a real apiserver sends for credentials it does not accept.
pub(crate) fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// Signs and checks the simulator's bearer tokens (HS256 JWTs with a key that lives as
/// long as the simulator), and reads client certificates.
pub struct Authenticator {
    key: ring::hmac::Key,
}

impl Default for Authenticator {
    fn default() -> Self {
        Authenticator::new()
    }
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Authenticator {
    /// A fresh signing key: tokens of another simulator (or an earlier run) are refused.
    pub fn new() -> Authenticator {
        let mut secret = [0u8; 32];
        rand::Rng::fill(&mut rand::rng(), &mut secret);
        Authenticator {
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret),
        }
    }

    /// A token for `sub`, valid for `ttl` (`None`: no expiry, as for the kubeconfig's).
    pub fn issue(&self, sub: &str, ttl: Option<Duration>) -> String {
        let now = SystemTime::now();
        let claims = Claims {
            iss: ISSUER.into(),
            sub: sub.into(),
            iat: unix(now),
            exp: ttl.map(|t| unix(now + t)),
        };
        let header = b64().encode(json!({"alg": "HS256", "typ": "JWT"}).to_string());
        let payload = b64().encode(serde_json::to_vec(&claims).unwrap_or_default());
        let signed = format!("{header}.{payload}");
        let sig = ring::hmac::sign(&self.key, signed.as_bytes());
        format!("{signed}.{}", b64().encode(sig.as_ref()))
    }

    /// The subject of a token this simulator signed and that has not expired.
    pub fn verify(&self, token: &str) -> Option<String> {
        let (signed, sig) = token.rsplit_once('.')?;
        let (header, payload) = signed.split_once('.')?;
        let sig = b64().decode(sig).ok()?;
        ring::hmac::verify(&self.key, signed.as_bytes(), &sig).ok()?;
        let header: Value = serde_json::from_slice(&b64().decode(header).ok()?).ok()?;
        if header["alg"] != "HS256" {
            return None;
        }
        let claims: Claims = serde_json::from_slice(&b64().decode(payload).ok()?).ok()?;
        if claims.iss != ISSUER || claims.exp.is_some_and(|e| e <= unix(SystemTime::now())) {
            return None;
        }
        Some(claims.sub)
    }

    /// Authenticate a request: its verified client certificate first, then its
    /// `Authorization` header; neither is anonymous, a bad one is 401.
    pub fn authenticate(
        &self,
        client_cert: Option<&[u8]>,
        authorization: Option<&str>,
    ) -> Result<UserInfo, ApiError> {
        if let Some(der) = client_cert {
            // Verified against the CA in the handshake; only the subject is read here.
            return certificate_user(der).ok_or_else(unauthorized);
        }
        let Some(h) = authorization else {
            return Ok(UserInfo::anonymous());
        };
        let token = h
            .trim()
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim())
            .ok_or_else(unauthorized)?;
        self.verify(token)
            .map(|sub| UserInfo::from_subject(&sub))
            .ok_or_else(unauthorized)
    }
}

/// The user of a client certificate: `CN` is the name, each `O` a group
/// (`staging/src/k8s.io/apiserver/pkg/authentication/request/x509/x509.go CommonNameUserConversion`).
pub(crate) fn certificate_user(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let username = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())?
        .to_string();
    if username.is_empty() {
        return None;
    }
    let mut groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    groups.push("system:authenticated".to_string());
    Some(UserInfo { username, groups })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tokens_it_signed_authenticate() {
        let a = Authenticator::new();
        assert_eq!(a.authenticate(None, None).unwrap(), UserInfo::anonymous());
        let sa = a.issue("system:serviceaccount:flux-system:source-controller", None);
        let u = a.authenticate(None, Some(&format!("Bearer {sa}"))).unwrap();
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
        assert_eq!(
            stalemate_wire::k8s::identity::jwt_subject(&sa).as_deref(),
            Some(u.username.as_str())
        );
        let alice = a.issue("alice", Some(Duration::from_secs(600)));
        assert_eq!(
            a.authenticate(None, Some(&format!("bearer {alice}")))
                .unwrap()
                .username,
            "alice"
        );
        // Unsigned, another simulator's, tampered, expired, garbage, other schemes: 401.
        let other = Authenticator::new().issue("alice", None);
        let mut tampered = alice.clone();
        tampered.replace_range(alice.len() - 3.., "AAA");
        let (h, rest) = alice.split_once('.').unwrap();
        let (_, sig) = rest.split_once('.').unwrap();
        let forged_payload = b64().encode(r#"{"iss":"stalemate-sim","sub":"admin","iat":0}"#);
        let forged = format!("{h}.{forged_payload}.{sig}");
        let expired = a.issue("bob", Some(Duration::ZERO));
        for bad in [
            format!(
                "Bearer {}",
                stalemate_wire::k8s::identity::unsigned_jwt("admin")
            ),
            format!("Bearer {other}"),
            format!("Bearer {tampered}"),
            format!("Bearer {forged}"),
            format!("Bearer {expired}"),
            "Bearer garbage".into(),
            "Bearer ".into(),
            "Basic YWRtaW46YWRtaW4=".into(),
            "a.!!!.c".into(),
        ] {
            let e = a.authenticate(None, Some(&bad)).unwrap_err();
            assert_eq!((e.code, e.reason), (401, "Unauthorized"), "{bad}");
        }
    }

    #[test]
    fn client_certificates_come_first() {
        let ca = stalemate_wire::k8s::certs::generate("t", &[]).unwrap();
        let (pem, _) = stalemate_wire::k8s::certs::client_cert(
            &ca,
            "kubernetes-admin",
            Some("system:masters"),
        )
        .unwrap();
        use rustls::pki_types::pem::PemObject;
        let der = rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        let a = Authenticator::new();
        // A certificate wins over any token, even a bad one — the apiserver's order.
        let u = a.authenticate(Some(&der), Some("Bearer garbage")).unwrap();
        assert_eq!(u.username, "kubernetes-admin");
        assert_eq!(u.groups, ["system:masters", "system:authenticated"]);
        assert!(certificate_user(b"not a certificate").is_none());
    }

    #[test]
    fn impersonation() {
        let admin = UserInfo::from_subject("admin");
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
    }
}
