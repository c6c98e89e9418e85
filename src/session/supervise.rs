//! The session's processes — the controller, and the workload once the controller has
//! settled — run until the run ends: the controller exits, the caller stops it, the
//! duration is up, or nothing has happened for `quiet` (`activity.rs`) and the oracles
//! can judge (everything Current, or the convergence oracle's `settle` has passed since
//! the last window closed).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};

use super::activity::Activity;
use super::options::{End, Options};
use super::outcome::Ended;
use crate::process::{Controller, Exit, Spec};
use crate::trace::Record;

/// How long a run goes on after `stop_early` first says it may end.
const EARLY_GRACE: Duration = Duration::from_secs(1);

/// How often a quiet run's end state is read while `end_state` says it is not right yet.
const END_STATE_EVERY: Duration = Duration::from_secs(1);

/// How often the controller's metrics are sampled for their retries' history.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// How long one read of the end state may take before the run is judged as it is.
const END_STATE_READ: Duration = Duration::from_secs(10);

/// How long the controller must have been idle, by the proxy's account, before its
/// metrics may end a run that has not been quiet for `quiet` yet: the watch events of its
/// own last writes (what would wake it again) reach it well within this.
const SETTLED_AFTER: Duration = Duration::from_millis(250);

/// Another controller to start beside the first (`Options::others`).
pub(super) struct OtherStart {
    pub name: String,
    pub command: String,
    pub kubeconfig: PathBuf,
    pub env: Vec<(OsString, OsString)>,
}

/// The controller, started, and how to start the workload.
pub(super) struct Supervised {
    pub controller: Arc<Controller>,
    /// The other controllers, by name.
    pub others: Vec<(String, Arc<Controller>)>,
    pub started: SystemTime,
    program: String,
    /// The workload's steps, and the kubeconfig they use.
    workload: Option<(Vec<String>, PathBuf)>,
    env: Vec<(OsString, OsString)>,
    last_restart: super::activity::Restarts,
    /// `--idle-url` (or the run's metrics port, probed), its port filled in.
    idle_url: Option<super::idle::IdleUrl>,
    /// Ground truth, for `end_state`.
    upstream: kube::Client,
}

/// What the loop keeps between looks.
struct Watching {
    clock: Instant,
    activity: Activity,
    /// The step running (or the last one run).
    workload: Option<Arc<Controller>>,
    /// How many steps have been started.
    steps_started: usize,
    /// When the step running started (and so when the one before ended).
    step_done_at: Option<SystemTime>,
    workload_exit: Option<i32>,
    workload_done_at: Option<SystemTime>,
    /// When `stop_early` first said the run may end.
    early: Option<Instant>,
    /// When the end state was last read for `end_state`.
    end_checked: Option<Instant>,
    /// Quiet by the proxy's account at the last look (workload done, no window open).
    quiet: bool,
    /// When the controllers' metrics said they had settled, while quiet since.
    settled: Option<SystemTime>,
    /// What the metrics said at this look's sample (None: not sampled at this look).
    sample: Option<super::idle::Look>,
    /// When the metrics were last sampled for their retries' history, and how long
    /// until the next sample.
    sampled: Option<(Instant, Duration)>,
    /// When every controller was first ready.
    ready_at: Option<Instant>,
    /// How long the controllers had been idle at the last look.
    idle: Duration,
}

impl Watching {
    fn new(activity: Activity) -> Watching {
        Watching {
            clock: Instant::now(),
            activity,
            workload: None,
            steps_started: 0,
            step_done_at: None,
            workload_exit: None,
            workload_done_at: None,
            early: None,
            end_checked: None,
            quiet: false,
            settled: None,
            sample: None,
            sampled: None,
            ready_at: None,
            idle: Duration::ZERO,
        }
    }
}

/// How the run ended.
pub(super) struct Ending {
    pub ended: Ended,
    pub controller_failed: Option<String>,
    pub workload_exit: Option<i32>,
    pub workload: Option<Arc<Controller>>,
    /// Where its time went (ready, work, quiet: the supervisor's share).
    pub phases: super::outcome::Phases,
    pub seconds: f64,
}

/// Start the other controllers under test (`--controller NAME=CMD`), each through a
/// shell with its own kubeconfig; one that cannot start stops every one started (the
/// controller too) and is an error.
fn start_others(
    o: &Options,
    running: &crate::server::Running,
    others: Vec<OtherStart>,
    controller: &Arc<Controller>,
    last_restart: &super::activity::Restarts,
) -> Result<Vec<(String, Arc<Controller>)>> {
    let mut started_others: Vec<(String, Arc<Controller>)> = Vec::new();
    for c in others {
        let sh = vec!["-c".to_string(), c.command.clone()];
        let mut spec = spec(o, &c.env, "sh".into(), sh, &c.kubeconfig);
        spec.output = o
            .output
            .as_deref()
            .map(|p| super::options::other_log(p, &c.name));
        let p = match Controller::spawn(spec) {
            Ok(p) => p,
            Err(e) => {
                for p in std::iter::once(controller).chain(started_others.iter().map(|(_, p)| p)) {
                    p.stopping();
                    p.signal(libc::SIGKILL);
                }
                anyhow::bail!(
                    "cannot start controller {:?} ({:?}): {e}",
                    c.name,
                    c.command
                );
            }
        };
        hear_restarts(&p, &c.name, running, last_restart);
        hear_exits(&p, &c.name, running, last_restart);
        if let Some(policy) = o.restart_crashed {
            p.restart_crashed(policy);
        }
        started_others.push((c.name, p));
    }
    Ok(started_others)
}

impl Supervised {
    /// Start the controller with `KUBECONFIG` at the proxy and the upstream's `env`; its
    /// restarts (by `restart` windows) go to the oracles and the trace.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        o: &Options,
        running: &crate::server::Running,
        upstream: &kube::Client,
        kubeconfig: &Path,
        workload_kubeconfig: Option<PathBuf>,
        env: Vec<(OsString, OsString)>,
        others: Vec<OtherStart>,
        idle_url: Option<super::idle::IdleUrl>,
    ) -> Result<Supervised> {
        let Some((program, args)) = o.controller.split_first() else {
            anyhow::bail!("nothing to run: give the controller after --")
        };
        let started = SystemTime::now();
        let controller =
            Controller::spawn(spec(o, &env, program.clone(), args.to_vec(), kubeconfig))
                .map_err(|e| anyhow::anyhow!("cannot start {program:?}: {e}"))?;
        // Restarts are activity: the controller comes back and reconciles again.
        let last_restart = super::activity::Restarts::default();
        hear_restarts(
            &controller,
            super::names::CONTROLLER,
            running,
            &last_restart,
        );
        hear_exits(
            &controller,
            super::names::CONTROLLER,
            running,
            &last_restart,
        );
        let started_others = start_others(o, running, others, &controller, &last_restart)?;
        running.process.fill(Arc::new(super::outside::Outside {
            controller: controller.clone(),
            others: started_others.clone(),
            client: upstream.clone(),
        }));
        if let Some(policy) = o.restart_crashed {
            controller.restart_crashed(policy);
            running.oracles.set_backoff(policy.describe());
        }
        Ok(Supervised {
            controller,
            others: started_others,
            started,
            program: program.clone(),
            workload: workload_kubeconfig
                .filter(|_| !o.workload.is_empty())
                .map(|kc| (o.workload.clone(), kc)),
            env,
            last_restart,
            idle_url,
            upstream: upstream.clone(),
        })
    }

    /// Until the run ends (see the module docs).
    pub async fn until_end(&self, o: &Options, running: &crate::server::Running) -> Result<Ending> {
        let mut st = Watching::new(Activity::new(
            running,
            self.last_restart.clone(),
            self.others.iter().map(|(n, _)| n.as_str()),
        ));
        let mut interrupted = std::pin::pin!(interruption(o));
        let (ended, controller_failed) = loop {
            tokio::select! {
                exit = self.controller.exited() => {
                    break (Ended::ControllerExited, self.controller_failed(o, exit));
                }
                (name, exit) = self.other_exited() => {
                    let failed = match exit {
                        _ if o.restart_crashed.is_some() => format!("controller {name:?} kept exiting (a crash loop)"),
                        Exit::Exited(s) => format!("controller {name:?} exited with {s}"),
                        Exit::Failed(e) => format!("controller {name:?}: {e}"),
                    };
                    break (Ended::ControllerExited, Some(failed));
                }
                _ = &mut interrupted => break (Ended::Interrupted, None),
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
            self.sample_queues(&mut st).await;
            let look = self.look(o, running, &mut st)?;
            if !st.quiet && st.settled.take().is_some() {
                running.oracles.controller_settled(None);
            }
            match look {
                // Quiet by the proxy's account: the controller's queues must say so too.
                Some(Ended::Quiet) if !self.queues_idle().await? => {}
                Some(Ended::Quiet) if !self.end_state_settled(o, running, &mut st).await => {
                    self.settle_by_metrics(o, running, &mut st).await?
                }
                Some(ended) => break (ended, None),
                None if st.quiet => self.settle_by_metrics(o, running, &mut st).await?,
                None if self.settled_early(o, running, &mut st).await => {
                    break (Ended::Settled, None);
                }
                None => {}
            }
        };
        let seconds = st.clock.elapsed().as_secs_f64();
        let ready = st
            .ready_at
            .map_or(seconds, |t| t.duration_since(st.clock).as_secs_f64());
        let quiet = st.idle.as_secs_f64().min(seconds - ready);
        Ok(Ending {
            ended,
            controller_failed,
            workload_exit: st.workload_exit,
            workload: st.workload,
            phases: super::outcome::Phases {
                ready,
                work: seconds - ready - quiet,
                quiet,
                ..Default::default()
            },
            seconds,
        })
    }

    /// What the controller's exit says of it: nothing when it exited 0, else how it failed
    /// (restarted after each exit, a crash loop).
    fn controller_failed(&self, o: &Options, exit: Exit) -> Option<String> {
        let program = &self.program;
        let crashes = self.controller.crashes();
        match exit {
            _ if o.restart_crashed.is_some() && !crashes.is_empty() => Some(format!(
                "{program:?} kept exiting: {} exits ({}), restarted with a back-off after each as kubelet would",
                crashes.len(),
                crashes
                    .iter()
                    .map(|c| c.status.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Exit::Exited(s) if s.success() => None,
            Exit::Exited(s) => Some(format!("{program:?} exited with {s}")),
            Exit::Failed(e) => Some(format!("{program:?}: {e}")),
        }
    }

    /// One look at the run (every 50 ms): the workload's exit, or its start once the
    /// controller has settled; whether the run may end.
    fn look(
        &self,
        o: &Options,
        running: &crate::server::Running,
        st: &mut Watching,
    ) -> Result<Option<Ended>> {
        let now = SystemTime::now();
        if !st.activity.started() && st.clock.elapsed() >= o.start_timeout {
            self.controller.stopping();
            self.controller.signal(libc::SIGKILL);
            anyhow::bail!(
                "the controller made no request within {} (--start-timeout): is it running, and does it use the KUBECONFIG stalemate gives it?{}",
                humantime::format_duration(o.start_timeout),
                o.output
                    .as_ref()
                    .map(|p| format!(" Its output: {}", p.display()))
                    .unwrap_or_default()
            );
        }
        self.step_ended(st, now);
        if let Some(at) = st.workload_done_at {
            running.oracles.workload_done(at);
        }
        let idle = st
            .activity
            .idle_for(now, st.workload_done_at.or(st.step_done_at));
        st.idle = idle;
        if st.ready_at.is_none() && st.activity.ready() {
            st.ready_at = Some(Instant::now());
        }
        if self.next_step(o, st, idle)? {
            return Ok(None);
        }
        // Stop early a second after `stop_early` first says so: ground truth, a watch
        // behind a write storm, catches up with the writes it judges (the hot loop's
        // churning fields come from it).
        if let Some(stop) = &o.stop_early
            && stop(&running.oracles)
            && st.early.get_or_insert_with(Instant::now).elapsed() >= EARLY_GRACE
        {
            return Ok(Some(Ended::Early));
        }
        Ok(self.end_by_rule(o, running, st, idle, now))
    }

    /// The workload step running has exited: the workload is done after its last step,
    /// or a step that failed (what follows it assumed it worked).
    fn step_ended(&self, st: &mut Watching, now: SystemTime) {
        let steps = self.workload.as_ref().map_or(0, |(s, _)| s.len());
        if let (Some(w), None) = (&st.workload, st.workload_done_at)
            && st.step_done_at.is_none()
            && let Some(exit) = w.exit_now()
        {
            let code = exit_code(exit);
            if code != 0 || st.steps_started == steps {
                st.workload_exit = Some(code);
                st.workload_done_at = Some(now);
            } else {
                st.step_done_at = Some(now);
            }
        }
    }

    /// Start the next workload step once the controller has settled (or halfway to the
    /// cap); the first, where asked, only once it has written something. Whether one
    /// started.
    fn next_step(&self, o: &Options, st: &mut Watching, idle: Duration) -> Result<bool> {
        let Some((cmds, kc)) = &self.workload else {
            return Ok(false);
        };
        if st.workload_done_at.is_some() || (st.workload.is_some() && st.step_done_at.is_none()) {
            return Ok(false);
        }
        let cap = match o.end {
            End::Quiet { max_run, .. } | End::After(max_run) => max_run / 2,
            End::ControllerExit => Duration::MAX,
        };
        let acted =
            st.steps_started > 0 || !o.first_step_after_a_write || st.activity.controller_wrote();
        if !((idle >= o.settle_before_workload && acted) || st.clock.elapsed() >= cap) {
            return Ok(false);
        }
        let cmd = &cmds[st.steps_started];
        let sh = vec!["-c".to_string(), cmd.clone()];
        // The workload's output in a file of its own, beside the controller's: what
        // kubectl said when a step failed is then the workload's alone.
        let mut spec = spec(o, &self.env, "sh".into(), sh, kc);
        spec.output = o.output.as_deref().map(super::options::workload_log);
        let w = Controller::spawn(spec).with_context(|| format!("starting the workload {cmd:?}"));
        match w {
            Ok(w) => {
                st.workload = Some(w);
                st.steps_started += 1;
                st.step_done_at = None;
                Ok(true)
            }
            Err(e) => {
                self.controller.stopping();
                self.controller.signal(libc::SIGKILL);
                Err(e)
            }
        }
    }

    /// Whether the run ends by its `End` rule now.
    fn end_by_rule(
        &self,
        o: &Options,
        running: &crate::server::Running,
        st: &mut Watching,
        idle: Duration,
        now: SystemTime,
    ) -> Option<Ended> {
        match o.end {
            End::After(d) if st.clock.elapsed() >= d => Some(Ended::Duration),
            End::Quiet { quiet, max_run } => {
                let workload_done = self.workload.is_none() || st.workload_done_at.is_some();
                // Quiet, and the oracles can judge: a controller that is not Current yet
                // is given the convergence oracle's `settle` (after the last window) to
                // recover, so one waiting out a retry back-off is not called stuck. That
                // wait ends by itself (at `settle`), so `max_run`, which caps a
                // controller that never goes quiet, does not cut it short — up to twice
                // `max_run`, a hard limit whatever `settle` says.
                let quiet_now = workload_done && idle >= quiet && st.activity.no_window_open();
                st.quiet = quiet_now;
                let elapsed = st.clock.elapsed();
                // Twice max_run is the hard limit, first: a run quiet by the proxy's
                // account whose controller's metrics never say idle (Karpenter's
                // provisioner waits inside its work item, its unfinished-work gauge never
                // 0) would otherwise be "quiet, but the queues are not" for ever.
                if elapsed >= max_run * 2 {
                    Some(Ended::MaxRun)
                } else if quiet_now && running.oracles.can_judge(now) {
                    Some(Ended::Quiet)
                } else if elapsed >= max_run && !quiet_now {
                    Some(Ended::MaxRun)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// Whether a quiet run's end state may be judged now: nothing asked of it, `settle`
    /// has passed since the last window closed (or the start), or it is what it should
    /// be. Read at most once every [`END_STATE_EVERY`]; one that cannot be read is
    /// judged as it is (the run's own snapshot says what it can).
    async fn end_state_settled(
        &self,
        o: &Options,
        running: &crate::server::Running,
        st: &mut Watching,
    ) -> bool {
        let Some(check) = &o.end_state else {
            return true;
        };
        if st.settled.is_some() {
            return true;
        }
        let since = running.oracles.settle_from().unwrap_or(self.started);
        if SystemTime::now() >= since + check.settle {
            return true;
        }
        if st
            .end_checked
            .is_some_and(|t| t.elapsed() < END_STATE_EVERY)
        {
            return false;
        }
        st.end_checked = Some(Instant::now());
        let read = super::snapshot::take(&self.upstream, &o.extent_hint);
        match tokio::time::timeout(END_STATE_READ, read).await {
            Ok(Ok(snapshot)) => (check.ok)(&snapshot),
            Ok(Err(e)) => {
                tracing::debug!(error = %format!("{e:#}"), "end state unread; judged as it is");
                true
            }
            Err(_) => true,
        }
    }

    /// What `--idle-url` says (idle when there is none).
    async fn queues_idle(&self) -> Result<bool> {
        Ok(self.queues().await?.is_none_or(|l| l.idle))
    }

    /// When the controller after `--` was last restarted (None: never).
    fn restarted_at(&self) -> Option<SystemTime> {
        self.last_restart
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(super::names::CONTROLLER)
            .copied()
    }

    /// One look at the controller's queues (None: no metrics read).
    async fn queues(&self) -> Result<Option<super::idle::Look>> {
        let Some(url) = &self.idle_url else {
            return Ok(None);
        };
        let restarted = self.restarted_at();
        url.restarted(restarted);
        let look = url.look(restarted.is_some()).await;
        look.map(Some).map_err(|e| e.context("--idle-url"))
    }

    /// The metrics sampled while the run goes on: a retry is only seen pending if a
    /// sample falls between it and its coming back (`idle.rs`). Every [`SAMPLE_EVERY`],
    /// or less often where one read takes long: kube-controller-manager's page is ~400 KB
    /// (51 queues and much else), which it renders for each read — the controller under
    /// test is not to spend more than a twentieth of its time on being watched.
    async fn sample_queues(&self, st: &mut Watching) {
        st.sample = None;
        let Some(url) = &self.idle_url else { return };
        if st.sampled.is_some_and(|(at, every)| at.elapsed() < every) {
            return;
        }
        let at = Instant::now();
        url.restarted(self.restarted_at());
        st.sample = url.observe().await;
        st.sampled = Some((at, SAMPLE_EVERY.max(at.elapsed() * 20)));
    }

    /// Idle for less than `quiet`, but done: the controller's metrics, sampled
    /// [`SETTLED_AFTER`] or more after its last write or window, say it has settled
    /// (queues empty, no retry pending) after work (an item added to a queue of this
    /// process: empty queues before its caches sync say nothing), the convergence oracle can judge (every object
    /// it judges Current, or `settle` past), and the end state is already what `end_state` wants (read at most once
    /// every [`END_STATE_EVERY`]). What `quiet` waits for — the controller's next move —
    /// is then only what something outside it asks, or an interval timer (a
    /// `RequeueAfter`, which controller-runtime counts as a success), and an interval
    /// would only find a right end state right again. An end state not right yet, or
    /// unread, waits for `quiet` as before (`--wait-settle` always does).
    async fn settled_early(
        &self,
        o: &Options,
        running: &crate::server::Running,
        st: &mut Watching,
    ) -> bool {
        let workload_done = self.workload.is_none() || st.workload_done_at.is_some();
        let settled = st.sample.is_some_and(|l| l.settled && l.worked);
        if !matches!(o.end, End::Quiet { .. })
            || o.wait_settle
            || o.whole_quiet
            || !settled
            || !workload_done
            || st.idle < SETTLED_AFTER
            || !st.activity.no_window_open()
            || st
                .end_checked
                .is_some_and(|t| t.elapsed() < END_STATE_EVERY)
            || !running.oracles.can_judge(SystemTime::now())
        {
            return false;
        }
        let Some(check) = &o.end_state else {
            return true;
        };
        st.end_checked = Some(Instant::now());
        let read = super::snapshot::take(&self.upstream, &o.extent_hint);
        matches!(tokio::time::timeout(END_STATE_READ, read).await, Ok(Ok(s)) if (check.ok)(&s))
    }

    /// Quiet, but not judged yet (an object not right, inside `settle`): when the
    /// controller's metrics say it has settled — its queues empty, no retry pending —
    /// nothing more is coming from it, and the oracles judge now instead of waiting out
    /// `settle` for a back-off that is not there.
    async fn settle_by_metrics(
        &self,
        o: &Options,
        running: &crate::server::Running,
        st: &mut Watching,
    ) -> Result<()> {
        if st.settled.is_some() || o.wait_settle {
            return Ok(());
        }
        if self.queues().await?.is_some_and(|l| l.settled) {
            let now = SystemTime::now();
            st.settled = Some(now);
            running.oracles.controller_settled(Some(now));
        }
        Ok(())
    }

    /// The first of the other controllers to end on its own (never, with none).
    async fn other_exited(&self) -> (String, Exit) {
        if self.others.is_empty() {
            return std::future::pending().await;
        }
        let exits = self
            .others
            .iter()
            .map(|(name, p)| Box::pin(async move { (name.clone(), p.exited().await) }));
        futures_util::future::select_all(exits).await.0
    }

    /// Stop the controllers and the workload: SIGTERM, then SIGKILL after 5 s.
    pub async fn stop(&self, workload: Option<&Arc<Controller>>) {
        let others = self.others.iter().map(|(_, p)| p);
        for p in std::iter::once(&self.controller)
            .chain(others)
            .chain(workload)
        {
            p.stopping();
            if p.exit_now().is_none() {
                p.signal(libc::SIGTERM);
                if tokio::time::timeout(Duration::from_secs(5), p.exited())
                    .await
                    .is_err()
                {
                    p.signal(libc::SIGKILL);
                    let _ = tokio::time::timeout(Duration::from_secs(2), p.exited()).await;
                }
            }
        }
    }
}

/// A `restart` window's kill, to the oracles and the trace, naming the controller.
fn hear_restarts(
    p: &Arc<Controller>,
    name: &str,
    running: &crate::server::Running,
    last_restart: &super::activity::Restarts,
) {
    let (oracles, trace) = (running.oracles.clone(), running.trace());
    let (c, last, name) = (p.clone(), last_restart.clone(), name.to_string());
    p.on_restart(Box::new(move |window, at, down| {
        oracles.on_restart(window, &name, at, down);
        last.lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.clone(), at + down);
        trace.record(Record::Restart {
            window: window.to_string(),
            controller: name.clone(),
            down_ms: down.as_secs_f64() * 1000.0,
            pid: c.pid(),
        });
    }));
}

/// Tell the oracles (the report's exits, the recovery oracle's why), the trace and the
/// run's quiet of a controller's exits on its own: a back-off is not quiet, the
/// controller is coming back.
fn hear_exits(
    p: &Arc<Controller>,
    name: &str,
    running: &crate::server::Running,
    last_restart: &super::activity::Restarts,
) {
    let (oracles, trace) = (running.oracles.clone(), running.trace());
    let (last, name) = (last_restart.clone(), name.to_string());
    p.on_exit(Box::new(move |crash, pid| {
        oracles.on_exit(&name, crash.at, &crash.status, crash.ran, crash.backoff);
        if let Some(b) = crash.backoff {
            last.lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(name.clone(), crash.at + b);
            let oracles = oracles.clone();
            tokio::spawn(async move {
                tokio::time::sleep(b).await;
                oracles.on_started_again();
            });
        }
        trace.record(Record::Exit {
            controller: name.clone(),
            status: crash.status.clone(),
            ran_ms: crash.ran.as_secs_f64() * 1000.0,
            backoff_ms: crash.backoff.map(|b| b.as_secs_f64() * 1000.0),
            pid,
        });
    }));
}

/// How a process is started: `KUBECONFIG` at its listener, the upstream's environment,
/// and no in-cluster variables (client-go would prefer them).
fn spec(
    o: &Options,
    env: &[(OsString, OsString)],
    program: String,
    args: Vec<String>,
    kubeconfig: &Path,
) -> Spec {
    let mut env = env.to_vec();
    env.push(("KUBECONFIG".into(), kubeconfig.as_os_str().to_owned()));
    Spec {
        program,
        args,
        env,
        env_remove: vec![
            "KUBERNETES_SERVICE_HOST".into(),
            "KUBERNETES_SERVICE_PORT".into(),
        ],
        output: o.output.clone(),
    }
}

/// Resolves when the run is to stop from outside: the caller's stop (SIGINT/SIGTERM).
pub(super) async fn interruption(o: &Options) {
    if let Some(c) = &o.cancel {
        let mut c = c.clone();
        if c.wait_for(|stop| *stop).await.is_err() {
            std::future::pending::<()>().await
        }
    } else {
        std::future::pending().await
    }
}

/// A process's exit as a shell would report it (128 + signal).
fn exit_code(exit: Exit) -> i32 {
    match exit {
        Exit::Exited(s) => {
            use std::os::unix::process::ExitStatusExt;
            s.code().or(s.signal().map(|n| 128 + n)).unwrap_or(-1)
        }
        Exit::Failed(_) => 127,
    }
}
