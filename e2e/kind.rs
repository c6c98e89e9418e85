//! The sidecar in a real kind cluster, and `explore job` for real. Each test runs one of
//! the scripts a user runs — `e2e/kind/walkthrough.sh`, `e2e/kind/explore-job.sh` — with
//! the suite's own `stalemate`, on a kind cluster of its own that the script creates and
//! deletes. The cluster and every image are built here with no image registry
//! (`e2e/kind/cluster.sh`: Docker from Debian, kind and containerd from the Go module
//! proxy, a debootstrapped node image; the first test pays for the images, minutes cold,
//! seconds warm). The scripts check every step themselves and stop at the first that does
//! not hold; a test passes only when its script printed its last step.

#[path = "common/mod.rs"]
mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use common::{BIN, repo};

/// One cluster at a time: two kind nodes, each with a control plane, and explore's pods
/// with one each, are more than 2 cores should carry at once.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The demo's GitRepository controller as a program of its own (examples/Cargo.toml),
/// built beside the stalemate under test (seconds: the suite has built its crates).
fn demo_controller() -> PathBuf {
    let status = Command::new(option_env!("CARGO").unwrap_or("cargo"))
        .args(["build", "--locked", "--bin", "gitrepo-controller"])
        .current_dir(repo(""))
        .status()
        .expect("cargo");
    assert!(status.success(), "cargo build --bin gitrepo-controller");
    Path::new(BIN)
        .parent()
        .map(|d| d.join("gitrepo-controller"))
        .unwrap_or_default()
}

/// Runs a script under e2e/kind/ in its own process group (a failed test leaves no
/// port-forward or Prometheus behind); its output, and whether it printed `last`.
fn run_script(script: &str, last: &str) -> (bool, String) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let controller = demo_controller();
    let out = Command::new("bash")
        .arg(repo(script))
        .env("STALEMATE", BIN)
        .env("CONTROLLER", controller)
        .current_dir(repo(""))
        .stdin(Stdio::null())
        .process_group(0)
        .output()
        .expect("bash");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    print!("{text}");
    (out.status.success() && text.contains(last), text)
}

/// The walkthrough: the controller's identity from inside its pod with and without the
/// sidecar, `certs --kubernetes`, the schedule ConfigMap, `inject`, Prometheus scraping the
/// sidecar with deploy/prometheus's rules, the verdict from /v1/report, the sidecar killed
/// mid-run, a schedule that does not load, and a controller that does not recover
/// (Prometheus fires StalemateViolation).
#[test]
fn the_sidecar_walkthrough_holds_on_kind() {
    let (ok, out) = run_script("e2e/kind/walkthrough.sh", "walkthrough: every step held");
    assert!(ok, "e2e/kind/walkthrough.sh did not get to its end:\n{out}");
    for step in [
        "through the sidecar: system:serviceaccount:flux-system:",
        "verdict: pass",
        "rules loaded: ",
        "event: the schedule did not load",
        "StalemateViolation firing for oracle=convergence",
    ] {
        assert!(out.contains(step), "no {step:?} in:\n{out}");
    }
}

/// `explore job` on kind: the Job's pods run their shards, each on its own control
/// plane; `explore gather` merges them into what a local explore finds.
#[test]
fn explore_job_pods_find_what_a_local_explore_finds() {
    let (ok, out) = run_script(
        "e2e/kind/explore-job.sh",
        "explore job: the pods found what a local explore finds",
    );
    assert!(ok, "e2e/kind/explore-job.sh did not get to its end:\n{out}");
}
