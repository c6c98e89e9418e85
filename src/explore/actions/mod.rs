//! What a user does while the controller runs, generated: explore's actions.
//!
//! Most staleness bugs need a user action at the wrong moment — a delete and a recreate
//! under the same name, a scale down then up, a value the controller must reject (Sieve
//! wrote such workloads by hand for each operator; Acto generates them from the CRD's
//! schema). Here they are generated from the setup's objects (`generate.rs`): changes to
//! their fields the schema admits (`fields.rs`), values the controller may have to
//! reject, deletes and recreates, finalizers and annotations, one more object like the
//! user's. Each is a shell step of `kubectl` commands, so a sequence of them is a
//! workload `stalemate run --workload STEP --workload STEP` takes as it is — a finding's
//! reproducer needs no generator.
//!
//! ```text
//!  setup objects ─► actions (one kubectl step each) ─► sequences of 1–3
//!  each sequence: fault-free references (its own) ─► plans anchored on its steps' writes
//!                 and the controller's reaction ─► trials judged against its references
//! ```

mod fields;
mod generate;
mod sequence;

use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::spans::{self, Located};

pub use generate::{Generated, delete_owned, generate};
pub use sequence::{Action, Sequence, shell_word};

/// `--actions`: where the user's actions come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// From the setup's objects (the default).
    Generated,
    /// No actions: the setup and `--workload` only.
    None,
    /// Sequences from a file.
    File(std::path::PathBuf),
}

impl std::str::FromStr for Source {
    type Err = String;
    fn from_str(s: &str) -> Result<Source, String> {
        Ok(match s {
            "generated" => Source::Generated,
            "none" => Source::None,
            "" => return Err("give generated, none or a file".into()),
            path => Source::File(path.into()),
        })
    }
}

/// One entry of an `--actions FILE`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSequence {
    /// What it does.
    name: Text,
    /// Its steps, each a shell command (or `run:` for one).
    #[serde(default)]
    steps: Vec<Text>,
    #[serde(default)]
    run: Option<Text>,
}

/// A scalar as the string it was written as: `run: 7` is the command `7`, as a YAML
/// reader typing the field as a string takes it (the file is read as a
/// `serde_json::Value` first, for the places of its errors, and that has typed it).
#[derive(Debug)]
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        use serde_json::Value;
        let kind = match Value::deserialize(d)? {
            Value::String(s) => return Ok(Text(s)),
            v @ (Value::Number(_) | Value::Bool(_)) => return Ok(Text(v.to_string())),
            Value::Null => "null",
            Value::Array(_) => "sequence",
            Value::Object(_) => "map",
        };
        Err(serde::de::Error::custom(format!(
            "invalid type: {kind}, expected a string"
        )))
    }
}

/// Read `--actions FILE`: a YAML (or JSON) list of `{name, run}` or `{name, steps: [..]}`,
/// every bad entry in the error, each at its line and column.
pub fn load(path: &Path) -> Result<Vec<Sequence>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("--actions {}", path.display()))?;
    let file = path.display().to_string();
    parse(&text, &file).map_err(|errs| spans::report(&format!("--actions {file}"), &errs))
}

/// What an `--actions` file holds, said after an error of its shape.
const SHAPE: &str = "expected a list of {name, run} or {name, steps: [CMD, …]}";

fn parse(text: &str, file: &str) -> Result<Vec<Sequence>, Vec<Located>> {
    let mut docs = spans::yaml_documents(text, file).map_err(|e| vec![e])?;
    if let Some(second) = docs.get(1) {
        return Err(vec![Located::at_path(
            file,
            &second.spans,
            String::new(),
            format!("a second document: --actions takes one list ({SHAPE})"),
        )]);
    }
    let doc = docs.pop().unwrap_or(spans::Document {
        value: serde_json::Value::Null,
        spans: spans::Spans::default(),
    });
    let Some(entries) = doc.value.as_array() else {
        return Err(vec![Located::at_path(
            file,
            &doc.spans,
            String::new(),
            format!("not a list ({SHAPE})"),
        )]);
    };
    let mut errs = doc.spans.duplicate_errors(file);
    let mut out = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let path = spans::item("", i);
        match spans::deserialize::<FileSequence>(entry, &path, file, &doc.spans) {
            Err(mut e) => {
                e.message = format!("{} ({SHAPE})", e.message);
                errs.push(e);
            }
            Ok(e) => match sequence(i, e) {
                Ok(s) => out.push(s),
                Err(m) => errs.push(Located::at_path(file, &doc.spans, path, m)),
            },
        }
    }
    spans::sort(&mut errs);
    if errs.is_empty() { Ok(out) } else { Err(errs) }
}

/// Entry `i` of the file as a sequence, or what is wrong with it.
fn sequence(i: usize, e: FileSequence) -> Result<Sequence, String> {
    let name = e.name.0;
    let mut steps: Vec<String> = e.steps.into_iter().map(|t| t.0).collect();
    steps.extend(e.run.map(|t| t.0));
    if steps.is_empty() || steps.iter().any(|s| s.trim().is_empty()) {
        return Err(format!(
            "entry {} ({:?}) has no command: give run: CMD or steps: [CMD, …]",
            i + 1,
            name
        ));
    }
    if steps.len() > 1 && name.is_empty() {
        return Err(format!("entry {} has no name", i + 1));
    }
    let n = steps.len();
    Ok(Sequence {
        actions: steps
            .into_iter()
            .enumerate()
            .map(|(k, run)| Action {
                label: if n == 1 {
                    name.clone()
                } else {
                    format!("{name} (step {} of {n})", k + 1)
                },
                class: format!("file: {name}"),
                run,
            })
            .collect(),
    })
}

/// What `--actions-list` prints: each sequence, its steps as a shell takes them, and
/// what the generator said about objects it could not read a schema for.
pub fn listing(sequences: &[Sequence], notes: &[String]) -> String {
    let mut s = String::new();
    for n in notes {
        s.push_str(&format!("# {n}\n"));
    }
    for (i, q) in sequences.iter().enumerate() {
        s.push_str(&format!("{:>3}. {}\n", i + 1, q.label()));
        for a in &q.actions {
            s.push_str(&format!("     --workload {}\n", shell_word(&a.run)));
        }
    }
    s
}

#[cfg(test)]
mod tests;
