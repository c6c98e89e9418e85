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

use crate::k8s::request::Verb;
use crate::oracle::{Mark, Oracles, RestartMark, Verdicts, Violation, WindowSpan, rfc3339};

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
    /// The schedule had windows and none of them opened: no fault reached any client, so
    /// a `pass` says nothing about staleness (`run`: its windows' clients or resources
    /// never matched, or the run ended before their triggers fired).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_window_opened: bool,
    /// The schedule's windows that never opened, by name (when some others did).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows_never_opened: Vec<String>,
}

/// The terminal's line when no window opened: said before the verdict, since a pass
/// then tested nothing.
pub const NO_WINDOW_OPENED: &str = "no window opened: the faults never reached the controller — check the windows' clients and resources";

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
            no_window_opened: false,
            windows_never_opened: vec![],
        }
    }

    /// Note which of the schedule's windows (`scheduled`, by name) never opened in the
    /// run. Spans are evicted past `MAX_ENTRIES` (only closed ones, so one always
    /// remains): a name missing then may have opened, and is not listed.
    pub fn note_unopened<'a>(&mut self, scheduled: impl IntoIterator<Item = &'a str>) {
        let spans = &self.verdicts.windows;
        let mut never: Vec<String> = vec![];
        for name in scheduled {
            if !spans.iter().any(|w| w.name == name) && !never.iter().any(|n| n == name) {
                never.push(name.to_string());
            }
        }
        self.no_window_opened = spans.is_empty() && !never.is_empty();
        if spans.is_empty() || spans.len() < crate::oracle::caps::MAX_ENTRIES {
            self.windows_never_opened = never;
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
        let _ = writeln!(
            o,
            "stalemate report — {} ({:.1}s)",
            humantime::format_rfc3339_seconds(self.started_at),
            self.offset(self.ended_at)
        );
        self.windows_summary(&mut o);
        self.restarts_summary(&mut o);
        self.exits_summary(&mut o);
        self.comeback_summary(&mut o);
        self.objects_summary(&mut o);
        self.recovery_summary(&mut o);
        let v = &self.verdicts;
        let writes = v.timeline.iter().filter(|m| m.code != 409).count();
        let conflicts = v.timeline.iter().filter(|m| m.code == 409).count();
        let _ = writeln!(o, "writes: {writes}, conflicts (409): {conflicts}");
        self.violations_summary(&mut o);
        let verdict = match self.verdict.as_str() {
            "fail" => format!("FAIL ({} violation(s))", v.violations.len()),
            "pass" if self.no_window_opened => "PASS, but nothing was tested".to_string(),
            "pass" => "PASS".to_string(),
            _ => format!(
                "NOT JUDGED ({})",
                v.pending.as_deref().unwrap_or("the run ended too early")
            ),
        };
        if self.no_window_opened {
            let _ = writeln!(o, "{NO_WINDOW_OPENED}");
        }
        let _ = writeln!(o, "verdict: {verdict}");
        o
    }

    /// `t` as an offset into the run, for the terminal (`+1.2s`).
    fn at(&self, t: SystemTime) -> String {
        format!("+{:.1}s", self.offset(t))
    }

    /// The terminal's windows: each one's name, fault, and when it opened and closed.
    fn windows_summary(&self, o: &mut String) {
        let v = &self.verdicts;
        if v.windows.is_empty() && self.windows_never_opened.is_empty() {
            let _ = writeln!(o, "windows: none opened");
        } else if v.windows.is_empty() {
            let _ = writeln!(
                o,
                "windows: none opened (scheduled: {})",
                self.windows_never_opened.join(", ")
            );
        } else {
            let _ = writeln!(o, "windows:");
            for w in &v.windows {
                let _ = writeln!(
                    o,
                    "  {:<28} {:<9} {} → {}",
                    w.name,
                    w.fault,
                    self.at(w.opened_at),
                    w.closed_at.map_or("still open".to_string(), |t| self.at(t))
                );
            }
            if !self.windows_never_opened.is_empty() {
                let _ = writeln!(
                    o,
                    "  never opened: {}",
                    self.windows_never_opened.join(", ")
                );
            }
        }
    }

    /// The terminal's controller restarts (none: nothing printed).
    fn restarts_summary(&self, o: &mut String) {
        let v = &self.verdicts;
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
                    self.at(r.at),
                    r.down_seconds
                );
            }
        }
    }

    /// The terminal's controller exits and whether each was started again.
    fn exits_summary(&self, o: &mut String) {
        let v = &self.verdicts;
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
                    self.at(e.at),
                    e.controller,
                    e.status,
                    e.ran_seconds,
                    match (e.backoff_seconds, e.back_at()) {
                        (Some(b), Some(back)) =>
                            format!("back-off {b:.1}s, started again at {}", self.at(back)),
                        _ => "not started again".to_string(),
                    }
                );
            }
        }
    }

    /// The terminal's line on the comeback after the last window, when there was one.
    fn comeback_summary(&self, o: &mut String) {
        let Some(c) = &self.verdicts.comeback else {
            return;
        };
        let since = |t: SystemTime| {
            format!(
                "{} ({:.1}s after)",
                self.at(t),
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
            self.at(c.window_closed_at),
            if answered.is_empty() {
                "no client".to_string()
            } else {
                answered.join(", ")
            },
            c.current_at.map_or("not all".to_string(), since)
        );
    }

    /// The terminal's judged objects and their kstatus now.
    fn objects_summary(&self, o: &mut String) {
        let v = &self.verdicts;
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
    }

    /// The terminal's recovery time of each object after each window.
    fn recovery_summary(&self, o: &mut String) {
        let recovered: Vec<String> = self
            .verdicts
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
    }

    /// The terminal's violations, then the rates seen inside windows.
    fn violations_summary(&self, o: &mut String) {
        let v = &self.verdicts;
        if v.violations.is_empty() {
            let _ = writeln!(o, "violations: none");
        } else {
            let _ = writeln!(o, "violations ({}):", v.violations.len());
            for x in &v.violations {
                self.violation_line(o, x, "since");
            }
        }
        if !v.inside_windows.is_empty() {
            let _ = writeln!(
                o,
                "seen inside windows, not violations ({}):",
                v.inside_windows.len()
            );
            for x in &v.inside_windows {
                self.violation_line(o, x, "from");
            }
        }
    }

    /// One line per violation (or per rate seen inside windows), and its why if known.
    fn violation_line(&self, o: &mut String, x: &Violation, when: &str) {
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
            self.at(x.since),
            x.rule
        );
        if let Some(why) = &x.why {
            let _ = writeln!(o, "                why: {why}");
        }
    }

    /// Rebuild a report from a trace file's lines: windows and writes from the request
    /// and window records, verdicts from the verdict records written at the end of the
    /// run. Lines that are not trace records are errors naming the line.
    pub fn from_trace(text: &str) -> Result<Report, String> {
        let mut trace = TraceReader::default();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            trace.line(i + 1, line)?;
        }
        trace.finish()
    }
}

/// What a trace's lines add up to, gathered line by line (`Report::from_trace`).
#[derive(Default)]
struct TraceReader {
    first: Option<SystemTime>,
    last: Option<SystemTime>,
    windows: Vec<WindowSpan>,
    timeline: Vec<Mark>,
    restarts: Vec<RestartMark>,
    exits: Vec<crate::oracle::ExitMark>,
    violations: Vec<Violation>,
    inside_windows: Vec<Violation>,
    judgement: Option<(bool, Option<String>)>,
    lanes: crate::oracle::staleness::Record,
}

/// A record's string field (`""` when missing).
fn text_field(v: &serde_json::Value, k: &str) -> String {
    v[k].as_str().unwrap_or("").to_string()
}

impl TraceReader {
    /// Take in line `n` of the trace, or say why it is not a trace record.
    fn line(&mut self, n: usize, line: &str) -> Result<(), String> {
        let v: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| format!("line {n}: not a JSON trace record: {e}"))?;
        let ts = v["ts"]
            .as_str()
            .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
            .ok_or_else(|| format!("line {n}: no valid \"ts\""))?;
        self.first = Some(self.first.map_or(ts, |f| f.min(ts)));
        self.last = Some(self.last.map_or(ts, |l| l.max(ts)));
        let s = |k: &str| text_field(&v, k);
        match v["kind"].as_str() {
            Some("window") if v["action"] == "open" => self.windows.push(WindowSpan {
                name: s("window"),
                fault: s("fault"),
                opened_at: ts,
                closed_at: None,
            }),
            Some("window") => {
                if let Some(w) = self
                    .windows
                    .iter_mut()
                    .rev()
                    .find(|w| w.name == s("window") && w.closed_at.is_none())
                {
                    w.closed_at = Some(ts);
                }
            }
            Some("request") => self.timeline.extend(write_mark(&v, ts)),
            Some("verdict") => self.violations.push(
                serde_json::from_value(v["violation"].clone())
                    .map_err(|e| format!("line {n}: a verdict record that does not parse: {e}"))?,
            ),
            Some("insideWindow") => {
                self.inside_windows
                    .push(serde_json::from_value(v["violation"].clone()).map_err(|e| {
                        format!("line {n}: an insideWindow record that does not parse: {e}")
                    })?)
            }
            Some("judgement") => {
                self.judgement = Some((
                    v["judged"].as_bool().unwrap_or(false),
                    v["pending"].as_str().map(str::to_string),
                ))
            }
            Some("restart") => self.restarts.push(RestartMark {
                window: s("window"),
                controller: v["controller"].as_str().unwrap_or("controller").to_string(),
                at: ts,
                down_seconds: v["downMs"].as_f64().unwrap_or(0.0) / 1000.0,
            }),
            Some("exit") => self.exits.push(crate::oracle::ExitMark {
                controller: s("controller"),
                at: ts,
                status: s("status"),
                ran_seconds: v["ranMs"].as_f64().unwrap_or(0.0) / 1000.0,
                backoff_seconds: v["backoffMs"].as_f64().map(|b| b / 1000.0),
            }),
            Some("event") => self.event(&v, ts),
            Some("dropped") => {}
            Some(k) => return Err(format!("line {n}: unknown record kind {k:?}")),
            None => return Err(format!("line {n}: no \"kind\"")),
        }
        Ok(())
    }

    /// An event record: what a client was given of an object (other fates and types are
    /// not drawn).
    fn event(&mut self, v: &serde_json::Value, ts: SystemTime) {
        let s = |k: &str| text_field(v, k);
        let (fate, type_) = (s("fate"), s("type"));
        if matches!(fate.as_str(), "delivered" | "held" | "released" | "dropped")
            && matches!(type_.as_str(), "ADDED" | "MODIFIED" | "DELETED")
        {
            let key = crate::oracle::ObjectRef {
                resource: s("resource"),
                namespace: s("namespace"),
                name: s("name"),
            };
            self.lanes.delivery(
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

    /// The report the trace's lines add up to (an error when there were none).
    fn finish(self) -> Result<Report, String> {
        let (Some(start), Some(end)) = (self.first, self.last) else {
            return Err("the trace is empty".into());
        };
        let (judged, pending) = self.judgement.unwrap_or((
            false,
            Some("the trace has no verdicts: the run did not finish".into()),
        ));
        Ok(Report::from_verdicts(
            start,
            end,
            Verdicts {
                judged,
                pending,
                violations: self.violations,
                inside_windows: self.inside_windows,
                windows: self.windows,
                restarts: self.restarts,
                recoveries: vec![],
                exits: self.exits,
                backoff: None,
                comeback: None,
                objects: vec![],
                timeline: self.timeline,
                // The trace has no ground truth: only what clients were given.
                truth: vec![],
                deliveries: self.lanes.delivery_marks(),
            },
        ))
    }
}

/// A request record's mark on the timeline: a write or a 409 on a named object (`None`
/// for anything else, or a verb that does not parse).
fn write_mark(v: &serde_json::Value, ts: SystemTime) -> Option<Mark> {
    let s = |k: &str| text_field(v, k);
    let code = v["code"].as_u64().unwrap_or(0) as u16;
    let Ok(verb) = serde_json::from_value::<Verb>(v["verb"].clone()) else {
        return None;
    };
    if let Some(name) = v["name"].as_str()
        && (verb.is_write() || code == 409)
    {
        let resource = s("resource");
        return Some(Mark {
            at: ts,
            client: s("client"),
            verb,
            resource: resource.split('/').next().unwrap_or("").to_string(),
            namespace: s("namespace"),
            name: name.to_string(),
            code,
        });
    }
    None
}

#[cfg(test)]
mod tests;
