//! How the kernel schedules the serving threads.
//!
//! A proxy in front of an apiserver on a busy machine is woken for nearly every write
//! the apiserver makes: a 948 KB LIST arrives as ~180 TLS records. Under the kernel's
//! default policy (`SCHED_OTHER`) a serving thread woken that way usually preempts
//! whoever runs on that core — often the apiserver itself, halfway through the LIST —
//! reads the little that is there, writes it on, and sleeps again. Under `SCHED_BATCH` a
//! wake-up never preempts (`check_preempt_wakeup_fair`, kernel/sched/fair.c: "Batch and
//! idle tasks do not preempt non-idle tasks"): the thread runs on an idle core at once,
//! else when the running task sleeps or its slice ends, and then works through
//! everything that arrived meanwhile. The CPU share is the same (batch threads have the
//! weight of nice 0); only who waits for whom on a wake-up changes. Measured on 2 busy
//! cores in front of a real kube-apiserver (bench/README.md, "… batch scheduling"): per
//! 500-object LIST the apiserver was preempted 3.5–5.4 times instead of 27–37 and the
//! proxy slept 2–4 times instead of 17–22, and the proxy's CPU per request was 16–40%
//! lower. The price is paid under full load only: a wake-up may wait up to one
//! scheduler slice, and fan-out to 10,000 watches delivered ~13% fewer events per
//! second (`--scheduling normal` restores the default).
//!
//! For a test tool that is also the better manners: the controller under test and its
//! apiserver are not interrupted by the proxy's wake-ups, so the timing they see is the
//! schedule's, not an artefact of sharing cores with the proxy.
//!
//! A thread or process started from a batch thread inherits the policy
//! (`SCHED_RESET_ON_FORK` resets only real-time policies and negative nice values), so
//! every process stalemate starts goes through [`as_started`]: a controller restarted by a
//! fault that fired on a serving thread is scheduled as it would be on its own. And a
//! stalemate the user started under a policy of their choosing (`chrt`) keeps it: only
//! threads under the default policy are moved.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a serving thread has been moved from `SCHED_OTHER` to `SCHED_BATCH`.
static MOVED_TO_BATCH: AtomicBool = AtomicBool::new(false);

/// The policy of the serving threads (`serve --scheduling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Scheduling {
    /// `SCHED_BATCH`: a serving thread woken by a packet does not preempt the task running
    /// on its core.
    #[default]
    Batch,
    /// The kernel's default policy (`SCHED_OTHER`), as the threads start.
    Normal,
}

impl Scheduling {
    /// Put the calling thread under this policy. `Normal` changes nothing (threads start
    /// under it), nor does `Batch` on a thread that is not under the default policy (the
    /// user chose one for the process). Outside Linux there is nothing to set and `Batch`
    /// is `Normal`.
    pub fn apply_to_this_thread(self) -> std::io::Result<()> {
        match self {
            Scheduling::Normal => Ok(()),
            Scheduling::Batch => set_batch(),
        }
    }

    /// [`Self::apply_to_this_thread`] for a serving thread: a refusal (a seccomp profile
    /// that forbids `sched_setscheduler`, say) is logged once per process and the thread
    /// serves under the default policy.
    pub fn enter(self) {
        static WARNED: std::sync::Once = std::sync::Once::new();
        if let Err(e) = self.apply_to_this_thread() {
            WARNED.call_once(|| {
                tracing::warn!(
                    error = %e,
                    scheduling = ?self,
                    "cannot set the serving threads' scheduling policy; they run under the kernel's default"
                )
            });
        }
    }
}

/// Have a process started with `cmd` run under the default policy if the thread that
/// starts it is a serving thread moved to `SCHED_BATCH`, and as it would anyway otherwise.
pub fn as_started(cmd: &mut tokio::process::Command) {
    #[cfg(target_os = "linux")]
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe calls (an atomic load, sched_getscheduler, sched_setscheduler).
    unsafe {
        cmd.pre_exec(|| {
            if MOVED_TO_BATCH.load(Ordering::Relaxed) && policy() == libc::SCHED_BATCH {
                set_policy(libc::SCHED_OTHER)?;
            }
            Ok(())
        });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

#[cfg(target_os = "linux")]
fn set_batch() -> std::io::Result<()> {
    if policy() != libc::SCHED_OTHER {
        return Ok(());
    }
    set_policy(libc::SCHED_BATCH)?;
    MOVED_TO_BATCH.store(true, Ordering::Relaxed);
    Ok(())
}

/// The calling thread's policy.
#[cfg(target_os = "linux")]
fn policy() -> libc::c_int {
    // SAFETY: no pointers; pid 0 is the calling thread.
    unsafe { libc::sched_getscheduler(0) }
}

/// Put the calling thread (pid 0: sched_setscheduler(2) acts on one thread on Linux)
/// under `policy`, a non-real-time one (priority 0).
#[cfg(target_os = "linux")]
fn set_policy(policy: libc::c_int) -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param that outlives the call.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn set_batch() -> std::io::Result<()> {
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn batch_moves_the_calling_thread_only_and_processes_it_starts_run_as_default() {
        std::thread::spawn(|| {
            assert_eq!(policy(), libc::SCHED_OTHER);
            Scheduling::Batch
                .apply_to_this_thread()
                .expect("SCHED_BATCH needs no privilege");
            assert_eq!(policy(), libc::SCHED_BATCH);
            // The kernel hands the policy on to threads and processes started from here.
            let thread = std::thread::spawn(policy).join().expect("child thread");
            assert_eq!(thread, libc::SCHED_BATCH);
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            let child_policy = |reset: bool| {
                let mut cmd = tokio::process::Command::new("awk");
                // Field 41 of /proc/PID/stat: the policy (awk is the process started).
                cmd.args(["{ print $41 }", "/proc/self/stat"]);
                if reset {
                    as_started(&mut cmd);
                }
                let out = rt.block_on(async { cmd.output().await }).expect("awk runs");
                String::from_utf8_lossy(&out.stdout).trim().to_string()
            };
            assert_eq!(child_policy(false), libc::SCHED_BATCH.to_string());
            assert_eq!(child_policy(true), libc::SCHED_OTHER.to_string());
        })
        .join()
        .expect("batch thread");
        assert_eq!(
            policy(),
            libc::SCHED_OTHER,
            "the test's own thread is untouched"
        );
    }

    #[test]
    fn a_policy_the_user_chose_is_kept() {
        std::thread::spawn(|| {
            set_policy(libc::SCHED_IDLE).expect("SCHED_IDLE needs no privilege");
            Scheduling::Batch
                .apply_to_this_thread()
                .expect("left alone");
            assert_eq!(policy(), libc::SCHED_IDLE);
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn normal_leaves_the_thread_as_it_started() {
        std::thread::spawn(|| {
            Scheduling::Normal.apply_to_this_thread().expect("no-op");
            assert_eq!(policy(), libc::SCHED_OTHER);
        })
        .join()
        .expect("thread");
    }
}
