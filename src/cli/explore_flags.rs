//! The flags of one explore: `explore` takes them, and `explore job` takes the same for
//! its pods (`explore_shards.rs`), which is why they live apart from both.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::upstream_args::UpstreamArgs;
use super::values::parse_duration;
use crate::explore;

/// What one explore is asked (`explore job` takes the same, for its pods).
#[derive(Debug, Args)]
#[command(
    mut_arg("upstream_kubeconfig", |a| a
        .help("Explore on this cluster instead of the embedded simulator (trials run one at a \
               time; what they create is deleted between them)")
        // A cluster or a control plane of its own, not both.
        .conflicts_with("envtest")),
    // A context is only of a kubeconfig given.
    mut_arg("context", |a| a
        .help("Context of --upstream-kubeconfig")
        .requires("upstream_kubeconfig")),
)]
pub struct ExploreFlags {
    #[command(flatten)]
    pub world: super::run::WorldArgs,

    #[command(flatten)]
    pub envtest: super::run::EnvtestArgs,

    #[command(flatten)]
    pub upstream: UpstreamArgs,

    /// On a cluster: a shell command run before every run to put the cluster back.
    #[arg(long, value_name = "CMD", requires = "upstream_kubeconfig")]
    pub reset: Option<String>,

    /// With --envtest: start a control plane for every trial, instead of putting one back
    /// between trials (what a trial created deleted, checked to be as it was when ready;
    /// one that cannot be is replaced). Always so with --with: its components hold
    /// state no delete puts back.
    #[arg(long, requires = "envtest")]
    pub fresh_control_planes: bool,

    /// Trials run side by side on the simulator or --envtest (default: one per CPU).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,

    /// At most this many trials (shrinking a finding adds a few more).
    #[arg(long, value_name = "N")]
    pub budget: Option<usize>,

    /// Stop starting trials after this long.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub time: Option<Duration>,

    /// Seed of the schedules' randomness (errors with a rate, jitter).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Where findings and the summary go.
    #[arg(long, default_value = "stalemate-explore", value_name = "DIR")]
    pub out: PathBuf,

    /// A run ends once nothing has happened for this long (no write by the controller,
    /// no window open, opened or closed) — if everything the convergence oracle judges
    /// is Current by then; otherwise it goes on until it is, or until --settle.
    #[arg(long, default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    pub quiet: Duration,

    /// What a controller is given to recover after the last fault: an object not
    /// Current this long after the last window closed is a convergence violation. Real
    /// controllers back off after errors (Flux's source-controller: 750 ms, doubling),
    /// so a trial whose controller is not Current once quiet goes on until it is or
    /// this has passed — and so does one whose end state differs from the fault-free
    /// runs' (a retry waiting out its back-off is quiet too).
    #[arg(long, default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
    pub settle: Duration,

    /// The longest one run may take while its controller is not quiet. A quiet run
    /// waiting for its controller to recover (--settle) may go on up to twice this.
    #[arg(long, default_value = "60s", value_parser = parse_duration, value_name = "DURATION")]
    pub max_run: Duration,

    /// Resources (`plural.group`) the convergence oracle judges (default: the custom
    /// resources of --setup's CRDs).
    #[arg(long, value_name = "RESOURCE", num_args = 1.., value_parser = resource_name)]
    pub converge: Vec<String>,

    /// Resources (`plural.group`, or a plural for any group) whose plans are tried first.
    /// By default the focus is derived from the reference runs: the resources of the
    /// setup's objects, of the workload's writes, of the objects they own (through
    /// `ownerReferences`) and those the convergence oracle judges.
    #[arg(long, value_name = "RESOURCE", num_args = 1..)]
    pub focus: Vec<String>,

    /// The oracles as a schedule's `oracles` section (JSON), instead of the defaults.
    #[arg(long, value_name = "FILE")]
    pub oracles: Option<PathBuf>,

    /// Round 2's freezes: longer than a controller's patience with its own writes
    /// (client-go's workload controllers wait 5 minutes to see what they created or
    /// deleted), after each of its creates and deletes, with the user's objects touched
    /// 20 s before the freeze ends. 0 leaves the round out.
    #[arg(long, default_value = "5m30s", value_parser = parse_duration, value_name = "DURATION")]
    pub long_window: Duration,

    /// Trials spent shrinking each window of a finding (bisecting its duration).
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub shrink_steps: u32,

    /// The user's actions to search with: `generated` (from the setup's objects — their
    /// fields as their schemas admit, values the controller may have to reject, delete
    /// and recreate, finalizers, annotations, one more like them; each crossed with the
    /// faults at the moment it lands), `none`, or a YAML file of sequences
    /// (`- {name: …, run: CMD}` or `- {name: …, steps: [CMD, …]}`). A --workload runs
    /// before each sequence's steps.
    #[arg(long, default_value = "generated", value_name = "generated|none|FILE")]
    pub actions: explore::actions::Source,

    /// Print the action sequences --actions gives (with each step as a --workload a
    /// shell takes) and exit, running nothing.
    #[arg(long)]
    pub actions_list: bool,

    /// Runs of each finding's reproducer (after shrinking) before it is reported: one
    /// that never fails again is reported as flaky, with how often it came back.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub replay: u32,

    /// Try only share I of N of the plans (0 <= I < N). Every shard runs the same
    /// reference runs and makes the same plan list (the same --seed and flags), then tries
    /// the plans whose name hashes to I — a hash, not every Nth, so that a shard whose
    /// references showed one write more or less does not shift every other plan to
    /// another shard. --budget and --time are per shard; each shard shrinks and replays
    /// its own findings (with --shrink-steps 0 --replay 0, none does: shrink the merged
    /// findings once with --shrink). Put the shards' outputs together with `explore merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<explore::shard::Shard>,

    /// Search nothing: shrink and replay the findings of DIR (an earlier explore's or
    /// `explore merge`'s output) that no one shrank — a shard cut short by --time or a
    /// signal, or run with --shrink-steps 0 — and write DIR with them shrunk into --out
    /// (DIR itself is not written). Give the flags and command its explore had: the
    /// trials are judged against fresh reference runs, as a shard's are.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["shard", "actions_list"])]
    pub shrink: Option<PathBuf>,

    /// At the end, print the output (its summary and findings, and as many of the
    /// trials' files as fit in 8 MiB) on standard output as a gzip'd tar in base64
    /// between two marker lines, for `explore gather` to read from a pod's log; and exit
    /// 0 when there are findings too (they are in the archive's summary): a Job would
    /// count a pod that exits 1 as failed and run it again. `explore job` passes it.
    #[arg(long)]
    pub archive_to_stdout: bool,

    /// The controller to explore, and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

/// A resource as kubectl names it: `plural.group` (core: `plural`).
fn resource_name(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-');
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?} is not a resource (plural.group, lowercase); give several separated by spaces or repeat the flag, not commas"
        ))
    }
}
