//! What a real control plane costs to start (`--envtest`): an etcd of its own per
//! control plane, against one shared etcd with a prefix per control plane — alternating,
//! so both see the same machine. Also with `--with` components.
//!
//!   cargo run --release --example control-plane -- [--rounds N] [--with kube-controller-manager,kwok]
//!
//! Needs $KUBEBUILDER_ASSETS (`bash e2e/assets/build.sh`).

use std::time::{Duration, Instant};

use stalemate::envtest::{Assets, ControlPlane, Etcd, Spec, Storage, With};

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut rounds = 5;
    let mut with = With::default();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--rounds" => {
                rounds = args.get(i + 1).and_then(|r| r.parse().ok()).unwrap_or(5);
                i += 1;
            }
            "--with" => {
                with = With::parse(args.get(i + 1).map_or("", String::as_str))
                    .map_err(anyhow::Error::msg)?;
                i += 1;
            }
            other => anyhow::bail!("unknown argument {other:?}"),
        }
        i += 1;
    }
    let spec = Spec::new(Assets::locate(None)?, with.0.clone());
    for (name, said) in spec.check().await? {
        println!("{name}: {said}");
    }
    let tmp = tempfile::tempdir()?;
    let etcd = Etcd::start(
        &spec.assets,
        &tmp.path().join("shared"),
        Duration::from_secs(60),
    )
    .await?;
    let shared = Storage::Shared(std::sync::Arc::new(tokio::sync::Mutex::new(etcd)));
    let (mut own, mut prefixed, mut stop) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        for (storage, times) in [(&Storage::Own, &mut own), (&shared, &mut prefixed)] {
            let clock = Instant::now();
            let cp = ControlPlane::start(
                &spec,
                &tmp.path().join(format!("{r}-{}", times.len())),
                storage,
            )
            .await?;
            times.push(clock.elapsed().as_secs_f64());
            let clock = Instant::now();
            cp.stop().await;
            stop.push(clock.elapsed().as_secs_f64());
        }
    }
    println!(
        "start, own etcd: median {:.2}s ({:?})",
        median(&mut own.clone()),
        own.iter().map(|t| format!("{t:.2}")).collect::<Vec<_>>()
    );
    println!(
        "start, shared etcd + prefix: median {:.2}s ({:?})",
        median(&mut prefixed.clone()),
        prefixed
            .iter()
            .map(|t| format!("{t:.2}"))
            .collect::<Vec<_>>()
    );
    println!("stop: median {:.2}s", median(&mut stop));
    if let Storage::Shared(e) = shared
        && let Ok(e) = std::sync::Arc::try_unwrap(e)
    {
        e.into_inner().kill().await;
    }
    Ok(())
}
