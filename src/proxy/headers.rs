//! Headers on their way through: hop-by-hop ones dropped (RFC 9110 §7.6.1), `X-Remote-*`
//! dropped (a front proxy's client could otherwise claim any identity, docs/PROTOCOL.md
//! §A.11), the proxy-kubeconfig placeholder token removed, and a watch's `Accept`
//! narrowed to what the gate can frame.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// The bearer token in kubeconfigs written for proxy clients. It stands for "no
/// credentials of my own": the proxy removes it and the upstream credentials are used.
/// (A kubeconfig user with no credentials at all makes kubectl prompt for a password.)
pub const UPSTREAM_CREDENTIALS_TOKEN: &str = "stalemate-use-upstream-credentials";

/// Hop-by-hop headers (RFC 9110 §7.6.1), never forwarded.
const HOP_BY_HOP: [HeaderName; 9] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

pub fn is_upgrade(h: &HeaderMap) -> bool {
    h.get(header::CONNECTION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
        })
        && h.contains_key(header::UPGRADE)
}

/// Remove hop-by-hop headers, and those the `Connection` header names. For an upgrade,
/// `Connection: Upgrade` and `Upgrade` are end-to-end in effect and are kept.
pub fn strip_hop_by_hop(h: &mut HeaderMap, keep_upgrade: bool) {
    // Every request and response passes here, and most carry none of these: one pass
    // over the (few) names present instead of nine removals.
    if !h.keys().any(|k| HOP_BY_HOP.contains(k)) {
        return;
    }
    let named: Vec<HeaderName> = h
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    let upgrade = keep_upgrade
        .then(|| h.get(header::UPGRADE).cloned())
        .flatten();
    for n in named {
        h.remove(n);
    }
    for n in &HOP_BY_HOP {
        h.remove(n);
    }
    if let Some(u) = upgrade {
        h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        h.insert(header::UPGRADE, u);
    }
}

/// The apiserver's `Audit-Id`: a new value in every response.
const AUDIT_ID: HeaderName = HeaderName::from_static("audit-id");

/// Response headers whose value is new in every response are sent to an HTTP/2 client
/// as never indexed (RFC 7541 §6.2.3): otherwise each one is added to both ends' HPACK
/// tables, evicting entries that would have been used again, for a value never seen
/// twice — and that table work was ~2.7% of a GET's CPU over HTTP/2. HTTP/1.1 ignores it.
pub fn unindexed_unique_values(h: &mut HeaderMap) {
    if let Some(v) = h.get_mut(AUDIT_ID) {
        v.set_sensitive(true);
    }
}

/// Client request headers that must not reach the upstream: hop-by-hop, `Host` (the
/// client library sets it for the upstream), and every `X-Remote-*`.
pub fn sanitize_request_headers(h: &mut HeaderMap, upgrade: bool) {
    strip_hop_by_hop(h, upgrade);
    h.remove(header::HOST);
    if h.get(header::AUTHORIZATION)
        .is_some_and(|v| is_sentinel(v.as_bytes()))
    {
        h.remove(header::AUTHORIZATION);
    }
    // Empty (no allocation) for nearly every request.
    let remote: Vec<HeaderName> = h
        .keys()
        .filter(|k| k.as_str().starts_with("x-remote-"))
        .cloned()
        .collect();
    for k in remote {
        h.remove(k);
    }
}

/// Whether an `Authorization` value is `Bearer <the sentinel token>`. On bytes, not
/// `to_str()`: nearly every value is a client's own token — a service account's JWT is
/// ~1 KiB — and `to_str()` checks every byte of it, where comparing with the short
/// sentinel stops at the lengths.
fn is_sentinel(value: &[u8]) -> bool {
    let Some(space) = value.iter().position(|&b| b == b' ') else {
        return false;
    };
    let (scheme, token) = (&value[..space], &value[space + 1..]);
    scheme.eq_ignore_ascii_case(b"bearer")
        && token.trim_ascii() == UPSTREAM_CREDENTIALS_TOKEN.as_bytes()
}

/// The Accept header a watch is forwarded with: only media types the gate can frame
/// (JSON and protobuf, with any parameters such as `as=Table`), so every window
/// applies. `None`: keep the client's. A client that asked only for something else
/// (`application/cbor-seq`) gets JSON, which client-go decodes by the response's
/// Content-Type.
pub fn gateable_accept(accept: Option<&HeaderValue>) -> Option<HeaderValue> {
    let accept = accept?.to_str().unwrap_or("");
    let ranges: Vec<&str> = accept
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect();
    let framable = |r: &&str| {
        matches!(
            r.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
                .as_str(),
            "application/json" | "application/vnd.kubernetes.protobuf" | "*/*" | "application/*"
        )
    };
    let kept: Vec<&str> = ranges.iter().copied().filter(framable).collect();
    if kept.len() == ranges.len() {
        return None;
    }
    if kept.is_empty() {
        return Some(HeaderValue::from_static("application/json"));
    }
    HeaderValue::from_str(&kept.join(", ")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_audit_id_is_sent_never_indexed() {
        let mut h = HeaderMap::new();
        h.insert("Audit-Id", HeaderValue::from_static("9f1c2b4e"));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-cache, private"),
        );
        unindexed_unique_values(&mut h);
        assert!(h.get("audit-id").is_some_and(HeaderValue::is_sensitive));
        assert_eq!(
            h.get("audit-id").map(HeaderValue::as_bytes),
            Some(&b"9f1c2b4e"[..])
        );
        assert_eq!(h.iter().filter(|(_, v)| v.is_sensitive()).count(), 1);
        let mut none = HeaderMap::new();
        unindexed_unique_values(&mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn strips_hop_by_hop_and_remote_headers() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("connection", "keep-alive, x-custom-hop"),
            ("keep-alive", "timeout=5"),
            ("x-custom-hop", "1"),
            ("te", "trailers"),
            ("host", "proxy:7443"),
            ("x-remote-user", "mallory"),
            ("x-remote-group", "system:masters"),
            ("x-remote-extra-scopes", "all"),
            ("impersonate-user", "system:serviceaccount:ns:sa"),
            ("authorization", "Bearer t"),
            ("accept", "application/json"),
            ("user-agent", "source-controller/v1"),
            ("audit-id", "abc"),
        ] {
            h.append(k, HeaderValue::from_static(v));
        }
        sanitize_request_headers(&mut h, false);
        let mut left: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
        left.sort();
        assert_eq!(
            left,
            [
                "accept",
                "audit-id",
                "authorization",
                "impersonate-user",
                "user-agent"
            ]
        );
        // The proxy-kubeconfig sentinel means "use the upstream credentials".
        let mut h = HeaderMap::new();
        h.insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {UPSTREAM_CREDENTIALS_TOKEN}")).unwrap(),
        );
        sanitize_request_headers(&mut h, false);
        assert!(h.get("authorization").is_none());
    }

    /// Only `Bearer <sentinel>` (any case of the scheme, spaces around the token) is the
    /// sentinel; a client's own token, however it starts, is the client's.
    #[test]
    fn the_sentinel_is_exactly_a_bearer_of_the_sentinel_token() {
        let t = UPSTREAM_CREDENTIALS_TOKEN;
        for yes in [
            format!("Bearer {t}"),
            format!("bearer {t}"),
            format!("BEARER  {t} "),
        ] {
            assert!(is_sentinel(yes.as_bytes()), "{yes:?}");
        }
        for no in [
            format!("Basic {t}"),
            format!("Bearer {t}x"),
            format!("Bearer x{t}"),
            format!("Bearer{t}"),
            t.to_string(),
            "Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2ln"
                .to_string(),
            String::new(),
        ] {
            assert!(!is_sentinel(no.as_bytes()), "{no:?}");
        }
        // A value that is not visible ASCII is never the sentinel.
        assert!(!is_sentinel("Bearer \u{e9}".as_bytes()));
    }

    #[test]
    fn keeps_upgrade_headers_for_upgrades() {
        let mut h = HeaderMap::new();
        h.insert("connection", HeaderValue::from_static("Upgrade"));
        h.insert("upgrade", HeaderValue::from_static("SPDY/3.1"));
        h.insert(
            "x-stream-protocol-version",
            HeaderValue::from_static("v4.channel.k8s.io"),
        );
        assert!(is_upgrade(&h));
        sanitize_request_headers(&mut h, true);
        assert_eq!(h.get("upgrade").unwrap(), "SPDY/3.1");
        assert_eq!(h.get("connection").unwrap(), "Upgrade");
        assert!(h.contains_key("x-stream-protocol-version"));
    }
}
