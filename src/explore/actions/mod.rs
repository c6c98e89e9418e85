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
    name: String,
    /// Its steps, each a shell command (or `run:` for one).
    #[serde(default)]
    steps: Vec<String>,
    #[serde(default)]
    run: Option<String>,
}

/// Read `--actions FILE`: a YAML (or JSON) list of `{name, run}` or `{name, steps: [..]}`.
pub fn load(path: &Path) -> Result<Vec<Sequence>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("--actions {}", path.display()))?;
    let entries: Vec<FileSequence> = serde_saphyr::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "--actions {}: {e} (expected a list of {{name, run}} or {{name, steps: [CMD, …]}})",
            path.display()
        )
    })?;
    entries
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            let mut steps = e.steps;
            steps.extend(e.run);
            if steps.is_empty() || steps.iter().any(|s| s.trim().is_empty()) {
                anyhow::bail!(
                    "--actions {}: entry {} ({:?}) has no command: give run: CMD or steps: [CMD, …]",
                    path.display(),
                    i + 1,
                    e.name
                );
            }
            if steps.len() > 1 && e.name.is_empty() {
                anyhow::bail!("--actions {}: entry {} has no name", path.display(), i + 1);
            }
            let n = steps.len();
            Ok(Sequence {
                actions: steps
                    .into_iter()
                    .enumerate()
                    .map(|(k, run)| Action {
                        label: if n == 1 {
                            e.name.clone()
                        } else {
                            format!("{} (step {} of {n})", e.name, k + 1)
                        },
                        class: format!("file: {}", e.name),
                        run,
                    })
                    .collect(),
            })
        })
        .collect()
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
