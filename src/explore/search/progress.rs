//! Progress: a bar on a terminal (trials done of planned, findings so far, ETA), a line
//! per trial otherwise.

use std::time::Duration;

use crate::explore::record::{Trial, TrialVerdict};

/// Progress: a bar on a terminal, a line per trial otherwise.
pub(super) struct Progress {
    bar: Option<indicatif::ProgressBar>,
    want_bar: bool,
}

impl Progress {
    pub(super) fn new(want_bar: bool) -> Progress {
        Progress {
            bar: None,
            want_bar,
        }
    }

    pub(super) fn start(&mut self, planned: u64) {
        if self.want_bar {
            let bar = indicatif::ProgressBar::new(planned);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{spinner} trials {pos}/{len} [{bar:30}] {msg} (ETA {eta})",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message("0 findings");
            bar.enable_steady_tick(Duration::from_millis(200));
            self.bar = Some(bar);
        }
    }

    /// More trials planned (a sequence's, once its references have run).
    pub(super) fn more(&self, n: u64) {
        if let Some(b) = &self.bar {
            b.inc_length(n);
        }
    }

    pub(super) fn say(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
    }

    pub(super) fn trial(&self, t: &Trial, findings: usize) {
        let what = match t.verdict {
            TrialVerdict::Fail => format!(
                "FAIL: {}",
                t.found.first().map(|f| f.message.as_str()).unwrap_or("")
            ),
            TrialVerdict::Error => format!("error: {}", t.error.as_deref().unwrap_or("")),
            TrialVerdict::Pass => "pass".to_string(),
        };
        // What the faults did: a pass whose window never opened says nothing.
        let what = match &t.effect {
            Some(e) => format!("{what} ({})", e.describe()),
            None => what,
        };
        // Exits the controller came back from are not findings, but worth saying.
        let what = match t.exits.as_slice() {
            [] => what,
            exits => format!(
                "{what} (the controller exited {}× and was restarted: {})",
                exits.len(),
                exits.join("; ")
            ),
        };
        match &self.bar {
            Some(b) => {
                if t.shrinking.is_none() {
                    b.inc(1);
                }
                b.set_message(format!(
                    "{findings} finding{}",
                    if findings == 1 { "" } else { "s" }
                ));
                let unexercised = t.effect.as_ref().is_some_and(|e| !e.exercised());
                if t.verdict != TrialVerdict::Pass || !t.exits.is_empty() || unexercised {
                    b.println(format!(
                        "trial {}: {}{} → {what}",
                        t.id,
                        t.actions
                            .as_ref()
                            .map(|a| format!("[{a}] "))
                            .unwrap_or_default(),
                        t.plan
                    ));
                }
            }
            None => eprintln!(
                "trial {} ({:.1}s): {}{} → {what}",
                t.id,
                t.seconds,
                t.actions
                    .as_ref()
                    .map(|a| format!("[{a}] "))
                    .unwrap_or_default(),
                t.plan
            ),
        }
    }

    pub(super) fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
