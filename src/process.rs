//! The controller process stalemate runs (`run`, `explore`): started with its
//! environment (a `KUBECONFIG` pointing at the proxy), signalled on request, killed and
//! started again by `restart` windows — and its own exit told apart from those kills, so
//! a run's verdict is the oracles', not the crash stalemate caused.
//!
//! ```text
//!  spawn ─► child #1 ─┬─ exits on its own ─► exited() resolves (the run ends)
//!                     │   (or, supervised as a Deployment would: back-off ─► child #2;
//!                     │    a crash loop — too many exits — ends the run)
//!                     └─ restart window ──► SIGKILL (expected) ─► down ─► child #2 ─► …
//! ```

use std::ffi::OsString;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

/// How to start the controller, every time.
#[derive(Debug, Clone)]
pub struct Spec {
    pub program: String,
    pub args: Vec<String>,
    /// Set in its environment.
    pub env: Vec<(OsString, OsString)>,
    /// Removed from its environment.
    pub env_remove: Vec<String>,
    /// Append its stdout and stderr to this file (default: inherit stalemate's).
    pub output: Option<std::path::PathBuf>,
}

/// How a run's controller ended.
#[derive(Debug, Clone)]
pub enum Exit {
    Exited(ExitStatus),
    /// It could not be started (again).
    Failed(String),
}

/// Who hears of restarts (the oracles and the trace).
pub type OnRestart = Box<dyn Fn(&str, SystemTime, Duration) + Send + Sync>;

/// Who hears of exits on its own (the oracles, the trace, the run's quiet).
pub type OnExit = Box<dyn Fn(&Crash, u32) + Send + Sync>;

/// Restart a controller that exits on its own, as kubelet restarts a Deployment's
/// container (`CrashLoopBackOff`, `pkg/kubelet/kuberuntime`): after `backoff`, doubling
/// with each exit up to `max_backoff`; a container that ran `reset_after` before it
/// exited starts again from `backoff`. kubelet never gives up; a run may
/// (`give_up_after` exits in a row: a crash loop ends it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrashPolicy {
    pub backoff: Duration,
    pub max_backoff: Duration,
    pub reset_after: Duration,
    pub give_up_after: Option<usize>,
}

impl CrashPolicy {
    /// kubelet's: 10 s doubling to 5 min, reset after 10 min of running.
    pub const KUBELET: CrashPolicy = CrashPolicy {
        backoff: Duration::from_secs(10),
        max_backoff: Duration::from_secs(300),
        reset_after: Duration::from_secs(600),
        give_up_after: None,
    };

    /// The back-off before the next start after the `n`-th exit in a row (1, 2, …).
    pub fn delay(&self, n: usize) -> Duration {
        let factor = 1u32 << n.saturating_sub(1).min(16);
        self.backoff.saturating_mul(factor).min(self.max_backoff)
    }

    /// As the report says it: `10s doubling to 5m, reset after 10m running`.
    pub fn describe(&self) -> String {
        let d = |d: Duration| humantime::format_duration(d).to_string();
        let kubelet = if self.backoff == Self::KUBELET.backoff
            && self.max_backoff == Self::KUBELET.max_backoff
            && self.reset_after == Self::KUBELET.reset_after
        {
            " (kubelet's)"
        } else {
            " (shortened from kubelet's 10s doubling to 5m)"
        };
        format!(
            "{} doubling to {}, reset after {} running{kubelet}{}",
            d(self.backoff),
            d(self.max_backoff),
            d(self.reset_after),
            self.give_up_after
                .map(|n| format!("; {n} exits in a row end the run as a crash loop"))
                .unwrap_or_default()
        )
    }
}

impl Default for CrashPolicy {
    fn default() -> CrashPolicy {
        CrashPolicy::KUBELET
    }
}

/// One exit of the controller on its own.
#[derive(Debug, Clone)]
pub struct Crash {
    pub at: SystemTime,
    /// `exit status: 1`, `signal: 6 (SIGABRT)`.
    pub status: String,
    /// How long that child had run.
    pub ran: Duration,
    /// The back-off waited before it was started again (`None`: it was not: a crash
    /// loop given up on, or the run ended first).
    pub backoff: Option<Duration>,
}

pub struct Controller {
    spec: Spec,
    me: Weak<Controller>,
    pid: AtomicU32,
    /// Which child is running (1, 2, …).
    generation: AtomicU64,
    /// The child whose exit stalemate caused (it is not the run's end).
    killed: AtomicU64,
    exit: watch::Sender<Option<Exit>>,
    /// Restarts happen one at a time.
    restarting: tokio::sync::Mutex<()>,
    on_restart: std::sync::OnceLock<OnRestart>,
    on_exit: std::sync::OnceLock<OnExit>,
    restarts: AtomicU64,
    crash_policy: std::sync::OnceLock<CrashPolicy>,
    crashes: Mutex<Vec<Crash>>,
    /// Exits in a row (reset by a child that ran the policy's `reset_after`).
    in_a_row: AtomicU64,
    /// When the current child started.
    child_started: Mutex<std::time::Instant>,
    /// Being stopped: an exit now is the end, not a crash.
    stopping: AtomicBool,
}

impl Controller {
    /// Start the controller.
    pub fn spawn(spec: Spec) -> std::io::Result<Arc<Controller>> {
        let c = Arc::new_cyclic(|me| Controller {
            spec,
            me: me.clone(),
            pid: AtomicU32::new(0),
            generation: AtomicU64::new(0),
            killed: AtomicU64::new(0),
            exit: watch::channel(None).0,
            restarting: tokio::sync::Mutex::new(()),
            on_restart: std::sync::OnceLock::new(),
            on_exit: std::sync::OnceLock::new(),
            restarts: AtomicU64::new(0),
            crash_policy: std::sync::OnceLock::new(),
            crashes: Mutex::new(Vec::new()),
            in_a_row: AtomicU64::new(0),
            child_started: Mutex::new(std::time::Instant::now()),
            stopping: AtomicBool::new(false),
        });
        c.start_child()?;
        Ok(c)
    }

    /// Tell `f` of every restart: (window, when, down).
    pub fn on_restart(&self, f: OnRestart) {
        let _ = self.on_restart.set(f);
    }

    /// Tell `f` of every exit on its own (with the pid that exited), restarted or not.
    pub fn on_exit(&self, f: OnExit) {
        let _ = self.on_exit.set(f);
    }

    /// Restarts so far.
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// Restart it when it exits on its own, by `policy`.
    pub fn restart_crashed(&self, policy: CrashPolicy) {
        let _ = self.crash_policy.set(policy);
    }

    /// Its exits on its own so far (each followed by a restart, but for a crash loop's
    /// last).
    pub fn crashes(&self) -> Vec<Crash> {
        self.crashes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// It is being stopped: its exit ends it, whatever the crash policy.
    pub fn stopping(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// An exit on its own: restarted after a back-off if supervised so (returns true),
    /// else (or once it is a crash loop) the end.
    fn crashed(self: &Arc<Self>, exit: &Exit, generation: u64) -> bool {
        let Some(policy) = self.crash_policy.get().copied() else {
            return false;
        };
        if self.stopping.load(Ordering::SeqCst) {
            return false;
        }
        let ran = self
            .child_started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .elapsed();
        if ran >= policy.reset_after {
            self.in_a_row.store(0, Ordering::SeqCst);
        }
        let n = self.in_a_row.fetch_add(1, Ordering::SeqCst) as usize + 1;
        let give_up = policy.give_up_after.is_some_and(|g| n >= g);
        let delay = policy.delay(n);
        let crash = Crash {
            at: SystemTime::now(),
            status: describe(exit),
            ran,
            backoff: (!give_up).then_some(delay),
        };
        if let Some(f) = self.on_exit.get() {
            f(&crash, self.pid());
        }
        self.crashes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(crash);
        if give_up {
            return false;
        }
        let me = self.clone();
        tokio::spawn(async move {
            let _one_at_a_time = me.restarting.lock().await;
            if me.generation.load(Ordering::SeqCst) != generation {
                return; // a restart window started it again meanwhile
            }
            me.restarts.fetch_add(1, Ordering::Relaxed);
            tracing::info!(
                exits = n,
                ?delay,
                "the controller exited; starting it again"
            );
            let back = tokio::time::Instant::now() + delay;
            while tokio::time::Instant::now() < back && !me.stopping.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            if me.stopping.load(Ordering::SeqCst) {
                me.exit
                    .send_replace(Some(Exit::Failed("stopped while restarting".into())));
                return;
            }
            if let Err(e) = me.start_child() {
                me.exit.send_replace(Some(Exit::Failed(format!(
                    "starting it again after it exited: {e}"
                ))));
            }
        });
        true
    }

    fn start_child(&self) -> std::io::Result<()> {
        let mut cmd = tokio::process::Command::new(&self.spec.program);
        // Its own process group: a signal reaches what it started too (a shell's
        // children, a wrapper's controller), so nothing it started outlives it.
        cmd.args(&self.spec.args)
            .kill_on_drop(true)
            .process_group(0);
        // A restart fault may fire on a serving thread, which runs SCHED_BATCH: the
        // controller is scheduled as it would be on its own all the same.
        crate::listen::sched::as_started(&mut cmd);
        for (k, v) in &self.spec.env {
            cmd.env(k, v);
        }
        for k in &self.spec.env_remove {
            cmd.env_remove(k);
        }
        if let Some(path) = &self.spec.output {
            let out = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            cmd.stdout(out.try_clone()?).stderr(out);
        }
        let mut child = cmd.spawn()?;
        *self.child_started.lock().unwrap_or_else(|p| p.into_inner()) = std::time::Instant::now();
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        self.pid.store(child.id().unwrap_or(0), Ordering::SeqCst);
        let me = self.me.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            let Some(me) = me.upgrade() else { return };
            if me.killed.load(Ordering::SeqCst) == generation {
                return;
            }
            let exit = match status {
                Ok(s) => Exit::Exited(s),
                Err(e) => Exit::Failed(format!("waiting for it: {e}")),
            };
            if !me.crashed(&exit, generation) {
                me.exit.send_replace(Some(exit));
            }
        });
        Ok(())
    }

    /// The current child's pid (0 if unknown).
    pub fn pid(&self) -> u32 {
        self.pid.load(Ordering::SeqCst)
    }

    /// Send a signal to the current child and everything it started (its process group).
    pub fn signal(&self, sig: libc::c_int) {
        if let Ok(pid) = libc::pid_t::try_from(self.pid())
            && pid > 0
        {
            // SAFETY: kill(2) with the process group of a child we spawned (its pid: it
            // leads the group) and a valid signal number; no memory is shared.
            unsafe {
                libc::kill(-pid, sig);
            }
        }
    }

    /// How it ended, if it has (on its own, not by a restart).
    pub fn exit_now(&self) -> Option<Exit> {
        self.exit.borrow().clone()
    }

    /// Resolves when the controller ends on its own (not by a restart).
    pub async fn exited(&self) -> Exit {
        let mut rx = self.exit.subscribe();
        loop {
            if let Some(e) = rx.borrow_and_update().clone() {
                return e;
            }
            if rx.changed().await.is_err() {
                return Exit::Failed("the controller's supervisor is gone".into());
            }
        }
    }

    /// Kill the current child (SIGKILL), wait `down`, start it again.
    pub async fn restart_now(&self, window: &str, down: Duration) {
        let _one_at_a_time = self.restarting.lock().await;
        if self.exit.borrow().is_some() {
            return; // it ended on its own: the run is over
        }
        let generation = self.generation.load(Ordering::SeqCst);
        self.killed.store(generation, Ordering::SeqCst);
        let pid = self.pid();
        self.signal(libc::SIGKILL);
        // Wait (briefly) for it to be gone, so two never run at once.
        for _ in 0..200 {
            if !alive(pid) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.restarts.fetch_add(1, Ordering::Relaxed);
        if let Some(f) = self.on_restart.get() {
            f(window, SystemTime::now(), down);
        }
        tracing::info!(window, pid, ?down, "controller killed; starting it again");
        tokio::time::sleep(down).await;
        if let Err(e) = self.start_child() {
            self.exit.send_replace(Some(Exit::Failed(format!(
                "starting it again after window {window:?}: {e}"
            ))));
        }
    }
}

/// `exit status: 1`, `signal: 9 (SIGKILL)`, as `ExitStatus` prints them.
fn describe(exit: &Exit) -> String {
    match exit {
        Exit::Exited(s) => s.to_string(),
        Exit::Failed(e) => e.clone(),
    }
}

/// Whether a process still exists (a zombie not yet reaped counts as gone).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

impl crate::fault::Process for Controller {
    /// One process: whichever controller the window names, this is it.
    fn restart(&self, window: &str, _client: &str, down: Duration) {
        let Some(me) = self.me.upgrade() else { return };
        let window = window.to_string();
        tokio::spawn(async move { me.restart_now(&window, down).await });
    }
}

/// Set by the signal handler itself once [`stop_on_signal`]'s signal has arrived.
static STOP_SIGNALLED: AtomicBool = AtomicBool::new(false);

/// A stop that the first SIGINT or SIGTERM turns true — for `run`, `explore` and
/// `envtest`, which own what they start and stop it themselves. The handlers are in
/// place when this returns (not once a spawned task first runs), so from here on
/// neither signal kills the process by its default action: a Ctrl-C while a control
/// plane is starting ends in that start's clean-up, not in a dead process and its
/// directory left in /tmp.
pub fn stop_on_signal() -> std::io::Result<watch::Receiver<bool>> {
    use tokio::signal::unix::{SignalKind, signal};
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the action only stores to an atomic, which is async-signal-safe.
        unsafe {
            signal_hook_registry::register(sig, || STOP_SIGNALLED.store(true, Ordering::SeqCst))?;
        }
    }
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        tracing::info!("stopping (SIGINT or SIGTERM)");
        let _ = tx.send(true);
    });
    Ok(rx)
}

/// Whether [`stop_on_signal`]'s signal has arrived: what fails from then on may have
/// failed because of it. Process-wide, as the signal is — a terminal's Ctrl-C reaches
/// the whole process group, the control plane's etcd and apiservers with stalemate.
/// Set in the signal handler, so it is already true when a child the same Ctrl-C
/// stopped is seen to have exited (the stop's task, which wakes the waiters, may not
/// have run yet).
pub fn stop_signalled() -> bool {
    STOP_SIGNALLED.load(Ordering::SeqCst)
}

/// Resolves on the first SIGINT or SIGTERM ([`stop_on_signal`], for a server that has
/// nothing to stop before then).
pub async fn shutdown_signal() {
    match stop_on_signal() {
        Ok(mut stop) => {
            let _ = stop.wait_for(|stopped| *stopped).await;
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleeper(secs: &str) -> Spec {
        Spec {
            program: "sleep".into(),
            args: vec![secs.into()],
            env: vec![],
            env_remove: vec![],
            output: None,
        }
    }

    /// `sh -c SCRIPT`.
    fn shell(script: &str) -> Spec {
        Spec {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            ..sleeper("0")
        }
    }

    #[test]
    fn the_back_off_is_kubelets_unless_shortened() {
        let k = CrashPolicy::KUBELET;
        let delays: Vec<u64> = (1..=7).map(|n| k.delay(n).as_secs()).collect();
        assert_eq!(delays, [10, 20, 40, 80, 160, 300, 300]);
        assert_eq!(
            k.describe(),
            "10s doubling to 5m, reset after 10m running (kubelet's)"
        );
        let short = CrashPolicy {
            backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(1),
            give_up_after: Some(5),
            ..k
        };
        assert_eq!(short.delay(4), Duration::from_secs(1));
        assert!(short.describe().contains("shortened") && short.describe().contains("5 exits"));
    }

    /// Exits in a row back off longer each time; a child that ran `reset_after` starts
    /// the count again, as kubelet's does after 10 minutes of running.
    #[tokio::test]
    async fn exits_back_off_longer_in_a_row_and_a_long_run_resets_it() {
        let c = Controller::spawn(shell("exit 3")).unwrap();
        let exits = Arc::new(std::sync::Mutex::new(Vec::new()));
        let e = exits.clone();
        c.on_exit(Box::new(move |crash, _| {
            e.lock().unwrap().push(crash.clone())
        }));
        c.restart_crashed(CrashPolicy {
            backoff: Duration::from_millis(50),
            max_backoff: Duration::from_millis(150),
            reset_after: Duration::from_secs(600),
            give_up_after: Some(4),
        });
        let end = tokio::time::timeout(Duration::from_secs(10), c.exited()).await;
        assert!(end.is_ok(), "the fourth exit in a row ends it");
        let backoffs: Vec<Option<u128>> = exits
            .lock()
            .unwrap()
            .iter()
            .map(|c| c.backoff.map(|b| b.as_millis()))
            .collect();
        assert_eq!(backoffs, [Some(50), Some(100), Some(150), None]);
        assert!(
            exits
                .lock()
                .unwrap()
                .iter()
                .all(|c| c.status == "exit status: 3")
        );

        // A policy whose reset_after every child outlives: never past the first back-off.
        let c = Controller::spawn(shell("sleep 0.2; exit 3")).unwrap();
        c.restart_crashed(CrashPolicy {
            backoff: Duration::from_millis(50),
            max_backoff: Duration::from_millis(400),
            reset_after: Duration::from_millis(100),
            give_up_after: Some(3),
        });
        tokio::time::sleep(Duration::from_millis(1200)).await;
        c.stopping();
        c.signal(libc::SIGKILL);
        let crashes = c.crashes();
        assert!(crashes.len() >= 2, "{crashes:?}");
        assert!(
            crashes
                .iter()
                .all(|x| x.backoff == Some(Duration::from_millis(50))),
            "{crashes:?}"
        );
    }

    #[tokio::test]
    async fn restarts_are_not_the_end_but_its_own_exit_is() {
        let c = Controller::spawn(sleeper("30")).unwrap();
        let first = c.pid();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let s = seen.clone();
        c.on_restart(Box::new(move |w, _, d| {
            s.lock().unwrap().push((w.to_string(), d))
        }));
        c.restart_now("crash", Duration::from_millis(50)).await;
        assert_ne!(c.pid(), first, "a new child");
        assert!(!alive(first), "the old one was killed");
        assert_eq!(c.restarts(), 1);
        assert_eq!(
            *seen.lock().unwrap(),
            [("crash".to_string(), Duration::from_millis(50))]
        );
        // The kill did not end the run; the child's own exit does.
        let exited = tokio::time::timeout(Duration::from_millis(300), c.exited()).await;
        assert!(exited.is_err(), "still running after the restart");
        c.signal(libc::SIGTERM);
        let e = tokio::time::timeout(Duration::from_secs(5), c.exited())
            .await
            .expect("exit seen");
        assert!(matches!(e, Exit::Exited(s) if !s.success()));
    }

    #[tokio::test]
    async fn a_program_that_cannot_start_is_an_error() {
        assert!(
            Controller::spawn(Spec {
                program: "/nonexistent/controller".into(),
                args: vec![],
                env: vec![],
                env_remove: vec![],
                output: None,
            })
            .is_err()
        );
    }
}
