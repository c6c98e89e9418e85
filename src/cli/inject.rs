//! `stalemate inject`: add the stalemate sidecar to workloads in Kubernetes YAML.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::Value;

#[derive(Debug, Args)]
#[command(after_help = "\
Reads Kubernetes YAML (one document, a multi-document stream, or a `kind: List` as
`kubectl get -o yaml` prints it) and writes it back with, for every Deployment,
StatefulSet, DaemonSet, ReplicaSet, Job and Pod: a `stalemate` sidecar (serve
--in-cluster on 127.0.0.1:7443, admin and metrics on :9464) and the controller containers
pointed at it (KUBERNETES_SERVICE_HOST=127.0.0.1, KUBERNETES_SERVICE_PORT=7443, and a
projected service-account volume whose ca.crt is stalemate's CA). Other documents pass
through untouched; comments are not kept. Injecting twice equals injecting once.

The pod needs, in its namespace: the Secret `stalemate-tls` and the ConfigMap
`stalemate-ca` (`stalemate certs --kubernetes --namespace NS | kubectl apply -f -`) and
the schedule ConfigMap (key `schedule.json`).

Example:
  kubectl -n flux-system get deploy source-controller -o yaml | stalemate inject | kubectl apply -f -")]
pub struct InjectArgs {
    /// The YAML to read; `-` is standard input.
    #[arg(
        short = 'f',
        long = "filename",
        default_value = "-",
        value_name = "FILE"
    )]
    pub file: PathBuf,

    /// ConfigMap holding the schedule under the key `schedule.json`.
    #[arg(long, default_value = "stalemate-schedule", value_name = "NAME")]
    pub schedule_configmap: String,

    /// The stalemate image.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,

    /// Only these containers go through the proxy (default: all of them).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub containers: Vec<String>,

    /// Remove what an earlier inject added, restoring the original.
    #[arg(long)]
    pub uninject: bool,
}

pub fn run(args: InjectArgs) -> Result<()> {
    let (name, text) = if args.file.as_os_str() == "-" {
        (
            "standard input".to_string(),
            std::io::read_to_string(std::io::stdin()).context("reading standard input")?,
        )
    } else {
        (
            args.file.display().to_string(),
            std::fs::read_to_string(&args.file)
                .with_context(|| format!("reading {}", args.file.display()))?,
        )
    };
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(&text)
        .map_err(|e| anyhow::anyhow!("{name}: not Kubernetes YAML: {e}"))?;
    let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    if docs.is_empty() {
        bail!("{name}: no documents");
    }
    for (i, d) in docs.iter().enumerate() {
        if !d.is_object() {
            bail!(
                "{name}: document {}: not a Kubernetes object (a mapping with kind and apiVersion)",
                i + 1
            );
        }
    }
    let out = if args.uninject {
        crate::server::inject::uninject_all(docs)
    } else {
        let mut o = crate::server::inject::Options {
            schedule_configmap: args.schedule_configmap.clone(),
            containers: args.containers.clone(),
            ..Default::default()
        };
        if let Some(img) = &args.image {
            o.image = img.clone();
        }
        crate::server::inject::inject_all(docs, &o)
    }
    .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    let yaml = serde_saphyr::to_string_multiple(&out).context("writing YAML")?;
    print!("{yaml}");
    Ok(())
}
