//! What decoding gives and reads, shared by the generic decoder (`decode.rs`) and the
//! types that write their own JSON (`special.rs`), which `decode.rs` calls and which
//! decode their sub-fields through the callback it hands them.

use serde_json::Value;

use stalemate_wire::k8s::protobuf::{Wire, WireError};

/// Why a protobuf body could not be decoded: the message says what, in the body's terms.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error(transparent)]
    Wire(WireError),
    #[error("field {field} has the wrong wire type ({wire})")]
    WireType { field: String, wire: &'static str },
    #[error("a packed repeated field is truncated")]
    Packed,
    #[error("messages are nested more than {0} deep")]
    TooDeep(usize),
    #[error("{0} is not a number JSON can hold")]
    Float(f64),
    #[error("{0}")]
    Invalid(String),
    #[error("the simulator's protobuf type table is damaged")]
    Table,
}

/// A decoded value and whether the Go value it stands for is its type's zero value
/// (for `omitzero`).
pub(super) struct Decoded {
    pub json: Value,
    pub zero: bool,
}

impl Decoded {
    pub(super) fn zero(json: Value) -> Decoded {
        Decoded { json, zero: true }
    }
}

/// Each field's occurrences on the wire, by the field's index in its type.
pub(super) type Occurrences<'a> = Vec<Vec<Wire<'a>>>;

/// Bytes as encoding/json writes a Go string: each byte of an invalid UTF-8 sequence
/// becomes U+FFFD.
pub(super) fn go_string(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    let mut rest = b;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                let bad = e.error_len().unwrap_or(after.len());
                out.extend(std::iter::repeat_n('\u{fffd}', bad));
                rest = &after[bad..];
            }
        }
    }
}

pub(super) fn wire_name(w: &Wire) -> &'static str {
    match w {
        Wire::Varint(_) => "varint",
        Wire::Fixed64(_) => "fixed64",
        Wire::Bytes(_) => "length-delimited",
        Wire::Fixed32(_) => "fixed32",
    }
}
