//! `stalemate explore [--setup FILE...] [--workload CMD] -- CMD ARGS...`: search for
//! staleness bugs in a controller without being told where they are (`src/explore/`).
//!
//! Exit status: 0 nothing found, 1 findings (or the controller fails without any fault),
//! 2 explore itself failed (the controller did not start, the reference runs disagree, …).

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use super::explore_flags::ExploreFlags;
use crate::explore::{self, Config, Verdict};
use crate::session::upstream::Choice;

#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "\
Examples:
  stalemate explore --setup examples/gitrepo/setup.yaml -- target/release/gitrepo-controller
  stalemate explore --upstream-kubeconfig ~/.kube/config --reset ./reset.sh --setup cr.yaml -- ./bin/manager

How it works: two fault-free reference runs (until nothing happens for --quiet) give the
end state to compare with and the controller's own requests to anchor windows on. Then
the same for each sequence of user actions (--actions: generated from the setup's
objects by default; --actions-list shows them), whose steps' writes are anchors too. Each
plan is a schedule — freeze what the controller watches right after one of its writes,
restart it, rewind its cache, answer 409/500/429, expire its watches, coalesce changes —
run as a trial on a fresh simulator (or the cluster, put back with --reset), and judged by
the oracles (convergence, hot loop, conflicts) and a differential oracle (the end state
and the objects created against the reference runs'). Failing trials with the same
signature are one finding; its plan is shrunk and written as a reproducer schedule that
`stalemate run` runs again.

Output (--out): findings/NN-*.json (reproducers) with each one's trace, reports and
controller output; summary.json and summary.html.

Shards: `--shard I/N` tries one share of the plans; `explore merge` puts the shares'
outputs together; `explore job` runs the shares as an Indexed Job on a cluster and
`explore gather` collects and merges them; `--shrink DIR` shrinks, once, the merged
findings no shard shrank.

Exit status: 0 nothing found, 1 findings (or the controller fails without any fault),
2 explore itself failed."
)]
pub struct ExploreArgs {
    #[command(subcommand)]
    pub verb: Option<super::explore_shards::Verb>,

    #[command(flatten)]
    pub flags: ExploreFlags,
}

pub async fn run(args: ExploreArgs, matches: Option<&clap::ArgMatches>) -> Result<ExitCode> {
    match args.verb {
        Some(verb) => super::explore_shards::run(verb, matches).await,
        None => explore(args.flags).await,
    }
}

async fn explore(args: ExploreFlags) -> Result<ExitCode> {
    let setup = crate::setup::load(&args.world.setup)?;
    if args.actions_list {
        return actions_list(&args, &setup);
    }
    // A bad --actions FILE is refused before any control plane starts, as --setup is.
    if let explore::actions::Source::File(p) = &args.actions {
        explore::actions::load(p)?;
    }
    let oracles = oracles(&args, &setup)?;
    // As a Deployment's pod: an exit is followed by kubelet's back-off and a restart;
    // five in a row are a crash loop, which ends the trial as a finding.
    let crash_policy = args.world.crash_policy(Some(5))?;
    let choice = match (args.envtest.choice(), args.upstream.upstream_kubeconfig) {
        (Some(c), _) => c,
        (None, Some(path)) => Choice::Cluster {
            kubeconfig: Some(path),
            context: args.upstream.context,
            reset: args.reset,
        },
        (None, None) => Choice::Sim,
    };
    let jobs = args.jobs.unwrap_or_else(crate::server::default_threads);
    let upstream = choice
        .for_explore(jobs, &setup, args.fresh_control_planes)
        .await?;
    let cfg = Config {
        controller: args.cmd,
        setup_paths: args.world.setup,
        setup,
        workload: args.world.workload,
        actions: args.actions,
        start_timeout: args.world.start_timeout,
        idle_url: args.world.idle_url,
        wait_settle: args.world.wait_settle,
        others: args.world.others,
        crash_policy,
        focus: args.focus,
        jobs: if upstream.side_by_side() { jobs } else { 1 },
        upstream,
        budget: args.budget,
        time: args.time,
        seed: args.seed,
        out: args.out,
        quiet: args.quiet,
        max_run: args.max_run,
        oracles,
        shrink_steps: args.shrink_steps,
        replay: args.replay,
        long_window: (!args.long_window.is_zero()).then_some(args.long_window),
        settle: args.settle,
        progress_bar: std::io::stderr().is_terminal(),
        shard: args.shard,
        shrink: args.shrink,
    };
    let out = cfg.out.clone();
    let verdict = explore::run(cfg).await?;
    if args.archive_to_stdout {
        super::explore_shards::print_archive(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    Ok(match verdict {
        Verdict::Clean => ExitCode::SUCCESS,
        Verdict::Found => ExitCode::from(1),
    })
}

/// `--actions-list`: the sequences `--actions` gives, printed, nothing run.
fn actions_list(args: &ExploreFlags, setup: &[crate::setup::Manifest]) -> Result<ExitCode> {
    let (sequences, notes) = match &args.actions {
        explore::actions::Source::None => (Vec::new(), Vec::new()),
        explore::actions::Source::File(p) => (explore::actions::load(p)?, Vec::new()),
        explore::actions::Source::Generated => {
            let g = explore::actions::generate(setup, args.seed);
            (g.sequences, g.notes)
        }
    };
    let mut text = explore::actions::listing(&sequences, &notes);
    if args.actions == explore::actions::Source::Generated {
        text.push_str(
            "# and, once the references have run, a delete of each object the controller owns\n",
        );
    }
    // A reader that stops early (`| head`) is not an error.
    use std::io::Write;
    let _ = std::io::stdout().write_all(text.as_bytes());
    Ok(ExitCode::SUCCESS)
}

/// The oracles: `--oracles FILE`, else the defaults for the setup; `--recover-within`
/// applied.
fn oracles(
    args: &ExploreFlags,
    setup: &[crate::setup::Manifest],
) -> Result<crate::oracle::OracleConfig> {
    let oracles = match &args.oracles {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("--oracles {}", p.display()))?;
            let file = p.display().to_string();
            crate::spans::from_json(&text, &file)
                .map_err(|errs| crate::spans::report(&format!("--oracles {file}"), &errs))?
        }
        None => explore::default_oracles(setup, &args.converge, args.settle),
    };
    let mut o = Some(oracles);
    args.world.recover_within(&mut o)?;
    Ok(o.unwrap_or_default())
}
