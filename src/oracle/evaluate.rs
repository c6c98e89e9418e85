//! How the oracles are judged: each configured oracle's `judge` in turn (each told
//! whether those before it can judge yet), the violations of deleted objects where they
//! belong, `stalemate_oracle_violations` set by name, and the report's `Verdicts`.

use std::time::SystemTime;

use super::end_state;
use super::hooks::Judging;
use super::name::OracleName;
use super::oracles::{Oracles, State};
use super::verdicts::{Comeback, ObjectStatus, TimeStamp, Verdicts, Violation};

impl Oracles {
    /// The verdicts as of `now`; also sets `stalemate_oracle_violations`.
    pub fn evaluate(&self, now: SystemTime) -> Verdicts {
        let s = self.lock();
        let (judged, pending, violations) = self.judge(&s, now);
        let shared = &s.shared;
        let mut verdicts = Verdicts {
            judged,
            pending,
            violations,
            inside_windows: Vec::new(),
            windows: shared.windows.iter().cloned().collect(),
            restarts: shared.restarts.iter().cloned().collect(),
            exits: shared.exits.iter().cloned().collect(),
            backoff: shared.backoff.clone(),
            comeback: shared.last_close().map(|close| Comeback {
                window_closed_at: close,
                answered: (shared.answered.iter())
                    .map(|(c, t)| (c.clone(), TimeStamp(*t)))
                    .collect(),
                current_at: None,
            }),
            recoveries: Vec::new(),
            objects: (shared.objects.iter())
                .filter(|(_, o)| !o.deleted)
                .filter_map(|(k, o)| {
                    o.verdict.as_ref().map(|v| ObjectStatus {
                        resource: k.resource.clone(),
                        namespace: k.namespace.clone(),
                        name: k.name.clone(),
                        status: v.status,
                        rule: v.rule.clone(),
                    })
                })
                .collect(),
            timeline: shared.marks.iter().cloned().collect(),
            truth: shared.lanes.truth_marks(),
            deliveries: shared.lanes.delivery_marks(),
        };
        // Said where verdicts are reported, not at every look at whether they can be
        // (the recovery oracle's why, the rates seen inside windows).
        let pending = verdicts.pending.clone();
        let j = Judging {
            shared,
            started: self.started,
            now,
            pending: pending.as_deref(),
        };
        for o in &s.oracles {
            o.report(&mut verdicts, &j);
        }
        verdicts
    }

    /// The violations found in the run's end state (the `expected` oracle's; nothing
    /// without one).
    pub fn judge_expected(&self, end: &end_state::State, at: SystemTime) -> Vec<Violation> {
        (self.lock().oracles.iter())
            .flat_map(|o| o.judge_end(end, at))
            .collect()
    }

    /// Whether the convergence oracle can judge now (see [`Oracles::update_gauge`]): a
    /// quiet run ends only then, so a controller backing off after errors gets its
    /// `settle` to recover.
    pub fn can_judge(&self, now: SystemTime) -> bool {
        self.update_gauge(now)
    }

    /// Only set `stalemate_oracle_violations` (for a scrape: no report is built);
    /// returns whether every oracle can judge yet — convergence: no window open, and
    /// either `settle` has passed since the last one closed or every object it judges is
    /// Current.
    pub fn update_gauge(&self, now: SystemTime) -> bool {
        let s = self.lock();
        self.judge(&s, now).0
    }

    /// (judged, why not, violations) as of `now`; sets `stalemate_oracle_violations`.
    /// The oracles judge in order, each told why one before it cannot judge yet; the
    /// violations of objects since deleted come before those of the first oracle that
    /// judges deleted objects (as they were judged by it and its like when they went).
    fn judge(&self, s: &State, now: SystemTime) -> (bool, Option<String>, Vec<Violation>) {
        let mut pending: Option<String> = None;
        let mut violations = Vec::new();
        let mut settled = Some(&s.shared.settled);
        for o in &s.oracles {
            if o.judges_deleted()
                && let Some(settled) = settled.take()
            {
                violations.extend(settled.iter().cloned());
            }
            let j = o.judge(&Judging {
                shared: &s.shared,
                started: self.started,
                now,
                pending: pending.as_deref(),
            });
            pending = pending.or(j.pending);
            violations.extend(j.violations);
        }
        violations.extend(settled.into_iter().flatten().cloned());
        for oracle in OracleName::ALL.into_iter().filter(|o| o.gauged()) {
            self.violations_gauge
                .with_label_values(&[oracle.as_str()])
                .set(violations.iter().filter(|v| v.oracle == oracle).count() as i64);
        }
        (pending.is_none(), pending, violations)
    }
}
