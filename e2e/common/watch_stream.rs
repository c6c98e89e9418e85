//! Watch bodies read as they stream (curl -N on a pipe), event by event in JSON or
//! protobuf framing, and protobuf events read independently of the proxy's own codec.

use std::process::Child;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{Value, json};

use super::KillOnDrop;

/// A watch being read as it streams.
pub struct Stream {
    _curl: KillOnDrop,
    rx: Receiver<Vec<u8>>,
    buf: Vec<u8>,
    ended: bool,
    /// How long to wait for the next bytes before the test fails.
    wait: Duration,
}

/// The length of the first JSON watch event (one per line) in `b`, once complete.
pub fn line_len(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n').map(|i| i + 1)
}

/// The length of the first protobuf watch frame (u32 BE length, then the event).
pub fn frame_len(b: &[u8]) -> Option<usize> {
    let n = 4 + u32::from_be_bytes(b.get(..4)?.try_into().ok()?) as usize;
    (b.len() >= n).then_some(n)
}

impl Stream {
    /// Read `child`'s stdout (curl -N with the watch's body) as it streams.
    pub fn read(mut child: Child, wait: Duration) -> Stream {
        let mut out = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::Read;
            let mut chunk = [0u8; 16384];
            while let Ok(n @ 1..) = out.read(&mut chunk) {
                if tx.send(chunk[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Stream {
            _curl: KillOnDrop(child),
            rx,
            buf: Vec::new(),
            ended: false,
            wait,
        }
    }

    /// The next event's bytes, or None when the stream has ended.
    pub fn take(&mut self, what: &str, len: fn(&[u8]) -> Option<usize>) -> Option<Vec<u8>> {
        loop {
            if let Some(n) = len(&self.buf) {
                return Some(self.buf.drain(..n).collect());
            }
            if self.ended {
                assert!(self.buf.is_empty(), "{what}: a partial event at the end");
                return None;
            }
            match self.rx.recv_timeout(self.wait) {
                Ok(chunk) => self.buf.extend(chunk),
                Err(RecvTimeoutError::Timeout) => panic!("timed out waiting for {what}"),
                Err(RecvTimeoutError::Disconnected) => self.ended = true,
            }
        }
    }

    /// The next JSON watch event, or None when the stream has ended.
    pub fn event(&mut self, what: &str) -> Option<Value> {
        let line = self.take(what, line_len)?;
        Some(serde_json::from_slice(&line).expect("a JSON watch event"))
    }

    /// The next `n` events' bytes; the stream must not end before.
    pub fn take_n(
        &mut self,
        n: usize,
        what: &str,
        len: fn(&[u8]) -> Option<usize>,
    ) -> Vec<Vec<u8>> {
        let mut next = |i| self.take(&format!("{what}, event {i}"), len);
        let end = |i| move || panic!("{what}: ended after {i} events");
        (0..n).map(|i| next(i).unwrap_or_else(end(i))).collect()
    }

    pub fn events(&mut self, n: usize, what: &str) -> Vec<Value> {
        let lines = self.take_n(n, what, line_len);
        lines
            .iter()
            .map(|l| serde_json::from_slice(l).expect("a JSON event"))
            .collect()
    }

    /// True if no byte of the body has arrived yet.
    pub fn nothing_received(&mut self) -> bool {
        while let Ok(chunk) = self.rx.try_recv() {
            self.buf.extend(chunk);
        }
        self.buf.is_empty()
    }
}

// Protobuf, read independently of the proxy's own codec (docs/PROTOCOL.md §B).

pub fn varint(b: &[u8], i: &mut usize) -> u64 {
    let (mut v, mut shift) = (0, 0);
    while b[*i] & 0x80 != 0 {
        (v, shift, *i) = (v | u64::from(b[*i] & 0x7f) << shift, shift + 7, *i + 1);
    }
    *i += 1;
    v | u64::from(b[*i - 1]) << shift
}

/// Field `n` of a protobuf message: its length-delimited values, and its last varint.
pub fn field(b: &[u8], n: u64) -> (Vec<&[u8]>, Option<u64>) {
    let (mut i, mut bytes, mut int) = (0, Vec::new(), None);
    while i < b.len() {
        let key = varint(b, &mut i);
        let (value, len) = match key & 7 {
            0 => (Some(varint(b, &mut i)), 0),
            2 => (None, varint(b, &mut i) as usize),
            1 => (None, 8),
            5 => (None, 4),
            w => panic!("wire type {w} in a protobuf message"),
        };
        if key >> 3 == n && key & 7 == 2 {
            bytes.push(&b[i..i + len]);
        } else if key >> 3 == n {
            int = value;
        }
        i += len;
    }
    (bytes, int)
}

pub fn str_of(b: &[u8], n: u64) -> Option<String> {
    let s = field(b, n).0.first().copied();
    s.map(|s| String::from_utf8_lossy(s).into_owned())
}

/// A protobuf watch frame (length prefix included) in the JSON shape of the same event,
/// with what the tests compare: type, kind, and the object's name, namespace,
/// resourceVersion, generation, deletionTimestamp and finalizers — or an ERROR's Status.
pub fn frame_json(frame: &[u8]) -> Value {
    let event = &frame[4..];
    let raw = field(field(event, 2).0[0], 1).0[0];
    assert_eq!(&raw[..4], b"k8s\0", "the protobuf magic");
    let kind = str_of(field(&raw[4..], 1).0[0], 2).unwrap_or_default();
    let obj = field(&raw[4..], 2).0[0];
    let object = if kind == "Status" {
        json!({"kind": kind, "message": str_of(obj, 3), "reason": str_of(obj, 4),
            "code": field(obj, 6).1})
    } else {
        let m = field(obj, 1).0[0];
        let finalizers = field(m, 14).0;
        let finalizers: Vec<_> = finalizers
            .into_iter()
            .map(String::from_utf8_lossy)
            .collect();
        json!({"kind": kind, "metadata": {"name": str_of(m, 1), "namespace": str_of(m, 3),
            "resourceVersion": str_of(m, 6), "generation": field(m, 7).1,
            "deletionTimestamp": str_of(m, 9).map(|_| "set"), "finalizers": finalizers}})
    };
    json!({"type": str_of(event, 1), "object": object})
}

/// A whole protobuf watch body, split into frames.
pub fn split_frames(mut body: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(n) = frame_len(body) {
        out.push(body[..n].to_vec());
        body = &body[n..];
    }
    assert!(body.is_empty(), "a partial protobuf frame at the end");
    out
}
