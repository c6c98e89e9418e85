//! Protobuf → JSON for one message of a known type: what the apiserver's JSON of the Go
//! object unmarshalled from those bytes would be.
//!
//! gogo-protobuf's generated `Unmarshal` decides what the Go object holds (unknown
//! fields skipped, the last value of a repeated scalar field kept, repeated and packed
//! numbers both read, a message field given twice merged, a wrong wire type an error);
//! encoding/json decides what its JSON shows (fields in declaration order, `omitempty`
//! dropping zero scalars, empty slices and maps and nil pointers but never a struct,
//! `omitzero` dropping zero values, a nil slice or map without `omitempty` as `null`,
//! map keys sorted, `[]byte` as base64, invalid UTF-8 as U+FFFD per byte).

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{Map, Number, Value};

use super::decoded::{DecodeError, Decoded, Occurrences, go_string, wire_name};
use super::special;
use super::table::{Field, Scalar, Table, Ty};
use stalemate_wire::k8s::protobuf::{Fields, Wire};

/// How deep messages may nest. JSONSchemaProps nests itself, and Go's growable stacks
/// have no such limit, but no object a client writes is 64 messages deep and each level
/// costs stack here.
pub(super) const MAX_DEPTH: usize = 64;

pub(super) struct Decoder<'t> {
    pub table: &'t Table,
}

impl Decoder<'_> {
    /// The message of type `t` in `buf`.
    pub(super) fn message(
        &self,
        t: usize,
        buf: &[u8],
        depth: usize,
    ) -> Result<Decoded, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::TooDeep(MAX_DEPTH));
        }
        let ty = &self.table.types[t];
        let mut occ: Occurrences = vec![Vec::new(); ty.fields.len()];
        for f in Fields::new(buf) {
            let (num, wire) = f.map_err(DecodeError::Wire)?;
            if let Some((i, _)) = ty.field(num) {
                occ[i].push(wire);
            }
        }
        if let Some(s) = ty.special {
            let field = |f: &Field, occ: &[Wire]| self.field(&ty.name, f, occ, depth);
            return special::render(&field, s, ty, &occ);
        }
        let mut out = Map::new();
        let mut zero = true;
        for (f, occ) in ty.fields.iter().zip(&occ) {
            let Some(d) = self.field(&ty.name, f, occ, depth)? else {
                continue;
            };
            zero &= d.zero;
            if ty.list {
                // `repeated items = 1`: the JSON is the array itself.
                return Ok(d);
            }
            if f.hidden {
                continue;
            }
            match (f.inline, d.json) {
                (true, Value::Object(m)) => out.extend(m),
                (true, _) => {}
                (false, json) => {
                    out.insert(f.name.clone(), json);
                }
            }
        }
        Ok(Decoded {
            json: Value::Object(out),
            zero,
        })
    }

    /// One field's JSON, or `None` when encoding/json leaves it out.
    pub(super) fn field(
        &self,
        owner: &str,
        f: &Field,
        occ: &[Wire],
        depth: usize,
    ) -> Result<Option<Decoded>, DecodeError> {
        let omittable = f.omitempty || f.omitzero;
        if occ.is_empty() && f.pointer {
            return Ok((!omittable).then(|| Decoded::zero(Value::Null)));
        }
        let d = self.value(owner, f, &f.ty, occ, depth)?;
        if f.pointer {
            // A set pointer is shown, even to a zero value.
            return Ok(Some(Decoded {
                json: d.json,
                zero: false,
            }));
        }
        let empty = match (&f.ty, &d.json) {
            (Ty::Message(t), json) => self.table.types[*t].list && json.is_null(),
            (_, Value::Null) => true,
            (_, Value::String(s)) => s.is_empty(),
            (_, Value::Bool(b)) => !b,
            (_, Value::Number(n)) => n.as_f64() == Some(0.0),
            _ => false,
        };
        let omit = (f.omitempty && empty) || (f.omitzero && d.zero);
        Ok((!omit).then_some(d))
    }

    fn value(
        &self,
        owner: &str,
        f: &Field,
        ty: &Ty,
        occ: &[Wire],
        depth: usize,
    ) -> Result<Decoded, DecodeError> {
        let wrong = |w: &Wire| wrong_wire(owner, f, w);
        match ty {
            Ty::Scalar(s) => match occ.last() {
                None => Ok(Decoded::zero(scalar_zero(*s))),
                Some(w) => {
                    let json = scalar(*s, w).ok_or_else(|| wrong(w))??;
                    let zero = json == scalar_zero(*s) && *s != Scalar::Bytes;
                    Ok(Decoded { json, zero })
                }
            },
            Ty::Message(t) => {
                let t = *t;
                if self.table.types[t].special.is_some_and(special::last_wins) {
                    // Hand-written Unmarshal methods replace, they do not merge.
                    return match occ.last() {
                        None => self.message(t, &[], depth + 1),
                        Some(Wire::Bytes(b)) => self.message(t, b, depth + 1),
                        Some(w) => Err(wrong(w)),
                    };
                }
                // A message given twice is merged: decoding the concatenation is that.
                let mut buf: Vec<u8> = Vec::new();
                for w in occ {
                    match w {
                        Wire::Bytes(b) => buf.extend_from_slice(b),
                        w => return Err(wrong(w)),
                    }
                }
                self.message(t, &buf, depth + 1)
            }
            Ty::Repeated(elem) => self.repeated(owner, f, elem, occ, depth),
            Ty::Map(value) => {
                let mut entries = BTreeMap::new();
                for w in occ {
                    let Wire::Bytes(entry) = w else {
                        return Err(wrong(w));
                    };
                    let (k, v) = self.map_entry(owner, f, value, entry, depth)?;
                    entries.insert(k, v);
                }
                Ok(match occ.is_empty() {
                    true => Decoded::zero(Value::Null),
                    false => Decoded {
                        json: Value::Object(entries.into_iter().collect()),
                        zero: false,
                    },
                })
            }
        }
    }

    /// A repeated field: its occurrences, packed or one element each, as one list.
    fn repeated(
        &self,
        owner: &str,
        f: &Field,
        elem: &Ty,
        occ: &[Wire],
        depth: usize,
    ) -> Result<Decoded, DecodeError> {
        let wrong = |w: &Wire| wrong_wire(owner, f, w);
        let mut items = Vec::new();
        for w in occ {
            match (elem, w) {
                (Ty::Scalar(s), Wire::Bytes(packed)) if s.packable() => {
                    for v in unpack(*s, packed)? {
                        items.push(scalar(*s, &v).ok_or_else(|| wrong(&v))??);
                    }
                }
                (Ty::Scalar(s), w) => items.push(scalar(*s, w).ok_or_else(|| wrong(w))??),
                (elem, w) => {
                    items.push(self.value(owner, f, elem, &[*w], depth)?.json);
                }
            }
        }
        // No element at all is Go's nil slice.
        Ok(match items.is_empty() {
            true => Decoded::zero(Value::Null),
            false => Decoded {
                json: Value::Array(items),
                zero: false,
            },
        })
    }

    fn map_entry(
        &self,
        owner: &str,
        f: &Field,
        value: &Ty,
        entry: &[u8],
        depth: usize,
    ) -> Result<(String, Value), DecodeError> {
        let (mut key, mut val) = (String::new(), None);
        for g in Fields::new(entry) {
            match g.map_err(DecodeError::Wire)? {
                (1, Wire::Bytes(k)) => key = go_string(k),
                (2, w) => val = Some(w),
                (1, w) => {
                    return Err(DecodeError::WireType {
                        field: format!("{owner}.{} (a key)", f.name),
                        wire: wire_name(&w),
                    });
                }
                _ => {}
            }
        }
        let occ: Vec<Wire> = val.into_iter().collect();
        let d = match value {
            // An entry without its value holds the zero value: "" for []byte.
            Ty::Scalar(Scalar::Bytes) if occ.is_empty() => Decoded::zero(Value::String("".into())),
            _ => self.value(owner, f, value, &occ, depth)?,
        };
        // A list type's entry is `&ExtraValue{}` at least: an empty slice, not nil.
        let list = matches!(value, Ty::Message(t) if self.table.types[*t].list);
        if list && d.json.is_null() {
            return Ok((key, Value::Array(Vec::new())));
        }
        Ok((key, d.json))
    }
}

impl Scalar {
    fn packable(self) -> bool {
        !matches!(self, Scalar::String | Scalar::Bytes)
    }
}

/// A packed repeated field's values.
fn unpack(s: Scalar, buf: &[u8]) -> Result<Vec<Wire<'static>>, DecodeError> {
    let mut out = Vec::new();
    let mut rest = buf;
    while !rest.is_empty() {
        let w = match s {
            Scalar::F64 => {
                let (b, r) = rest.split_at_checked(8).ok_or(DecodeError::Packed)?;
                rest = r;
                Wire::Fixed64(u64::from_le_bytes(
                    b.try_into().map_err(|_| DecodeError::Packed)?,
                ))
            }
            Scalar::F32 => {
                let (b, r) = rest.split_at_checked(4).ok_or(DecodeError::Packed)?;
                rest = r;
                Wire::Fixed32(u32::from_le_bytes(
                    b.try_into().map_err(|_| DecodeError::Packed)?,
                ))
            }
            _ => {
                let (v, n) = varint(rest).ok_or(DecodeError::Packed)?;
                rest = &rest[n..];
                Wire::Varint(v)
            }
        };
        out.push(w);
    }
    Ok(out)
}

fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, byte) in b.iter().take(10).enumerate() {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

fn scalar_zero(s: Scalar) -> Value {
    match s {
        Scalar::String => Value::String(String::new()),
        Scalar::Bool => Value::Bool(false),
        Scalar::Bytes => Value::Null,
        _ => Value::from(0),
    }
}

/// A scalar's JSON from its wire value; `None` for a wire type the field cannot have.
fn scalar(s: Scalar, w: &Wire) -> Option<Result<Value, DecodeError>> {
    Some(Ok(match (s, *w) {
        (Scalar::String, Wire::Bytes(b)) => Value::String(go_string(b)),
        (Scalar::Bytes, Wire::Bytes(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Scalar::Bool, Wire::Varint(v)) => Value::Bool(v != 0),
        // gogo accumulates the varint into the field's own width: the low bits stay.
        (Scalar::I32, Wire::Varint(v)) => Value::from(v as i32),
        (Scalar::I64, Wire::Varint(v)) => Value::from(v as i64),
        (Scalar::U32, Wire::Varint(v)) => Value::from(v as u32),
        (Scalar::U64, Wire::Varint(v)) => Value::from(v),
        (Scalar::F64, Wire::Fixed64(v)) => return Some(float(f64::from_bits(v))),
        (Scalar::F32, Wire::Fixed32(v)) => return Some(float(f64::from(f32::from_bits(v)))),
        _ => return None,
    }))
}

fn float(f: f64) -> Result<Value, DecodeError> {
    // encoding/json refuses NaN and infinities (UnsupportedValueError).
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or(DecodeError::Float(f))
}

/// A field that came in a wire type its schema does not allow.
fn wrong_wire(owner: &str, f: &Field, w: &Wire) -> DecodeError {
    DecodeError::WireType {
        field: format!("{owner}.{}", f.name),
        wire: wire_name(w),
    }
}
