//! One run of a controller behind the proxy, start to verdict — what `stalemate run` does
//! once, and what every `explore` reference run and trial does again.
//!
//! ```text
//!  upstream (a fresh simulator, or a kubeconfig's cluster)
//!    └─► proxy: listener "controller" (+ "workload"), schedule, oracles, trace
//!          └─► setup manifests applied (CRDs first) ─► controller started
//!                └─► (settled) workload started ─► … ─► end: duration, controller exit,
//!                                                         or quiet (no writes, no windows)
//!  stop: controller (SIGTERM, then SIGKILL) ─► end state read ─► proxy ─► Outcome
//! ```
//!
//! The controller and the workload come in on listeners of their own, so a schedule can
//! tell them apart by listener (`{"listener": "controller"}`) whatever their credentials:
//! both carry the token that makes the proxy use the upstream's credentials, exactly as
//! they would reach the cluster directly with the user's kubeconfig.

pub mod snapshot;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};

use crate::oracle::Oracles;
use crate::process::{Controller, Exit, Spec};
use crate::request::Verb;
use crate::trace::{Record, Stamped};

pub use snapshot::{Extent, Snapshot};

/// How long a run goes on after `stop_early` first says it may end.
const EARLY_GRACE: Duration = Duration::from_secs(1);

/// The listener (and client) names a session gives its two processes.
pub const CONTROLLER: &str = "controller";
pub const WORKLOAD: &str = "workload";

/// Where the run's cluster comes from.
#[derive(Debug, Clone)]
pub enum Upstream {
    /// A new simulator in this process, gone when the run ends.
    Sim,
    /// The cluster of a kubeconfig (default: `$KUBECONFIG`, then `~/.kube/config`).
    Kubeconfig {
        path: Option<PathBuf>,
        context: Option<String>,
    },
}

/// When the run ends (it always ends when the controller exits on its own).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum End {
    /// This long after the controller started.
    After(Duration),
    /// Only when the controller exits.
    ControllerExit,
    /// When nothing has happened for `quiet`: no window open, no write by the controller,
    /// no window opened or closed, no restart, the workload (if any) done. `max_run`
    /// caps a controller that never goes quiet.
    Quiet { quiet: Duration, max_run: Duration },
}

/// Where the trace goes.
#[derive(Debug, Clone)]
pub enum TraceTo {
    Off,
    File(PathBuf),
    /// In memory, returned in the [`Outcome`].
    Memory,
}

/// Asked as a run goes: has it seen enough to end now?
pub type StopEarly = Box<dyn Fn(&Oracles) -> bool + Send + Sync>;

/// Everything one run needs.
pub struct Options {
    pub upstream: Upstream,
    pub setup: Vec<crate::setup::Manifest>,
    pub schedule: crate::schedule::Schedule,
    /// The controller's program and arguments.
    pub controller: Vec<String>,
    /// A shell command run (`sh -c`) once the controller has settled.
    pub workload: Option<String>,
    /// How long the controller must have been quiet before the workload starts.
    pub settle_before_workload: Duration,
    pub end: End,
    pub trace: TraceTo,
    /// The controller's and the workload's stdout and stderr (default: stalemate's).
    pub output: Option<PathBuf>,
    /// A private directory for the run's kubeconfigs.
    pub dir: PathBuf,
    pub admin_listen: SocketAddr,
    /// Read the end state from ground truth (for comparing runs).
    pub snapshot: bool,
    /// SIGINT/SIGTERM end the run (`run`); otherwise the caller handles them.
    pub interruptible: bool,
    /// The caller's own stop (explore's, on SIGINT/SIGTERM): the run ends when it turns
    /// true, its processes stopped like at any end.
    pub cancel: Option<tokio::sync::watch::Receiver<bool>>,
    /// End early when the oracles have already seen enough (checked as the run goes).
    pub stop_early: Option<StopEarly>,
    /// Say on stderr where the proxy is and what runs behind it.
    pub announce: bool,
    /// The proxy's serving threads (`explore` runs trials side by side: one each).
    pub threads: usize,
    /// Read the end state of these too (what the reference runs touched).
    pub extent_hint: Extent,
}

impl Options {
    /// A run of `controller` against `upstream` with `schedule`: no workload, no setup,
    /// ending when the controller exits, no trace, output inherited.
    pub fn new(
        upstream: Upstream,
        schedule: crate::schedule::Schedule,
        controller: Vec<String>,
        dir: PathBuf,
    ) -> Options {
        Options {
            upstream,
            setup: Vec::new(),
            schedule,
            controller,
            workload: None,
            settle_before_workload: Duration::from_secs(2),
            end: End::ControllerExit,
            trace: TraceTo::Off,
            output: None,
            dir,
            admin_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            snapshot: false,
            interruptible: false,
            cancel: None,
            stop_early: None,
            announce: false,
            threads: crate::server::default_threads(),
            extent_hint: Extent::default(),
        }
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ended {
    ControllerExited,
    Quiet,
    MaxRun,
    Duration,
    Interrupted,
    /// `stop_early` said so.
    Early,
}

/// What a run left.
#[derive(Clone)]
pub struct Outcome {
    pub report: crate::report::Report,
    /// The trace, if kept in memory.
    pub trace: Vec<Stamped>,
    /// The end state, if asked for.
    pub snapshot: Snapshot,
    /// Where the snapshot looked.
    pub extent: Extent,
    pub peaks: std::collections::BTreeMap<(String, crate::oracle::ObjectRef), crate::oracle::Peak>,
    /// The controller ended on its own with a failure (or could not be started again).
    pub controller_failed: Option<String>,
    /// The workload's exit code (None: no workload, or it never ran or finished).
    pub workload_exit: Option<i32>,
    pub ended: Ended,
    /// When the controller was started.
    pub started: SystemTime,
    pub seconds: f64,
    /// The resources and namespaces the setup put objects in.
    pub setup: Vec<crate::setup::Applied>,
}

/// Run it.
pub async fn run(o: Options) -> Result<Outcome> {
    let Some((program, args)) = o.controller.split_first() else {
        anyhow::bail!("nothing to run: give the controller after --")
    };
    let (program, args) = (program.clone(), args.to_vec());
    let sim = match &o.upstream {
        Upstream::Sim => Some(
            crate::sim::local::Local::start(&o.dir, crate::sim::SimConfig::default())
                .await
                .context("starting the simulator")?,
        ),
        Upstream::Kubeconfig { .. } => None,
    };
    let source = match (&o.upstream, &sim) {
        (_, Some(s)) => s.source(),
        (Upstream::Kubeconfig { path, context }, None) => crate::upstream::Source::Kubeconfig {
            path: path.clone(),
            context: context.clone(),
        },
        (Upstream::Sim, None) => unreachable!("a simulator was started above"),
    };
    let result = with_upstream(&o, source, program, args).await;
    if let Some(s) = sim {
        s.stop().await;
    }
    result
}

async fn with_upstream(
    o: &Options,
    source: crate::upstream::Source,
    program: String,
    args: Vec<String>,
) -> Result<Outcome> {
    let certs = crate::certs::generate("stalemate", &[])?;
    let (trace_path, memory) = match &o.trace {
        TraceTo::Off => (None, None),
        TraceTo::File(p) => (Some(p.clone()), None),
        TraceTo::Memory => (None, Some(crate::trace::Trace::to_memory(1 << 20))),
    };
    let (sink, memory) = match memory {
        Some((t, m)) => (Some(t), Some(m)),
        None => (None, None),
    };
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    // A schedule that names no clients gets the two listeners' (its windows for `*`
    // still cover everyone); one that names its own is taken as written.
    let mut schedule = o.schedule.clone();
    if schedule.clients.is_empty() {
        for name in [CONTROLLER, WORKLOAD] {
            schedule.clients.insert(
                name.into(),
                crate::identity::ClientMatcher {
                    listener: Some(name.into()),
                    ..Default::default()
                },
            );
        }
    }
    let running = crate::server::start(crate::server::Options {
        admin_listen: o.admin_listen,
        controller_process: true,
        listen_name: Some(CONTROLLER.into()),
        named_listeners: if o.workload.is_some() {
            vec![(WORKLOAD.into(), loopback)]
        } else {
            vec![]
        },
        trace_sink: sink,
        threads: o.threads,
        ..crate::server::Options::loopback(&certs, source, schedule, trace_path)
    })
    .await?;
    let admin = running.upstream.kube_client();
    let setup = match admin {
        Ok(client) => crate::setup::apply(&client, &o.setup)
            .await
            .map(|applied| (client, applied)),
        Err(e) => Err(e),
    };
    let (client, applied) = match setup {
        Ok(s) => s,
        Err(e) => {
            let _ = running.stop().await;
            return Err(e.context("applying --setup"));
        }
    };
    // The oracles judge from ground truth: the controller starts once ground truth has
    // the setup's objects (a hot loop in its first 100 ms is then judged with the fields
    // it churns, a convergence from the object's first state).
    let watched = running.oracles.config.watched_resources();
    let deadline = Instant::now() + Duration::from_secs(10);
    for a in applied.iter().filter(|a| watched.contains(&a.resource)) {
        let ns = a.namespace.as_deref().unwrap_or("");
        while !running.oracles.has_seen(&a.resource, ns, &a.name) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let kubeconfig_for = |name: &str| -> Result<PathBuf> {
        let path = o.dir.join(format!("{name}.kubeconfig"));
        crate::kubeconfig::write(
            &path,
            &crate::kubeconfig::KubeconfigSpec {
                name: "stalemate",
                server: &running.urls[name],
                ca_pem: &certs.ca_cert_pem,
                token: Some(crate::proxy::UPSTREAM_CREDENTIALS_TOKEN),
                client_cert: None,
                namespace: None,
            },
        )?;
        Ok(path)
    };
    let controller_kubeconfig = kubeconfig_for(CONTROLLER)?;
    if o.announce {
        eprintln!(
            "stalemate: proxy {} (admin http://{}) in front of {}; running {:?}",
            running.url, running.admin, running.upstream.base, o.controller
        );
    }
    let spec = |program: String, args: Vec<String>, kubeconfig: &Path| Spec {
        program,
        args,
        env: vec![("KUBECONFIG".into(), kubeconfig.as_os_str().to_owned())],
        env_remove: vec![
            "KUBERNETES_SERVICE_HOST".into(),
            "KUBERNETES_SERVICE_PORT".into(),
        ],
        output: o.output.clone(),
    };
    let started = SystemTime::now();
    let controller = match Controller::spawn(spec(program.clone(), args, &controller_kubeconfig)) {
        Ok(c) => c,
        Err(e) => {
            let _ = running.stop().await;
            anyhow::bail!("cannot start {program:?}: {e}");
        }
    };
    // Restarts are activity: the controller comes back and reconciles again.
    let last_restart = Arc::new(Mutex::new(None::<SystemTime>));
    {
        let (oracles, trace) = (running.oracles.clone(), running.trace());
        let (c, last) = (controller.clone(), last_restart.clone());
        controller.on_restart(Box::new(move |window, at, down| {
            oracles.on_restart(window, at, down);
            *last.lock().unwrap_or_else(|p| p.into_inner()) = Some(at + down);
            trace.record(Record::Restart {
                window: window.to_string(),
                down_ms: down.as_secs_f64() * 1000.0,
                pid: c.pid(),
            });
        }));
    }
    running.engine.set_process(controller.clone());
    let workload_kubeconfig = match &o.workload {
        Some(_) => Some(kubeconfig_for(WORKLOAD)?),
        None => None,
    };

    let clock = Instant::now();
    let mut watching = Activity::new(&running, started, last_restart);
    let mut workload: Option<Arc<Controller>> = None;
    let mut workload_exit: Option<i32> = None;
    let mut workload_done_at: Option<SystemTime> = None;
    let mut controller_failed = None;
    let mut early: Option<Instant> = None;
    let mut cancel = o.cancel.clone();
    let mut interrupted = std::pin::pin!(async move {
        if o.interruptible {
            crate::process::shutdown_signal().await
        } else if let Some(c) = &mut cancel {
            if c.wait_for(|stop| *stop).await.is_err() {
                std::future::pending::<()>().await
            }
        } else {
            std::future::pending().await
        }
    });
    let ended = loop {
        tokio::select! {
            exit = controller.exited() => {
                match exit {
                    Exit::Exited(s) if s.success() => {}
                    Exit::Exited(s) => controller_failed = Some(format!("{program:?} exited with {s}")),
                    Exit::Failed(e) => controller_failed = Some(format!("{program:?}: {e}")),
                }
                break Ended::ControllerExited;
            }
            _ = &mut interrupted => break Ended::Interrupted,
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        let now = SystemTime::now();
        if let (Some(w), None) = (&workload, workload_done_at)
            && let Some(exit) = w.exit_now()
        {
            workload_exit = Some(match exit {
                Exit::Exited(s) => {
                    use std::os::unix::process::ExitStatusExt;
                    s.code().or(s.signal().map(|n| 128 + n)).unwrap_or(-1)
                }
                Exit::Failed(_) => 127,
            });
            workload_done_at = Some(now);
        }
        let idle = watching.idle_for(now, workload_done_at);
        // The workload starts once the controller has settled (or halfway to the cap).
        if let (Some(cmd), Some(kc), None) = (&o.workload, &workload_kubeconfig, &workload) {
            let cap = match o.end {
                End::Quiet { max_run, .. } | End::After(max_run) => max_run / 2,
                End::ControllerExit => Duration::MAX,
            };
            if idle >= o.settle_before_workload || clock.elapsed() >= cap {
                let w = Controller::spawn(spec("sh".into(), vec!["-c".into(), cmd.clone()], kc))
                    .with_context(|| format!("starting the workload {cmd:?}"));
                match w {
                    Ok(w) => workload = Some(w),
                    Err(e) => {
                        controller.signal(libc::SIGKILL);
                        let _ = running.stop().await;
                        return Err(e);
                    }
                }
                continue;
            }
        }
        // Stop early a second after `stop_early` first says so: ground truth, a watch
        // behind a write storm, catches up with the writes it judges (the hot loop's
        // churning fields come from it).
        if let Some(stop) = &o.stop_early
            && stop(&running.oracles)
        {
            let since = *early.get_or_insert_with(Instant::now);
            if since.elapsed() >= EARLY_GRACE {
                break Ended::Early;
            }
        }
        match o.end {
            End::After(d) if clock.elapsed() >= d => break Ended::Duration,
            End::Quiet { quiet, max_run } => {
                let workload_done = o.workload.is_none() || workload_done_at.is_some();
                if workload_done && idle >= quiet && watching.no_window_open() {
                    break Ended::Quiet;
                }
                if clock.elapsed() >= max_run {
                    break Ended::MaxRun;
                }
            }
            _ => {}
        }
    };
    let seconds = clock.elapsed().as_secs_f64();
    for p in std::iter::once(&controller).chain(workload.iter()) {
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
    let peaks = running.oracles.peaks();
    let report = running.stop().await;
    let trace = match memory {
        Some(m) => m.finish().await,
        None => Vec::new(),
    };
    let mut extent = extent_of(&trace, &applied);
    extent
        .resources
        .extend(o.extent_hint.resources.iter().cloned());
    extent
        .namespaces
        .extend(o.extent_hint.namespaces.iter().cloned());
    let snapshot = if o.snapshot {
        snapshot::take(&client, &extent).await?
    } else {
        Snapshot::new()
    };
    Ok(Outcome {
        report,
        trace,
        snapshot,
        extent,
        peaks,
        controller_failed,
        workload_exit,
        ended,
        started,
        seconds,
        setup: applied,
    })
}

/// What tells a quiet run: the controller's writes, windows opening and closing,
/// restarts.
struct Activity {
    oracles: Arc<Oracles>,
    engine: Arc<crate::schedule::engine::Engine>,
    changes: tokio::sync::watch::Receiver<u64>,
    last_change: SystemTime,
    started: SystemTime,
    last_restart: Arc<Mutex<Option<SystemTime>>>,
}

impl Activity {
    fn new(
        running: &crate::server::Running,
        started: SystemTime,
        last_restart: Arc<Mutex<Option<SystemTime>>>,
    ) -> Activity {
        Activity {
            oracles: running.oracles.clone(),
            engine: running.engine.clone(),
            changes: running.engine.changes(),
            last_change: started,
            started,
            last_restart,
        }
    }

    /// How long nothing has happened.
    fn idle_for(&mut self, now: SystemTime, workload_done: Option<SystemTime>) -> Duration {
        if self.changes.has_changed().unwrap_or(false) {
            self.changes.borrow_and_update();
            self.last_change = now;
        }
        let last = [
            Some(self.started),
            Some(self.last_change),
            self.oracles.last_write_except(&[WORKLOAD]),
            *self.last_restart.lock().unwrap_or_else(|p| p.into_inner()),
            workload_done,
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(now);
        now.duration_since(last).unwrap_or_default()
    }

    fn no_window_open(&self) -> bool {
        self.engine.active_names().is_empty()
    }
}

/// The resources and namespaces a run's end state is read from: what its clients wrote
/// and what the controller watched or listed, where; and what the setup created.
pub fn extent_of(trace: &[Stamped], setup: &[crate::setup::Applied]) -> Extent {
    let mut e = Extent::default();
    for a in setup {
        if a.resource == "customresourcedefinitions.apiextensions.k8s.io" {
            continue;
        }
        e.resources.insert(a.resource.clone());
        if let Some(ns) = &a.namespace {
            e.namespaces.insert(ns.clone());
        }
        if a.resource == "namespaces" {
            e.namespaces.insert(a.name.clone());
        }
    }
    for s in trace {
        let Record::Request {
            client,
            verb,
            resource,
            namespace,
            ..
        } = &s.record
        else {
            continue;
        };
        if resource.is_empty() || (client != CONTROLLER && client != WORKLOAD) {
            continue;
        }
        let reads = matches!(*verb, "list" | "watch") && client == CONTROLLER;
        if reads || Verb::from_name(verb).is_some_and(Verb::is_write) {
            e.resources
                .insert(snapshot::base_resource(resource).to_string());
            if let Some(ns) = namespace {
                e.namespaces.insert(ns.clone());
            }
        }
    }
    e.resources
        .retain(|r| !snapshot::IGNORED.contains(&r.as_str()) && r != "namespaces");
    e
}

#[cfg(test)]
mod tests;
