//! The types that write their own JSON, rendered from their protobuf fields as their Go
//! `MarshalJSON` (and `Unmarshal`) do: k8s.io/apimachinery `pkg/apis/meta/v1`
//! (`time.go`, `time_proto.go`, `micro_time*.go`, `duration.go`, `helpers.go` for
//! FieldsV1), `pkg/util/intstr`, `pkg/api/resource/quantity*.go`, `pkg/runtime`
//! (RawExtension), and apiextensions-apiserver's `v1/marshal.go`.

use serde_json::Value;

use super::decoded::{DecodeError, Decoded, Occurrences, go_string, wire_name};
use super::go_format::{duration_string, rfc3339};
use super::quantity;
use super::table::{Field, Special, Type};
use stalemate_wire::k8s::protobuf::Wire;

/// Whether the type's protobuf `Unmarshal` is hand-written and replaces the value rather
/// than merging into it when the field comes twice.
pub(super) fn last_wins(s: Special) -> bool {
    matches!(
        s,
        Special::Time | Special::MicroTime | Special::Quantity | Special::FieldsV1
    )
}

/// `time.Unix(-62135596800, 0)` is Go's zero time, which these types write as `null`.
const GO_ZERO_TIME: i64 = -62_135_596_800;

/// How a special type's fields are decoded the generic way (`decode.rs` hands one over,
/// so this file need not name the decoder).
pub(super) type FieldDecoder<'d> =
    dyn Fn(&Field, &[Wire]) -> Result<Option<Decoded>, DecodeError> + 'd;

/// A special type's JSON from its fields' occurrences; `field` decodes one of its fields
/// the generic way (the schemas a JSONSchemaProps wrapper holds).
pub(super) fn render(
    field: &FieldDecoder,
    s: Special,
    ty: &Type,
    occ: &Occurrences,
) -> Result<Decoded, DecodeError> {
    let get = |name: &str| -> &[Wire] {
        let i = ty.fields.iter().position(|f| f.name == name);
        i.map_or(&[], |i| occ[i].as_slice())
    };
    let int = |name: &str| -> Result<u64, DecodeError> {
        match get(name).last() {
            None => Ok(0),
            Some(Wire::Varint(v)) => Ok(*v),
            Some(w) => Err(wrong(ty, name, w)),
        }
    };
    let bytes = |name: &str| -> Result<Option<&[u8]>, DecodeError> {
        match get(name).last() {
            None => Ok(None),
            Some(Wire::Bytes(b)) => Ok(Some(*b)),
            Some(w) => Err(wrong(ty, name, w)),
        }
    };
    let sub = |name: &str| -> Result<Option<Decoded>, DecodeError> {
        let f = ty.field_named(name).ok_or(DecodeError::Table)?;
        field(f, get(name))
    };
    let json = match s {
        Special::Time | Special::MicroTime => {
            let any = occ.iter().any(|o| !o.is_empty());
            match time_json(s, int("seconds")? as i64, int("nanos")? as i32, any) {
                Some(t) => t,
                None => {
                    return Ok(Decoded {
                        json: Value::Null,
                        zero: true,
                    });
                }
            }
        }
        Special::Duration => Value::String(duration_string(int("Duration")? as i64)),
        Special::IntOrString => match int("Type")? as i64 {
            0 => Value::from(int("IntVal")? as i32),
            1 => Value::String(go_string(bytes("StrVal")?.unwrap_or_default())),
            t => return Err(DecodeError::Invalid(format!("IntOrString of type {t}"))),
        },
        Special::Quantity => match bytes("string")? {
            None => Value::String("0".into()),
            Some(b) => Value::String(quantity::canonical(&go_string(b))?),
        },
        Special::RawExtension => match bytes("Raw")? {
            None => Value::Null,
            Some(raw) => raw_json(raw, "RawExtension")?,
        },
        Special::FieldsV1 | Special::Json => match bytes("Raw")? {
            None | Some([]) => Value::Null,
            Some(raw) if s == Special::Json => raw_json(raw, "JSON")?,
            Some(raw) => raw_json(raw, "FieldsV1")?,
        },
        Special::JsonSchemaPropsOrArray => match sub("JSONSchemas")? {
            Some(d) if !d.json.is_null() => d.json,
            _ => sub("Schema")?.map_or(Value::Null, |d| d.json),
        },
        Special::JsonSchemaPropsOrBool => match sub("Schema")? {
            Some(d) if !d.json.is_null() => d.json,
            _ => Value::Bool(int("Allows")? != 0),
        },
        Special::JsonSchemaPropsOrStringArray => match sub("Property")? {
            Some(d) if !d.json.is_null() => d.json,
            _ => sub("Schema")?.map_or(Value::Null, |d| d.json),
        },
    };
    let zero = occ.iter().all(|o| o.is_empty());
    Ok(Decoded { json, zero })
}

/// A Time or MicroTime as time_proto.go reads it and `MarshalJSON` writes it: Time keeps
/// whole seconds, MicroTime microseconds. `None` for Go's zero time (an empty Timestamp
/// is one), which they write as `null`.
fn time_json(s: Special, secs: i64, nanos: i32, any: bool) -> Option<Value> {
    let nanos = match s {
        Special::Time => 0,
        _ => i64::from(nanos) / 1000 * 1000,
    };
    let (secs, nanos) = (
        secs.saturating_add(nanos.div_euclid(1_000_000_000)),
        nanos.rem_euclid(1_000_000_000),
    );
    if !any || (secs == GO_ZERO_TIME && nanos == 0) {
        return None;
    }
    let micros = (s == Special::MicroTime).then_some((nanos / 1000) as u32);
    Some(Value::String(rfc3339(secs, micros)))
}

fn wrong(ty: &Type, name: &str, w: &Wire) -> DecodeError {
    DecodeError::WireType {
        field: format!("{}.{name}", ty.name),
        wire: wire_name(w),
    }
}

/// Raw bytes a type hands to encoding/json as its JSON: they must be JSON (Go's
/// encoder validates and compacts them).
fn raw_json(raw: &[u8], what: &str) -> Result<Value, DecodeError> {
    serde_json::from_slice(raw)
        .map_err(|e| DecodeError::Invalid(format!("the {what} is not JSON: {e}")))
}
