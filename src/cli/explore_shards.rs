//! `stalemate explore merge|job|gather|report`: one explore in shards (`--shard I/N`), on this
//! machine or as a Kubernetes Indexed Job, and its shards' outputs put back together.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{ArgAction, ArgMatches, Args, Subcommand, parser::ValueSource};

use crate::explore::output::{Summary, SummaryVerdict};
use crate::explore::shards::{job, merge, pack};

// Parsed once per process, as `Command` (cli/mod.rs).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Merge the outputs of an explore's shards into one summary and one list of
    /// findings. Exit 0: nothing found, 1: findings, 2: failure.
    Merge(MergeArgs),
    /// Print a ConfigMap and an Indexed Job (YAML) that run an explore's shards on a
    /// cluster, one pod each, each with a control plane of its own.
    Job(JobArgs),
    /// Collect a Job's shards from its pods' logs (or saved logs) and merge them. Exit 0:
    /// nothing found, 1: findings, 2: failure (or a shard missing).
    Gather(GatherArgs),
    /// Write one finding as a bug report a maintainer can replay: an issue text and a
    /// bundle that `stalemate run` replays with one command.
    Report(super::explore_report::ReportArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "\
Each DIR is an explore's --out: `stalemate explore --shard I/N … --out DIR` for each I,
or what `explore gather` unpacked from a Job's pods. They must be shards of one explore
(the same controller command, --seed and N); a shard given twice is refused, a missing
one is said (its plans were not tried).

What it does:
  findings  one per set of signatures (what trials that found the same thing share);
            its reproducer is the best the shards found: one that came back when
            replayed (--replay) before a flaky one, then the fewest windows, then the
            least time under a fault (window durations summed), then the lower shard.
            Its failing trials are all the shards' failing trials for it.
  trials    concatenated in shard order and renumbered; their files copied, renamed.
  counts    summed (trials run, not exercised); seconds and reference seconds are the
            longest shard's (shards run side by side), trials/min is for all of them.
  verdict   recomputed: findings, else fails-without-faults, else clean.

Shrinking: every shard shrinks and replays its own findings before it ends, so merging
needs no controller and runs nothing; a finding several shards found was shrunk by each,
and the best of their reproducers is kept (a shrunk one before one that is not). A
finding no shard shrank (a shard cut short by --time, or shards run with --shrink-steps
0 --replay 0 so that nothing is shrunk twice) is named at the end; `stalemate explore
--shrink MERGED --out DIR [the shards' flags] -- CMD` shrinks those once.

Example:
  for i in 0 1 2; do stalemate explore --shard $i/3 --out out-$i --setup s.yaml -- ./ctl & done; wait
  stalemate explore merge out-0 out-1 out-2 --out merged")]
pub struct MergeArgs {
    /// The shards' output directories.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,

    /// Where the merged output goes (a new directory, or an earlier explore's output).
    #[arg(long, default_value = "stalemate-explore-merged", value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Takes explore's own flags and controller command, and prints (apply it with `kubectl
apply -f -`):
  ConfigMap NAME-input  the files explore reads (--setup, --oracles, an --actions file),
                        mounted at /etc/stalemate-explore in the pods; their paths on the
                        pods' command lines are rewritten to it
  Job NAME              completionMode Indexed, --shards completions, --parallelism pods
                        at a time, one retry per shard (backoffLimitPerIndex: 1), no
                        service account token (each pod runs its own control plane); pod
                        I runs `stalemate explore --envtest ASSETS --shard I/N
                        --archive-to-stdout [your flags] -- CMD`

Not for the pods, and refused: --upstream-kubeconfig, --context and --reset (each pod
explores on its own control plane), --out (give it to `explore gather`), --shard and
--archive-to-stdout (the Job sets them), --actions-list; --envtest takes no directory
(the image's, --assets).

The image: build the Dockerfile's `explore` target (stalemate, a shell, kubectl, etcd and
kube-apiserver at the pinned versions in /opt/stalemate/kube) and add your controller in
an image FROM it; CMD and anything your --workload runs must be in the image. The pod's
output leaves it through its log (the archive printed at its end, under 8 MiB so that
kubelet's 10 MiB log rotation keeps it); `explore gather NAME` reads it. The Job sets no
deadline (no activeDeadlineSeconds): a pod runs until its shard is done, and the wait's
--timeout below is only how long you wait for it.

Example:
  stalemate explore job --shards 8 --parallelism 4 --image reg/ctl-explore:1 \\
      --setup config/crd.yaml config/sample.yaml --budget 40 -- /manager | kubectl apply -f -
  kubectl wait --for=condition=complete job/stalemate-explore --timeout=3h
  stalemate explore gather stalemate-explore --out results")]
pub struct JobArgs {
    /// How many shards (the Job's completions): pod I runs `--shard I/N`.
    #[arg(long, value_name = "N")]
    pub shards: usize,

    /// How many pods run at once (default: all of them).
    #[arg(long, value_name = "P")]
    pub parallelism: Option<usize>,

    /// The image the pods run: FROM the Dockerfile's `explore` target, with your
    /// controller added.
    #[arg(long, value_name = "IMAGE")]
    pub image: String,

    /// The Job's name (the ConfigMap is NAME-input).
    #[arg(long, default_value = "stalemate-explore", value_name = "NAME")]
    pub name: String,

    /// The namespace to put them in (default: none written, kubectl's).
    #[arg(long, short = 'n', value_name = "NS")]
    pub namespace: Option<String>,

    /// Where the image holds etcd and kube-apiserver.
    #[arg(long, default_value = "/opt/stalemate/kube", value_name = "DIR")]
    pub assets: String,

    #[command(flatten)]
    pub explore: super::explore_flags::ExploreFlags,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Reads, for each shard of Job JOB, the log of its pod that succeeded (pods labelled
batch.kubernetes.io/job-name=JOB; the newest when a shard was retried), unpacks the
output its explore printed there into DIR/shard-I/, and merges them into DIR/merged/ (as
`explore merge` does). A shard without a succeeded pod is named, and the exit status is
2 once the others are merged. The log API is all it needs: `get` on jobs, `list` on pods
and `get` on pods/log in the namespace.

Without a cluster, give the logs as `kubectl logs` saves them:
  kubectl logs job/NAME --all-pods … or, for each pod: kubectl logs POD > shard-I.log
  stalemate explore gather --from-log shard-*.log --out results")]
pub struct GatherArgs {
    /// The Job `explore job` printed.
    #[arg(value_name = "JOB", required_unless_present = "from_log")]
    pub job: Option<String>,

    /// Saved pod logs instead of a cluster: each holds one shard's output.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with = "job")]
    pub from_log: Vec<PathBuf>,

    /// The kubeconfig (default: $KUBECONFIG or ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// Its context.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,

    /// The Job's namespace (default: the context's).
    #[arg(long, short = 'n', value_name = "NS")]
    pub namespace: Option<String>,

    /// Where each shard's output (DIR/shard-I/) and the merged one (DIR/merged/) go.
    #[arg(long, default_value = "stalemate-explore-gathered", value_name = "DIR")]
    pub out: PathBuf,
}

pub async fn run(verb: Verb, matches: Option<&ArgMatches>) -> Result<ExitCode> {
    match verb {
        Verb::Merge(a) => merged(&a.dirs, &a.out),
        Verb::Job(a) => {
            let m = matches
                .and_then(|m| m.subcommand_matches("job"))
                .context("explore job: its command line is not at hand")?;
            job_yaml(a, m)
        }
        Verb::Gather(a) => gather(a).await,
        Verb::Report(a) => super::explore_report::run(a),
    }
}

/// Merge `dirs` into `out`, say what came of it, and exit as explore does.
fn merged(dirs: &[PathBuf], out: &Path) -> Result<ExitCode> {
    let (summary, notes) = merge::run(dirs, out)?;
    for n in &notes {
        eprintln!("explore merge: note: {n}");
    }
    eprint!(
        "explore merge: {} outputs into {}\n{}",
        dirs.len(),
        out.display(),
        summary.terminal(out)
    );
    Ok(if summary.verdict == SummaryVerdict::Clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Flags `explore job` does not pass to its pods, and why.
const NOT_FOR_PODS: &[(&str, &str)] = &[
    (
        "upstream-kubeconfig",
        "each pod explores on a control plane of its own",
    ),
    ("context", "each pod explores on a control plane of its own"),
    ("reset", "each pod explores on a control plane of its own"),
    (
        "out",
        "the pods' output is in their logs: give --out to `explore gather`",
    ),
    ("shard", "the Job gives each pod its shard"),
    ("archive-to-stdout", "the pods always do"),
    ("actions-list", "it runs nothing"),
    (
        "shrink",
        "it shrinks an output's findings: run it on what `explore gather` merged",
    ),
];

/// `explore job`'s arguments as `given` reads them.
fn job_command() -> clap::Command {
    JobArgs::augment_args(clap::Command::new("job")).arg(
        clap::Arg::new("log_format")
            .long("log-format")
            .action(ArgAction::Set),
    )
}

/// The explore flags given to `explore job`, as they were given.
///
/// Read from `JobArgs`' own definition, not the whole command tree (`mod.rs`, which names
/// this file): the one flag the tree adds, the global `--log-format`, is the pods' too.
fn given(m: &ArgMatches) -> Result<Vec<job::Given>> {
    let cmd = job_command();
    let own = [
        "shards",
        "parallelism",
        "image",
        "name",
        "namespace",
        "assets",
        "cmd",
    ];
    let mut flags = Vec::new();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if own.contains(&id) || m.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        let Some(long) = arg.get_long() else { continue };
        let values: Vec<String> = m
            .get_raw(id)
            .into_iter()
            .flatten()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        if long == "envtest" {
            // The pods' control plane is the image's (--assets).
            if values.iter().any(|v| !v.is_empty()) {
                bail!(
                    "explore job: --envtest takes no directory here: the pods use the image's (--assets)"
                );
            }
            continue;
        }
        if let Some((_, why)) = NOT_FOR_PODS.iter().find(|(f, _)| *f == long) {
            bail!("explore job: --{long} is not for a Job's pods: {why}");
        }
        flags.push(job::Given {
            long: long.to_string(),
            switch: matches!(arg.get_action(), ArgAction::SetTrue),
            values,
        });
    }
    Ok(flags)
}

fn job_yaml(a: JobArgs, m: &ArgMatches) -> Result<ExitCode> {
    let spec = job::Spec {
        name: a.name,
        namespace: a.namespace,
        image: a.image,
        shards: a.shards,
        parallelism: a.parallelism.unwrap_or(a.shards),
        assets: a.assets,
        flags: given(m)?,
        cmd: a.explore.cmd,
    };
    let text = job::yaml(&spec)?;
    use std::io::Write;
    std::io::stdout()
        .write_all(text.as_bytes())
        .context("writing the YAML")?;
    Ok(ExitCode::SUCCESS)
}

/// `--archive-to-stdout`: the output in `out` to standard output (`pack.rs`).
pub fn print_archive(out: &Path) -> Result<()> {
    let path = out.join("summary.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("--archive-to-stdout: reading {}", path.display()))?;
    let summary: Summary = serde_json::from_str(&text)
        .with_context(|| format!("--archive-to-stdout: {}", path.display()))?;
    let (archive, left_out) = pack::pack(out, &summary, pack::LIMIT)?;
    if !left_out.is_empty() {
        eprintln!(
            "explore: the archive below leaves out {} files to stay under kubelet's log rotation (logs/archive-left-out.txt lists them)",
            left_out.len()
        );
    }
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(archive.as_bytes())
        .and_then(|()| stdout.flush())
        .context("--archive-to-stdout: writing standard output")
}

async fn gather(a: GatherArgs) -> Result<ExitCode> {
    let (logs, missing) = match &a.job {
        Some(job) => {
            super::explore_gather::pod_logs(
                job,
                a.kubeconfig.as_deref(),
                a.context.as_deref(),
                a.namespace.as_deref(),
            )
            .await?
        }
        None => {
            let mut logs = Vec::new();
            for f in &a.from_log {
                let text = std::fs::read_to_string(f)
                    .with_context(|| format!("--from-log {}", f.display()))?;
                logs.push((f.display().to_string(), text));
            }
            (logs, Vec::new())
        }
    };
    std::fs::create_dir_all(&a.out).with_context(|| format!("--out {}", a.out.display()))?;
    let mut dirs = Vec::new();
    for (name, log) in &logs {
        let dir = super::explore_gather::unpack_shard(name, log, &a.out)?;
        if dirs.contains(&dir) {
            bail!(
                "{name}: {} is given twice: give each shard's log once",
                dir.display()
            );
        }
        eprintln!("explore gather: {name} → {}", dir.display());
        dirs.push(dir);
    }
    if dirs.is_empty() {
        bail!("no shard to merge: {}", missing.join("; "));
    }
    let code = merged(&dirs, &a.out.join("merged"))?;
    if !missing.is_empty() {
        bail!(
            "merged what there was into {}, but: {}",
            a.out.join("merged").display(),
            missing.join("; ")
        );
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job_matches(args: &[&str]) -> ArgMatches {
        let argv = ["job", "--shards", "2", "--image", "i"]
            .iter()
            .chain(args)
            .chain(&["--", "ctl"]);
        job_command().try_get_matches_from(argv).unwrap()
    }

    /// The pods get the flags as they were given (defaults stay defaults), whatever
    /// their kind: several values, repeated, switches, values that look like flags.
    #[test]
    fn the_pods_get_the_flags_as_given() {
        let m = job_matches(&[
            "--setup",
            "a.yaml",
            "b.yaml",
            "--workload",
            "kubectl apply -f x",
            "--workload=--odd",
            "--budget",
            "3",
            "--envtest",
            "--controller",
            "helper=./helper",
        ]);
        let g = given(&m).unwrap();
        let flag = |long: &str| g.iter().find(|x| x.long == long).cloned();
        assert_eq!(flag("setup").unwrap().values, ["a.yaml", "b.yaml"]);
        assert_eq!(
            flag("workload").unwrap().values,
            ["kubectl apply -f x", "--odd"]
        );
        assert_eq!(flag("budget").unwrap().values, ["3"]);
        assert_eq!(flag("controller").unwrap().values, ["helper=./helper"]);
        assert!(flag("envtest").is_none(), "the Job gives its own");
        assert!(flag("quiet").is_none(), "a default is not given");
        assert!(flag("shards").is_none() && flag("image").is_none());
        let m = job_matches(&["--archive-to-stdout"]);
        let e = given(&m).unwrap_err().to_string();
        assert!(
            e.contains("--archive-to-stdout is not for a Job's pods"),
            "{e}"
        );
        let m = job_matches(&["--out", "x"]);
        assert!(
            given(&m)
                .unwrap_err()
                .to_string()
                .contains("explore gather")
        );
        let m = job_matches(&["--log-format", "json"]);
        let g = given(&m).unwrap();
        assert_eq!(g[0].long, "log-format");
        assert_eq!(g[0].values, ["json"]);
        let m = job_matches(&["--shrink", "merged"]);
        assert!(
            given(&m)
                .unwrap_err()
                .to_string()
                .contains("--shrink is not for a Job's pods")
        );
        let m = job_matches(&["--envtest", "/opt/k"]);
        assert!(given(&m).unwrap_err().to_string().contains("--assets"));
    }
}
