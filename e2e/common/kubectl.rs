//! kubectl, the same way, against every harness's server — the simulator, a real
//! apiserver, the proxy, an API script's endpoint: each gives its kubeconfig and a
//! discovery cache of its own (never the user's `~/.kube/cache`, never shared between
//! servers), and gets the same calls.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A server kubectl talks to. Bring it into scope (`use common::Kubectl;`) to call these.
pub trait Kubectl {
    /// The kubeconfig kubectl is given (`KUBECONFIG` is not looked at).
    fn kubeconfig_file(&self) -> &Path;

    /// kubectl's discovery cache for this server.
    fn cache_dir(&self) -> PathBuf;

    /// What `kubectl_ok` says a failure came from.
    fn whom(&self) -> &'static str;

    /// Run kubectl.
    fn kubectl(&self, args: &[&str]) -> Output {
        kubectl_cmd(self.kubeconfig_file(), &self.cache_dir())
            .args(args)
            .output()
            .expect("run kubectl")
    }

    /// Run kubectl and return its stdout, failing the test with its stderr when it fails.
    fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} against {} failed: {}\n{}",
            self.whom(),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Run kubectl with `stdin` on its standard input.
    fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = kubectl_cmd(self.kubeconfig_file(), &self.cache_dir())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubectl");
        let mut input = child.stdin.take().expect("stdin");
        input
            .write_all(stdin.as_bytes())
            .expect("write kubectl's stdin");
        drop(input);
        child.wait_with_output().expect("kubectl output")
    }

    /// A token the server issued (TokenRequest, through `kubectl create token`) for the
    /// service account NAMESPACE/NAME, created with its namespace when missing.
    fn sa_token(&self, namespace: &str, name: &str) -> String {
        // Already there is fine: `default` exists in every namespace.
        let _ = self.kubectl(&["create", "namespace", namespace]);
        let _ = self.kubectl(&["-n", namespace, "create", "serviceaccount", name]);
        self.kubectl_ok(&["-n", namespace, "create", "token", name])
            .trim()
            .to_string()
    }
}

/// kubectl with this kubeconfig and cache, and `KUBECONFIG` out of its environment.
pub fn kubectl_cmd(kubeconfig: &Path, cache: &Path) -> Command {
    let mut c = Command::new("kubectl");
    c.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache);
    c.env_remove("KUBECONFIG");
    c
}
