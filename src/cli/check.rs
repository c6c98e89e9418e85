//! `stalemate check FILE...`: validate schedule files.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Args;

use crate::schedule::Schedule;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Schedule files (JSON) to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
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
