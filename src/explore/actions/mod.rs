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

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

pub use generate::{Generated, delete_owned, generate};

/// One thing a user does: a shell step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    /// What it does, for people: `set spec.size of widgets demo/w1 to 2 (was 1)`.
    pub label: String,
    /// What makes two actions alike for the search: the same change to the same field of
    /// the same kind of object (`patch widgets spec.size up`). Plans tried for one are
    /// not tried again for another of its class.
    pub class: String,
    /// The step: a shell command (`sh -c`), run with KUBECONFIG through the proxy.
    pub run: String,
}

/// Actions run one after another, the controller's reaction awaited between them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sequence {
    pub actions: Vec<Action>,
}

impl Sequence {
    pub fn one(a: Action) -> Sequence {
        Sequence { actions: vec![a] }
    }

    /// `set spec.size … ; then delete …`
    pub fn label(&self) -> String {
        self.actions
            .iter()
            .map(|a| a.label.as_str())
            .collect::<Vec<_>>()
            .join("; then ")
    }

    /// What makes two sequences alike (their actions' classes).
    pub fn class(&self) -> String {
        self.actions
            .iter()
            .map(|a| a.class.as_str())
            .collect::<Vec<_>>()
            .join(" / ")
    }

    /// Its workload steps.
    pub fn steps(&self) -> Vec<String> {
        self.actions.iter().map(|a| a.run.clone()).collect()
    }
}

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

/// One shell word (single-quoted unless plain).
pub fn shell_word(s: &str) -> String {
    super::output::shell_line(std::slice::from_ref(&s.to_string()))
}

#[cfg(test)]
mod tests;
