//! `stalemate explore report DIR N`: one finding as a bug report its controller's
//! maintainer can act on — an issue text and a bundle that replays it with one command.
//!
//! ```text
//!  DIR/summary.json ─► finding N: what it found, its reproducer, the trial that shows it
//!  ─► BUNDLE/ISSUE.md          what a user sees, versions, the command, the window and
//!                              what it did, the controller's requests around it, the
//!                              oracles' words, what the fault-free runs showed instead
//!     BUNDLE/reproduce.sh      `stalemate run` with everything below, from the bundle
//!     BUNDLE/schedule.json     the reproducer (its `expected` oracle: the references)
//!     BUNDLE/setup/, files/    the setup's manifests; the scripts the command names
//!     BUNDLE/references.json   what the fault-free runs ended with, for this finding
//!     BUNDLE/trace.jsonl, controller.log   the trial that shows it
//! ```
//!
//! Paths in the explore's command line are absolute and this machine's: the bundle
//! carries copies of what they name (manifests, wrapper scripts, workload scripts —
//! text files, not binaries), and the command refers to those. The controller itself is
//! the maintainer's: `reproduce.sh` runs the command explore ran unless given another.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::output::{Summary, SummaryVerdict};
use super::record::{Finding, Trial};
use super::shell::shell_line;

/// Scripts and manifests up to this size are copied into the bundle; bigger files are
/// not (a controller's binary is left out as binary whatever its size). A CRD runs to
/// megabytes: Kyverno's ClusterPolicy is 1.4 MB.
const COPY_AT_MOST: u64 = 16 << 20;
/// How many of the controller's requests the issue quotes around the window.
const EXCERPT_LINES: usize = 40;

/// What `write` made.
pub struct Written {
    pub dir: PathBuf,
    pub issue: PathBuf,
    /// The one command that replays it, from anywhere.
    pub command: String,
}

/// Write finding `number` of explore output `dir` as a bundle in `out` (default
/// `DIR/report-NN`).
pub fn write(dir: &Path, number: usize, out: Option<&Path>) -> Result<Written> {
    let input = super::shards::merge::Input::read(dir)?;
    let summary = &input.summary;
    let Some(f) = summary.findings.iter().find(|f| f.number == number) else {
        bail!(
            "{}: no finding #{number}; it has {}",
            dir.display(),
            match summary.findings.len() {
                0 => "none".to_string(),
                _ => summary
                    .findings
                    .iter()
                    .map(|f| format!("#{} ({})", f.number, f.title))
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        );
    };
    let trial = summary.trials.iter().find(|t| t.id == f.trial);
    let out = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.join(format!("report-{number:02}")));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut bundle = Bundle {
        from: dir.to_path_buf(),
        out: out.clone(),
        copied: Vec::new(),
    };
    bundle.copy_from_output(&f.schedule_file, "schedule.json")?;
    for file in &f.files {
        if file.ends_with(".trace.jsonl") {
            bundle.copy_from_output(file, "trace.jsonl")?;
        } else if file.ends_with(".controller.log") {
            bundle.copy_from_output(file, "controller.log")?;
        }
    }
    let command = bundle.command(&f.reproduce)?;
    let script = reproduce_script(f, &command);
    bundle.write("reproduce.sh", &script)?;
    set_executable(&out.join("reproduce.sh"))?;
    let schedule: Value = read_json(&out.join("schedule.json"))?;
    let references = references(summary, f, &schedule);
    bundle.write(
        "references.json",
        &(serde_json::to_string_pretty(&references)? + "\n"),
    )?;
    let trace = std::fs::read_to_string(out.join("trace.jsonl")).unwrap_or_default();
    let issue = issue_text(&IssueParts {
        summary,
        f,
        trial,
        command: &command,
        schedule: &schedule,
        trace: &trace,
        copied: &bundle.copied,
    });
    bundle.write("ISSUE.md", &issue)?;
    let abs = std::fs::canonicalize(&out).unwrap_or(out.clone());
    Ok(Written {
        issue: abs.join("ISSUE.md"),
        command: format!(
            "sh {}",
            shell_line(&[abs.join("reproduce.sh").display().to_string()])
        ),
        dir: abs,
    })
}

/// The bundle being written: where from, where to, and what was copied into it.
struct Bundle {
    from: PathBuf,
    out: PathBuf,
    /// (where it was, where it is in the bundle)
    copied: Vec<(String, String)>,
}

impl Bundle {
    fn write(&self, name: &str, text: &str) -> Result<()> {
        let path = self.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    }

    /// A file of the explore's output, into the bundle as `name`.
    fn copy_from_output(&self, rel: &str, name: &str) -> Result<()> {
        let from = self.from.join(rel);
        let to = self.out.join(name);
        std::fs::copy(&from, &to)
            .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
        Ok(())
    }

    /// A file the command names, into `sub/` (a name of its own there); its path in the
    /// bundle, or None when it is not one to copy (missing, a directory, too big).
    fn take(&mut self, path: &str, sub: &str) -> Result<Option<String>> {
        let p = Path::new(path);
        if !p.is_absolute() {
            return Ok(None);
        }
        let Ok(meta) = std::fs::metadata(p) else {
            return Ok(None);
        };
        if !meta.is_file() || meta.len() > COPY_AT_MOST || is_binary(p) {
            return Ok(None);
        }
        if let Some((_, there)) = self.copied.iter().find(|(from, _)| from == path) {
            return Ok(Some(there.clone()));
        }
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "file".into());
        let n = self
            .copied
            .iter()
            .filter(|(_, t)| t.starts_with(sub))
            .count();
        let rel = format!("{sub}/{:02}-{name}", n + 1);
        std::fs::create_dir_all(self.out.join(sub))?;
        let to = self.out.join(&rel);
        std::fs::copy(p, &to).with_context(|| format!("copying {path} into the bundle"))?;
        if std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0 {
            set_executable(&to)?;
        }
        self.copied.push((path.to_string(), rel.clone()));
        Ok(Some(rel))
    }

    /// The finding's `run it:` command line made the bundle's: stalemate from the PATH
    /// (or `$STALEMATE`), the manifests, the schedule, scripts from the bundle; the
    /// control plane from `$KUBEBUILDER_ASSETS` (envtest's own variable) rather than a
    /// directory of this machine's.
    fn command(&mut self, argv: &[String]) -> Result<Vec<String>> {
        let mut out = vec!["stalemate".to_string()];
        let mut i = 1;
        let mut flag = String::new();
        let mut after_dashes = false;
        while i < argv.len() {
            let a = &argv[i];
            i += 1;
            if after_dashes {
                out.push(self.word(a, "files")?);
                continue;
            }
            if a == "--" {
                after_dashes = true;
                out.push(a.clone());
                continue;
            }
            if a.starts_with("--") {
                flag = a.clone();
                if a == "--upstream-kubeconfig" || a == "--context" {
                    // The maintainer's cluster: their kubeconfig, as `run` reads it.
                    i += 1;
                    continue;
                }
                out.push(a.clone());
                continue;
            }
            match flag.as_str() {
                "--setup" => match self.take(a, "setup")? {
                    Some(rel) => out.push(rel),
                    None => out.push(a.clone()),
                },
                "--schedule" => out.push("schedule.json".into()),
                "--envtest" if Path::new(a).is_absolute() => {
                    // `--envtest` alone: `$KUBEBUILDER_ASSETS`.
                }
                "--workload" | "--controller" => out.push(self.words(a)?),
                _ => out.push(a.clone()),
            }
        }
        Ok(out)
    }

    /// One word of a command: a file it names copied in. A path relative to where explore
    /// ran (here too, as a rule) is made absolute first, since the bundle's script runs
    /// from the bundle.
    fn word(&mut self, w: &str, sub: &str) -> Result<String> {
        let abs = if w.contains('/') && !w.starts_with('-') && !w.starts_with('/') {
            std::fs::canonicalize(w)
                .ok()
                .map(|p| p.display().to_string())
        } else {
            None
        };
        let w = abs.as_deref().unwrap_or(w);
        Ok(self.take(w, sub)?.unwrap_or_else(|| w.to_string()))
    }

    /// A shell command (a `--workload` step, `NAME=CMD`): each absolute path in it that
    /// names a script, copied in.
    fn words(&mut self, cmd: &str) -> Result<String> {
        let mut out = Vec::new();
        for w in cmd.split(' ') {
            let (prefix, path) = match w.split_once('=') {
                Some((name, rest)) if rest.contains('/') => (format!("{name}="), rest),
                _ => (String::new(), w),
            };
            out.push(format!("{prefix}{}", self.word(path, "files")?));
        }
        Ok(out.join(" "))
    }
}

/// `reproduce.sh`: the command, from the bundle's directory; arguments replace the
/// controller command.
fn reproduce_script(f: &Finding, command: &[String]) -> String {
    let split = command
        .iter()
        .position(|a| a == "--")
        .unwrap_or(command.len());
    let (run, controller) = command.split_at(split);
    let controller = controller.get(1..).unwrap_or_default();
    let mut s = String::from("#!/bin/sh\n");
    let _ = writeln!(
        s,
        "# Replays stalemate explore's finding #{}: {}",
        f.number,
        f.title.replace('\n', " ")
    );
    s.push_str(
        "# Exit 1: the bug is there (the reproducer's oracles, `expected` among them, say what it\n\
         # found); 0: it is not. Needs stalemate (on the PATH, or STALEMATE=/path/to/stalemate),\n\
         # and for --envtest a control plane in KUBEBUILDER_ASSETS (controller-runtime's\n\
         # setup-envtest, or stalemate's e2e/assets/build.sh). Arguments replace the controller\n\
         # command explore ran.\n",
    );
    s.push_str("set -e\ncd \"$(dirname \"$0\")\"\n");
    let _ = writeln!(
        s,
        "[ $# -gt 0 ] || set -- {}",
        if controller.is_empty() {
            "false".to_string()
        } else {
            shell_line(controller)
        }
    );
    let _ = writeln!(
        s,
        "exec \"${{STALEMATE:-stalemate}}\" {} -- \"$@\"",
        shell_line(run.get(1..).unwrap_or_default())
    );
    s
}

/// What the references ended with for what finding `f` is about: the reproducer's
/// `expected` oracle, the convergence oracle's expectations, and its sequence's.
fn references(summary: &Summary, f: &Finding, schedule: &Value) -> Value {
    let oracles = &schedule["oracles"];
    let sequence = f.actions.as_ref().and_then(|a| {
        summary
            .sequences
            .iter()
            .find(|s| &s.actions == a)
            .map(|s| serde_json::to_value(s).unwrap_or_default())
    });
    serde_json::json!({
        "from": "the fault-free reference runs of stalemate explore",
        "referenceSeconds": summary.reference_seconds,
        "expected": oracles["expected"],
        "convergence": {
            "failed": oracles["convergence"]["failed"],
            "conditions": oracles["convergence"]["conditions"],
        },
        "sequence": sequence,
        "withoutFaults": summary.without_faults,
    })
}

/// What the issue text is written from.
struct IssueParts<'a> {
    summary: &'a Summary,
    f: &'a Finding,
    trial: Option<&'a Trial>,
    command: &'a [String],
    schedule: &'a Value,
    trace: &'a str,
    copied: &'a [(String, String)],
}

fn issue_text(p: &IssueParts) -> String {
    let f = p.f;
    let mut s = String::new();
    let first = f.found.first();
    let what = first.map_or(f.title.clone(), |x| x.message.clone());
    let _ = writeln!(s, "# {}\n", headline(f));
    s.push_str("## What a user sees\n\n");
    let _ = writeln!(s, "{what}\n");
    for x in f.found.iter().skip(1) {
        let _ = writeln!(s, "- also: {}", x.message);
    }
    if f.found.len() > 1 {
        s.push('\n');
    }
    if let Some(a) = &f.actions {
        let _ = writeln!(
            s,
            "It needs the user's action **{a}** (the reproducer runs it as `--workload` steps).\n"
        );
    }
    let _ = writeln!(
        s,
        "It is what happens after the controller is shown a stale or faulty API for a moment — **{}** — and does not recover: the same setup without the fault ends otherwise (below). Found by `stalemate explore` (trial {} of {}{}).\n",
        f.plan,
        f.trial,
        p.summary.trials_run,
        replayed(f)
    );
    versions(&mut s, p);
    reproduce_section(&mut s, p);
    window_section(&mut s, p);
    excerpt_section(&mut s, p);
    oracle_section(&mut s, f);
    s
}

/// The issue's title: the object and what is wrong with it.
fn headline(f: &Finding) -> String {
    let title = f
        .title
        .split(" (flaky:")
        .next()
        .unwrap_or(&f.title)
        .to_string();
    format!("{title} after {}", short_plan(&f.plan))
}

/// `freeze … for 1.5s after …` without the trial's bookkeeping in parentheses.
fn short_plan(plan: &str) -> String {
    plan.split(" (shrinking finding")
        .next()
        .unwrap_or(plan)
        .split(" (replaying finding")
        .next()
        .unwrap_or(plan)
        .to_string()
}

fn replayed(f: &Finding) -> String {
    match &f.replayed {
        Some(r) => format!("; replayed, it {}", r.describe()),
        None => String::new(),
    }
}

fn versions(s: &mut String, p: &IssueParts) {
    s.push_str("## Versions\n\n");
    let controller = p
        .command
        .iter()
        .position(|a| a == "--")
        .map(|i| shell_line(&p.command[i + 1..]))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "- controller: `{controller}` (explore ran `{}`)",
        shell_line(&p.summary.controller)
    );
    let _ = writeln!(s, "- Kubernetes: {}", upstream_version(p.f));
    let _ = writeln!(
        s,
        "- stalemate {} (`explore` {}, verdict {})\n",
        env!("CARGO_PKG_VERSION"),
        p.summary.upstream,
        match p.summary.verdict {
            SummaryVerdict::Clean => "clean",
            SummaryVerdict::Findings => "findings",
            SummaryVerdict::FailsWithoutFaults => "fails without faults",
        }
    );
}

/// The control plane the explore ran on, from its `--envtest` directory's
/// kube-apiserver (this machine's), or what the upstream was.
fn upstream_version(f: &Finding) -> String {
    let argv = &f.reproduce;
    if argv.iter().any(|a| a == "--sim") {
        return "stalemate's API simulator (`--sim`)".into();
    }
    if let Some(i) = argv.iter().position(|a| a == "--envtest") {
        let dir = argv.get(i + 1).filter(|d| !d.starts_with("--"));
        let version = dir
            .map(|d| Path::new(d).join("kube-apiserver"))
            .and_then(|bin| {
                std::process::Command::new(bin)
                    .arg("--version")
                    .output()
                    .ok()
            })
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|v| !v.is_empty());
        let with = argv
            .iter()
            .position(|a| a == "--with")
            .and_then(|j| argv.get(j + 1))
            .map(|w| format!(", with {w}"))
            .unwrap_or_default();
        return format!(
            "{} (a real etcd and kube-apiserver per run, `--envtest`{with})",
            version.unwrap_or_else(|| "the control plane in $KUBEBUILDER_ASSETS".into())
        );
    }
    "the cluster of the kubeconfig explore was given".into()
}

fn reproduce_section(s: &mut String, p: &IssueParts) {
    s.push_str("## Reproduce\n\n");
    s.push_str(
        "From this bundle (stalemate on the PATH; for `--envtest`, `KUBEBUILDER_ASSETS` naming a control plane of the version above):\n\n```sh\nsh reproduce.sh            # or: sh reproduce.sh ./bin/manager --its-flags\n```\n\n",
    );
    s.push_str("which runs\n\n```sh\n");
    let _ = writeln!(s, "{}", shell_line(p.command));
    s.push_str("```\n\n");
    s.push_str(
        "It starts the controller behind stalemate's proxy, applies the setup, runs the workload, opens the window below when the controller's own request triggers it, and judges the end by the reproducer's oracles — `expected` holds what the fault-free runs ended with. Exit 1: the bug is there; 0: it is not.\n\n",
    );
    if !p.copied.is_empty() {
        s.push_str("Copied into the bundle from the machine explore ran on:\n\n");
        for (from, to) in p.copied {
            let _ = writeln!(s, "- `{to}` ← `{from}`");
        }
        s.push('\n');
    }
}

fn window_section(s: &mut String, p: &IssueParts) {
    s.push_str("## The window\n\n");
    let windows = p.schedule["windows"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let _ = writeln!(s, "{}:\n", short_plan(&p.f.plan));
    for w in &windows {
        let _ = writeln!(
            s,
            "- `{}`: **{}** for `{}` on {} for {}; opened by `{}`",
            w["name"].as_str().unwrap_or(""),
            fault_words(&w["fault"]),
            w["client"].as_str().unwrap_or("controller"),
            w["resources"]
                .as_array()
                .map(|r| r
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", "))
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "every resource".into()),
            w["duration"].as_str().unwrap_or("its trigger's moment"),
            w["trigger"]
        );
    }
    if let Some(e) = p.trial.and_then(|t| t.effect.as_ref()) {
        let spans: Vec<String> = e
            .windows
            .iter()
            .map(|w| match (w.opened, w.closed) {
                (Some(o), Some(c)) => format!("`{}` open {o:.1}s–{c:.1}s", w.name),
                (Some(o), None) => format!("`{}` opened at {o:.1}s", w.name),
                _ => format!("`{}` never opened", w.name),
            })
            .collect();
        let _ = writeln!(
            s,
            "\nWhat it did in the trial that shows it (seconds after the controller started): {}; {} watch event(s) to the controller held, {} request(s) answered by the fault, {} conflict(s) the controller got.",
            spans.join(", "),
            e.held,
            e.answered,
            e.conflicts
        );
    }
    s.push('\n');
}

/// A window's fault as words: `freeze`, `errors (status 409, preconditioned true)`.
fn fault_words(fault: &Value) -> String {
    let Some((kind, fields)) = fault.as_object().and_then(|o| o.iter().next()) else {
        return fault.to_string();
    };
    let fields: Vec<String> = fields
        .as_object()
        .map(|f| {
            f.iter()
                .map(|(k, v)| match v {
                    Value::String(x) => format!("{k} {x}"),
                    other => format!("{k} {other}"),
                })
                .collect()
        })
        .unwrap_or_default();
    if fields.is_empty() {
        kind.clone()
    } else {
        format!("{kind} ({})", fields.join(", "))
    }
}

fn excerpt_section(s: &mut String, p: &IssueParts) {
    let lines = excerpt(p.trace);
    if lines.is_empty() {
        return;
    }
    s.push_str("## The controller's requests around it\n\n");
    s.push_str(
        "From the trial's trace (`trace.jsonl` here: every request and watch event, names only), seconds after the first record:\n\n```text\n",
    );
    for l in lines {
        let _ = writeln!(s, "{l}");
    }
    s.push_str("```\n\n");
}

/// The controller's writes and failed requests, window openings and closings, restarts
/// and exits, from 2 s before the first window opened to 5 s after the last closed (at
/// most [`EXCERPT_LINES`], the first ones after the window opened kept).
fn excerpt(trace: &str) -> Vec<String> {
    let records: Vec<Value> = trace
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let at = |r: &Value| {
        r["ts"]
            .as_str()
            .and_then(|t| humantime::parse_rfc3339_weak(t.trim_end_matches('Z')).ok())
    };
    let Some(start) = records.iter().find_map(at) else {
        return vec![];
    };
    let secs = |t: std::time::SystemTime| t.duration_since(start).unwrap_or_default().as_secs_f64();
    let windows: Vec<f64> = records
        .iter()
        .filter(|r| r["kind"] == "window")
        .filter_map(|r| at(r).map(secs))
        .collect();
    let (Some(first), Some(last)) = (
        windows.iter().copied().reduce(f64::min),
        windows.iter().copied().reduce(f64::max),
    ) else {
        return vec![];
    };
    let mut out = Vec::new();
    for r in &records {
        let Some(t) = at(r).map(secs) else { continue };
        if t < first - 2.0 || t > last + 5.0 {
            continue;
        }
        if let Some(line) = excerpt_line(r, t) {
            out.push(line);
        }
        if out.len() >= EXCERPT_LINES {
            out.push("…".into());
            break;
        }
    }
    out
}

fn excerpt_line(r: &Value, t: f64) -> Option<String> {
    let str_of = |k: &str| r[k].as_str().unwrap_or("");
    match str_of("kind") {
        "request" => {
            let client = str_of("client");
            let verb = str_of("verb");
            let code = r["code"].as_u64().unwrap_or(0);
            let write = matches!(verb, "create" | "update" | "patch" | "delete");
            if client == "workload" && !write {
                return None;
            }
            if !write && code < 300 && r["answer"] == "upstream" {
                return None;
            }
            // Lease renewals and Events are the controller's bookkeeping, not its work.
            let resource = crate::session::snapshot::base_resource(str_of("resource"));
            if crate::session::snapshot::IGNORED.contains(&resource) && r["answer"] == "upstream" {
                return None;
            }
            let object = match (r["namespace"].as_str(), r["name"].as_str()) {
                (Some(ns), Some(n)) => format!("{ns}/{n}"),
                (None, Some(n)) => n.to_string(),
                _ => String::new(),
            };
            let answer = match str_of("answer") {
                "upstream" => String::new(),
                a => format!(
                    " ({a}{})",
                    r["window"]
                        .as_str()
                        .map(|w| format!(", {w}"))
                        .unwrap_or_default()
                ),
            };
            Some(format!(
                "{t:8.3}s  {client:<10} {verb:<6} {} {object} → {code}{answer}",
                str_of("resource")
            ))
        }
        "window" => Some(format!(
            "{t:8.3}s  window {} {} ({})",
            str_of("window"),
            if str_of("action") == "open" {
                "opened"
            } else {
                "closed"
            },
            str_of("fault")
        )),
        "restart" => Some(format!(
            "{t:8.3}s  {} killed (restart)",
            str_of("controller")
        )),
        "exit" => Some(format!(
            "{t:8.3}s  {} exited: {}",
            str_of("controller"),
            str_of("status")
        )),
        _ => None,
    }
}

fn oracle_section(s: &mut String, f: &Finding) {
    s.push_str("## What the oracles said\n\n");
    for x in &f.found {
        let _ = writeln!(s, "- **{}**: {}", x.oracle, x.message);
    }
    s.push_str(
        "\n## Against the fault-free runs\n\n`references.json` holds what they ended with for this finding (the reproducer's `expected` oracle: fields, objects there or not, the controller's creates and deletes). ",
    );
    let differential: Vec<&str> = f
        .found
        .iter()
        .filter(|x| x.oracle == "differential")
        .map(|x| x.message.as_str())
        .collect();
    if differential.is_empty() {
        s.push_str(
            "The oracles above judge this run by itself: the fault-free runs ended without it.\n",
        );
    } else {
        s.push_str("Where this run ended otherwise:\n\n");
        for d in differential {
            let _ = writeln!(s, "- {d}");
        }
    }
}

fn read_json(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))
}

/// A file with a NUL byte in its first 8 KiB (an executable, an archive).
fn is_binary(p: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 8192];
    std::fs::File::open(p)
        .and_then(|mut f| f.read(&mut head))
        .map(|n| head[..n].contains(&0))
        .unwrap_or(true)
}

fn set_executable(p: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut perm = std::fs::metadata(p)?.permissions();
    perm.set_mode(perm.mode() | 0o755);
    std::fs::set_permissions(p, perm).with_context(|| format!("chmod {}", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_excerpt_keeps_writes_failures_and_windows_around_the_window() {
        let trace = [
            r#"{"ts":"2026-12-07T10:00:00.000Z","kind":"request","client":"controller","verb":"list","resource":"widgets.x","code":200,"latencyMs":1,"answer":"upstream"}"#,
            r#"{"ts":"2026-12-07T10:00:05.000Z","kind":"request","client":"controller","verb":"patch","resource":"widgets.x/status","namespace":"demo","name":"w1","code":200,"latencyMs":1,"answer":"upstream"}"#,
            r#"{"ts":"2026-12-07T10:00:05.100Z","kind":"window","window":"w","action":"open","fault":"errors"}"#,
            r#"{"ts":"2026-12-07T10:00:05.200Z","kind":"request","client":"controller","verb":"patch","resource":"widgets.x","namespace":"demo","name":"w1","code":409,"latencyMs":1,"answer":"injected","window":"w"}"#,
            r#"{"ts":"2026-12-07T10:00:05.300Z","kind":"request","client":"controller","verb":"get","resource":"widgets.x","namespace":"demo","name":"w1","code":200,"latencyMs":1,"answer":"upstream"}"#,
            r#"{"ts":"2026-12-07T10:00:06.600Z","kind":"window","window":"w","action":"close","fault":"errors"}"#,
            r#"{"ts":"2026-12-07T10:00:30.000Z","kind":"request","client":"controller","verb":"patch","resource":"widgets.x/status","namespace":"demo","name":"w1","code":200,"latencyMs":1,"answer":"upstream"}"#,
        ]
        .join("\n");
        let lines = excerpt(&trace);
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert!(
            lines[0].contains("patch  widgets.x/status demo/w1 → 200"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].contains("window w opened (errors)"),
            "{}",
            lines[1]
        );
        assert!(lines[2].contains("→ 409 (injected, w)"), "{}", lines[2]);
        assert!(lines[3].contains("window w closed"), "{}", lines[3]);
    }
}
