//! Writing kubeconfig files for clients of the simulator and of the proxy.
//!
//! Reading kubeconfigs (contexts, exec plugins, in-cluster) is `kube::Config`'s job; this
//! module emits the small, self-contained file a client needs to reach us: the server
//! URL, our CA inline, and optionally a bearer token — and turns a file into a kube-rs
//! client ([`client`]) for stalemate's own calls (setup, ground truth, end states).

use std::path::Path;

use anyhow::{Context, Result};
use base64::Engine;
use serde::Serialize;

/// What goes into a generated kubeconfig.
#[derive(Debug, Clone)]
pub struct KubeconfigSpec<'a> {
    /// Name used for the cluster, user and context entries.
    pub name: &'a str,
    pub server: &'a str,
    pub ca_pem: &'a str,
    /// Bearer token for the user entry; `None` writes a user without credentials.
    pub token: Option<&'a str>,
    /// A client certificate and its key (PEM) for the user entry.
    pub client_cert: Option<(&'a str, &'a str)>,
    pub namespace: Option<&'a str>,
}

#[derive(Serialize)]
struct Kubeconfig<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    clusters: Vec<Named<'a, Cluster>>,
    users: Vec<Named<'a, User<'a>>>,
    contexts: Vec<Named<'a, CtxEntry<'a>>>,
    #[serde(rename = "current-context")]
    current_context: &'a str,
}

#[derive(Serialize)]
struct Named<'a, T> {
    name: &'a str,
    #[serde(flatten)]
    item: T,
}

#[derive(Serialize)]
struct Cluster {
    cluster: ClusterInner,
}

#[derive(Serialize)]
struct ClusterInner {
    server: String,
    #[serde(rename = "certificate-authority-data")]
    ca_data: String,
    /// Go clients would otherwise add `Accept-Encoding: gzip` on their own
    /// (docs/PROTOCOL.md §A.6).
    #[serde(rename = "disable-compression")]
    disable_compression: bool,
}

#[derive(Serialize)]
struct User<'a> {
    user: UserInner<'a>,
}

#[derive(Serialize)]
struct UserInner<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<&'a str>,
    #[serde(
        rename = "client-certificate-data",
        skip_serializing_if = "Option::is_none"
    )]
    client_certificate_data: Option<String>,
    #[serde(rename = "client-key-data", skip_serializing_if = "Option::is_none")]
    client_key_data: Option<String>,
}

#[derive(Serialize)]
struct CtxEntry<'a> {
    context: ContextInner<'a>,
}

#[derive(Serialize)]
struct ContextInner<'a> {
    cluster: &'a str,
    user: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
}

/// Render the kubeconfig as YAML.
pub fn render(spec: &KubeconfigSpec<'_>) -> Result<String> {
    let cfg = Kubeconfig {
        api_version: "v1",
        kind: "Config",
        clusters: vec![Named {
            name: spec.name,
            item: Cluster {
                cluster: ClusterInner {
                    server: spec.server.to_string(),
                    ca_data: base64::engine::general_purpose::STANDARD.encode(spec.ca_pem),
                    disable_compression: true,
                },
            },
        }],
        users: vec![Named {
            name: spec.name,
            item: User {
                user: UserInner {
                    token: spec.token,
                    client_certificate_data: spec
                        .client_cert
                        .map(|(c, _)| base64::engine::general_purpose::STANDARD.encode(c)),
                    client_key_data: spec
                        .client_cert
                        .map(|(_, k)| base64::engine::general_purpose::STANDARD.encode(k)),
                },
            },
        }],
        contexts: vec![Named {
            name: spec.name,
            item: CtxEntry {
                context: ContextInner {
                    cluster: spec.name,
                    user: spec.name,
                    namespace: spec.namespace,
                },
            },
        }],
        current_context: spec.name,
    };
    serde_saphyr::to_string(&cfg).context("rendering the kubeconfig")
}

/// Render and write the kubeconfig to `path` (mode 0600: it may hold a token).
pub fn write(path: &Path, spec: &KubeconfigSpec<'_>) -> Result<()> {
    let text = render(spec)?;
    crate::k8s::certs::write_file(path, text.as_bytes(), true)
        .with_context(|| format!("writing kubeconfig {}", path.display()))
}

/// A kube-rs client from a kubeconfig file (and context).
pub async fn client(kubeconfig: &Path, context: Option<&str>) -> Result<kube::Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let cfg = kube::Config::from_custom_kubeconfig(kc, &options)
        .await
        .with_context(|| format!("loading {}", kubeconfig.display()))?;
    kube::Client::try_from(cfg).context("building a kube client")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_kubeconfig_kube_rs_can_load() {
        let yaml = render(&KubeconfigSpec {
            name: "sim",
            server: "https://127.0.0.1:6443",
            ca_pem: "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n",
            token: Some("t0k"),
            client_cert: None,
            namespace: Some("default"),
        })
        .unwrap();
        let v: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(v["current-context"], "sim");
        assert_eq!(
            v["clusters"][0]["cluster"]["server"],
            "https://127.0.0.1:6443"
        );
        assert_eq!(v["users"][0]["user"]["token"], "t0k");
        assert_eq!(v["contexts"][0]["context"]["namespace"], "default");
    }
}
