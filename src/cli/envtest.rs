//! `stalemate envtest`: start a real control plane on loopback (etcd, kube-apiserver and
//! `--with`'s components from a directory of binaries), print where it is, and keep it
//! until SIGINT/SIGTERM — what `run --envtest` and each `explore --envtest` trial start,
//! on its own, for a proxy, a test or a shell.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use crate::envtest::{Assets, ControlPlane, Spec, Storage, With};

#[derive(Debug, Args)]
#[command(after_help = "\
The first line on standard output is the apiserver's URL, the second its directory:
ca.crt, ca.key (the cluster CA), sa.key, sa.pub (service-account signing keys),
admin.kubeconfig (system:masters, straight to the apiserver), and one log per process.

  export KUBEBUILDER_ASSETS=$(bash e2e/assets/build.sh | tail -n1)
  stalemate envtest --kubeconfig-out /tmp/real.kubeconfig &
  stalemate serve --upstream-kubeconfig /tmp/real.kubeconfig")]
pub struct EnvtestArgs {
    /// The directory of binaries (etcd, kube-apiserver, …), or a Kubernetes version
    /// whose build it is (`1.35`: what `bash e2e/assets/build.sh 1.35` built into
    /// ~/.cache/stalemate/kube/). Default: $KUBEBUILDER_ASSETS.
    #[arg(long, value_name = "DIR|VERSION")]
    pub assets: Option<PathBuf>,

    /// Also start these, comma-separated: kube-controller-manager (the built-in
    /// controllers), kube-scheduler, kwok (a fake node whose pods run; brings
    /// kube-scheduler).
    #[arg(long, value_name = "COMPONENTS", value_parser = With::parse)]
    pub with: Option<With>,

    /// Keep the control plane's files here (default: a new temporary directory, removed
    /// when it stops; after a failed start only its logs are kept, for the error names
    /// them).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Copy the admin kubeconfig here.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig_out: Option<PathBuf>,

    /// One more kube-apiserver flag (repeat for more), after stalemate's own:
    /// `--apiserver-arg=--feature-gates=WatchList=true`.
    #[arg(long, value_name = "FLAG", allow_hyphen_values = true)]
    pub apiserver_arg: Vec<String>,

    /// How long each process may take to get ready before it is an error.
    #[arg(long, default_value = "60s", value_parser = super::values::parse_duration, value_name = "DURATION")]
    pub ready_timeout: std::time::Duration,
}

pub async fn run(args: EnvtestArgs) -> Result<()> {
    let mut spec = Spec::new(
        Assets::locate(args.assets.as_deref())?,
        args.with.unwrap_or_default().0,
    );
    spec.ready_timeout = args.ready_timeout;
    spec.apiserver_args = args.apiserver_arg;
    spec.check().await?;
    // From here on a Ctrl-C stops the control plane, started or still starting, and
    // removes what it made.
    let mut stop = crate::process::stop_on_signal().context("handling SIGINT and SIGTERM")?;
    let (dir, temporary) = match &args.dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("stalemate-envtest-{}", uuid::Uuid::new_v4())),
            true,
        ),
    };
    let forget = |dir: &Path| {
        if temporary {
            let _ = std::fs::remove_dir_all(dir);
        }
    };
    let cp = match ControlPlane::start(&spec, &dir, &Storage::Own).await {
        Ok(cp) => cp,
        // Its processes got the terminal's Ctrl-C too: nobody asked for their logs.
        Err(e) if crate::envtest::daemon::cut_short_by_signal(&e) => {
            tracing::debug!(error = %format!("{e:#}"), "after the interrupt");
            forget(&dir);
            anyhow::bail!(INTERRUPTED_STARTING);
        }
        Err(e) => {
            if temporary {
                crate::envtest::leftovers::keep_only_logs(&dir);
            }
            return Err(e);
        }
    };
    let served = serve(args.kubeconfig_out.as_deref(), &cp, &mut stop).await;
    cp.stop().await;
    forget(&dir);
    served
}

const INTERRUPTED_STARTING: &str =
    "interrupted (SIGINT or SIGTERM) while the control plane was starting";

/// Announce the control plane (and copy its kubeconfig out), then keep it until told to
/// stop — unless that came while it started (a signal to stalemate alone), when it is
/// not announced at all.
async fn serve(
    kubeconfig_out: Option<&Path>,
    cp: &ControlPlane,
    stop: &mut tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    if *stop.borrow() {
        anyhow::bail!(INTERRUPTED_STARTING);
    }
    if let Some(out) = kubeconfig_out {
        std::fs::copy(&cp.admin_kubeconfig, out)
            .with_context(|| format!("--kubeconfig-out {}", out.display()))?;
    }
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", cp.url);
        let _ = writeln!(out, "{}", cp.dir.display());
        let _ = out.flush();
    }
    tracing::info!(url = %cp.url, dir = %cp.dir.display(), seconds = cp.started_in.as_secs_f64(), "control plane ready");
    let _ = stop.wait_for(|stopped| *stopped).await;
    Ok(())
}
