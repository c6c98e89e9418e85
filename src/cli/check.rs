//! `stalemate check FILE...`: validate schedule files.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Args;

use crate::schedule::Schedule;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Schedule files (JSON) to check.
    #[arg(required_unless_present = "schema", value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Print the schedule file's JSON Schema (draft 2020-12) instead, for an editor's
    /// completion and checking as you type (docs/schedule.md, "In your editor").
    #[arg(long, conflicts_with = "files")]
    pub schema: bool,
}

/// Read and validate one schedule, with every error in the message, each at its line and
/// column (`run`, `serve` and `explore` refuse a schedule with the same message).
pub fn load(path: &Path) -> Result<Schedule> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let file = path.display().to_string();
    Schedule::parse(&text, &file).map_err(|errs| crate::spans::report(&file, &errs))
}

pub fn run(args: CheckArgs) -> Result<()> {
    if args.schema {
        println!("{}", serde_json::to_string_pretty(&schema())?);
        return Ok(());
    }
    let mut failed = 0;
    for f in &args.files {
        match load(f) {
            Ok(s) => println!(
                "{}: ok ({} clients, {} windows)",
                f.display(),
                s.clients.len(),
                s.windows.len()
            ),
            Err(e) => {
                eprintln!("{e:#}");
                failed += 1;
            }
        }
    }
    if failed > 0 {
        bail!(
            "{failed} of {} schedule file(s) failed the check",
            args.files.len()
        );
    }
    Ok(())
}

/// The schedule file's JSON Schema, derived from the serde types `load` reads it with, so
/// the two cannot drift: the fields, their defaults and doc comments, the faults'
/// and triggers' names, one trigger kind per window (`Trigger`'s `oneOf`). What the
/// schema does not say (references between windows, regexes, the 24h cap) only `check`
/// catches.
pub fn schema() -> serde_json::Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<Schedule>();
    schema.insert("title".into(), "stalemate schedule".into());
    schema.to_value()
}
