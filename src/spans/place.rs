//! The shared vocabulary of `spans/`: a place ([`Pos`]), the places of one document's
//! values by path ([`Spans`]), and the error printed with one ([`Located`]).

use std::collections::HashMap;

/// A place in a text: 1-based line, and 1-based column in characters (as editors and
/// rustc count them), not bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

/// The positions of the values (and map keys) of one document, by path.
#[derive(Debug, Default, Clone)]
pub struct Spans {
    values: HashMap<String, Pos>,
    keys: HashMap<String, Pos>,
    /// Keys given twice in one map, with the path of the map: serde into a
    /// `serde_json::Value` keeps the last silently, where a struct would have refused.
    pub(super) duplicates: Vec<(String, String, Pos)>,
}

impl Spans {
    /// Where the value at `path` starts.
    pub fn value(&self, path: &str) -> Option<Pos> {
        self.values.get(path).copied()
    }

    /// Where the key of the value at `path` starts (none for list items and the root).
    pub fn key(&self, path: &str) -> Option<Pos> {
        self.keys.get(path).copied()
    }

    /// Where an error at `path` saying `message` points: an unknown field at its key; a
    /// value at its start; a missing one at the nearest enclosing value that is there.
    pub fn locate(&self, path: &str, message: &str) -> Option<Pos> {
        if let Some(field) = message
            .strip_prefix("unknown field `")
            .and_then(|r| r.split('`').next())
            // serde_path_to_error names the field itself when reading a `Value`, its
            // map when reading text.
            && let Some(p) = self.key(path).filter(|_| path == field || path.ends_with(&format!(".{field}"))).or_else(|| self.key(&join(path, field)))
        {
            return Some(p);
        }
        let mut p = path;
        loop {
            if let Some(at) = self.value(p) {
                return Some(at);
            }
            p = parent(p)?;
        }
    }

    /// Keys given twice in one map, as errors (the map's path, the message, the second key).
    pub fn duplicates(&self) -> impl Iterator<Item = (&str, String, Pos)> {
        self.duplicates
            .iter()
            .map(|(map, key, at)| (map.as_str(), format!("duplicate field `{key}`"), *at))
    }

    /// [`Spans::duplicates`] as errors in `file`.
    pub fn duplicate_errors(&self, file: &str) -> Vec<Located> {
        self.duplicates()
            .map(|(map, message, at)| Located {
                file: file.to_string(),
                at: Some(at),
                path: map.to_string(),
                message,
            })
            .collect()
    }

    pub(super) fn record(&mut self, path: &str, key: Option<Pos>, value: Pos) {
        if let Some(k) = key {
            self.keys.insert(path.to_string(), k);
        }
        self.values.insert(path.to_string(), value);
    }
}

/// `path` then `key`, as serde_path_to_error writes it (the root is the empty path).
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `path` then list item `i`.
pub fn item(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// The path one level up (`a.b[2]` → `a.b` → `a` → ``); `None` above the root. A key
/// holding `.` or `[` gives a wrong guess here, which is only ever a fallback.
fn parent(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    let cut = if path.ends_with(']') {
        path.rfind('[')
    } else {
        path.rfind('.')
    };
    Some(cut.map_or("", |i| &path[..i]))
}

/// An error at a place in a file, printed as a compiler prints one:
/// `FILE:LINE:COL: PATH: message` (without `:LINE:COL` when it could not be placed,
/// without `PATH: ` at the root).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Located {
    /// The file (or what stands for it: `window` for a control API body).
    pub file: String,
    pub at: Option<Pos>,
    /// The field path, as serde_path_to_error writes it; empty at the root.
    pub path: String,
    pub message: String,
}

impl Located {
    /// An error at `path`, placed with `spans`.
    pub fn at_path(file: &str, spans: &Spans, path: String, message: String) -> Located {
        Located {
            file: file.to_string(),
            at: spans.locate(&path, &message),
            path,
            message,
        }
    }
}

impl std::fmt::Display for Located {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(p) = self.at {
            write!(f, ":{}:{}", p.line, p.column)?;
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}
