//! JSON → protobuf, as gogo-protobuf's generated `Marshal` writes a Go object: fields in
//! ascending number, every non-pointer scalar and struct written even when zero, a
//! pointer or `[]byte` only when set, repeated numbers unpacked (the k8s `.proto` files
//! are proto2), map entries sorted by key. What a client-go program would send for this
//! object — the differential sends it to the real apiserver and the simulator alike.

use serde_json::Value;

use super::go_format::{parse_duration, parse_rfc3339};
use super::table::{Field, Scalar, Special, TABLE, Table, Ty};

/// Why a JSON object could not be encoded.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("no built-in kind {0}")]
    UnknownKind(String),
    #[error("{field}: {why}")]
    Value { field: String, why: String },
}

/// The `k8s\0` envelope around `obj` (its `apiVersion` and `kind` say the type) as
/// protobuf.
pub fn encode(obj: &Value) -> Result<Vec<u8>, EncodeError> {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let kind = obj["kind"].as_str().unwrap_or_default();
    let unknown = || EncodeError::UnknownKind(format!("{api_version} {kind}"));
    let table = TABLE.as_ref().ok_or_else(unknown)?;
    let t = table
        .kind(api_version, api_version, kind)
        .ok_or_else(unknown)?;
    let raw = Encoder { table }.message(t, obj, kind)?;
    Ok(stalemate_wire::k8s::protobuf::envelope(
        api_version,
        kind,
        &raw,
    ))
}

struct Encoder<'t> {
    table: &'t Table,
}

#[derive(Default)]
struct Buf(Vec<u8>);

impl Buf {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn key(&mut self, num: u32, wire: u8) {
        self.varint(u64::from(num) << 3 | u64::from(wire));
    }
    fn bytes(&mut self, num: u32, b: &[u8]) {
        self.key(num, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn uint(&mut self, num: u32, v: u64) {
        self.key(num, 0);
        self.varint(v);
    }
}

impl Encoder<'_> {
    fn message(&self, t: usize, v: &Value, at: &str) -> Result<Vec<u8>, EncodeError> {
        let ty = &self.table.types[t];
        if let Some(s) = ty.special {
            return self.special(s, t, v, at);
        }
        let mut out = Buf::default();
        if ty.list {
            if let Some(f) = ty.fields.first() {
                self.field(&mut out, f, Some(v), at)?;
            }
            return Ok(out.0);
        }
        let obj = match v {
            Value::Object(o) => Some(o),
            Value::Null => None,
            _ => return Err(bad(at, "expected an object")),
        };
        let mut fields: Vec<&Field> = ty.fields.iter().collect();
        fields.sort_by_key(|f| f.num);
        for f in fields {
            let at = format!("{at}.{}", f.name);
            // An embedded struct's fields sit in its parent's JSON object.
            let value = match f.inline {
                true => Some(v),
                false => obj.and_then(|o| o.get(&f.name)),
            };
            self.field(&mut out, f, value, &at)?;
        }
        Ok(out.0)
    }

    fn field(
        &self,
        out: &mut Buf,
        f: &Field,
        v: Option<&Value>,
        at: &str,
    ) -> Result<(), EncodeError> {
        let set = v.filter(|v| !v.is_null());
        if f.pointer && set.is_none() {
            return Ok(());
        }
        match &f.ty {
            Ty::Repeated(elem) => {
                for item in set
                    .map(|v| as_array(v, at))
                    .transpose()?
                    .into_iter()
                    .flatten()
                {
                    self.one(out, f.num, elem, Some(item), at)?;
                }
                Ok(())
            }
            Ty::Map(value) => {
                let Some(v) = set else { return Ok(()) };
                let m = v.as_object().ok_or_else(|| bad(at, "expected an object"))?;
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                for k in keys {
                    let mut entry = Buf::default();
                    entry.bytes(1, k.as_bytes());
                    self.one(&mut entry, 2, value, m.get(k), &format!("{at}[{k}]"))?;
                    out.bytes(f.num, &entry.0);
                }
                Ok(())
            }
            ty => self.one(out, f.num, ty, v, at),
        }
    }

    /// One value of a field (a non-repeated field, or one element).
    fn one(
        &self,
        out: &mut Buf,
        num: u32,
        ty: &Ty,
        v: Option<&Value>,
        at: &str,
    ) -> Result<(), EncodeError> {
        let v = v.unwrap_or(&Value::Null);
        match ty {
            Ty::Message(t) => {
                let raw = self.message(*t, v, at)?;
                out.bytes(num, &raw);
            }
            Ty::Scalar(Scalar::Bytes) => {
                if let Some(s) = v.as_str() {
                    use base64::Engine;
                    let b = base64::engine::general_purpose::STANDARD
                        .decode(s)
                        .map_err(|e| bad(at, &format!("not base64: {e}")))?;
                    out.bytes(num, &b);
                }
            }
            Ty::Scalar(Scalar::String) => out.bytes(num, v.as_str().unwrap_or_default().as_bytes()),
            Ty::Scalar(Scalar::Bool) => out.uint(num, u64::from(v.as_bool().unwrap_or(false))),
            Ty::Scalar(Scalar::F64) => {
                out.key(num, 1);
                out.0
                    .extend_from_slice(&v.as_f64().unwrap_or(0.0).to_bits().to_le_bytes());
            }
            Ty::Scalar(Scalar::F32) => {
                out.key(num, 5);
                out.0
                    .extend_from_slice(&(v.as_f64().unwrap_or(0.0) as f32).to_bits().to_le_bytes());
            }
            Ty::Scalar(s) => {
                let n = integer(v).ok_or_else(|| bad(at, "expected an integer"))?;
                // Go converts a negative int32 to uint64 with its sign: ten bytes.
                let wire = match s {
                    Scalar::I32 => i64::from(n as i32) as u64,
                    Scalar::U32 => u64::from(n as u32),
                    _ => n as u64,
                };
                out.uint(num, wire);
            }
            Ty::Repeated(_) | Ty::Map(_) => return Err(bad(at, "nested repeated fields")),
        }
        Ok(())
    }

    fn special(&self, s: Special, t: usize, v: &Value, at: &str) -> Result<Vec<u8>, EncodeError> {
        let mut out = Buf::default();
        let schema = |out: &mut Buf, num: u32, v: &Value| -> Result<(), EncodeError> {
            let props = self
                .sub_message(t, "Schema")
                .ok_or_else(|| bad(at, "no schema type"))?;
            let raw = self.message(props, v, at)?;
            out.bytes(num, &raw);
            Ok(())
        };
        match (s, v) {
            (Special::Time | Special::MicroTime, Value::Null) => {}
            (Special::Time | Special::MicroTime, Value::String(x)) => {
                let (secs, nanos) =
                    parse_rfc3339(x).ok_or_else(|| bad(at, "not an RFC 3339 time"))?;
                out.uint(1, secs as u64);
                let nanos = if s == Special::Time {
                    0
                } else {
                    nanos / 1000 * 1000
                };
                out.uint(2, u64::from(nanos));
            }
            (Special::Duration, Value::String(x)) => out.uint(
                1,
                parse_duration(x).ok_or_else(|| bad(at, "not a duration"))? as u64,
            ),
            (Special::IntOrString, Value::String(x)) => {
                out.uint(1, 1);
                out.uint(2, 0);
                out.bytes(3, x.as_bytes());
            }
            (Special::IntOrString, v) => {
                out.uint(1, 0);
                out.uint(2, i64::from(integer(v).unwrap_or(0) as i32) as u64);
                out.bytes(3, b"");
            }
            (Special::Quantity, Value::String(x)) => out.bytes(1, x.as_bytes()),
            (Special::Quantity, Value::Null) => out.bytes(1, b"0"),
            (Special::RawExtension | Special::FieldsV1 | Special::Json, Value::Null) => {}
            (Special::RawExtension | Special::FieldsV1 | Special::Json, v) => {
                out.bytes(1, v.to_string().as_bytes())
            }
            (Special::JsonSchemaPropsOrArray, Value::Array(items)) => {
                for item in items {
                    schema(&mut out, 2, item)?;
                }
            }
            (Special::JsonSchemaPropsOrStringArray, Value::Array(items)) => {
                for item in items {
                    out.bytes(2, item.as_str().unwrap_or_default().as_bytes());
                }
            }
            (
                Special::JsonSchemaPropsOrArray | Special::JsonSchemaPropsOrStringArray,
                Value::Object(_),
            ) => schema(&mut out, 1, v)?,
            (Special::JsonSchemaPropsOrBool, Value::Object(_)) => {
                out.uint(1, 1);
                schema(&mut out, 2, v)?;
            }
            (Special::JsonSchemaPropsOrBool, v) => {
                out.uint(1, u64::from(v.as_bool().unwrap_or(false)))
            }
            (_, Value::Null) => {}
            (s, _) => return Err(bad(at, &format!("not a value of {s:?}"))),
        }
        Ok(out.0)
    }

    /// The message type of field `name` of type `t`.
    fn sub_message(&self, t: usize, name: &str) -> Option<usize> {
        match self.table.types[t].field_named(name)?.ty {
            Ty::Message(m) => Some(m),
            _ => None,
        }
    }
}

fn integer(v: &Value) -> Option<i64> {
    match v {
        Value::Null => Some(0),
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_u64().map(|u| u as i64))
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        _ => None,
    }
}

fn as_array<'v>(v: &'v Value, at: &str) -> Result<&'v Vec<Value>, EncodeError> {
    v.as_array().ok_or_else(|| bad(at, "expected an array"))
}

fn bad(at: &str, why: &str) -> EncodeError {
    EncodeError::Value {
        field: at.to_string(),
        why: why.to_string(),
    }
}
