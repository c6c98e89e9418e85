//! `stalemate demo`: the whole story in one process and under a minute — the simulator as
//! the cluster, the proxy in front of it, and a small controller (`controller.rs`) with
//! Flux's patch pattern behind it; a schedule that freezes the controller's view at the
//! worst moment; the oracles' verdict.
//!
//! ```text
//!  demo controller ──► proxy (schedule, oracles) ──► simulator
//!      (kube-rs)            │  ground truth ◄────────────┘
//!                           └─► timeline, report
//! ```

pub mod controller;
pub mod metrics;
pub mod widgets;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use kube::api::{Api, DynamicObject, PostParams};

use controller::{Behaviour, RESOURCE};

/// The demo's scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// Flux F1: a 1.5 s freeze right after the first status patch; the conditions patch
    /// gets 409 on every retry and the guard leaves observedGeneration stuck.
    F1,
    /// A controller that stamps a timestamp annotation on every reconcile.
    HotLoop,
}

/// The identity the demo controller's token carries; the schedule finds it by it.
pub const SERVICE_ACCOUNT: &str = "demo:gitrepo-controller";

/// The schedule of a scenario (also what `stalemate demo --print-schedule` shows).
pub fn schedule(scenario: Scenario, settle: Duration) -> serde_json::Value {
    let settle = format!("{}ms", settle.as_millis());
    match scenario {
        Scenario::F1 => serde_json::json!({
            "seed": 1,
            "clients": {"gitrepo-controller": {"serviceAccount": SERVICE_ACCOUNT}},
            "windows": [{
                "name": "f1-stale-gitrepository",
                "client": "gitrepo-controller",
                "resources": [RESOURCE],
                "fault": {"freeze": {}},
                "trigger": {"afterRequests": {"verb": "patch", "resource": RESOURCE, "subresource": "status", "count": 1}},
                "duration": "1500ms"
            }],
            "oracles": {
                "convergence": {"resources": [RESOURCE], "settle": settle},
                "conflicts": {"maxPerObjectPerMinute": 20}
            }
        }),
        Scenario::HotLoop => serde_json::json!({
            "seed": 1,
            "clients": {"gitrepo-controller": {"serviceAccount": SERVICE_ACCOUNT}},
            "oracles": {
                "hotLoop": {"maxWritesPerObjectPerMinute": 30, "resources": [RESOURCE]},
                "conflicts": {"maxPerObjectPerMinute": 20}
            }
        }),
    }
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
The demo needs no cluster: it runs the API simulator, the proxy and a small controller in
this process, prints a timeline as it goes, and ends with the oracles' verdict. Scenarios:
  f1        (default) the Flux F1 bug: the convergence oracle reports the GitRepository
            stuck (observedGeneration != generation long after the window); --fixed
            converges
  hot-loop  a controller stamping a timestamp annotation on every reconcile; the
            hot-loop oracle names the annotation")]
pub struct DemoArgs {
    /// Run the controller with the fix (observedGeneration written whenever the work
    /// succeeded).
    #[arg(long)]
    pub fixed: bool,

    #[arg(long, value_enum, default_value = "f1")]
    pub scenario: Scenario,

    /// How long after the last window closes the controller has to recover (the
    /// convergence oracle's `settle`; the verdict comes sooner once it is Current).
    #[arg(long, default_value = "8s", value_parser = crate::k8s::duration::parse, value_name = "DURATION")]
    pub settle: Duration,

    /// How long the hot-loop scenario lets the controller run.
    #[arg(long, default_value = "4s", value_parser = crate::k8s::duration::parse, value_name = "DURATION")]
    pub hot_loop_for: Duration,

    /// Write a JSON-lines trace of the run here.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// Write the report as JSON here.
    #[arg(long, value_name = "FILE")]
    pub report_json: Option<PathBuf>,

    /// Write the report as a self-contained HTML timeline here.
    #[arg(long, value_name = "FILE")]
    pub report_html: Option<PathBuf>,
}

/// Create a CRD (JSON) and wait until its resource is served.
pub async fn install_crd(client: &kube::Client, crd: &str) -> Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crd: CustomResourceDefinition = serde_json::from_str(crd).context("the CRD")?;
    let group = crd.spec.group.clone();
    let plural = crd.spec.names.plural.clone();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.create(&PostParams::default(), &crd)
        .await
        .context("creating the CRD")?;
    for _ in 0..100 {
        if let Ok(g) = kube::discovery::group(client, &group).await
            && crate::k8s::discovery::resources(&g)
                .iter()
                .any(|(ar, _)| ar.plural == plural)
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("the CRD {plural}.{group} was created but is not served")
}

/// A line of the timeline, stamped with the time since the demo started.
fn printer(start: Instant) -> controller::Log {
    Arc::new(move |line: String| {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{:>7.3}s  {line}", start.elapsed().as_secs_f64());
    })
}

pub async fn run(args: DemoArgs) -> Result<()> {
    let start = Instant::now();
    let log = printer(start);
    let dir = std::env::temp_dir().join(format!("stalemate-demo-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = run_in(&args, &dir, log).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn run_in(args: &DemoArgs, dir: &std::path::Path, log: controller::Log) -> Result<()> {
    // The cluster: the simulator, on a free loopback port.
    let local = crate::sim::Local::start(dir, crate::sim::SimConfig::default()).await?;
    let sim_url = local.url.clone();
    let controller_token = local
        .sim
        .token_for(&format!("system:serviceaccount:{SERVICE_ACCOUNT}"));
    log(format!("simulator serving at {sim_url}"));
    let (running, proxy_certs) = start_proxy(args, &local, &log).await?;

    // The user: a CRD and a GitRepository, straight on the cluster.
    let admin = crate::k8s::kubeconfig::client(&local.kubeconfig, None).await?;
    install_crd(&admin, controller::CRD).await?;
    // The controller: through the proxy, as its own service account.
    let ctl_client = controller_client(dir, &running, &proxy_certs, &controller_token).await?;
    let behaviour = match (args.scenario, args.fixed) {
        (Scenario::HotLoop, _) => Behaviour::HotLoop,
        (Scenario::F1, true) => Behaviour::Fixed,
        (Scenario::F1, false) => Behaviour::Buggy,
    };
    log(format!("controller started ({behaviour:?})"));
    let ctl_task = tokio::spawn(controller::run(ctl_client, behaviour, log.clone()));
    let windows_task = log_windows(running.engine.clone(), log.clone());
    create_objects(&admin, &log).await?;

    wait_for_verdict(args, &running).await;
    ctl_task.abort();
    windows_task.abort();
    let report = running.stop().await;
    local.stop().await;
    crate::server::write_reports(
        &report,
        args.report_json.as_deref(),
        args.report_html.as_deref(),
    )?;
    println!();
    print!("{}", report.terminal());
    Ok(())
}

/// The proxy in front of the simulator, with the scenario's schedule, and its
/// certificates.
async fn start_proxy(
    args: &DemoArgs,
    local: &crate::sim::Local,
    log: &controller::Log,
) -> Result<(crate::server::Running, crate::k8s::certs::CertBundle)> {
    let schedule_json = schedule(args.scenario, args.settle);
    let schedule =
        crate::schedule::Schedule::parse(&schedule_json.to_string(), "the demo schedule")
            .map_err(|e| anyhow::anyhow!("the demo schedule: {e:?}"))?;
    let proxy_certs = crate::k8s::certs::generate("stalemate", &[])?;
    let running = crate::server::start(crate::server::Options {
        drain_timeout: Duration::from_secs(2),
        ..crate::server::Options::loopback(
            &proxy_certs,
            crate::upstream::Source::kubeconfig_file(local.kubeconfig.clone()),
            schedule,
            args.trace.clone(),
        )
    })
    .await?;
    log(format!(
        "proxy serving at {} (admin http://{})",
        running.url, running.admin
    ));
    match args.scenario {
        Scenario::F1 => log("schedule: freeze the controller's view of gitrepositories for 1.5s right after its first status patch".into()),
        Scenario::HotLoop => log("schedule: no windows; the hot-loop oracle watches write rates".into()),
    }
    Ok((running, proxy_certs))
}

/// A client for the controller: through the proxy, as its own service account (its
/// kubeconfig written in `dir`).
async fn controller_client(
    dir: &std::path::Path,
    running: &crate::server::Running,
    proxy_certs: &crate::k8s::certs::CertBundle,
    token: &str,
) -> Result<kube::Client> {
    let ctl_kubeconfig = dir.join("controller.kubeconfig");
    crate::k8s::kubeconfig::write(
        &ctl_kubeconfig,
        &crate::k8s::kubeconfig::KubeconfigSpec {
            name: "stalemate-demo",
            server: &running.url,
            ca_pem: &proxy_certs.ca_cert_pem,
            token: Some(token),
            client_cert: None,
            namespace: Some("demo"),
        },
    )?;
    crate::k8s::kubeconfig::client(&ctl_kubeconfig, None).await
}

/// Window transitions, logged as they happen (until the task is aborted).
fn log_windows(
    engine: Arc<crate::schedule::engine::Engine>,
    log: controller::Log,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut open: Vec<String> = Vec::new();
        loop {
            let now = engine.active_names();
            for w in now.iter().filter(|w| !open.contains(w)) {
                log(format!("window {w} opened (freeze)"));
            }
            for w in open.iter().filter(|w| !now.contains(w)) {
                log(format!("window {w} closed: held events released"));
            }
            open = now;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
}

/// The user's objects: namespace `demo` and the GitRepository `demo/podinfo`.
async fn create_objects(admin: &kube::Client, log: &controller::Log) -> Result<()> {
    let ns: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin.clone());
    ns.create(
        &PostParams::default(),
        &serde_json::from_value(serde_json::json!({"metadata": {"name": "demo"}}))?,
    )
    .await
    .context("creating namespace demo")?;
    let repos: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), "demo", &controller::api_resource());
    repos
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({
                "apiVersion": format!("{}/v1", controller::GROUP), "kind": "GitRepository",
                "metadata": {"name": "podinfo", "namespace": "demo"},
                "spec": {"interval": "10m", "url": "https://github.com/stefanprodan/podinfo", "ref": {"branch": "master"}}
            }))?,
        )
        .await
        .context("creating the GitRepository")?;
    log("created GitRepository demo/podinfo".into());
    Ok(())
}

/// Wait for the verdict: the hot loop's run time, or F1 judged (at most 50 s).
async fn wait_for_verdict(args: &DemoArgs, running: &crate::server::Running) {
    match args.scenario {
        Scenario::HotLoop => tokio::time::sleep(args.hot_loop_for).await,
        Scenario::F1 => {
            let deadline = Instant::now() + Duration::from_secs(50);
            loop {
                // Judged once the F1 window has been and gone (before it, a GitRepository
                // already Current leaves nothing to wait for).
                let judged = running.oracles.update_gauge(std::time::SystemTime::now())
                    && running.oracles.windows_closed() > 0;
                if judged || Instant::now() > deadline {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}
