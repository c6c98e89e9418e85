//! The proxy a session puts in front of its upstream: started with the session's
//! named listeners (the controller's, each other controller's, the workload's) and its trace, the setup applied through its upstream client, a
//! kubeconfig written per listener — and stopped into the run's report, trace and end
//! state.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::names::{CONTROLLER, WORKLOAD};
use super::options::{Options, TraceTo};
use crate::trace::{MemoryTrace, Stamped};

/// The longest applying `--setup` may take (CRDs served included; it takes seconds).
const SETUP_TIMEOUT: Duration = Duration::from_secs(120);

pub(super) struct Front {
    pub running: crate::server::Running,
    certs: crate::k8s::certs::CertBundle,
    memory: Option<MemoryTrace>,
}

/// What the stopped proxy left.
pub(super) struct Stopped {
    pub report: crate::report::Report,
    pub trace: Vec<Stamped>,
}

impl Front {
    /// Start the proxy in front of `source`.
    pub async fn start(o: &Options, source: crate::upstream::Source) -> Result<Front> {
        let certs = crate::k8s::certs::generate("stalemate", &[])?;
        let (trace_path, sink, memory) = match &o.trace {
            TraceTo::Off => (None, None, None),
            TraceTo::File(p) => (Some(p.clone()), None, None),
            TraceTo::Memory => {
                let (t, m) = crate::trace::Trace::to_memory(1 << 20);
                (None, Some(t), Some(m))
            }
        };
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        let running = crate::server::start(crate::server::Options {
            admin_listen: o.admin_listen,
            process: crate::schedule::engine::ProcessSlot::expected(),
            listen_name: Some(CONTROLLER.into()),
            named_listeners: o
                .others
                .iter()
                .map(|c| c.name.clone())
                .chain((!o.workload.is_empty()).then(|| WORKLOAD.to_string()))
                .map(|name| (name, loopback))
                .collect(),
            trace_sink: sink,
            threads: o.threads,
            ..crate::server::Options::loopback(&certs, source, schedule_of(o), trace_path)
        })
        .await?;
        Ok(Front {
            running,
            certs,
            memory,
        })
    }

    /// Apply the setup through the proxy's upstream client, then wait (up to 10 s) until
    /// ground truth has the objects the oracles watch: a hot loop in the controller's
    /// first 100 ms is then judged with the fields it churns, a convergence from the
    /// object's first state. Within [`SETUP_TIMEOUT`]: against an apiserver that has
    /// lost its etcd a request waited minutes, and explore's trial with it.
    pub async fn apply_setup(
        &self,
        setup: &[crate::setup::Manifest],
    ) -> Result<(kube::Client, Vec<crate::setup::Applied>)> {
        let client = self.running.upstream.kube_client()?;
        let applied = tokio::time::timeout(SETUP_TIMEOUT, crate::setup::apply(&client, setup))
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "applying --setup took over {}s: is the apiserver answering (its etcd, for one)?",
                    SETUP_TIMEOUT.as_secs()
                )
            })?
            .map_err(|e| e.context("applying --setup"))?;
        let watched = self.running.oracles.config.watched_resources();
        let deadline = Instant::now() + Duration::from_secs(10);
        for a in applied.iter().filter(|a| watched.contains(&a.resource)) {
            let ns = a.namespace.as_deref().unwrap_or("");
            while !self.running.oracles.has_seen(&a.resource, ns, &a.name)
                && Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        Ok((client, applied))
    }

    /// A kubeconfig for the listener `name`: the proxy's URL and CA, and the token that
    /// makes the proxy use the upstream's credentials.
    pub fn kubeconfig(&self, o: &Options, name: &str) -> Result<PathBuf> {
        let path = o.dir.join(format!("{name}.kubeconfig"));
        crate::k8s::kubeconfig::write(
            &path,
            &crate::k8s::kubeconfig::KubeconfigSpec {
                name: "stalemate",
                server: &self.running.urls[name],
                ca_pem: &self.certs.ca_cert_pem,
                token: Some(crate::proxy::UPSTREAM_CREDENTIALS_TOKEN),
                client_cert: None,
                namespace: None,
            },
        )?;
        Ok(path)
    }

    /// Stop the proxy: the final report, and the trace if kept in memory.
    pub async fn stop(self) -> Stopped {
        let report = self.running.stop().await;
        let trace = match self.memory {
            Some(m) => m.finish().await,
            None => Vec::new(),
        };
        Stopped { report, trace }
    }
}

/// The session's schedule: one that names no clients gets the listeners' (the
/// controller's, each other controller's, the workload's; its windows for `*` still cover
/// everyone); one that names its own gets each other controller's it does not name
/// (`--controller NAME=CMD` promises the client NAME), and is otherwise taken as written.
fn schedule_of(o: &Options) -> crate::schedule::Schedule {
    let mut schedule = o.schedule.clone();
    let others = o.others.iter().map(|c| c.name.as_str());
    let names: Vec<&str> = if schedule.clients.is_empty() {
        [CONTROLLER, WORKLOAD].into_iter().chain(others).collect()
    } else {
        others.collect()
    };
    for name in names {
        schedule
            .clients
            .entry(name.into())
            .or_insert_with(|| crate::schedule::ClientMatcher {
                listener: Some(name.into()),
                ..Default::default()
            });
    }
    schedule
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--controller NAME=CMD` promises the client NAME, whether or not the schedule names
    /// clients of its own; the ones it names are kept as written.
    #[test]
    fn every_other_controller_is_a_client_of_the_schedule() {
        let mut o = Options::new(
            std::sync::Arc::new(super::super::upstream::sim::Sim),
            Default::default(),
            vec!["true".into()],
            std::env::temp_dir(),
        );
        o.others = vec![crate::session::options::Other::parse("source=true").unwrap()];
        let names = |s: &crate::schedule::Schedule| s.clients.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            names(&schedule_of(&o)),
            ["controller", "source", "workload"]
        );
        o.schedule = serde_json::from_value(serde_json::json!({
            "clients": {"manager": {"userAgent": "manager/*"}}
        }))
        .unwrap();
        let s = schedule_of(&o);
        assert_eq!(names(&s), ["manager", "source"]);
        assert_eq!(s.clients["source"].listener.as_deref(), Some("source"));
    }
}
