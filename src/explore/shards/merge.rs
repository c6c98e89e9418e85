//! `explore merge`: the outputs of several explores — the shards of one (`--shard I/N`)
//! — as one: one `summary.json` and `summary.html`, one list of findings.
//!
//! ```text
//!  DIR…/summary.json ─► checked: same schema, controller, seed, shard count; no shard twice
//!  findings with the same signatures ─► one; its reproducer the best of theirs
//!  trials ─► concatenated, renumbered (shard 0's first); their files copied and renamed
//!  counts summed, seconds the longest shard's, the verdict recomputed
//! ```
//!
//! Each shard shrinks and replays its own findings before it ends, so a merge needs no
//! controller and runs nothing: it only chooses among reproducers that are already as
//! small as their shard could make them. What no shard shrank (`Finding::shrunk`) it
//! names; `explore --shrink` (`reshrink.rs`) shrinks that once, where the controller is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::explore::output::{Out, SCHEMA, Summary, SummaryVerdict};
use crate::explore::record::{Finding, Trial};

/// One explore's output, read back.
#[derive(Debug, Clone)]
pub struct Input {
    pub dir: PathBuf,
    pub summary: Summary,
    /// How much fault each finding's reproducer injects, in the summary's order.
    pub weights: Vec<Weight>,
}

/// How simple a reproducer is; the smallest is the best. Ordered field by field: one
/// that came back when replayed before a flaky one, then one its shard shrank before
/// one it did not (`Finding::shrunk`: no shrinking is needed after the merge), then
/// fewer windows, then less time under a fault in all (window durations summed; a
/// restart counts 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Weight {
    pub flaky: bool,
    pub unshrunk: bool,
    pub windows: usize,
    pub millis: u128,
}

impl Input {
    /// Read `DIR/summary.json` and each finding's reproducer schedule.
    pub fn read(dir: &Path) -> Result<Input> {
        let path = dir.join("summary.json");
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "{}: no summary.json — not an explore's output, or one that failed before it wrote one",
                dir.display()
            )
        })?;
        let mut de = serde_json::Deserializer::from_str(&text);
        let summary: Summary = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            anyhow::anyhow!(
                "{}: not an explore summary: {}: {}",
                path.display(),
                e.path(),
                e.inner()
            )
        })?;
        if summary.schema != SCHEMA {
            bail!(
                "{}: schema {:?}; this stalemate merges {SCHEMA:?}",
                path.display(),
                summary.schema
            );
        }
        let weights = summary
            .findings
            .iter()
            .map(|f| weight(dir, f))
            .collect::<Result<_>>()?;
        Ok(Input {
            dir: dir.to_path_buf(),
            summary,
            weights,
        })
    }

    /// What the merged output calls it.
    fn label(&self, position: usize) -> String {
        match &self.summary.shard {
            Some(s) => format!("shard {}/{}", s.index, s.count),
            None => format!("input {position}"),
        }
    }

    /// The prefix its files other than trials' get in the merged output.
    fn prefix(&self, position: usize) -> String {
        match &self.summary.shard {
            Some(s) => format!("shard{}-", s.index),
            None => format!("input{position}-"),
        }
    }
}

/// A finding's weight, from its reproducer schedule.
fn weight(dir: &Path, f: &Finding) -> Result<Weight> {
    let path = dir.join(&f.schedule_file);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("finding #{} of {}: its reproducer", f.number, dir.display()))?;
    let schedule: crate::schedule::Schedule = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a schedule", path.display()))?;
    Ok(Weight {
        flaky: f.replayed.is_some_and(|r| r.flaky()),
        unshrunk: !f.shrunk,
        windows: schedule.windows.len(),
        millis: schedule
            .windows
            .iter()
            .filter_map(|w| w.duration.map(|d| d.0.as_millis()))
            .sum(),
    })
}

/// The merged summary, and the files to copy into it: (from, to relative to the output).
#[derive(Debug)]
pub struct Merged {
    pub summary: Summary,
    pub copies: Vec<(PathBuf, String)>,
    /// What the user should know (shards missing, plan lists that differ).
    pub notes: Vec<String>,
}

/// Check the inputs belong together, in shard order.
fn check(inputs: &mut [Input]) -> Result<Vec<String>> {
    if inputs.is_empty() {
        bail!("nothing to merge: give the output directories of the shards");
    }
    inputs.sort_by_key(|i| i.summary.shard.as_ref().map(|s| s.index));
    let first = inputs[0].summary.clone();
    let mut notes = Vec::new();
    for i in inputs.iter().skip(1) {
        let s = &i.summary;
        if s.controller != first.controller {
            bail!(
                "{} explored {:?} but {} explored {:?}: not shards of one explore",
                i.dir.display(),
                s.controller,
                inputs[0].dir.display(),
                first.controller
            );
        }
        match (&s.shard, &first.shard) {
            (Some(a), Some(b)) if a.count != b.count || a.seed != b.seed => bail!(
                "{} is shard {}/{} with --seed {} but {} is shard {}/{} with --seed {}: not shards of one explore",
                i.dir.display(),
                a.index,
                a.count,
                a.seed,
                inputs[0].dir.display(),
                b.index,
                b.count,
                b.seed
            ),
            (Some(a), Some(b)) if a.plan_digest != b.plan_digest => notes.push(format!(
                "shards {} and {} made different plan lists ({} and {} plans: their reference runs differed), so a few plans may have run in both or in neither",
                b.index, a.index, b.plans, a.plans
            )),
            _ => {}
        }
    }
    let indexes: Vec<usize> = inputs
        .iter()
        .filter_map(|i| i.summary.shard.as_ref().map(|s| s.index))
        .collect();
    for w in indexes.windows(2) {
        if w[0] == w[1] {
            bail!(
                "shard {} is given twice: give each shard's output once",
                w[0]
            );
        }
    }
    if let Some(s) = &first.shard {
        let missing: Vec<String> = (0..s.count)
            .filter(|i| !indexes.contains(i))
            .map(|i| i.to_string())
            .collect();
        if !missing.is_empty() {
            notes.push(format!(
                "shard{} {} of {} missing: {} plans were not tried",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", "),
                s.count,
                if missing.len() == 1 { "its" } else { "their" }
            ));
        }
    }
    Ok(notes)
}

/// A path relative to an output with its leading `OLD` name part replaced: `trials/
/// trial-007.trace.jsonl` with `trial-007` → `trial-012`.
fn rename(path: &str, old: &str, new: &str) -> String {
    match path.rsplit_once('/') {
        Some((dir, name)) if name.starts_with(old) => {
            format!("{dir}/{new}{}", &name[old.len()..])
        }
        _ => path.to_string(),
    }
}

/// Prefix a file's name (not its directory).
fn prefixed(path: &str, prefix: &str) -> String {
    match path.rsplit_once('/') {
        Some((dir, name)) => format!("{dir}/{prefix}{name}"),
        None => format!("{prefix}{path}"),
    }
}

/// Merge the inputs' summaries (`out`: where the merged output goes, for the
/// reproducers' `--schedule`).
pub fn merge(mut inputs: Vec<Input>, out: &Path) -> Result<Merged> {
    let mut notes = check(&mut inputs)?;
    let mut copies = Vec::new();
    let (mut trials, ids) = concat_trials(&inputs, &mut copies);
    let (findings, numbers) = merge_findings(&inputs, &ids, out, &mut copies);
    notes.extend(unshrunk_note(&findings, out));
    // A trial shrinking a finding names the merged finding.
    let mut k = 0;
    for (n, input) in inputs.iter().enumerate() {
        for _ in &input.summary.trials {
            if let Some(f) = trials[k].shrinking {
                trials[k].shrinking = numbers.get(&(n, f)).copied();
            }
            k += 1;
        }
    }
    let mut s = inputs[0].summary.clone();
    s.shard = None;
    s.merged = inputs
        .iter()
        .enumerate()
        .map(|(n, i)| format!("{}: {}", i.label(n), i.dir.display()))
        .collect();
    s.seconds = inputs.iter().map(|i| i.summary.seconds).fold(0.0, f64::max);
    s.reference_seconds = inputs
        .iter()
        .map(|i| i.summary.reference_seconds)
        .fold(0.0, f64::max);
    s.trials_run = inputs.iter().map(|i| i.summary.trials_run).sum();
    s.not_exercised = inputs.iter().map(|i| i.summary.not_exercised).sum();
    // The shards ran side by side: what they did together in the time the longest took.
    s.trials_per_minute = crate::explore::output::per_minute(s.trials_run, s.seconds);
    s.first_finding_seconds = crate::explore::output::first_seen(&findings);
    fault_free(&mut s, &inputs, &mut copies);
    s.focus = {
        let all: std::collections::BTreeSet<String> = inputs
            .iter()
            .flat_map(|i| i.summary.focus.iter().cloned())
            .collect();
        all.into_iter().collect()
    };
    s.sequences = sequences(&inputs);
    s.findings = findings;
    s.trials = trials;
    s.verdict = if !s.findings.is_empty() {
        SummaryVerdict::Findings
    } else if !s.without_faults.is_empty() {
        SummaryVerdict::FailsWithoutFaults
    } else {
        SummaryVerdict::Clean
    };
    Ok(Merged {
        summary: s,
        copies,
        notes,
    })
}

/// The findings no input shrank, and how to shrink them once.
fn unshrunk_note(findings: &[Finding], out: &Path) -> Option<String> {
    let numbers: Vec<String> = findings
        .iter()
        .filter(|f| !f.shrunk)
        .map(|f| format!("#{}", f.number))
        .collect();
    if numbers.is_empty() {
        return None;
    }
    Some(format!(
        "finding{} {} {} not shrunk by any shard (cut short by --time, or --shrink-steps 0): `stalemate explore --shrink {} --out DIR [the shards' flags] -- CMD` shrinks {} once",
        if numbers.len() == 1 { "" } else { "s" },
        numbers.join(", "),
        if numbers.len() == 1 { "was" } else { "were" },
        out.display(),
        if numbers.len() == 1 { "it" } else { "them" },
    ))
}

/// Every input's trials, in input order, renumbered from 1, their files to be copied
/// under their new names; and per input, its trial ids → the merged ones.
fn concat_trials(
    inputs: &[Input],
    copies: &mut Vec<(PathBuf, String)>,
) -> (Vec<Trial>, Vec<BTreeMap<usize, usize>>) {
    let mut trials: Vec<Trial> = Vec::new();
    let mut ids: Vec<BTreeMap<usize, usize>> = Vec::new();
    for input in inputs {
        let mut map = BTreeMap::new();
        for t in &input.summary.trials {
            let new = trials.len() + 1;
            map.insert(t.id, new);
            let mut t = t.clone();
            let (old, name) = (format!("trial-{:03}", t.id), format!("trial-{new:03}"));
            t.files = t
                .files
                .iter()
                .map(|f| {
                    let to = rename(f, &old, &name);
                    copies.push((input.dir.join(f), to.clone()));
                    to
                })
                .collect();
            t.id = new;
            trials.push(t);
        }
        ids.push(map);
    }
    (trials, ids)
}

/// One finding per set of signatures, its reproducer the best (`Weight`) of the inputs'
/// and its trials all of theirs. Returns them, numbered in the order first seen, and
/// (input, its finding number) → the merged number.
fn merge_findings(
    inputs: &[Input],
    ids: &[BTreeMap<usize, usize>],
    out: &Path,
    copies: &mut Vec<(PathBuf, String)>,
) -> (Vec<Finding>, BTreeMap<(usize, usize), usize>) {
    // signatures → (input, index in its findings) of each that has them.
    type Members = Vec<(usize, usize)>;
    let mut groups: Vec<(Vec<String>, Members)> = Vec::new();
    for (n, input) in inputs.iter().enumerate() {
        for (k, f) in input.summary.findings.iter().enumerate() {
            match groups.iter_mut().find(|(s, _)| *s == f.signatures) {
                Some((_, members)) => members.push((n, k)),
                None => groups.push((f.signatures.clone(), vec![(n, k)])),
            }
        }
    }
    let first_seen = |m: &[(usize, usize)]| {
        m.iter()
            .map(|&(n, k)| inputs[n].summary.findings[k].first_seen)
            .fold(f64::MAX, f64::min)
    };
    groups.sort_by(|a, b| first_seen(&a.1).total_cmp(&first_seen(&b.1)));
    let mut numbers = BTreeMap::new();
    let mut findings = Vec::new();
    for (i, (_, members)) in groups.iter().enumerate() {
        let number = i + 1;
        let &(bn, bk) = members
            .iter()
            .min_by_key(|&&(n, k)| (inputs[n].weights.get(k).copied(), n))
            .unwrap_or(&members[0]);
        let best = &inputs[bn].summary.findings[bk];
        let mut f = best.clone();
        let (old, new) = (format!("{:02}-", best.number), format!("{number:02}-"));
        f.number = number;
        f.files = best
            .files
            .iter()
            .map(|p| {
                let to = rename(p, &old, &new);
                copies.push((inputs[bn].dir.join(p), to.clone()));
                to
            })
            .collect();
        f.schedule_file = rename(&best.schedule_file, &old, &new);
        // Run again from where the merged output keeps the reproducer.
        if let Some(at) = f.reproduce.iter().position(|a| a == "--schedule")
            && let Some(arg) = f.reproduce.get_mut(at + 1)
        {
            *arg = out.join(&f.schedule_file).display().to_string();
        }
        f.trial = ids[bn].get(&best.trial).copied().unwrap_or(0);
        let mut all: Vec<usize> = members
            .iter()
            .flat_map(|&(n, k)| {
                let ts = &inputs[n].summary.findings[k].trials;
                ts.iter().filter_map(move |t| ids[n].get(t).copied())
            })
            .collect();
        all.sort_unstable();
        all.dedup();
        f.trials = all;
        f.first_seen = first_seen(members);
        for &(n, k) in members {
            numbers.insert((n, inputs[n].summary.findings[k].number), number);
        }
        findings.push(f);
    }
    (findings, numbers)
}

/// What the references showed with no fault: each thing once, with every input's files.
fn fault_free(s: &mut Summary, inputs: &[Input], copies: &mut Vec<(PathBuf, String)>) {
    s.without_faults.clear();
    s.advisories.clear();
    s.reference_files.clear();
    for (n, input) in inputs.iter().enumerate() {
        for f in &input.summary.without_faults {
            if !s.without_faults.iter().any(|x| x.signature == f.signature) {
                s.without_faults.push(f.clone());
            }
        }
        for f in &input.summary.advisories {
            if !s.advisories.iter().any(|x| x.signature == f.signature) {
                s.advisories.push(f.clone());
            }
        }
        for p in &input.summary.reference_files {
            let to = prefixed(p, &input.prefix(n));
            copies.push((input.dir.join(p), to.clone()));
            s.reference_files.push(to);
        }
    }
}

/// The sequences of user actions: each shard searched its share of each.
fn sequences(inputs: &[Input]) -> Vec<crate::explore::record::Row> {
    let mut rows: Vec<crate::explore::record::Row> = Vec::new();
    for r in inputs.iter().flat_map(|i| &i.summary.sequences) {
        match rows.iter_mut().find(|x| x.number == r.number) {
            None => rows.push(r.clone()),
            Some(x) => {
                x.trials += r.trials;
                if x.status != "searched" && r.status != "not reached" {
                    x.status = r.status.clone();
                }
                for e in &r.expected {
                    if !x.expected.contains(e) {
                        x.expected.push(e.clone());
                    }
                }
            }
        }
    }
    rows.sort_by_key(|r| r.number);
    rows
}

/// Read the outputs in `dirs`, merge them into `out` (a new directory, or an earlier
/// explore's output) and return the merged summary with what the user should know.
pub fn run(dirs: &[PathBuf], out: &Path) -> Result<(Summary, Vec<String>)> {
    let inputs = dirs
        .iter()
        .map(|d| Input::read(d))
        .collect::<Result<Vec<_>>>()?;
    for d in dirs {
        if same_dir(d, out) {
            bail!(
                "--out {} is one of the outputs to merge: give another directory",
                out.display()
            );
        }
    }
    let o = Out::create(out)?;
    let abs = std::fs::canonicalize(out).unwrap_or_else(|_| out.to_path_buf());
    let merged = merge(inputs, &abs)?;
    for (from, to) in &merged.copies {
        // A file a shard's archive left out (explore job: the log's size) is listed
        // still, but cannot be copied.
        if from.is_file() {
            std::fs::copy(from, out.join(to))
                .with_context(|| format!("copying {} to {to}", from.display()))?;
        }
    }
    o.write_summary(&merged.summary)?;
    Ok((merged.summary, merged.notes))
}

pub(crate) fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
