//! Reports: what the oracles concluded, for people (terminal, HTML) and for programs
//! (JSON, a stable schema documented in docs/oracles.md).
//!
//! A report is built live from the oracles, or afterwards from a trace file
//! (`stalemate report TRACE`): the trace holds the requests, the windows and the
//! verdicts, which is everything the timeline and the verdict list need.

pub mod html;

use std::fmt::Write as _;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::oracle::{Mark, Oracles, RestartMark, Verdicts, Violation, WindowSpan, rfc3339};
use crate::request::Verb;

/// The JSON report's schema name; bumped on any incompatible change.
pub const SCHEMA: &str = "stalemate.report/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub schema: String,
    #[serde(with = "rfc3339")]
    pub started_at: SystemTime,
    #[serde(with = "rfc3339")]
    pub ended_at: SystemTime,
    /// `pass`, `fail` or `not judged`.
    pub verdict: String,
    #[serde(flatten)]
    pub verdicts: Verdicts,
}

impl Report {
    pub fn from_verdicts(
        started_at: SystemTime,
        ended_at: SystemTime,
        verdicts: Verdicts,
    ) -> Report {
        let verdict = if !verdicts.violations.is_empty() {
            "fail"
        } else if verdicts.judged {
            "pass"
        } else {
            "not judged"
        };
        Report {
            schema: SCHEMA.into(),
            started_at,
            ended_at,
            verdict: verdict.into(),
            verdicts,
        }
    }

    /// The oracles' verdicts as of `now`.
    pub fn now(oracles: &Oracles, now: SystemTime) -> Report {
        Report::from_verdicts(oracles.started, now, oracles.evaluate(now))
    }

    /// Violations found after the run (the `expected` oracle reads its end state): the
    /// verdict is then `fail`.
    pub fn add_violations(&mut self, found: Vec<Violation>) {
        if found.is_empty() {
            return;
        }
        self.verdicts.violations.extend(found);
        self.verdict = "fail".into();
    }

    pub fn failed(&self) -> bool {
        !self.verdicts.violations.is_empty()
    }

    /// Seconds since the start of the run.
    pub fn offset(&self, t: SystemTime) -> f64 {
        t.duration_since(self.started_at)
            .unwrap_or_default()
            .as_secs_f64()
    }

    /// The trace lines that carry the verdicts (so a trace alone can be rendered later).
    pub fn trace_records(&self) -> Vec<crate::trace::Record> {
        let mut out: Vec<crate::trace::Record> = self
            .verdicts
            .violations
            .iter()
            .map(|v| crate::trace::Record::Verdict {
                violation: v.clone(),
            })
            .chain(self.verdicts.inside_windows.iter().map(|v| {
                crate::trace::Record::InsideWindow {
                    violation: v.clone(),
                }
            }))
            .collect();
        out.push(crate::trace::Record::Judgement {
            verdict: self.verdict.clone(),
            judged: self.verdicts.judged,
            pending: self.verdicts.pending.clone(),
            violations: self.verdicts.violations.len(),
        });
        out
    }

    /// A summary for the terminal.
    pub fn terminal(&self) -> String {
        let mut o = String::new();
        let at = |t: SystemTime| format!("+{:.1}s", self.offset(t));
        let _ = writeln!(
            o,
            "stalemate report — {} ({:.1}s)",
            humantime::format_rfc3339_seconds(self.started_at),
            self.offset(self.ended_at)
        );
        let v = &self.verdicts;
        if v.windows.is_empty() {
            let _ = writeln!(o, "windows: none opened");
        } else {
            let _ = writeln!(o, "windows:");
            for w in &v.windows {
                let _ = writeln!(
                    o,
                    "  {:<28} {:<9} {} → {}",
                    w.name,
                    w.fault,
                    at(w.opened_at),
                    w.closed_at.map_or("still open".to_string(), at)
                );
            }
        }
        if !v.restarts.is_empty() {
            let _ = writeln!(o, "controller restarts:");
            for r in &v.restarts {
                let whose = if r.controller == "controller" {
                    String::new()
                } else {
                    format!(" ({})", r.controller)
                };
                let _ = writeln!(
                    o,
                    "  {:<28} killed at {}{whose}, down {:.1}s",
                    r.window,
                    at(r.at),
                    r.down_seconds
                );
            }
        }
        if !v.exits.is_empty() {
            let _ = writeln!(
                o,
                "controller exits ({}):",
                v.backoff.as_deref().unwrap_or("not restarted")
            );
            for e in &v.exits {
                let _ = writeln!(
                    o,
                    "  {} {} {} after {:.1}s running; {}",
                    at(e.at),
                    e.controller,
                    e.status,
                    e.ran_seconds,
                    match (e.backoff_seconds, e.back_at()) {
                        (Some(b), Some(back)) =>
                            format!("back-off {b:.1}s, started again at {}", at(back)),
                        _ => "not started again".to_string(),
                    }
                );
            }
        }
        if let Some(c) = &v.comeback {
            let since = |t: SystemTime| {
                format!(
                    "{} ({:.1}s after)",
                    at(t),
                    t.duration_since(c.window_closed_at)
                        .unwrap_or_default()
                        .as_secs_f64()
                )
            };
            let answered: Vec<String> = c
                .answered
                .iter()
                .map(|(client, t)| format!("{client} {}", since(t.0)))
                .collect();
            let _ = writeln!(
                o,
                "after the last window (closed {}): answered again: {}; objects Current again: {}",
                at(c.window_closed_at),
                if answered.is_empty() {
                    "no client".to_string()
                } else {
                    answered.join(", ")
                },
                c.current_at.map_or("not all".to_string(), since)
            );
        }
        if !v.objects.is_empty() {
            let _ = writeln!(o, "objects (kstatus now):");
            for x in &v.objects {
                let _ = writeln!(
                    o,
                    "  {} {}/{}  {:?}: {}",
                    x.resource, x.namespace, x.name, x.status, x.rule
                );
            }
        }
        let recovered: Vec<String> = v
            .recoveries
            .iter()
            .map(|r| {
                format!(
                    "  after {:<22} {}/{}: {}",
                    r.window,
                    r.namespace,
                    r.name,
                    r.seconds
                        .map_or("not recovered".to_string(), |s| format!("{s:.2}s"))
                )
            })
            .collect();
        if !recovered.is_empty() {
            let _ = writeln!(o, "recovery time:");
            for r in recovered {
                let _ = writeln!(o, "{r}");
            }
        }
        let writes = v.timeline.iter().filter(|m| m.code != 409).count();
        let conflicts = v.timeline.iter().filter(|m| m.code == 409).count();
        let _ = writeln!(o, "writes: {writes}, conflicts (409): {conflicts}");
        // One line per violation (or per rate seen inside windows).
        let line = |o: &mut String, x: &Violation, when: &str| {
            // An object, a cluster-scoped one, or a whole resource (the `expected`
            // oracle's counts).
            let object = match (x.namespace.as_str(), x.name.as_str()) {
                ("", "") => String::new(),
                ("", name) => format!(" {name}"),
                (ns, name) => format!(" {ns}/{name}"),
            };
            let _ = writeln!(
                o,
                "  {:<13} {}{object}{} {when} {}: {}",
                x.oracle,
                x.resource,
                x.client
                    .as_deref()
                    .map_or(String::new(), |c| format!(" (client {c})")),
                at(x.since),
                x.rule
            );
            if let Some(why) = &x.why {
                let _ = writeln!(o, "                why: {why}");
            }
        };
        if v.violations.is_empty() {
            let _ = writeln!(o, "violations: none");
        } else {
            let _ = writeln!(o, "violations ({}):", v.violations.len());
            for x in &v.violations {
                line(&mut o, x, "since");
            }
        }
        if !v.inside_windows.is_empty() {
            let _ = writeln!(
                o,
                "seen inside windows, not violations ({}):",
                v.inside_windows.len()
            );
            for x in &v.inside_windows {
                line(&mut o, x, "from");
            }
        }
        let verdict = match self.verdict.as_str() {
            "fail" => format!("FAIL ({} violation(s))", v.violations.len()),
            "pass" => "PASS".to_string(),
            _ => format!(
                "NOT JUDGED ({})",
                v.pending.as_deref().unwrap_or("the run ended too early")
            ),
        };
        let _ = writeln!(o, "verdict: {verdict}");
        o
    }

    /// Rebuild a report from a trace file's lines: windows and writes from the request
    /// and window records, verdicts from the verdict records written at the end of the
    /// run. Lines that are not trace records are errors naming the line.
    pub fn from_trace(text: &str) -> Result<Report, String> {
        let mut first: Option<SystemTime> = None;
        let mut last: Option<SystemTime> = None;
        let mut windows: Vec<WindowSpan> = Vec::new();
        let mut timeline: Vec<Mark> = Vec::new();
        let mut restarts: Vec<RestartMark> = Vec::new();
        let mut exits: Vec<crate::oracle::ExitMark> = Vec::new();
        let mut violations: Vec<Violation> = Vec::new();
        let mut inside_windows: Vec<Violation> = Vec::new();
        let mut judgement: Option<(bool, Option<String>)> = None;
        let mut lanes = crate::oracle::staleness::Record::default();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let n = i + 1;
            let v: serde_json::Value = serde_json::from_str(line)
                .map_err(|e| format!("line {n}: not a JSON trace record: {e}"))?;
            let ts = v["ts"]
                .as_str()
                .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
                .ok_or_else(|| format!("line {n}: no valid \"ts\""))?;
            first = Some(first.map_or(ts, |f| f.min(ts)));
            last = Some(last.map_or(ts, |l| l.max(ts)));
            let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
            match v["kind"].as_str() {
                Some("window") if v["action"] == "open" => windows.push(WindowSpan {
                    name: s("window"),
                    fault: s("fault"),
                    opened_at: ts,
                    closed_at: None,
                }),
                Some("window") => {
                    if let Some(w) = windows
                        .iter_mut()
                        .rev()
                        .find(|w| w.name == s("window") && w.closed_at.is_none())
                    {
                        w.closed_at = Some(ts);
                    }
                }
                Some("request") => {
                    let code = v["code"].as_u64().unwrap_or(0) as u16;
                    let Ok(verb) = serde_json::from_value::<Verb>(v["verb"].clone()) else {
                        continue;
                    };
                    if let Some(name) = v["name"].as_str()
                        && (verb.is_write() || code == 409)
                    {
                        let resource = s("resource");
                        timeline.push(Mark {
                            at: ts,
                            client: s("client"),
                            verb,
                            resource: resource.split('/').next().unwrap_or("").to_string(),
                            namespace: s("namespace"),
                            name: name.to_string(),
                            code,
                        });
                    }
                }
                Some("verdict") => {
                    violations.push(serde_json::from_value(v["violation"].clone()).map_err(
                        |e| format!("line {n}: a verdict record that does not parse: {e}"),
                    )?)
                }
                Some("insideWindow") => {
                    inside_windows.push(serde_json::from_value(v["violation"].clone()).map_err(
                        |e| format!("line {n}: an insideWindow record that does not parse: {e}"),
                    )?)
                }
                Some("judgement") => {
                    judgement = Some((
                        v["judged"].as_bool().unwrap_or(false),
                        v["pending"].as_str().map(str::to_string),
                    ))
                }
                Some("restart") => restarts.push(RestartMark {
                    window: s("window"),
                    controller: v["controller"].as_str().unwrap_or("controller").to_string(),
                    at: ts,
                    down_seconds: v["downMs"].as_f64().unwrap_or(0.0) / 1000.0,
                }),
                Some("exit") => exits.push(crate::oracle::ExitMark {
                    controller: s("controller"),
                    at: ts,
                    status: s("status"),
                    ran_seconds: v["ranMs"].as_f64().unwrap_or(0.0) / 1000.0,
                    backoff_seconds: v["backoffMs"].as_f64().map(|b| b / 1000.0),
                }),
                Some("event") => {
                    let (fate, type_) = (s("fate"), s("type"));
                    if matches!(fate.as_str(), "delivered" | "held" | "released" | "dropped")
                        && matches!(type_.as_str(), "ADDED" | "MODIFIED" | "DELETED")
                    {
                        let key = crate::oracle::ObjectRef {
                            resource: s("resource"),
                            namespace: s("namespace"),
                            name: s("name"),
                        };
                        lanes.delivery(
                            &key,
                            crate::oracle::staleness::DeliveryMark {
                                at: ts,
                                client: s("client"),
                                resource: key.resource.clone(),
                                namespace: key.namespace.clone(),
                                name: key.name.clone(),
                                resource_version: s("resourceVersion"),
                                type_,
                                fate,
                            },
                        );
                    }
                }
                Some("dropped") => {}
                Some(k) => return Err(format!("line {n}: unknown record kind {k:?}")),
                None => return Err(format!("line {n}: no \"kind\"")),
            }
        }
        let (Some(start), Some(end)) = (first, last) else {
            return Err("the trace is empty".into());
        };
        let (judged, pending) = judgement.unwrap_or((
            false,
            Some("the trace has no verdicts: the run did not finish".into()),
        ));
        Ok(Report::from_verdicts(
            start,
            end,
            Verdicts {
                judged,
                pending,
                violations,
                inside_windows,
                windows,
                restarts,
                recoveries: vec![],
                exits,
                backoff: None,
                comeback: None,
                objects: vec![],
                timeline,
                // The trace has no ground truth: only what clients were given.
                truth: vec![],
                deliveries: lanes.delivery_marks(),
            },
        ))
    }
}

#[cfg(test)]
mod tests;
