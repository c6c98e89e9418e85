//! Where a value sits in a file the user wrote, so every error about it points there as
//! a compiler's does: `bad.json:14:23: windows[1].fault.errors.status: 418 is not one of …`.
//!
//! serde gives a position only for its own errors, and only while it reads text; the
//! checks made after parsing (an unknown client, a bad regex, a duplicate window name)
//! know a field path alone. [`Spans`] maps such a path — written as
//! `serde_path_to_error` writes them: `windows[1].fault.errors.status` — to the line and
//! column of its value (and of its key), built from the text by `json.rs` (a
//! position-tracking scan: serde_json keeps no spans) or `yaml.rs` (serde-saphyr's
//! `Spanned`). [`Located`] is the error that prints with it (both in `place.rs`).

mod json;
mod place;
mod yaml;

pub use json::{index as index_json, syntax_error as json_syntax_error};
pub use place::{Located, Pos, Spans, item, join};
pub use yaml::{Document, documents as yaml_documents};

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
