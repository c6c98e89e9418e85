//! What `explore` leaves in `--out`: a reproducer schedule per finding with the trace,
//! reports and controller output of the trial that shows it, `summary.json` and a
//! self-contained `summary.html` (findings first, then every trial).
//!
//! ```text
//!  DIR/summary.json  DIR/summary.html
//!  DIR/findings/01-<slug>.json            reproducer: stalemate run --schedule it
//!  DIR/findings/01-<slug>.trace.jsonl     .report.json .report.html .controller.log
//!  DIR/trials/trial-007.*                 every failing trial's trace and reports
//!  DIR/logs/trial-007.log                 every run's controller (and workload) output
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::config::{Config, windows_span};
use super::judge::Found;
use super::record::{Finding, Trial};
use super::shell::shell_line;
use crate::oracle::OracleName;
use crate::report::html::esc;
use crate::session::Outcome;

pub const SCHEMA: &str = "stalemate.explore/v1";

/// The output directory.
#[derive(Debug, Clone)]
pub struct Out {
    pub root: PathBuf,
    /// Per-run scratch space (kubeconfigs), outside the output: removed when done.
    scratch: PathBuf,
}

impl Out {
    /// Make the directory; what an earlier explore left in it is replaced. A directory
    /// with anything else in it is not explore's: refused, so a mistyped `--out .` never
    /// deletes anyone's `logs/`.
    pub fn create(root: &Path) -> Result<Out> {
        const OURS: [&str; 5] = ["findings", "trials", "logs", "summary.json", "summary.html"];
        if let Ok(entries) = std::fs::read_dir(root) {
            for e in entries.flatten() {
                let name = e.file_name();
                if !OURS.iter().any(|o| name == *o) {
                    anyhow::bail!(
                        "--out {}: it holds {:?}, so it is not an earlier explore's output; give a new or empty directory",
                        root.display(),
                        name
                    );
                }
            }
        }
        for sub in ["findings", "trials", "logs"] {
            let d = root.join(sub);
            if d.exists() {
                std::fs::remove_dir_all(&d)
                    .with_context(|| format!("--out: clearing {}", d.display()))?;
            }
            std::fs::create_dir_all(&d)
                .with_context(|| format!("--out: creating {}", d.display()))?;
        }
        let scratch =
            std::env::temp_dir().join(format!("stalemate-explore-{}", uuid::Uuid::new_v4()));
        Ok(Out {
            root: root.to_path_buf(),
            scratch,
        })
    }

    /// A private directory for one run.
    pub fn scratch(&self, id: &str) -> Result<PathBuf> {
        let d = self.scratch.join(id);
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        Ok(d)
    }

    fn write(&self, rel: &str, bytes: &[u8]) -> Result<String> {
        let p = self.root.join(rel);
        std::fs::write(&p, bytes).with_context(|| format!("writing {}", p.display()))?;
        Ok(rel.to_string())
    }

    /// A run's trace and reports, as `trials/NAME.*`.
    pub fn write_run(&self, name: &str, o: &Outcome) -> Result<Vec<String>> {
        let trace: String = o.trace.iter().map(|s| s.line()).collect();
        Ok(vec![
            self.write(&format!("trials/{name}.trace.jsonl"), trace.as_bytes())?,
            self.write(
                &format!("trials/{name}.report.json"),
                (serde_json::to_string_pretty(&o.report)? + "\n").as_bytes(),
            )?,
            self.write(
                &format!("trials/{name}.report.html"),
                crate::report::html::render(&o.report).as_bytes(),
            )?,
        ])
    }

    /// Each finding's reproducer schedule and its trial's files under `findings/`.
    pub(super) fn write_findings(
        &self,
        cfg: &Config,
        setup_written: bool,
        mut findings: Vec<Finding>,
        trials: &[Trial],
        max_run: std::time::Duration,
        advisories: &[Found],
    ) -> Result<Vec<Finding>> {
        for f in &mut findings {
            let Some(t) = trials.iter().find(|t| t.id == f.trial) else {
                continue;
            };
            let stem = format!("findings/{:02}-{}", f.number, t.slug);
            // What the references showed for what it found: `run` judges it alone.
            let mut reproducer = t.schedule.clone();
            let expected = super::judge::expected(&f.found);
            if let Some(e) = &expected {
                reproducer
                    .oracles
                    .get_or_insert_with(Default::default)
                    .expected = Some(e.clone());
            }
            without_advisories(&mut reproducer, advisories);
            let schedule = serde_json::to_string_pretty(&reproducer)? + "\n";
            f.schedule_file = self.write(&format!("{stem}.json"), schedule.as_bytes())?;
            let mut files = vec![f.schedule_file.clone()];
            for src in &t.files {
                let from = self.root.join(src);
                let suffix = if let Some(log) = src.strip_prefix("logs/") {
                    // `trial-007.log` is the controller's; `trial-007.NAME.log` the
                    // workload's or another controller's.
                    match log.split_once('.').map(|(_, rest)| rest) {
                        Some(rest) if rest != "log" => rest.to_string(),
                        _ => "controller.log".to_string(),
                    }
                } else {
                    src.rsplit_once('/')
                        .map(|(_, n)| n)
                        .unwrap_or(src)
                        .split_once('.')
                        .map(|(_, ext)| ext.to_string())
                        .unwrap_or_default()
                };
                let to = format!("{stem}.{suffix}");
                if std::fs::copy(&from, self.root.join(&to)).is_ok() {
                    files.push(to);
                }
            }
            f.files = files;
            f.workload = t.workload.clone();
            f.reproduce = reproduce(
                cfg,
                &t.workload,
                super::config::waits_for_a_write(&t.workload, setup_written),
                &self.root.join(&f.schedule_file),
                t.quiet,
                max_run + windows_span(&reproducer),
            );
            f.run_exits_1 = expected.is_some()
                || f.found.iter().any(|x| {
                    [
                        OracleName::Convergence,
                        OracleName::ReadinessRace,
                        OracleName::HotLoop,
                        OracleName::Conflicts,
                    ]
                    .iter()
                    .any(|o| x.oracle == o.as_str())
                });
        }
        Ok(findings)
    }

    pub fn write_summary(&self, s: &Summary) -> Result<()> {
        self.write(
            "summary.json",
            (serde_json::to_string_pretty(s)? + "\n").as_bytes(),
        )?;
        self.write("summary.html", html(s).as_bytes())?;
        Ok(())
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// `stalemate run …` that runs a finding's schedule as explore ran its trials (judged
/// after `quiet`, cut after `max_run`).
pub fn reproduce(
    cfg: &Config,
    workload: &[String],
    after_write: bool,
    schedule: &Path,
    quiet: std::time::Duration,
    max_run: std::time::Duration,
) -> Vec<String> {
    // Absolute, but symlinks kept: a ConfigMap mounted in a pod (`explore job`) is a
    // symlink into the kubelet's timestamped `..2026_…` directory, which the next update
    // of the ConfigMap removes; the name the user gave stays right.
    let abs = |p: &Path| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    };
    let mut argv = vec![super::invoked::stalemate(), "run".into()];
    argv.extend(cfg.upstream.run_flags());
    if !cfg.setup_paths.is_empty() {
        argv.push("--setup".into());
        argv.extend(cfg.setup_paths.iter().map(|p| abs(p)));
    }
    for w in workload {
        argv.extend(["--workload".into(), w.clone()]);
    }
    if after_write {
        argv.push("--workload-after-write".into());
    }
    if cfg.start_timeout != crate::session::Options::DEFAULT_START_TIMEOUT {
        argv.extend([
            "--start-timeout".into(),
            format!("{}ms", cfg.start_timeout.as_millis()),
        ]);
    }
    if let Some(u) = &cfg.idle_url {
        argv.extend(["--idle-url".into(), u.clone()]);
    }
    for c in &cfg.others {
        argv.extend(["--controller".into(), format!("{}={}", c.name, c.command)]);
    }
    // Restarted after an exit as the trial's controller was.
    argv.extend(["--restart-policy".into(), "always".into()]);
    let kubelet = crate::process::CrashPolicy::KUBELET;
    if cfg.crash_policy.backoff != kubelet.backoff {
        argv.extend([
            "--crash-backoff".into(),
            format!("{}ms", cfg.crash_policy.backoff.as_millis()),
        ]);
    }
    if cfg.crash_policy.max_backoff != kubelet.max_backoff {
        argv.extend([
            "--crash-backoff-max".into(),
            format!("{}ms", cfg.crash_policy.max_backoff.as_millis()),
        ]);
    }
    argv.extend([
        "--quiet".into(),
        format!("{}ms", quiet.as_millis()),
        "--max-run".into(),
        format!("{}ms", max_run.as_millis()),
        "--schedule".into(),
        abs(schedule),
        "--".into(),
    ]);
    argv.extend(cfg.controller.iter().cloned());
    argv
}

/// What an explore (or a merge of its shards) came to, as `summary.json` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SummaryVerdict {
    /// No finding, and nothing wrong without faults.
    Clean,
    /// At least one finding.
    Findings,
    /// No finding, but the controller fails a fault-free reference run: the trials'
    /// failures say nothing about staleness.
    FailsWithoutFaults,
}

impl SummaryVerdict {
    /// The summary's spelling, also the HTML report's heading.
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryVerdict::Clean => "clean",
            SummaryVerdict::Findings => "findings",
            SummaryVerdict::FailsWithoutFaults => "fails-without-faults",
        }
    }
}

/// `summary.json` (read back by `explore merge`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub schema: String,
    pub verdict: SummaryVerdict,
    pub controller: Vec<String>,
    pub setup: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workload: Vec<String>,
    /// sim | envtest | cluster
    pub upstream: String,
    /// Its `--seed` (what `explore --shrink` checks it is given again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// This explore's share of the plans (`--shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<super::shard::Record>,
    /// The outputs `explore merge` made this one of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<String>,
    pub seconds: f64,
    /// How long a fault-free run took to go quiet.
    pub reference_seconds: f64,
    pub trials_run: usize,
    /// Trials whose faults never reached the controller (no window opened): they say
    /// nothing about it, pass or not (`effect.rs`).
    pub not_exercised: usize,
    pub trials_per_minute: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_finding_seconds: Option<f64>,
    pub findings: Vec<Finding>,
    /// Without faults: what the oracles found in a reference run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub without_faults: Vec<Found>,
    /// What the references showed about the setup's resources rather than the
    /// controller (the readiness race): reported, not a finding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advisories: Vec<Found>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_files: Vec<String>,
    /// The resources plans were ranked by (`focus.rs`), and how many plans each rank
    /// held (on it, near it, elsewhere).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub focus: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plans_by_rank: Option<[usize; 3]>,
    /// The user's action sequences (`--actions`) and what became of each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sequences: Vec<super::record::Row>,
    pub trials: Vec<Trial>,
}

impl Summary {
    fn base(cfg: &Config, seconds: f64) -> Summary {
        Summary {
            schema: SCHEMA.into(),
            verdict: SummaryVerdict::Clean,
            controller: cfg.controller.clone(),
            setup: cfg
                .setup_paths
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            workload: cfg.workload.clone(),
            upstream: cfg.upstream.name().into(),
            seed: Some(cfg.seed),
            shard: cfg.shard.map(|s| super::shard::Record::new(s, cfg.seed)),
            merged: vec![],
            seconds,
            reference_seconds: 0.0,
            trials_run: 0,
            not_exercised: 0,
            trials_per_minute: 0.0,
            first_finding_seconds: None,
            findings: vec![],
            without_faults: vec![],
            advisories: vec![],
            reference_files: vec![],
            focus: vec![],
            plans_by_rank: None,
            sequences: vec![],
            trials: vec![],
        }
    }

    pub fn new(
        cfg: &Config,
        findings: &[Finding],
        trials: &[Trial],
        seconds: f64,
        reference_seconds: f64,
    ) -> Summary {
        let mut s = Summary::base(cfg, seconds);
        s.verdict = if findings.is_empty() {
            SummaryVerdict::Clean
        } else {
            SummaryVerdict::Findings
        };
        s.reference_seconds = reference_seconds;
        s.trials_run = trials.len();
        s.not_exercised = trials
            .iter()
            .filter(|t| t.effect.as_ref().is_some_and(|e| !e.exercised()))
            .count();
        s.trials_per_minute = per_minute(trials.len(), seconds);
        s.first_finding_seconds = first_seen(findings);
        s.findings = findings.to_vec();
        s.trials = trials.to_vec();
        s
    }

    pub fn fails_without_faults(
        cfg: &Config,
        found: Vec<Found>,
        files: Vec<String>,
        seconds: f64,
    ) -> Summary {
        let mut s = Summary::base(cfg, seconds);
        s.verdict = SummaryVerdict::FailsWithoutFaults;
        s.without_faults = found;
        s.reference_files = files;
        s
    }

    /// What the references showed with no fault, beside the trials' findings: the
    /// verdict says `fails-without-faults` when that is all there is.
    pub fn fault_free(&mut self, found: &[Found], files: &[String]) {
        self.without_faults = found.to_vec();
        self.reference_files = files.to_vec();
        if self.findings.is_empty() && !found.is_empty() {
            self.verdict = SummaryVerdict::FailsWithoutFaults;
        }
    }

    /// `, 2 not exercised` when some trials' windows never opened.
    fn not_exercised_note(&self) -> String {
        match self.not_exercised {
            0 => String::new(),
            n => format!(
                ", {n} not exercised: {} window never opened",
                if n == 1 { "its" } else { "their" }
            ),
        }
    }

    /// What the terminal gets at the end.
    pub fn terminal(&self, out: &Path) -> String {
        let mut t = String::new();
        t.push_str(&format!(
            "explore: {} trials in {:.0}s ({:.1}/min{}); {} finding{}\n",
            self.trials_run,
            self.seconds,
            self.trials_per_minute,
            self.not_exercised_note(),
            self.findings.len(),
            if self.findings.len() == 1 { "" } else { "s" }
        ));
        if !self.without_faults.is_empty() {
            t.push_str(&format!(
                "\nwithout any fault ({} in the trials is not called a finding):\n",
                if self.without_faults.len() == 1 {
                    "the same"
                } else {
                    "each of these"
                }
            ));
            for f in &self.without_faults {
                t.push_str(&format!("   {}: {}\n", f.oracle, f.message));
            }
        }
        if !self.advisories.is_empty() {
            t.push_str("\nabout the setup's resources (not findings):\n");
            for f in &self.advisories {
                t.push_str(&format!("   {}: {} {}\n", f.oracle, f.resource, f.message));
            }
        }
        for f in &self.findings {
            t.push_str(&format!(
                "\n#{} {}\n{}   found by: {}\n   oracles: {}\n   reproducer: {}\n   run it: {}\n",
                f.number,
                f.title,
                f.actions
                    .as_ref()
                    .map(|a| format!("   after: {a}\n"))
                    .unwrap_or_default(),
                f.plan,
                f.found
                    .iter()
                    .map(|x| x.oracle.as_str())
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect::<Vec<_>>()
                    .join(", "),
                out.join(&f.schedule_file).display(),
                shell_line(&f.reproduce),
            ));
            for x in f.found.iter().skip(1).take(4) {
                t.push_str(&format!("   also: {}\n", x.message));
            }
            if let Some(r) = &f.replayed {
                t.push_str(&format!(
                    "   replayed: {}{}\n",
                    r.describe(),
                    if r.flaky() { " (flaky)" } else { "" }
                ));
            }
            if !f.shrunk {
                t.push_str("   not shrunk (--shrink-steps 0, or cut short): `explore --shrink` shrinks it\n");
            }
        }
        t.push_str(&format!(
            "\nsummary: {}\n",
            out.join("summary.html").display()
        ));
        t
    }
}

/// `summary.html`: one file, no scripts.
pub fn html(s: &Summary) -> String {
    let mut h = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>stalemate explore</title><style>\
body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}\
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}\
.fail{color:#b00}.pass{color:#070}.error{color:#a60}code{font-size:12px}section{margin-bottom:2em}\
</style></head><body>",
    );
    h.push_str(&format!(
        "<h1>stalemate explore: {}</h1><p><code>{}</code> — {} trials in {:.0}s ({:.1}/min{}){}</p>",
        esc(s.verdict.as_str()),
        esc(&s.controller.join(" ")),
        s.trials_run,
        s.seconds,
        s.trials_per_minute,
        esc(&s.not_exercised_note()),
        s.first_finding_seconds
            .map(|f| format!("; first finding after {f:.0}s"))
            .unwrap_or_default()
    ));
    if !s.without_faults.is_empty() {
        h.push_str("<section><h2 class=\"fail\">Fails without any fault</h2><ul>");
        for f in &s.without_faults {
            h.push_str(&format!("<li>{}: {}</li>", esc(&f.oracle), esc(&f.message)));
        }
        h.push_str("</ul></section>");
    }
    if !s.advisories.is_empty() {
        h.push_str("<section><h2>About the setup's resources (not findings)</h2><ul>");
        for f in &s.advisories {
            h.push_str(&format!(
                "<li>{}: {} {}</li>",
                esc(&f.oracle),
                esc(&f.resource),
                esc(&f.message)
            ));
        }
        h.push_str("</ul></section>");
    }
    h.push_str("<section><h2>Findings</h2>");
    if s.findings.is_empty() && s.without_faults.is_empty() {
        h.push_str("<p class=\"pass\">None: every trial ended as the fault-free runs did.</p>");
    }
    for f in &s.findings {
        h.push_str(&finding_html(f));
    }
    h.push_str(&sequences_table(s));
    h.push_str("</section><section><h2>Trials</h2><table><tr><th>#</th><th>actions</th><th>plan</th><th>verdict</th><th>seconds</th><th>what</th></tr>");
    for t in &s.trials {
        h.push_str(&trial_row(t));
    }
    h.push_str("</table></section></body></html>\n");
    h
}

/// A finding's heading, what it found, how to reproduce it and its files.
fn finding_html(f: &Finding) -> String {
    let mut h = String::new();
    h.push_str(&format!(
        "<h3 class=\"fail\">#{} {}</h3>{}<p>Found by: {} (trial {}; {} failing trial{})</p><ul>",
        f.number,
        esc(&f.title),
        f.actions
            .as_ref()
            .map(|a| format!("<p>After the user's actions: {}</p>", esc(a)))
            .unwrap_or_default(),
        esc(&f.plan),
        f.trial,
        f.trials.len(),
        if f.trials.len() == 1 { "" } else { "s" }
    ));
    for x in &f.found {
        h.push_str(&format!(
            "<li><b>{}</b> {}</li>",
            esc(&x.oracle),
            esc(&x.message)
        ));
    }
    h.push_str(&format!(
        "</ul><p>Reproduce: <code>{}</code></p><p>Files: {}</p>",
        esc(&f.reproduce.join(" ")),
        f.files
            .iter()
            .map(|p| format!("<a href=\"{0}\">{0}</a>", esc(p)))
            .collect::<Vec<_>>()
            .join(" · ")
    ));
    h
}

/// The user's action sequences and what became of each (empty: none were given).
fn sequences_table(s: &Summary) -> String {
    let mut h = String::new();
    if !s.sequences.is_empty() {
        h.push_str("</section><section><h2>User actions</h2><table><tr><th>#</th><th>actions</th><th>trials</th><th>status</th></tr>");
        for q in &s.sequences {
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                q.number,
                esc(&q.actions),
                q.trials,
                esc(&q.status)
            ));
        }
        h.push_str("</table>");
    }
    h
}

/// A trial's row: its actions, plan, verdict, time and what it found (or what went wrong).
fn trial_row(t: &Trial) -> String {
    format!(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{:.1}</td><td>{}</td></tr>",
        t.id,
        esc(t.actions.as_deref().unwrap_or("—")),
        esc(&t.plan),
        esc(t.verdict.as_str()),
        esc(t.verdict.as_str()),
        t.seconds,
        esc(&t
            .found
            .iter()
            .map(|f| f.message.clone())
            .chain(t.error.clone())
            .chain(t.effect.as_ref().map(|e| e.describe()))
            .chain((!t.exits.is_empty()).then(|| format!(
                "the controller exited {}× and was restarted: {}",
                t.exits.len(),
                t.exits.join("; ")
            )))
            .collect::<Vec<_>>()
            .join("; "))
    )
}

/// Trials per minute over `seconds` (0 for none).
pub(super) fn per_minute(trials: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        trials as f64 * 60.0 / seconds
    } else {
        0.0
    }
}

/// When the earliest of `findings` was first seen (None: no finding).
pub(super) fn first_seen(findings: &[Finding]) -> Option<f64> {
    findings
        .iter()
        .map(|f| f.first_seen)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.min(x))))
}

/// The reproducer does not judge what the references already showed of the setup's
/// resources (the readiness race of a CRD that does not default
/// `status.observedGeneration`: an advisory, not a finding). `run` has no references to
/// tell it apart, so a reproducer that kept it would exit 1 on a version without the bug.
fn without_advisories(reproducer: &mut crate::schedule::Schedule, advisories: &[Found]) {
    let Some(o) = reproducer.oracles.as_mut() else {
        return;
    };
    if let Some(r) = o.readiness_race.as_mut() {
        r.resources.retain(|res| {
            !advisories
                .iter()
                .any(|a| a.oracle == OracleName::ReadinessRace.as_str() && &a.resource == res)
        });
        if r.resources.is_empty() {
            o.readiness_race = None;
        }
    }
}

#[cfg(test)]
mod tests {

    /// A CRD's readiness race the references showed is an advisory: the reproducer does
    /// not judge it, so it exits 0 where the finding's bug is gone.
    #[test]
    fn a_reproducer_leaves_out_what_the_references_showed_of_the_setup() {
        let mut s: crate::schedule::Schedule = serde_json::from_value(serde_json::json!({
            "windows": [],
            "oracles": {"readinessRace": {"resources": ["a.example.com", "b.example.com"]}}
        }))
        .unwrap();
        let advisory = |r: &str| Found {
            oracle: "readinessRace".into(),
            resource: r.into(),
            namespace: "demo".into(),
            name: "x".into(),
            message: String::new(),
            signature: String::new(),
            expect: None,
        };
        without_advisories(&mut s, &[advisory("a.example.com")]);
        let race = |s: &crate::schedule::Schedule| {
            s.oracles
                .as_ref()
                .and_then(|o| o.readiness_race.as_ref())
                .map(|r| r.resources.clone())
        };
        assert_eq!(race(&s), Some(vec!["b.example.com".to_string()]));
        without_advisories(&mut s, &[advisory("b.example.com")]);
        assert_eq!(race(&s), None);
    }
    use super::*;

    #[test]
    fn out_is_explores_own_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        // New, then again over what it left.
        let out = Out::create(&dir.path().join("x")).unwrap();
        std::fs::write(out.root.join("findings/01-old.json"), "{}").unwrap();
        std::fs::write(out.root.join("summary.json"), "{}").unwrap();
        drop(out);
        let again = Out::create(&dir.path().join("x")).unwrap();
        assert!(
            !again.root.join("findings/01-old.json").exists(),
            "old findings go"
        );
        // Somebody else's directory is not touched.
        std::fs::create_dir_all(dir.path().join("mine/logs")).unwrap();
        std::fs::write(dir.path().join("mine/notes.txt"), "keep").unwrap();
        let e = Out::create(&dir.path().join("mine"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("notes.txt") && e.contains("not an earlier explore"),
            "{e}"
        );
        assert!(dir.path().join("mine/logs").exists());
    }

    /// The `run it:` line is what a shell splits back into the reproducer's argv.
    #[test]
    fn the_run_it_line_survives_a_shell() {
        let argv: Vec<String> = [
            "/bin/stalemate",
            "run",
            "--workload",
            "bash /tmp/my dir/workload.sh",
            "--schedule",
            "/tmp/it's.json",
            "--",
            "python",
            "-c",
            "print(\"$HOME\")",
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let line = shell_line(&argv);
        assert!(line.starts_with("/bin/stalemate run --workload 'bash /tmp/my dir/workload.sh'"));
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("for a in {line}; do printf '%s\\0' \"$a\"; done"),
            ])
            .output()
            .unwrap();
        let back: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(str::to_string)
            .collect();
        assert_eq!(back, argv);
    }
}
