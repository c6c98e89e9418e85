//! `stalemate certs`: generate the CA and serving certificate for a proxy or sidecar.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;

#[derive(Debug, Args)]
#[command(after_help = "\
For a sidecar (see `stalemate inject`):
  stalemate certs --kubernetes --namespace flux-system | kubectl apply -f -
creates the Secret stalemate-tls (the sidecar's serving certificate, for 127.0.0.1 and
localhost) and the ConfigMap stalemate-ca (ca.crt, which the controller containers trust).")]
pub struct CertsArgs {
    /// Directory to write ca.crt, ca.key, tls.crt and tls.key into (created if missing).
    #[arg(long, value_name = "DIR", required_unless_present = "kubernetes")]
    pub out: Option<PathBuf>,

    /// Print a Secret (stalemate-tls) and a ConfigMap (stalemate-ca) as YAML for
    /// `kubectl apply -f -`, instead of (or as well as) writing files.
    #[arg(long, requires = "namespace")]
    pub kubernetes: bool,

    /// Namespace of the Secret and ConfigMap (with --kubernetes).
    #[arg(long, short = 'n', value_name = "NS")]
    pub namespace: Option<String>,

    /// Extra subject alternative names for the serving certificate (IPs or DNS names);
    /// 127.0.0.1, ::1 and localhost are always included.
    #[arg(long = "san", value_name = "NAME")]
    pub sans: Vec<String>,
}

/// The Secret and ConfigMap a sidecar needs, as a YAML stream.
pub fn kubernetes_yaml(bundle: &crate::k8s::certs::CertBundle, namespace: &str) -> Result<String> {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    let labels = serde_json::json!({"app.kubernetes.io/name": "stalemate", "app.kubernetes.io/component": "certificates"});
    let docs = [
        serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": "stalemate-tls", "namespace": namespace, "labels": labels},
            "data": {"tls.crt": b64(&bundle.cert_pem), "tls.key": b64(&bundle.key_pem)}
        }),
        serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "stalemate-ca", "namespace": namespace, "labels": labels},
            "data": {"ca.crt": bundle.ca_cert_pem}
        }),
    ];
    Ok(serde_saphyr::to_string_multiple(&docs)?)
}

pub fn run(args: CertsArgs) -> Result<()> {
    let bundle = crate::k8s::certs::generate("stalemate", &args.sans)?;
    if let Some(out) = &args.out {
        bundle.write_to(out)?;
        eprintln!("wrote {}/{{ca.crt,ca.key,tls.crt,tls.key}}", out.display());
    }
    if args.kubernetes {
        let Some(ns) = &args.namespace else {
            bail!("--kubernetes needs --namespace");
        };
        print!("{}", kubernetes_yaml(&bundle, ns)?);
    }
    Ok(())
}
