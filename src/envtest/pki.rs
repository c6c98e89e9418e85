//! The control plane's certificates and keys, made with rcgen into its directory — what
//! kubeadm makes for a cluster, cut to what one loopback apiserver needs:
//!
//! | file | what |
//! |---|---|
//! | `ca.crt`, `ca.key` | the cluster CA: signs the serving and client certificates (`--client-ca-file`, kube-controller-manager's `--root-ca-file` and `--cluster-signing-*`) |
//! | `apiserver.crt`, `apiserver.key` | kube-apiserver's serving certificate (127.0.0.1, ::1, localhost) |
//! | `sa.key`, `sa.pub` | the service-account token signing key pair (ECDSA P-256: ES256 tokens) |
//! | `admin.kubeconfig` | `stalemate:envtest-admin` in `system:masters`, straight to the apiserver |
//! | `kube-controller-manager.kubeconfig`, `kube-scheduler.kubeconfig` | the identities RBAC's bootstrap policy grants those components (`system:kube-controller-manager`, `system:kube-scheduler`) |
//!
//! Keys are written mode 0600.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::k8s::certs::{CertBundle, write_file};

/// The admin's user name (in group `system:masters`).
pub const ADMIN_USER: &str = "stalemate:envtest-admin";

/// File names in a control plane's directory.
pub const CA_CERT: &str = "ca.crt";
pub const CA_KEY: &str = "ca.key";
pub const SERVING_CERT: &str = "apiserver.crt";
pub const SERVING_KEY: &str = "apiserver.key";
pub const SA_KEY: &str = "sa.key";
pub const SA_PUB: &str = "sa.pub";
pub const ADMIN_KUBECONFIG: &str = "admin.kubeconfig";

/// The certificates of one control plane, written into its directory.
pub struct Pki {
    pub dir: PathBuf,
    bundle: CertBundle,
}

impl Pki {
    /// Make a CA, a serving certificate and the service-account key pair, and write them.
    pub fn generate(dir: &Path) -> Result<Pki> {
        let bundle = crate::k8s::certs::generate("stalemate-envtest", &[])?;
        let sa = rcgen::KeyPair::generate().context("generating the service-account key")?;
        for (file, pem, secret) in [
            (CA_CERT, bundle.ca_cert_pem.as_str(), false),
            (CA_KEY, bundle.ca_key_pem.as_str(), true),
            (SERVING_CERT, bundle.cert_pem.as_str(), false),
            (SERVING_KEY, bundle.key_pem.as_str(), true),
            (SA_KEY, &sa.serialize_pem(), true),
            (SA_PUB, &sa.public_key_pem(), false),
        ] {
            let path = dir.join(file);
            write_file(&path, pem.as_bytes(), secret)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(Pki {
            dir: dir.to_path_buf(),
            bundle,
        })
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    pub fn ca_pem(&self) -> &str {
        &self.bundle.ca_cert_pem
    }

    /// Write `<file>` as a kubeconfig for `server` authenticating as `user` (in `group`)
    /// with a client certificate the CA signs.
    pub fn kubeconfig(
        &self,
        file: &str,
        server: &str,
        user: &str,
        group: Option<&str>,
    ) -> Result<PathBuf> {
        let (cert, key) = crate::k8s::certs::client_cert(&self.bundle, user, group)?;
        let path = self.dir.join(file);
        crate::k8s::kubeconfig::write(
            &path,
            &crate::k8s::kubeconfig::KubeconfigSpec {
                name: "envtest",
                server,
                ca_pem: &self.bundle.ca_cert_pem,
                token: None,
                client_cert: Some((&cert, &key)),
                namespace: None,
            },
        )?;
        Ok(path)
    }
}
