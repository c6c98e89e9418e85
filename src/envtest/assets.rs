//! Where the control plane's binaries are: controller-runtime envtest's convention, a
//! directory (`--envtest DIR`, else `$KUBEBUILDER_ASSETS`) holding `etcd`,
//! `kube-apiserver` and, for `--with`, `kube-controller-manager`, `kube-scheduler` and
//! `kwok`. `e2e/assets/build.sh` builds one from the Go module proxy, per version, into
//! `~/.cache/stalemate/kube/v1.MINOR.PATCH/`; `--envtest 1.35` names that directory by
//! its version (the newest patch there), so comparing releases is one flag.
//!
//! Each binary is checked once, before the first control plane starts: there, executable,
//! and what it says it is when asked `--version` — so a wrong file is an error naming it,
//! not an apiserver that "never gets ready".

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::setup_envtest;

/// The environment variable envtest reads.
pub const ENV: &str = "KUBEBUILDER_ASSETS";

/// How `<binary> --version` identifies each binary.
const IDENTITIES: &[(&str, &str)] = &[
    ("etcd", "etcd Version:"),
    ("kube-apiserver", "Kubernetes v"),
    ("kube-controller-manager", "Kubernetes v"),
    ("kube-scheduler", "Kubernetes v"),
    ("kwok", "kwok version"),
];

#[derive(Debug, Clone)]
pub struct Assets {
    pub dir: PathBuf,
}

impl Assets {
    /// `dir`, or `$KUBEBUILDER_ASSETS`; a `dir` that is no directory but a version
    /// (`1.35`, `v1.35.4`) names `build.sh`'s build of it.
    pub fn locate(dir: Option<&Path>) -> Result<Assets> {
        let dir = match dir {
            Some(d) if !d.is_dir() && as_version(d).is_some() => built(d)?,
            Some(d) if setup_envtest::is_store(d) => setup_envtest::the_item(d)?,
            Some(d) => d.to_path_buf(),
            None => match std::env::var_os(ENV) {
                Some(d) if !d.is_empty() => PathBuf::from(d),
                _ => bail!(
                    "--envtest: no directory given and ${ENV} is not set (it names a directory holding etcd and kube-apiserver; `bash e2e/assets/build.sh` builds one and prints its path)"
                ),
            },
        };
        if !dir.is_dir() {
            bail!(
                "--envtest {}: not a directory (it should hold etcd and kube-apiserver, as ${ENV} does)",
                dir.display()
            );
        }
        Ok(Assets { dir })
    }

    /// The path of `name` in the directory, if it is an executable file.
    pub fn binary(&self, name: &str) -> Result<PathBuf> {
        let path = self.dir.join(name);
        let meta = std::fs::metadata(&path).map_err(|_| {
            anyhow::anyhow!(
                "--envtest {}: no {name} there (the directory should hold etcd and kube-apiserver{}; `bash e2e/assets/build.sh` builds them)",
                self.dir.display(),
                if name.starts_with("kube-a") || name == "etcd" {
                    String::new()
                } else {
                    format!(", and {name} for --with")
                }
            )
        })?;
        use std::os::unix::fs::PermissionsExt;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            bail!(
                "--envtest {}: {name} is not an executable file",
                self.dir.display()
            );
        }
        Ok(path)
    }

    /// Check each named binary answers `--version` as itself; returns what each said
    /// (its first line).
    pub async fn check(&self, names: &[&str]) -> Result<Vec<(String, String)>> {
        let mut said = Vec::new();
        for name in names {
            let path = self.binary(name)?;
            let expect = IDENTITIES
                .iter()
                .find(|(n, _)| n == name)
                .map_or("", |(_, e)| *e);
            let out = tokio::time::timeout(
                Duration::from_secs(20),
                tokio::process::Command::new(&path)
                    .arg("--version")
                    .kill_on_drop(true)
                    .output(),
            )
            .await
            .map_err(|_| {
                anyhow::anyhow!("{}: `--version` did not answer within 20s", path.display())
            })?
            .with_context(|| format!("cannot run {}", path.display()))?;
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let line = text
                .lines()
                .find(|l| l.contains(expect))
                .filter(|_| out.status.success());
            match line {
                Some(l) => said.push((name.to_string(), l.trim().to_string())),
                None => bail!(
                    "{}: not {name}: `{name} --version` should print {expect:?}, it printed {:?} ({})",
                    path.display(),
                    text.lines().next().unwrap_or(""),
                    out.status
                ),
            }
        }
        Ok(said)
    }
}

/// Where `e2e/assets/build.sh` keeps its builds: `$STALEMATE_CACHE/kube`, else
/// `$XDG_CACHE_HOME/stalemate/kube`, else `~/.cache/stalemate/kube`.
pub fn build_cache() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let root = env("STALEMATE_CACHE")
        .or_else(|| env("XDG_CACHE_HOME").map(|c| c.join("stalemate")))
        .or_else(|| env("HOME").map(|h| h.join(".cache/stalemate")))?;
    Some(root.join("kube"))
}

/// `1.35`, `v1.35`, `1.35.4`, `v1.35.4` as (minor, patch).
fn as_version(p: &Path) -> Option<(u32, Option<u32>)> {
    let s = p.to_str()?;
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts = s.split('.');
    if parts.next()? != "1" {
        return None;
    }
    let minor = parts.next()?.parse().ok()?;
    let patch = match parts.next() {
        Some(p) => Some(p.parse().ok()?),
        None => None,
    };
    parts.next().is_none().then_some((minor, patch))
}

/// The cached build of a version: that exact one, or for a minor alone its newest patch;
/// else the same from setup-envtest's default store (`setup_envtest.rs`).
fn built(asked: &Path) -> Result<PathBuf> {
    let ours = match build_cache() {
        Some(cache) => built_in(&cache, asked),
        None => Err(anyhow::anyhow!(
            "--envtest {}: no cache directory to look in (HOME is not set)",
            asked.display()
        )),
    };
    let Err(e) = ours else { return ours };
    let (minor, patch) = as_version(asked).context("not a version")?;
    match setup_envtest::default_store() {
        Some(store) => match setup_envtest::find(&store, minor, patch) {
            Some(dir) => Ok(dir),
            None => bail!(
                "{e:#}; nor in setup-envtest's store {} (`setup-envtest use {}` adds it there)",
                store.display(),
                asked.display()
            ),
        },
        None => Err(e),
    }
}

fn built_in(cache: &Path, asked: &Path) -> Result<PathBuf> {
    let (minor, patch) = as_version(asked).context("not a version")?;
    let shown = asked.display();
    let how = format!("`bash e2e/assets/build.sh 1.{minor}` builds it");
    let newest = std::fs::read_dir(cache)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let (m, p) = as_version(Path::new(&name))?;
            (m == minor
                && p.is_some()
                && (patch.is_none() || p == patch)
                && e.path().join("kube-apiserver").is_file())
            .then_some((p, e.path()))
        })
        .max();
    match newest {
        Some((_, dir)) => Ok(dir),
        None => bail!(
            "--envtest {shown}: no control plane of Kubernetes {shown} in {} ({how})",
            cache.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_names_the_newest_build_of_it() {
        assert_eq!(as_version(Path::new("1.35")), Some((35, None)));
        assert_eq!(as_version(Path::new("v1.36.3")), Some((36, Some(3))));
        assert_eq!(as_version(Path::new("./1.35")), None);
        assert_eq!(as_version(Path::new("1.35.x")), None);
        let cache = tempfile::tempdir().unwrap();
        let kube = cache.path().join("kube");
        for v in ["v1.35.2", "v1.35.4", "v1.36.3"] {
            std::fs::create_dir_all(kube.join(v)).unwrap();
            std::fs::write(kube.join(v).join("kube-apiserver"), "").unwrap();
        }
        // A build that did not finish is not one.
        std::fs::create_dir_all(kube.join("v1.35.9")).unwrap();
        assert_eq!(
            built_in(&kube, Path::new("1.35")).unwrap(),
            kube.join("v1.35.4")
        );
        assert_eq!(
            built_in(&kube, Path::new("v1.35.2")).unwrap(),
            kube.join("v1.35.2")
        );
        let e = built_in(&kube, Path::new("1.34")).unwrap_err().to_string();
        assert!(
            e.contains("no control plane of Kubernetes 1.34") && e.contains("build.sh 1.34"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_directory_or_binary_is_named() {
        let e = Assets::locate(Some(Path::new("/nonexistent/assets"))).unwrap_err();
        assert!(
            e.to_string()
                .contains("/nonexistent/assets: not a directory"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let a = Assets::locate(Some(dir.path())).unwrap();
        let e = a.binary("kube-apiserver").unwrap_err().to_string();
        assert!(e.contains("no kube-apiserver there"), "{e}");
        std::fs::write(dir.path().join("etcd"), "not a program").unwrap();
        let e = a.binary("etcd").unwrap_err().to_string();
        assert!(e.contains("etcd is not an executable file"), "{e}");
    }

    #[tokio::test]
    async fn a_wrong_binary_is_refused_by_what_it_says() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("kube-apiserver");
        std::fs::write(&fake, "#!/bin/sh\necho 'etcd Version: 3.5.21'\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let a = Assets::locate(Some(dir.path())).unwrap();
        let e = a.check(&["kube-apiserver"]).await.unwrap_err().to_string();
        assert!(e.contains("not kube-apiserver"), "{e}");
        assert!(e.contains("etcd Version"), "{e}");
    }
}
