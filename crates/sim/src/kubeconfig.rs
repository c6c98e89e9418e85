//! The kubeconfig `stalemate sim` writes: the simulator's CA, and the admin identity as a
//! token or a client certificate.

use anyhow::Result;

use super::instance::Sim;

/// The identity in the simulator's own kubeconfig (`kubectl auth whoami` shows it).
pub const ADMIN_USER: &str = "stalemate-sim:admin";
/// The group of the admin client certificate (`--kubeconfig-auth cert`).
pub const ADMIN_GROUP: &str = "system:masters";

/// The credentials of the kubeconfig `stalemate sim` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KubeconfigAuth {
    Token,
    Cert,
}

/// Write a kubeconfig for `sim` at `url`, authenticating as the admin by `how`.
pub fn write_kubeconfig(
    path: &std::path::Path,
    sim: &Sim,
    url: &str,
    how: KubeconfigAuth,
) -> Result<()> {
    let token = sim.token_for(ADMIN_USER);
    let cert = match how {
        KubeconfigAuth::Token => None,
        KubeconfigAuth::Cert => Some(stalemate_wire::k8s::certs::client_cert(
            &sim.certs,
            ADMIN_USER,
            Some(ADMIN_GROUP),
        )?),
    };
    stalemate_wire::k8s::kubeconfig::write(
        path,
        &stalemate_wire::k8s::kubeconfig::KubeconfigSpec {
            name: "stalemate-sim",
            server: url,
            ca_pem: &sim.certs.ca_cert_pem,
            token: cert.is_none().then_some(token.as_str()),
            client_cert: cert.as_ref().map(|(c, k)| (c.as_str(), k.as_str())),
            namespace: Some("default"),
        },
    )
}
