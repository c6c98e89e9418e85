//! `stalemate kubeconfig`: a kubeconfig for clients of a running proxy.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

#[derive(Debug, Args)]
pub struct KubeconfigArgs {
    /// The proxy's URL, e.g. https://127.0.0.1:7443.
    #[arg(long, value_name = "URL")]
    pub server: String,

    /// The CA that signed the proxy's serving certificate (PEM).
    #[arg(long, value_name = "FILE")]
    pub ca: PathBuf,

    /// Where to write the kubeconfig.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,

    /// Default namespace for the context.
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
}

pub fn run(args: KubeconfigArgs) -> Result<()> {
    let uri: http::Uri = args
        .server
        .parse()
        .with_context(|| format!("--server {:?} is not a URL", args.server))?;
    anyhow::ensure!(
        uri.scheme_str() == Some("https") && uri.host().is_some(),
        "--server {:?}: expected https://HOST:PORT",
        args.server
    );
    let ca =
        std::fs::read_to_string(&args.ca).with_context(|| format!("--ca {}", args.ca.display()))?;
    anyhow::ensure!(
        ca.contains("BEGIN CERTIFICATE"),
        "--ca {}: not a PEM certificate",
        args.ca.display()
    );
    crate::k8s::kubeconfig::write(
        &args.out,
        &crate::k8s::kubeconfig::KubeconfigSpec {
            name: "stalemate",
            server: &args.server,
            ca_pem: &ca,
            token: Some(crate::proxy::UPSTREAM_CREDENTIALS_TOKEN),
            client_cert: None,
            namespace: args.namespace.as_deref(),
        },
    )
}
