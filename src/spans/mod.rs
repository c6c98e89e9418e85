//! Where a value sits in a file the user wrote, so every error about it points there as
//! a compiler's does: `bad.json:14:23: windows[1].fault.errors.status: 418 is not one of …`.
//!
//! serde gives a position only for its own errors, and only while it reads text; the
//! checks made after parsing (an unknown client, a bad regex, a duplicate window name)
//! know a field path alone. [`Spans`] maps such a path — written as
//! `serde_path_to_error` writes them: `windows[1].fault.errors.status` — to the line and
//! column of its value (and of its key), built from the text by `json.rs` (a
//! position-tracking scan: serde_json keeps no spans) or `yaml.rs` (serde-saphyr's
//! `Spanned`). [`Located`] is the error that prints with it.

mod json;
mod yaml;

use std::collections::HashMap;

pub use json::{index as index_json, syntax_error as json_syntax_error};
pub use yaml::{Document, documents as yaml_documents};

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
    duplicates: Vec<(String, String, Pos)>,
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
            && let Some(p) = self.key(&join(path, field))
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

    fn record(&mut self, path: &str, key: Option<Pos>, value: Pos) {
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

/// Errors in the order of the file, those that could not be placed last.
pub fn sort(errs: &mut [Located]) {
    errs.sort_by_key(|e| (e.at.is_none(), e.at));
}

/// One error holding all of `errs` (at least one), as `check`, `run`, `serve` and
/// `explore` print them: `WHAT has N error(s):` then each on its own line.
pub fn report(what: &str, errs: &[Located]) -> anyhow::Error {
    anyhow::anyhow!(
        "{what} has {} error(s):\n{}",
        errs.len(),
        errs.iter()
            .map(|e| format!("  {e}"))
            .collect::<Vec<_>>()
            .join("\n")
    )
}

/// Deserialize `value` as a `T`, an error placed at `path` (where `value` sits) plus the
/// path inside it.
pub fn deserialize<T: serde::de::DeserializeOwned>(
    value: &serde_json::Value,
    path: &str,
    file: &str,
    spans: &Spans,
) -> Result<T, Located> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let full = match inner.as_str() {
            "." => path.to_string(),
            i if i.starts_with('[') => format!("{path}{i}"),
            i => join(path, i),
        };
        Located::at_path(file, spans, full, e.into_inner().to_string())
    })
}

/// JSON text as a `Value` and its spans, or its syntax error, placed.
pub fn read_json(text: &str, file: &str) -> Result<(serde_json::Value, Spans), Located> {
    match serde_json::from_str(text) {
        Ok(v) => Ok((v, index_json(text))),
        Err(e) => Err(Located {
            file: file.to_string(),
            at: Some(json_syntax_error(text, &e)),
            path: String::new(),
            // serde_json's message ends with its own (byte-counted) place.
            message: e
                .to_string()
                .split(" at line ")
                .next()
                .unwrap_or_default()
                .to_string(),
        }),
    }
}

/// JSON text as a `T`: its syntax error, or the keys it gives twice (a struct read
/// straight from text refuses them; a `Value` keeps the last) and the first error of `T`.
pub fn from_json<T: serde::de::DeserializeOwned>(
    text: &str,
    file: &str,
) -> Result<T, Vec<Located>> {
    let (value, spans) = read_json(text, file).map_err(|e| vec![e])?;
    let mut errs = spans.duplicate_errors(file);
    match deserialize(&value, "", file, &spans) {
        Ok(t) if errs.is_empty() => return Ok(t),
        Ok(_) => {}
        Err(e) => errs.push(e),
    }
    sort(&mut errs);
    Err(errs)
}

#[cfg(test)]
mod tests;
