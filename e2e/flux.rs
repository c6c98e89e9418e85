//! Flux's real source-controller (v1.9.1, built from the Go module proxy by
//! `e2e/assets/build-flux.sh`) under `stalemate run --envtest`, cloning from a git server
//! on loopback (`e2e/assets/git_http.py`: Debian's `git http-backend`), run as
//! `examples/flux/source-controller.sh` runs it.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use common::envtest::{assets, output_in_group};
use common::{BIN, KillOnDrop, repo};

/// source-controller's directory (the binary and `crds/`): `$STALEMATE_FLUX_ASSETS`, or
/// what `build-flux.sh` builds (a second when cached; cold, about 3 minutes).
fn flux_assets() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(d) = std::env::var_os("STALEMATE_FLUX_ASSETS")
            .map(PathBuf::from)
            .filter(|d| d.join("source-controller").is_file())
        {
            return d;
        }
        let out = Command::new("bash")
            .arg(repo("e2e/assets/build-flux.sh"))
            .stderr(Stdio::inherit())
            .output()
            .expect("run e2e/assets/build-flux.sh");
        assert!(out.status.success(), "e2e/assets/build-flux.sh failed");
        PathBuf::from(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .last()
                .expect("build-flux.sh prints the directory")
                .trim(),
        )
    })
    .clone()
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=stalemate",
            "-c",
            "user.email=e2e@stalemate.dev",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git (Debian `git`; .ci/run installs it)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A bare repository `podinfo.git` with one commit under `dir/git`, served on loopback;
/// its clone URL.
fn git_server(dir: &Path) -> (KillOnDrop, String) {
    let root = dir.join("git");
    std::fs::create_dir_all(root.join("work")).unwrap();
    git(
        &root,
        &["init", "-q", "--bare", "-b", "master", "podinfo.git"],
    );
    let work = root.join("work");
    git(&work, &["init", "-q", "-b", "master"]);
    std::fs::write(work.join("README.md"), "podinfo\n").unwrap();
    git(&work, &["add", "README.md"]);
    git(&work, &["commit", "-q", "-m", "Initial commit"]);
    git(&work, &["push", "-q", "../podinfo.git", "master"]);
    let mut child = Command::new("python3")
        .arg(repo("e2e/assets/git_http.py"))
        .arg(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(
        line.starts_with("http://127.0.0.1:"),
        "git server said {line:?}"
    );
    (KillOnDrop(child), format!("{}podinfo.git", line.trim()))
}

/// `--setup` files: source-controller's CRDs, then `examples/flux/gitrepository.yaml`
/// pointed at `url`.
fn setup(dir: &Path, url: &str) -> Vec<String> {
    let mut crds: Vec<String> = std::fs::read_dir(flux_assets().join("crds"))
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    crds.sort();
    let repo_yaml = std::fs::read_to_string(repo("examples/flux/gitrepository.yaml"))
        .unwrap()
        .replace("GIT_URL", url);
    let path = dir.join("gitrepository.yaml");
    std::fs::write(&path, repo_yaml).unwrap();
    crds.push(path.display().to_string());
    crds
}

/// Fault-free, source-controller converges: the GitRepository is Ready with an artifact
/// and `observedGeneration == generation` (kstatus Current), judged by the convergence
/// oracle; exit 0. Its workqueue metrics say idle (`--idle-url`).
#[test]
fn source_controller_converges_without_faults() {
    let dir = tempfile::tempdir().unwrap();
    let (_git, url) = git_server(dir.path());
    let schedule = dir.path().join("schedule.json");
    std::fs::write(
        &schedule,
        r#"{"oracles": {"convergence": {"resources": ["gitrepositories.source.toolkit.fluxcd.io"], "settle": "3s"}}}"#,
    )
    .unwrap();
    let report = dir.path().join("report.json");
    let mut args: Vec<String> = vec![
        "run".into(),
        "--envtest".into(),
        assets().display().to_string(),
    ];
    for s in setup(dir.path(), &url) {
        args.extend(["--setup".into(), s]);
    }
    args.extend(
        [
            "--quiet",
            "3s",
            "--max-run",
            "120s",
            "--idle-url",
            "http://127.0.0.1:$STALEMATE_METRICS_PORT/metrics",
            "--schedule",
            schedule.to_str().unwrap(),
            "--report-json",
            report.to_str().unwrap(),
            "--",
        ]
        .map(String::from),
    );
    args.push(
        repo("examples/flux/source-controller.sh")
            .display()
            .to_string(),
    );
    let out = output_in_group(
        Command::new(BIN)
            .args(&args)
            .env("SOURCE_CONTROLLER", flux_assets().join("source-controller")),
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("stored artifact for commit 'Initial commit'"),
        "{said}"
    );
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(r["verdict"], "pass", "{r}");
    assert_eq!(r["judged"], true, "{r}");
    let objects = r["objects"].as_array().unwrap();
    let gitrepo = objects
        .iter()
        .find(|o| o["name"] == "podinfo")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(gitrepo["status"], "Current", "{gitrepo}");
}
