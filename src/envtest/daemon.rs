//! One process of a control plane (etcd, kube-apiserver, kube-controller-manager,
//! kube-scheduler, kwok): started with its output in a log file of the control plane's
//! directory, watched for an early exit while the others wait for it, and stopped —
//! SIGTERM, then SIGKILL — with nothing left behind, also when the value is dropped on an
//! error path.
//!
//! The processes stay in stalemate's process group (the controller under test gets a
//! group of its own, `process.rs`): a terminal's Ctrl-C, or a test harness killing
//! stalemate's group, takes the control plane down with stalemate even if stalemate never
//! gets to stop it. None of them starts children of its own, so its pid is all there is
//! to signal.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use anyhow::{Context, Result};

/// A process that exited on SIGINT, SIGTERM or SIGHUP before it was asked to: whoever
/// sent that (a terminal's Ctrl-C reaching stalemate's process group) is why, not the
/// process — see [`cut_short_by_signal`].
#[derive(Debug)]
pub struct StoppedBySignal(String);

impl std::fmt::Display for StoppedBySignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoppedBySignal {}

/// Whether a failed start failed because stalemate was told to stop: its own SIGINT or
/// SIGTERM has arrived ([`crate::process::stop_signalled`]), or one of the processes
/// died of such a signal — which a Ctrl-C to the process group can make visible before
/// stalemate's own handler has run on another thread. Such a start is not a failure
/// whose logs anyone asked for.
pub fn cut_short_by_signal(e: &anyhow::Error) -> bool {
    crate::process::stop_signalled() || e.chain().any(|c| c.is::<StoppedBySignal>())
}

/// How long a process gets to exit on SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(5);

pub struct Daemon {
    /// What it is (`etcd`, `kube-apiserver`, …), for messages.
    pub name: &'static str,
    pub log: PathBuf,
    child: tokio::process::Child,
}

impl Daemon {
    /// Start `program` with `args`; its stdout and stderr go to `<dir>/<name>.log`.
    pub fn spawn(
        name: &'static str,
        program: &Path,
        args: &[String],
        dir: &Path,
    ) -> Result<Daemon> {
        let log = dir.join(format!("{name}.log"));
        let out =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .stdin(std::process::Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .kill_on_drop(true);
        crate::listen::sched::as_started(&mut cmd);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {name} ({})", program.display()))?;
        Ok(Daemon { name, log, child })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Its exit status, if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Whether it exited on SIGINT, SIGTERM or SIGHUP: someone told it to stop — a
    /// terminal's Ctrl-C or `timeout` signals stalemate's whole process group, this
    /// process with it — rather than a crash.
    pub fn told_to_stop(status: ExitStatus) -> bool {
        use std::os::unix::process::ExitStatusExt;
        matches!(
            status.signal(),
            Some(libc::SIGINT | libc::SIGTERM | libc::SIGHUP)
        )
    }

    /// The last `n` lines of its log, for an error message.
    pub fn log_tail(&self, n: usize) -> String {
        tail(&self.log, n)
    }

    /// An error saying it exited, with the end of its log — a [`StoppedBySignal`] when
    /// it was [told to stop](Daemon::told_to_stop).
    pub fn exit_error(&self, status: ExitStatus) -> anyhow::Error {
        let said = format!(
            "{} exited with {status} (its log: {}):\n{}",
            self.name,
            self.log.display(),
            self.log_tail(12)
        );
        if Daemon::told_to_stop(status) {
            anyhow::Error::new(StoppedBySignal(said))
        } else {
            anyhow::anyhow!(said)
        }
    }

    /// SIGKILL, and reaped.
    pub async fn kill(mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }

    /// SIGTERM, and SIGKILL if it is still there after a grace period.
    pub async fn stop(mut self) {
        if self.exited().is_some() {
            return;
        }
        if let Some(pid) = self.pid().and_then(|p| libc::pid_t::try_from(p).ok()) {
            // SAFETY: kill(2) on the pid of a child we spawned and have not yet reaped
            // (try_wait above), with a valid signal number; no memory is shared.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        if tokio::time::timeout(TERM_GRACE, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
        }
    }
}

// Dropped without `stop` (an error while starting the rest of the control plane, a
// cancelled run): `kill_on_drop` sends SIGKILL and tokio reaps it in the background.

/// The last `n` lines of a file (empty if it cannot be read).
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| format!("  | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn exit_of(signal: libc::c_int) -> ExitStatus {
        let dir = tempfile::tempdir().unwrap();
        let mut d = Daemon::spawn("sleep", Path::new("sleep"), &["30".into()], dir.path()).unwrap();
        let pid = libc::pid_t::try_from(d.pid().unwrap()).unwrap();
        // SAFETY: kill(2) on the pid of the child just spawned, not yet reaped.
        unsafe {
            libc::kill(pid, signal);
        }
        d.child.wait().await.unwrap()
    }

    #[tokio::test]
    async fn a_process_stopped_by_a_group_signal_was_told_to_stop_and_a_killed_one_was_not() {
        assert!(Daemon::told_to_stop(exit_of(libc::SIGTERM).await));
        // The OOM killer's SIGKILL, a segfault: crashes, which a restart may mend.
        assert!(!Daemon::told_to_stop(exit_of(libc::SIGKILL).await));
        assert!(!Daemon::told_to_stop(exit_of(libc::SIGSEGV).await));
        // SIGINT and SIGHUP as wait(2) reports them: a real process may have inherited
        // them ignored (a test run started in the background of a script, or by nohup),
        // and would then outlive them.
        use std::os::unix::process::ExitStatusExt;
        for sig in [libc::SIGINT, libc::SIGHUP] {
            assert!(Daemon::told_to_stop(ExitStatus::from_raw(sig)), "{sig}");
        }
        assert!(!Daemon::told_to_stop(ExitStatus::from_raw(0)));
    }
}
