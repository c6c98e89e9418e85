//! `explore gather`'s two halves: a Job's pods' logs through the API, and a log's
//! archive unpacked into a shard's output directory.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};

use crate::explore::output;
use crate::explore::shards::{job, pack};

/// The annotation the Job controller puts the pod's index in.
const INDEX: &str = "batch.kubernetes.io/job-completion-index";

async fn client(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<kube::Client> {
    match kubeconfig {
        Some(p) => crate::k8s::kubeconfig::client(p, context).await,
        None => {
            let options = kube::config::KubeConfigOptions {
                context: context.map(str::to_string),
                ..Default::default()
            };
            let cfg = kube::Config::from_kubeconfig(&options)
                .await
                .context("loading the kubeconfig ($KUBECONFIG or ~/.kube/config)")?;
            kube::Client::try_from(cfg).context("building a kube client")
        }
    }
}

/// The log of each shard's succeeded pod (named `pod NAME (shard I)`), and the shards
/// that have none, each said with what its pods are doing.
pub async fn pod_logs(
    name: &str,
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    namespace: Option<&str>,
) -> Result<(Vec<(String, String)>, Vec<String>)> {
    let client = client(kubeconfig, context).await?;
    let ns = namespace
        .map(str::to_string)
        .unwrap_or_else(|| client.default_namespace().to_string());
    let found = Api::<Job>::namespaced(client.clone(), &ns)
        .get(name)
        .await
        .with_context(|| format!("job {name} in namespace {ns}"))?;
    let shards = found
        .spec
        .as_ref()
        .and_then(|s| s.completions)
        .unwrap_or(1)
        .max(0) as usize;
    let pods = Api::<Pod>::namespaced(client, &ns);
    let list = pods
        .list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={name}")))
        .await
        .with_context(|| format!("listing the pods of job {name} in namespace {ns}"))?;
    let mut logs = Vec::new();
    let mut missing = Vec::new();
    for i in 0..shards {
        let mine: Vec<&Pod> = list
            .items
            .iter()
            .filter(|p| {
                p.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(INDEX))
                    .is_some_and(|x| x.trim() == i.to_string())
            })
            .collect();
        let phase = |p: &Pod| {
            p.status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_else(|| "Pending".into())
        };
        let done = mine
            .iter()
            .filter(|p| phase(p) == "Succeeded")
            .max_by_key(|p| p.metadata.creation_timestamp.clone());
        let Some(pod) = done else {
            let what: Vec<String> = mine
                .iter()
                .map(|p| format!("{} {}", p.metadata.name.as_deref().unwrap_or("?"), phase(p)))
                .collect();
            missing.push(format!(
                "shard {i}: no pod succeeded ({})",
                if what.is_empty() {
                    "none made yet".to_string()
                } else {
                    what.join(", ")
                }
            ));
            continue;
        };
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        let params = LogParams {
            container: Some(job::CONTAINER.into()),
            ..Default::default()
        };
        let log = pods
            .logs(&pod_name, &params)
            .await
            .with_context(|| format!("reading the log of pod {pod_name} (shard {i})"))?;
        logs.push((format!("pod {pod_name} (shard {i})"), log));
    }
    Ok((logs, missing))
}

/// Unpack the archive in `log` into `out/shard-I/` (I from its summary); returns that
/// directory.
pub fn unpack_shard(name: &str, log: &str, out: &Path) -> Result<PathBuf> {
    let files = pack::unpack(log, name)?;
    let Some((_, json)) = files.iter().find(|(n, _)| n == "summary.json") else {
        bail!("{name}: the archive holds no summary.json");
    };
    let summary: output::Summary =
        serde_json::from_slice(json).with_context(|| format!("{name}: its summary.json"))?;
    let Some(shard) = &summary.shard else {
        bail!("{name}: its explore ran without --shard: not a pod of `explore job`");
    };
    let dir = out.join(format!("shard-{}", shard.index));
    let o = output::Out::create(&dir)?;
    for (n, data) in &files {
        let to = dir.join(n);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&to, data).with_context(|| format!("writing {}", to.display()))?;
    }
    // The archive leaves the HTML out (it is the JSON again): made here.
    o.write_summary(&summary)?;
    Ok(dir)
}
