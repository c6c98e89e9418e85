//! controller-runtime's `setup-envtest` store, read as it lays itself out, so a controller
//! author who already has envtest binaries needs none of our build scripts:
//!
//! ```text
//!  <store>/k8s/1.37.2-linux-amd64/{etcd,kube-apiserver,kubectl}   (read-only, 0555)
//! ```
//!
//! (`tools/setup-envtest/store/store.go`: `unpackedBase` is `k8s/`, an item's directory
//! its platform's `BaseName`: `<version>-<os>-<arch>`). `setup-envtest use -p path`
//! prints one item's directory, which `--envtest DIR` and `$KUBEBUILDER_ASSETS` take as
//! they are. This file adds the two other ways users hold them: `--envtest <store>` (the
//! store itself: its one item for this platform), and `--envtest 1.37` finding the item in
//! setup-envtest's default store (`$XDG_DATA_HOME/kubebuilder-envtest`, else
//! `~/.local/share/kubebuilder-envtest`) when our build cache has no such version.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// setup-envtest's default store on Linux.
pub fn default_store() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("XDG_DATA_HOME")
        .map(|d| d.join("kubebuilder-envtest"))
        .or_else(|| env("HOME").map(|h| h.join(".local/share/kubebuilder-envtest")))
}

/// Whether `dir` is a store (it has `k8s/`) rather than a directory of binaries.
pub fn is_store(dir: &Path) -> bool {
    dir.join("k8s").is_dir() && !dir.join("kube-apiserver").exists()
}

/// The store's items for this machine's platform that hold a kube-apiserver, as
/// ((minor, patch), directory), oldest first.
pub fn items(store: &Path) -> Vec<((u32, u32), PathBuf)> {
    let suffix = format!("-linux-{}", go_arch());
    let mut found: Vec<((u32, u32), PathBuf)> = std::fs::read_dir(store.join("k8s"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let version = name.strip_suffix(&suffix)?;
            let mut parts = version.split('.');
            let (major, minor, patch) = (parts.next()?, parts.next()?, parts.next()?);
            if major != "1" || parts.next().is_some() {
                return None;
            }
            let v = (minor.parse().ok()?, patch.parse().ok()?);
            e.path()
                .join("kube-apiserver")
                .is_file()
                .then(|| (v, e.path()))
        })
        .collect();
    found.sort();
    found
}

/// `--envtest <store>`: its one item for this platform. Several are refused with each
/// named, rather than one picked silently: which Kubernetes a verdict was reached on
/// matters.
pub fn the_item(store: &Path) -> Result<PathBuf> {
    let found = items(store);
    match found.as_slice() {
        [(_, dir)] => Ok(dir.clone()),
        [] => bail!(
            "--envtest {}: a setup-envtest store with no Kubernetes for linux/{} in {}/k8s (`setup-envtest use 1.37 --bin-dir {}` adds one)",
            store.display(),
            go_arch(),
            store.display(),
            store.display()
        ),
        several => bail!(
            "--envtest {}: this setup-envtest store holds {} versions; name one: {}",
            store.display(),
            several.len(),
            several
                .iter()
                .map(|((minor, patch), dir)| format!(
                    "--envtest 1.{minor}.{patch} or --envtest {}",
                    dir.display()
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    }
}

/// The newest item of `minor` (and `patch`, if given) in `store`.
pub fn find(store: &Path, minor: u32, patch: Option<u32>) -> Option<PathBuf> {
    items(store)
        .into_iter()
        .filter(|((m, p), _)| *m == minor && patch.is_none_or(|want| *p == want))
        .map(|(_, dir)| dir)
        .next_back()
}

/// Go's name for this machine's architecture, as setup-envtest writes it.
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(store: &Path, name: &str) -> PathBuf {
        let dir = store.join("k8s").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for bin in ["etcd", "kube-apiserver", "kubectl"] {
            std::fs::write(dir.join(bin), "").unwrap();
        }
        dir
    }

    #[test]
    fn a_store_is_read_as_setup_envtest_lays_it_out() {
        let store = tempfile::tempdir().unwrap();
        let s = store.path();
        assert!(!is_store(s));
        let arch = go_arch();
        let only = item(s, &format!("1.36.3-linux-{arch}"));
        // Another platform's and a half-written item are not this machine's.
        item(s, "1.37.2-darwin-arm64");
        std::fs::create_dir_all(s.join("k8s").join(format!("1.37.9-linux-{arch}"))).unwrap();
        assert!(is_store(s));
        assert_eq!(the_item(s).unwrap(), only);
        let newer = item(s, &format!("1.36.10-linux-{arch}"));
        let older = item(s, &format!("1.35.0-linux-{arch}"));
        let e = the_item(s).unwrap_err().to_string();
        assert!(
            e.contains("holds 3 versions") && e.contains("--envtest 1.36.10 or"),
            "{e}"
        );
        assert_eq!(find(s, 36, None), Some(newer));
        assert_eq!(find(s, 36, Some(3)), Some(only));
        assert_eq!(find(s, 35, None), Some(older));
        assert_eq!(find(s, 37, None), None);
        let empty = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(empty.path().join("k8s")).unwrap();
        let e = the_item(empty.path()).unwrap_err().to_string();
        assert!(e.contains("no Kubernetes for linux/"), "{e}");
    }
}
