//! `stalemate explore report DIR N`: finding N of an explore's output as a bug report a
//! maintainer can replay (`src/explore/issue.rs`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

#[derive(Debug, Args)]
#[command(after_help = "\
Writes, into --out (default DIR/report-NN/):
  ISSUE.md         an issue text: what a user sees, the versions, the one command that
                   reproduces it, the window and what it did, the controller's requests
                   around it (from the trial's trace), the oracles' words, and where the
                   end state differs from the fault-free runs'
  reproduce.sh     that command, run from the bundle: `sh reproduce.sh` (arguments
                   replace the controller command; STALEMATE=PATH picks the binary;
                   --envtest reads KUBEBUILDER_ASSETS)
  schedule.json    the reproducer (its `expected` oracle: what the references showed)
  setup/, files/   copies of the manifests and scripts the command names (text files,
                   not the controller's binary)
  references.json  what the fault-free runs ended with, for this finding
  trace.jsonl, controller.log   the trial that shows it

DIR is an explore's --out (or a merge's). N is the finding's number (#N in explore's
output, `number` in summary.json).

Example:
  stalemate explore --envtest --setup crds.yaml cr.yaml -- ./bin/manager   # finds #1
  stalemate explore report stalemate-explore 1
  sh stalemate-explore/report-01/reproduce.sh")]
pub struct ReportArgs {
    /// The explore's output directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    /// The finding's number.
    #[arg(value_name = "N")]
    pub finding: usize,

    /// Where the bundle goes (default: DIR/report-NN).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let w = crate::explore::issue::write(&args.dir, args.finding, args.out.as_deref())?;
    println!("{}", w.issue.display());
    eprintln!(
        "explore report: finding #{} written to {}\n  replay it: {}",
        args.finding,
        w.dir.display(),
        w.command
    );
    Ok(ExitCode::SUCCESS)
}
