//! One run of a controller behind the proxy, start to verdict — what `stalemate run` does
//! once, and what every `explore` reference run and trial does again.
//!
//! ```text
//!  upstream (upstream/: a fresh simulator, a real control plane, or a kubeconfig's cluster)
//!    └─► front.rs: proxy with listener "controller" (+ "workload"), schedule, oracles, trace
//!          └─► setup manifests applied (CRDs first) ─► supervise.rs: controller started
//!                └─► (settled) workload started ─► … ─► end: duration, controller exit,
//!                                                         or quiet (activity.rs)
//!  stop: controller (SIGTERM, then SIGKILL) ─► proxy ─► end state read ─► upstream ─► Outcome
//! ```
//!
//! The controller and the workload come in on listeners of their own, so a schedule can
//! tell them apart by listener (`{"listener": "controller"}`) whatever their credentials:
//! both carry the token that makes the proxy use the upstream's credentials, exactly as
//! they would reach the cluster directly with the user's kubeconfig.

mod activity;
mod front;
mod idle;
pub mod leases;
mod names;
mod options;
mod outcome;
mod outside;
mod scrape;
pub mod snapshot;
mod supervise;
pub mod upstream;

use std::time::Instant;

use anyhow::{Context, Result};

use crate::k8s::request::Verb;
use crate::trace::{Record, Stamped};

pub use names::{CONTROLLER, WORKLOAD};
pub use options::{
    End, EndStateCheck, Options, Other, StopEarly, TraceTo, other_log, workload_log,
};
pub use outcome::{Ended, Outcome, Phases};
pub use snapshot::{Extent, Snapshot};
pub use upstream::Kind;

/// Run it: the upstream started, the proxy in front of it, the setup applied, the
/// controller (and workload) run until the end, everything stopped in reverse.
pub async fn run(o: Options) -> Result<Outcome> {
    if o.controller.is_empty() {
        anyhow::bail!("nothing to run: give the controller after --")
    }
    let mut names = std::collections::BTreeSet::new();
    if let Some(c) = o.others.iter().find(|c| !names.insert(c.name.as_str())) {
        anyhow::bail!(
            "--controller {}: two controllers of that name (each names its own client and listener)",
            c.name
        )
    }
    let begun = Instant::now();
    let upstream = o.upstream.start(&o.dir).await?;
    let upstream_started = begun.elapsed().as_secs_f64();
    let mut result = behind_proxy(&o, &*upstream).await;
    let unanswered = upstream.unanswered();
    let stopping = Instant::now();
    upstream.stop().await;
    if let Ok(outcome) = &mut result {
        outcome.phases.start += upstream_started;
        outcome.phases.stop += stopping.elapsed().as_secs_f64();
    }
    if !unanswered.is_empty() {
        let what: Vec<String> = unanswered
            .iter()
            .map(|(w, n)| format!("{w} ({n}×)"))
            .collect();
        anyhow::bail!(
            "the simulator cannot answer what was asked of it — {} — so the controller was not exercised as a real apiserver would have it; run with --envtest (a real kube-apiserver) instead",
            what.join("; ")
        );
    }
    result
}

async fn behind_proxy(o: &Options, upstream: &dyn upstream::Started) -> Result<Outcome> {
    let begun = Instant::now();
    let front = front::Front::start(o, upstream.source()).await?;
    let prepared = prepare(o, &front, upstream).await;
    let start = begun.elapsed().as_secs_f64();
    let (client, applied, supervised) = match prepared {
        Ok(p) => p,
        Err(e) => {
            front.stop().await;
            return Err(e);
        }
    };
    let ending = supervised.until_end(o, &front.running).await;
    let reading = Instant::now();
    // Read while the controllers hold them (see `leases::durations`).
    let lease_durations = match &ending {
        Ok(e) if o.snapshot && !matches!(e.ended, Ended::Interrupted) => {
            leases::durations(&client).await
        }
        _ => Default::default(),
    };
    let mut end_state = reading.elapsed().as_secs_f64();
    let stopping = Instant::now();
    supervised
        .stop(ending.as_ref().ok().and_then(|e| e.workload.as_ref()))
        .await;
    let peaks = front.running.oracles.peaks();
    let oracles = front.running.oracles.clone();
    let stopped = front.stop().await;
    let stop = stopping.elapsed().as_secs_f64();
    let ending = ending?;
    let reading = Instant::now();
    let expected = oracles.config.expected.as_ref();
    let extent = end_state_extent(o, &stopped.trace, &applied, expected);
    let (snapshot, gone) =
        end_snapshot(o, &client, &extent, ending.ended, expected.is_some()).await?;
    let controllers: Vec<&str> = std::iter::once(CONTROLLER)
        .chain(o.others.iter().map(|c| c.name.as_str()))
        .collect();
    let leases = leases::held(&stopped.trace, &controllers, &lease_durations);
    let mut report = stopped.report;
    report.note_unopened(o.schedule.windows.iter().map(|w| w.name.as_str()));
    if expected.is_some() && !gone {
        let end = crate::oracle::end_state::normalize(&snapshot);
        let found = oracles.judge_expected(&end, std::time::SystemTime::now());
        report.add_violations(found);
    }
    end_state += reading.elapsed().as_secs_f64();
    Ok(Outcome {
        report,
        trace: stopped.trace,
        snapshot,
        extent,
        peaks,
        controller_failed: ending.controller_failed,
        crashes: supervised.controller.crashes(),
        workload_exit: ending.workload_exit,
        ended: ending.ended,
        started: supervised.started,
        seconds: ending.seconds,
        setup: applied,
        leases,
        phases: Phases {
            start,
            end_state,
            stop,
            ..ending.phases
        },
    })
}

/// The end state, read from ground truth, when wanted (`o.snapshot`, or an `expected`
/// oracle to judge); and whether the upstream is gone.
async fn end_snapshot(
    o: &Options,
    client: &kube::Client,
    extent: &Extent,
    ended: Ended,
    expected: bool,
) -> Result<(Snapshot, bool)> {
    // Not when interrupted with a control plane that the signal took down too: reading
    // it would wait for its requests to time out, for an end state nobody will judge.
    // A cluster is still there, and its clean-up reads the setup's objects from this.
    // Signalled counts as interrupted however the run ended: the signal that stopped
    // the caller also stops the control plane, and the controller, losing it, may have
    // ended the run first.
    let gone = (matches!(ended, Ended::Interrupted) || signalled(o))
        && !o.upstream.outlives_an_interrupt();
    if !(o.snapshot || expected) || gone {
        return Ok((Snapshot::new(), gone));
    }
    tokio::select! {
        taken = snapshot::take(client, extent) => Ok((taken?, gone)),
        _ = supervise::interruption(o), if !o.upstream.outlives_an_interrupt() => {
            anyhow::bail!("interrupted (SIGINT or SIGTERM) while the end state was read")
        }
    }
}

/// What the end state is read over: what the run touched (`extent_of`), what the caller
/// knows more of (`extent_hint`), and what the `expected` oracle names.
fn end_state_extent(
    o: &Options,
    trace: &[Stamped],
    applied: &[crate::setup::Applied],
    expected: Option<&crate::oracle::expected::ExpectedConfig>,
) -> Extent {
    let mut extent = extent_of(trace, applied);
    extent
        .resources
        .extend(o.extent_hint.resources.iter().cloned());
    extent
        .namespaces
        .extend(o.extent_hint.namespaces.iter().cloned());
    if let Some(e) = expected {
        let (resources, namespaces) = crate::oracle::expected::extent(e);
        extent.resources.extend(resources);
        extent.namespaces.extend(namespaces);
    }
    extent
}

/// The setup applied, the kubeconfigs written, the controller started.
async fn prepare(
    o: &Options,
    front: &front::Front,
    upstream: &dyn upstream::Started,
) -> Result<(
    kube::Client,
    Vec<crate::setup::Applied>,
    supervise::Supervised,
)> {
    // Told to stop while the upstream started: no setup to apply and no controller to
    // start only to stop them (the caller stops the upstream). Not checked after the
    // setup: what it created is cleaned up from the run's outcome, which an error here
    // would lose — a signal from then on ends the run once the controller has started.
    if signalled(o) {
        anyhow::bail!("interrupted (SIGINT or SIGTERM) before the controller started");
    }
    // A control plane the signal takes down answers the setup's requests with a 504
    // each after half a minute: nothing to clean up there, so the signal ends it now.
    let (client, applied) = tokio::select! {
        applied = front.apply_setup(&o.setup) => applied?,
        _ = supervise::interruption(o), if !o.upstream.outlives_an_interrupt() => {
            anyhow::bail!("interrupted (SIGINT or SIGTERM) while the setup was applied")
        }
    };
    let controller_kubeconfig = front.kubeconfig(o, CONTROLLER)?;
    let workload_kubeconfig = match o.workload.is_empty() {
        false => Some(front.kubeconfig(o, WORKLOAD)?),
        true => None,
    };
    if o.announce {
        eprintln!(
            "stalemate: proxy {} (admin http://{}) in front of {}; running {:?}",
            front.running.url,
            front.running.admin,
            upstream.describe(),
            o.controller
        );
    }
    let ports = RunPorts::choose()?;
    let env = controller_env(o, upstream, &ports, CONTROLLER)?;
    // Each other controller: its own listener (and so client), ports and data directory.
    let mut others = Vec::new();
    for c in &o.others {
        let ports = RunPorts::choose()?;
        others.push(supervise::OtherStart {
            name: c.name.clone(),
            command: c.command.clone(),
            kubeconfig: front.kubeconfig(o, &c.name)?,
            env: controller_env(o, upstream, &ports, &c.name)?,
        });
    }
    let supervised = supervise::Supervised::start(
        o,
        &front.running,
        &client,
        &controller_kubeconfig,
        workload_kubeconfig,
        env,
        others,
        match o.idle_url.as_deref() {
            Some(idle::NONE) => None,
            Some(u) => Some(idle::IdleUrl::new(idle::expand(u, ports.metrics), true)),
            None => Some(idle::IdleUrl::new(
                idle::expand(idle::PROBED, ports.metrics),
                false,
            )),
        },
    )?;
    Ok((client, applied, supervised))
}

/// A controller's environment: the upstream's, its ports, a data directory that
/// outlives its restarts within the run — what a pod's emptyDir is to its containers
/// (Flux keeps its artifacts there), not the run — and a `TMPDIR` of its own, as a
/// pod's `/tmp` is: controllers side by side (explore's trials) must not share one.
/// Flux's kustomize-controller, starting, deletes every `kustomization-*` directory
/// in its temp dir as left behind by a previous process (its Deployment mounts an
/// emptyDir there); on a shared `/tmp` it deleted another trial's build mid-reconcile.
fn controller_env(
    o: &Options,
    upstream: &dyn upstream::Started,
    ports: &RunPorts,
    name: &str,
) -> Result<Vec<(std::ffi::OsString, std::ffi::OsString)>> {
    let mut env = upstream.env();
    env.extend(ports.env());
    let data = o.dir.join(format!("{name}-data"));
    std::fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
    env.push(("STALEMATE_DATA_DIR".into(), data.into_os_string()));
    let tmp = o.dir.join(format!("{name}-tmp"));
    std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    env.push(("TMPDIR".into(), tmp.into_os_string()));
    Ok(env)
}

/// The caller has been told to stop (SIGINT/SIGTERM).
fn signalled(o: &Options) -> bool {
    o.cancel.as_ref().is_some_and(|c| *c.borrow())
}

/// Free loopback ports chosen for one run, given to its controller: run side by side
/// with itself (explore's trials), a controller needs its own metrics and health
/// addresses (`--metrics-bind-address=127.0.0.1:$STALEMATE_METRICS_PORT`).
pub struct RunPorts {
    pub metrics: u16,
    pub health: u16,
    pub spare: u16,
}

impl RunPorts {
    fn choose() -> Result<RunPorts> {
        Ok(RunPorts {
            metrics: crate::envtest::free_port()?,
            health: crate::envtest::free_port()?,
            spare: crate::envtest::free_port()?,
        })
    }

    fn env(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        [
            ("STALEMATE_METRICS_PORT", self.metrics),
            ("STALEMATE_HEALTH_PORT", self.health),
            ("STALEMATE_PORT", self.spare),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.to_string().into()))
        .collect()
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
        // Every controller's (the one after `--` and each `--controller`) and the
        // workload's; not requests of no client.
        if resource.is_empty() || client == crate::schedule::OTHER {
            continue;
        }
        let reads = matches!(*verb, "list" | "watch") && client != WORKLOAD;
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
