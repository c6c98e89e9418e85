//! Content negotiation and response building.
//!
//! The apiserver picks a representation from `Accept` in the client's order
//! (`apimachinery/pkg/runtime/serializer` + `endpoints/handlers/negotiation`): plain JSON,
//! a `meta.k8s.io` Table or PartialObjectMetadata (`;as=...;g=meta.k8s.io;v=v1`), or
//! protobuf. The simulator serves JSON forms only; a client that accepts nothing else gets
//! `406`, as the real server answers an unsupported type.

use bytes::Bytes;
use hyper::Response;
use hyper::header::HeaderValue;

use stalemate_wire::k8s::status::ApiError;
use stalemate_wire::listen::Body;
use stalemate_wire::listen::body::full;

/// The representation chosen for a resource response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Output {
    Json,
    /// `meta.k8s.io/<version>` Table.
    Table(String),
    /// `meta.k8s.io/<version>` PartialObjectMetadata(List).
    Meta(String),
}

/// One media range of an Accept header: `type/subtype` and its parameters.
#[derive(Debug)]
pub(crate) struct MediaRange<'a> {
    pub media: &'a str,
    pub params: Vec<(&'a str, &'a str)>,
}

impl MediaRange<'_> {
    pub(crate) fn param(&self, k: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(pk, _)| pk.eq_ignore_ascii_case(k))
            .map(|(_, v)| *v)
    }
}

pub(crate) fn media_ranges(accept: &str) -> Vec<MediaRange<'_>> {
    accept
        .split(',')
        .filter_map(|r| {
            let mut parts = r.split(';');
            let media = parts.next()?.trim();
            if media.is_empty() {
                return None;
            }
            let params = parts
                .filter_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    Some((k.trim(), v.trim().trim_matches('"')))
                })
                .collect();
            Some(MediaRange { media, params })
        })
        .collect()
}

const SERVED: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// Pick the representation for a resource request.
pub(crate) fn negotiate(accept: Option<&str>) -> Result<Output, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(Output::Json);
    };
    for r in media_ranges(accept) {
        if !matches!(r.media, "application/json" | "*/*" | "application/*") {
            continue;
        }
        match r.param("as") {
            None => return Ok(Output::Json),
            Some(as_) => {
                if r.param("g") != Some("meta.k8s.io") {
                    continue;
                }
                let v = match r.param("v") {
                    Some(v @ ("v1" | "v1beta1")) => v.to_string(),
                    _ => continue,
                };
                match as_ {
                    "Table" => return Ok(Output::Table(v)),
                    "PartialObjectMetadata" | "PartialObjectMetadataList" => {
                        return Ok(Output::Meta(v));
                    }
                    _ => continue,
                }
            }
        }
    }
    Err(ApiError::not_acceptable(SERVED))
}

/// Whether to indent JSON: `?pretty=`, else the apiserver's User-Agent rule
/// (`curl`, `Wget` and browsers get indented output; `handlers/negotiation isPrettyPrint`).
pub(crate) fn wants_pretty(pretty_param: Option<&str>, user_agent: Option<&str>) -> bool {
    if let Some(p) = pretty_param {
        return stalemate_wire::k8s::request::parse_query_bool(p);
    }
    user_agent.is_some_and(|ua| {
        ua.starts_with("curl") || ua.starts_with("Wget") || ua.starts_with("Mozilla/5.0")
    })
}

/// Per-request response settings shared by every response of one request.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub pretty: bool,
    pub audit_id: HeaderValue,
}

impl Reply {
    pub(crate) fn json_bytes(&self, code: u16, body: Bytes) -> Response<Body> {
        self.typed(code, body, "application/json")
    }

    pub(crate) fn typed(&self, code: u16, body: Bytes, content_type: &str) -> Response<Body> {
        let body = if self.pretty {
            match serde_json::from_slice::<serde_json::Value>(&body) {
                Ok(v) => Bytes::from(serde_json::to_vec_pretty(&v).unwrap_or_default()),
                Err(_) => body,
            }
        } else {
            body
        };
        self.raw(code, body, content_type)
    }

    /// Bytes as they are, with the headers every apiserver response has.
    pub(crate) fn raw(&self, code: u16, body: Bytes, content_type: &str) -> Response<Body> {
        let mut r = Response::new(full(body));
        *r.status_mut() =
            hyper::StatusCode::from_u16(code).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
        let h = r.headers_mut();
        h.insert("audit-id", self.audit_id.clone());
        h.insert(
            "cache-control",
            HeaderValue::from_static("no-cache, private"),
        );
        if let Ok(v) = HeaderValue::from_str(content_type) {
            h.insert("content-type", v);
        }
        r
    }

    pub(crate) fn json(&self, code: u16, v: &serde_json::Value) -> Response<Body> {
        self.json_bytes(code, Bytes::from(serde_json::to_vec(v).unwrap_or_default()))
    }

    pub(crate) fn error(&self, e: &ApiError) -> Response<Body> {
        if e.is_page_not_found() {
            let mut r = self.raw(
                404,
                Bytes::from_static(b"404 page not found\n"),
                "text/plain; charset=utf-8",
            );
            r.headers_mut().insert(
                "x-content-type-options",
                HeaderValue::from_static("nosniff"),
            );
            return r;
        }
        let mut r = self.json(e.code, &e.to_status());
        if let Some(s) = e.retry_after
            && let Ok(v) = HeaderValue::from_str(&s.to_string())
        {
            r.headers_mut().insert("retry-after", v);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_in_client_order() {
        assert_eq!(negotiate(None).unwrap(), Output::Json);
        assert_eq!(negotiate(Some("application/json")).unwrap(), Output::Json);
        assert_eq!(
            negotiate(Some("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")).unwrap(),
            Output::Table("v1".into())
        );
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")).unwrap(),
            Output::Meta("v1".into())
        );
        assert_eq!(
            negotiate(Some(
                "application/vnd.kubernetes.protobuf, application/json"
            ))
            .unwrap(),
            Output::Json
        );
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf, */*")).unwrap(),
            Output::Json
        );
        assert_eq!(
            negotiate(Some(
                "application/json;as=Table;v=v9;g=meta.k8s.io,application/json"
            ))
            .unwrap(),
            Output::Json
        );
        let e = negotiate(Some("application/vnd.kubernetes.protobuf")).unwrap_err();
        assert_eq!((e.code, e.reason), (406, "NotAcceptable"));
    }

    #[test]
    fn pretty_rules() {
        assert!(wants_pretty(None, Some("curl/8.1.2")));
        assert!(!wants_pretty(Some("false"), Some("curl/8.1.2")));
        assert!(!wants_pretty(None, Some("kubectl/v1.31.0")));
        assert!(wants_pretty(Some("true"), Some("kubectl/v1.31.0")));
    }
}
