//! Protobuf request bodies, decoded into the JSON the real apiserver would make of them.
//!
//! client-go's typed clients send built-in objects as `application/vnd.kubernetes.protobuf`
//! (kubectl's `create deployment`, `create token`, kube-controller-manager's and
//! kube-scheduler's every write) and do not fall back to JSON on a 415. Every built-in
//! kind the simulator serves is decoded, from one generic decoder (`decode.rs`) driven by
//! a table of the Go types (`table.rs`, `types.json`), generated from k8s.io/api by
//! reflection (`gen/main.go`, pinned in `gen/go.mod`; regenerate with
//! `cd crates/sim/src/proto_body/gen && go run .` — it says more). The types that marshal their
//! own JSON are in `special.rs`. `vectors.json.gz`, made by the same program, holds
//! objects of every kind filled by apimachinery's roundtrip fuzzer as protobuf and as
//! Go's JSON; `tests.rs` checks that this decoder agrees with Go on each, and
//! `quantity.rs` checks its canonical quantities against Go's (`quantities.json`).
//!
//! `encode.rs` goes the other way (JSON → protobuf, as gogo-protobuf writes it): for the
//! differential's protobuf writes and the round-trip tests.

mod decode;
mod decoded;
mod encode;
mod go_format;
mod quantity;
mod special;
mod table;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use stalemate_wire::k8s::protobuf::unwrap_unknown;

pub use decoded::DecodeError;
pub use encode::{EncodeError, encode};

/// Why a protobuf body could not be used.
#[derive(Debug)]
pub enum ProtoError {
    /// The kind is not one the simulator decodes: 415, as for any body it cannot read.
    Unsupported(String),
    /// The body is not a valid protobuf object of its kind: 400.
    Malformed(DecodeError),
}

/// Decode a `k8s\0`-wrapped object into its JSON form. The envelope's apiVersion and
/// kind say the type; `default_api_version` and `default_kind` (the request's) stand in
/// for what it leaves empty.
pub fn decode(
    body: &[u8],
    default_api_version: &str,
    default_kind: &str,
) -> Result<Value, ProtoError> {
    let (api_version, kind, raw) =
        unwrap_unknown(body).map_err(|e| ProtoError::Malformed(DecodeError::Wire(e)))?;
    let kind = if kind.is_empty() {
        default_kind.to_string()
    } else {
        kind
    };
    let Some(table) = table::TABLE.as_ref() else {
        return Err(ProtoError::Unsupported(kind));
    };
    let t = table
        .kind(&api_version, default_api_version, &kind)
        .ok_or_else(|| ProtoError::Unsupported(format!("{api_version} {kind}")))?;
    let d = decode::Decoder { table };
    let v = d.message(t, raw, 0).map_err(ProtoError::Malformed)?;
    let Value::Object(m) = v.json else {
        return Ok(v.json);
    };
    // TypeMeta, which protobuf carries in the envelope, comes first as in Go's JSON.
    let mut out = Map::new();
    out.insert("kind".into(), kind.into());
    if !api_version.is_empty() {
        out.insert("apiVersion".into(), api_version.into());
    }
    out.extend(m);
    Ok(Value::Object(out))
}

/// Where the decoder's types come from (`k8s.io/api v0.37.2`).
pub fn types_version() -> Option<&'static str> {
    table::TABLE.as_ref().map(|t| t.version.as_str())
}
