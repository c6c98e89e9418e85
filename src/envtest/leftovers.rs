//! What a failed start leaves in a temporary directory: the processes' logs, which its
//! error quotes and names, and nothing else — etcd's data is tens of megabytes that
//! nobody will look at, and a run that cannot start must not fill /tmp.

use std::path::Path;

/// Remove everything under `dir` but `*.log` files, at any depth, and every directory
/// left without one (`dir` too). Best effort: what cannot be removed stays.
pub fn keep_only_logs(dir: &Path) {
    prune(dir);
}

/// Prune `dir`; whether a log is left in it.
fn prune(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut kept = false;
    for entry in entries.flatten() {
        let path = entry.path();
        // Not followed: a symlink (to a directory or not) is removed as a link.
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            kept |= prune(&path);
        } else if kind.is_file() && path.extension().is_some_and(|x| x == "log") {
            kept = true;
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
    if !kept {
        let _ = std::fs::remove_dir(dir);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_stay_at_any_depth_and_everything_else_goes() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("stalemate-envtest-x");
        let cp = top.join("cp-1");
        let data = top.join("etcd").join("member").join("snap");
        std::fs::create_dir_all(&cp).unwrap();
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(cp.join("kube-apiserver.log"), "E unknown flag").unwrap();
        std::fs::write(cp.join("admin.kubeconfig"), "x").unwrap();
        std::fs::write(data.join("db"), "x").unwrap();
        std::fs::write(top.join("etcd").join("etcd.log"), "started").unwrap();
        std::os::unix::fs::symlink(&data, top.join("link")).unwrap();
        let empty = top.join("cp-2");
        std::fs::create_dir_all(&empty).unwrap();
        std::fs::write(empty.join("ca.crt"), "x").unwrap();

        keep_only_logs(&top);

        assert!(cp.join("kube-apiserver.log").is_file());
        assert!(top.join("etcd").join("etcd.log").is_file());
        assert!(!cp.join("admin.kubeconfig").exists());
        assert!(!top.join("etcd").join("member").exists());
        assert!(!empty.exists(), "a directory without logs goes");
        assert!(!top.join("link").exists());
    }

    #[test]
    fn a_directory_without_logs_goes_entirely() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("d");
        std::fs::create_dir_all(top.join("a")).unwrap();
        std::fs::write(top.join("a").join("f"), "x").unwrap();
        keep_only_logs(&top);
        assert!(!top.exists());
    }
}
