//! `stalemate report TRACE`: render a saved trace.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A trace written by `serve`, `run` or `demo` with --trace.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,

    /// Write the report as JSON here.
    #[arg(long, value_name = "FILE")]
    pub report_json: Option<PathBuf>,

    /// Write the report as a self-contained HTML timeline here.
    #[arg(long, value_name = "FILE")]
    pub report_html: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.trace)
        .with_context(|| format!("reading {}", args.trace.display()))?;
    let report = crate::report::Report::from_trace(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.trace.display()))?;
    crate::server::write_reports(
        &report,
        args.report_json.as_deref(),
        args.report_html.as_deref(),
    )?;
    print!("{}", report.terminal());
    Ok(())
}
