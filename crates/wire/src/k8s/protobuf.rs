//! The protobuf wire format, as much as stalemate needs: a reader that walks fields
//! without a schema, and a small writer.
//!
//! Kubernetes objects travel as `k8s\0` + `runtime.Unknown{typeMeta, raw}`
//! (docs/PROTOCOL.md §B). No protobuf code generator is involved: the simulator decodes
//! request bodies from a field table, the proxy's codecs only need a few metadata fields,
//! and the OpenAPI v2 document kubectl 1.28 requires is a handful of nested messages.

/// The 4-byte prefix of every Kubernetes protobuf object.
pub const MAGIC: &[u8] = b"k8s\0";

/// A field's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// Malformed input: what was wrong and at which byte offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed protobuf at byte {offset}: {what}")]
pub struct WireError {
    pub offset: usize,
    pub what: &'static str,
}

/// Iterates the top-level fields of one message.
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    pub fn new(buf: &'a [u8]) -> Fields<'a> {
        Fields { buf, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, WireError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(WireError {
                    offset: self.pos,
                    what: "truncated varint",
                });
            };
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(WireError {
            offset: self.pos,
            what: "varint longer than 10 bytes",
        })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.buf.len());
        let Some(end) = end else {
            return Err(WireError {
                offset: self.pos,
                what: "length runs past the end of the message",
            });
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Wire<'a>), WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let r = (|| {
            let key = self.varint()?;
            let num = u32::try_from(key >> 3).map_err(|_| WireError {
                offset: self.pos,
                what: "field number too large",
            })?;
            let w = match key & 7 {
                0 => Wire::Varint(self.varint()?),
                1 => Wire::Fixed64(u64::from_le_bytes(
                    self.take(8)?.try_into().unwrap_or([0; 8]),
                )),
                2 => {
                    let n = usize::try_from(self.varint()?).map_err(|_| WireError {
                        offset: self.pos,
                        what: "length too large",
                    })?;
                    Wire::Bytes(self.take(n)?)
                }
                5 => Wire::Fixed32(u32::from_le_bytes(
                    self.take(4)?.try_into().unwrap_or([0; 4]),
                )),
                _ => {
                    return Err(WireError {
                        offset: self.pos,
                        what: "unsupported wire type",
                    });
                }
            };
            Ok((num, w))
        })();
        if r.is_err() {
            // Stop after the first error: the rest cannot be framed.
            self.pos = self.buf.len();
        }
        Some(r)
    }
}

/// Strip the `k8s\0` envelope: returns (apiVersion, kind, raw object bytes).
pub fn unwrap_unknown(body: &[u8]) -> Result<(String, String, &[u8]), WireError> {
    let rest = body.strip_prefix(MAGIC).ok_or(WireError {
        offset: 0,
        what: "missing the k8s\\0 prefix",
    })?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for f in Fields::new(rest) {
        match f? {
            (1, Wire::Bytes(tm)) => {
                for g in Fields::new(tm) {
                    match g? {
                        (1, Wire::Bytes(v)) => {
                            api_version = String::from_utf8_lossy(v).into_owned()
                        }
                        (2, Wire::Bytes(v)) => kind = String::from_utf8_lossy(v).into_owned(),
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(r)) => raw = r,
            _ => {}
        }
    }
    Ok((api_version, kind, raw))
}

/// Wrap a typed object in the `k8s\0` + `runtime.Unknown` envelope the apiserver puts
/// around every protobuf body (docs/PROTOCOL.md §B): the one writer of it.
pub fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut u = Writer::default();
    u.message(1, |tm| {
        tm.string(1, api_version).string(2, kind);
    });
    // contentEncoding and contentType, always written empty (runtime/generated.pb.go).
    u.bytes(2, raw).bytes(3, b"").bytes(4, b"");
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&u.buf);
    out
}

/// One protobuf watch frame: a 4-byte big-endian length, then a `WatchEvent` whose
/// object is `envelope` (the `k8s\0` + Unknown bytes).
pub fn watch_frame(type_: &str, envelope: &[u8]) -> Vec<u8> {
    let mut ev = Writer::default();
    ev.string(1, type_).message(2, |ext| {
        ext.bytes(1, envelope);
    });
    let mut out = (ev.buf.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&ev.buf);
    out
}

/// A protobuf message being written.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    fn varint(&mut self, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.buf.push(b);
                return;
            }
            self.buf.push(b | 0x80);
        }
    }

    pub fn bytes(&mut self, num: u32, b: &[u8]) -> &mut Self {
        self.varint(u64::from(num) << 3 | 2);
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
        self
    }

    pub fn string(&mut self, num: u32, s: &str) -> &mut Self {
        self.bytes(num, s.as_bytes())
    }

    pub fn uint(&mut self, num: u32, v: u64) -> &mut Self {
        self.varint(u64::from(num) << 3);
        self.varint(v);
        self
    }

    pub fn message(&mut self, num: u32, f: impl FnOnce(&mut Writer)) -> &mut Self {
        let mut inner = Writer::default();
        f(&mut inner);
        self.bytes(num, &inner.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut w = Writer::default();
        w.string(1, "abc").uint(2, 300).message(3, |m| {
            m.string(1, "x");
        });
        let fields: Vec<_> = Fields::new(&w.buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(fields[0], (1, Wire::Bytes(b"abc")));
        assert_eq!(fields[1], (2, Wire::Varint(300)));
        assert_eq!(fields[2].0, 3);
        for cut in 1..w.buf.len() {
            // Every truncation either parses a prefix or reports an error; never panics.
            let _ = Fields::new(&w.buf[..cut]).collect::<Vec<_>>();
        }
        assert!(Fields::new(&[0x0a, 0x05, b'a']).next().unwrap().is_err());
        assert!(Fields::new(&[0x0b]).next().unwrap().is_err());
    }

    #[test]
    fn unwraps_recorded_protobuf_get() {
        let body = include_bytes!("../../../../fixtures/kube-apiserver-1.28/cm-get-protobuf.body");
        let (api_version, kind, raw) = unwrap_unknown(body).unwrap();
        assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "ConfigMap"));
        assert!(!raw.is_empty());
    }
}
