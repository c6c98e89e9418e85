//! A `Status` as the response a client is given.

use http::Response;
use http::header::{self, HeaderValue};

use crate::k8s::status::ApiError;
use crate::listen::Body;

/// A `Status` as a response (JSON, the code it names).
pub fn status_response(e: &ApiError) -> Response<Body> {
    let body = serde_json::to_vec(&e.to_status()).unwrap_or_default();
    let mut r = Response::new(crate::listen::body::full(body));
    *r.status_mut() = http::StatusCode::from_u16(e.code).unwrap_or(http::StatusCode::BAD_GATEWAY);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(s) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}
