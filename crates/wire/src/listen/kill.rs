//! The kill switch: bumping its value drops every connection open at that moment,
//! abruptly — what a client sees when an apiserver restarts (the simulator's
//! misbehaviour endpoints).
//!
//! One task per serving loop watches the switch and aborts the connections it holds.
//! The connections themselves never look at it: a `select!` against the switch in each
//! connection polled it every time the connection woke — twice per request — and each
//! such poll takes the lock that every connection waiting on the switch shares.
//!
//! Each connection is registered with the switch's value when it came; a value it was
//! not registered under kills it, whichever comes first: the watcher, the serving loop's
//! drain ([`KillSwitch::sweep`], so a bump made just before a shutdown is never raced by
//! the graceful close), or the connection's own [`KillSwitch::attach`] (a bump between
//! registering it and spawning its task).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};

/// The connections of one serving loop that a bump of the switch drops.
pub(super) struct KillSwitch {
    kill: watch::Receiver<u64>,
    open: Arc<Mutex<Open>>,
    /// The watching task ends with the serving loop.
    watcher: AbortHandle,
}

#[derive(Default)]
struct Open {
    next: u64,
    tasks: HashMap<u64, Task>,
}

struct Task {
    /// The switch's value when the connection came.
    epoch: u64,
    /// The listener it came in on (a `refuse` partition resets a listener's connections).
    local: Option<SocketAddr>,
    /// `None` between registering and spawning.
    handle: Option<AbortHandle>,
    /// A bump came before the handle: abort it as soon as it is attached.
    doomed: bool,
}

impl KillSwitch {
    /// Watch `kill` on the current runtime; a value it holds already kills nothing.
    pub(super) fn new(kill: watch::Receiver<u64>) -> KillSwitch {
        let open = Arc::new(Mutex::new(Open::default()));
        let (watched, mut changes) = (open.clone(), kill.clone());
        let watcher = tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                let now = *changes.borrow_and_update();
                kill_before(&watched, now);
            }
        })
        .abort_handle();
        KillSwitch {
            kill,
            open,
            watcher,
        }
    }

    /// Kill now, in this task, what the switch's current value kills (the watcher may
    /// not have run yet).
    pub(super) fn sweep(&self) {
        kill_before(&self.open, *self.kill.borrow());
    }

    /// A place for a connection about to be spawned: its task holds the [`Registered`],
    /// and the spawner then hands the task to [`KillSwitch::attach`].
    pub(super) fn register(&self, local: Option<SocketAddr>) -> Registered {
        let epoch = *self.kill.borrow();
        let mut open = lock(&self.open);
        let id = open.next;
        open.next += 1;
        open.tasks.insert(
            id,
            Task {
                epoch,
                local,
                handle: None,
                doomed: false,
            },
        );
        Registered {
            open: self.open.clone(),
            id,
        }
    }

    /// The task serving a registered connection, aborted if the switch moves while it
    /// runs (or moved since it was registered). A task that has already ended (its
    /// registration gone) is not kept.
    pub(super) fn attach(&self, id: u64, task: &JoinHandle<()>) {
        let mut open = lock(&self.open);
        let Some(t) = open.tasks.get_mut(&id) else {
            return;
        };
        if t.doomed {
            drop(open);
            task.abort();
        } else {
            t.handle = Some(task.abort_handle());
        }
    }

    /// What drops this loop's connections of one listener (a `refuse` partition); it
    /// does nothing once the loop is gone.
    pub(super) fn resetter(&self) -> Resetter {
        Resetter(Arc::downgrade(&self.open))
    }

    /// How many connections are registered now.
    #[cfg(test)]
    pub(super) fn open(&self) -> usize {
        lock(&self.open).tasks.len()
    }

    /// How many of them a bump has condemned (aborted, or to be on attach).
    #[cfg(test)]
    fn doomed(&self) -> usize {
        lock(&self.open).tasks.values().filter(|t| t.doomed).count()
    }
}

/// The serving loop is over: its watcher stops, and connections still open past its
/// drain are dropped (a serving thread's runtime would drop them anyway; the main
/// runtime's would not).
impl Drop for KillSwitch {
    fn drop(&mut self) {
        self.watcher.abort();
        condemn(&self.open, |_| true);
    }
}

/// Abort every connection registered under another value than `now`.
fn kill_before(open: &Mutex<Open>, now: u64) {
    let killed = condemn(open, |t| t.epoch != now);
    if killed > 0 {
        tracing::debug!(connections = killed, "dropping connections on request");
    }
}

/// Condemn the connections `which` picks (not already condemned): abort those whose
/// task is attached, the rest when it is. Entries stay until their task drops its
/// [`Registered`]. How many were aborted now.
fn condemn(open: &Mutex<Open>, which: impl Fn(&Task) -> bool) -> usize {
    let handles: Vec<AbortHandle> = lock(open)
        .tasks
        .values_mut()
        .filter(|t| !t.doomed && which(t))
        .filter_map(|t| {
            t.doomed = true;
            t.handle.clone()
        })
        .collect();
    for h in &handles {
        h.abort();
    }
    handles.len()
}

/// Drops the connections of one serving loop that came in on a listener.
pub(super) struct Resetter(Weak<Mutex<Open>>);

impl Resetter {
    /// Abort the connections that came in on `local`; how many. `None`: the serving
    /// loop is gone.
    pub(super) fn reset(&self, local: SocketAddr) -> Option<usize> {
        let open = self.0.upgrade()?;
        Some(condemn(&open, |t| t.local == Some(local)))
    }
}

/// A connection counted by the switch until it ends (dropped with its task).
pub(super) struct Registered {
    open: Arc<Mutex<Open>>,
    id: u64,
}

impl Registered {
    pub(super) fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.open).tasks.remove(&self.id);
    }
}

fn lock(open: &Mutex<Open>) -> MutexGuard<'_, Open> {
    open.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A "connection" that runs until aborted, registered the way `Conns::spawn` does.
    fn connection(switch: &KillSwitch) -> JoinHandle<()> {
        let registered = switch.register(None);
        let id = registered.id();
        let task = serve(registered);
        switch.attach(id, &task);
        task
    }

    /// The task of a registered connection: it holds its registration until aborted.
    fn serve(registered: Registered) -> JoinHandle<()> {
        tokio::spawn(async move {
            let _registered = registered;
            std::future::pending::<()>().await
        })
    }

    #[tokio::test]
    async fn a_bump_drops_the_connections_open_then_and_only_those() {
        let (tx, rx) = watch::channel(0u64);
        let switch = KillSwitch::new(rx);
        let (a, b) = (connection(&switch), connection(&switch));
        let ends = tokio::spawn(async {});
        let id = switch.register(None);
        switch.attach(id.id(), &ends);
        drop(id);
        assert_eq!(switch.open(), 2, "an ended connection is not kept");

        tx.send_modify(|e| *e += 1);
        assert!(a.await.is_err_and(|e| e.is_cancelled()));
        assert!(b.await.is_err_and(|e| e.is_cancelled()));
        assert_eq!(switch.open(), 0);

        // Opened after the bump: untouched by it, dropped by the next.
        let c = connection(&switch);
        tokio::task::yield_now().await;
        assert!(!c.is_finished());
        tx.send_modify(|e| *e += 1);
        assert!(c.await.is_err_and(|e| e.is_cancelled()));
    }

    /// The serving loop sweeps before it drains: a bump just before shutdown has
    /// dropped its connections before the graceful close can reach them, whether or
    /// not the watcher has run.
    #[tokio::test]
    async fn a_sweep_kills_at_once_what_the_watcher_has_not_yet() {
        let (tx, rx) = watch::channel(0u64);
        let switch = KillSwitch::new(rx);
        let a = connection(&switch);
        tx.send_modify(|e| *e += 1);
        // Registered after the bump, before any task ran: it stays.
        let b = connection(&switch);
        // No await since the bump: the watcher has not run; the sweep alone did this.
        switch.sweep();
        assert_eq!(switch.doomed(), 1);
        assert!(a.await.is_err_and(|e| e.is_cancelled()));
        assert_eq!(switch.open(), 1);
        tokio::task::yield_now().await;
        assert!(!b.is_finished());
        b.abort();
    }

    /// A bump between registering a connection and attaching its task still kills it.
    #[tokio::test]
    async fn a_bump_before_the_task_is_attached_kills_it_on_attach() {
        let (tx, rx) = watch::channel(0u64);
        let switch = KillSwitch::new(rx);
        let registered = switch.register(None);
        let id = registered.id();
        tx.send_modify(|e| *e += 1);
        switch.sweep();
        let task = serve(registered);
        switch.attach(id, &task);
        assert!(task.await.is_err_and(|e| e.is_cancelled()));
    }

    #[tokio::test]
    async fn connections_left_when_the_switch_goes_are_dropped() {
        let (tx, rx) = watch::channel(0u64);
        let switch = KillSwitch::new(rx);
        let c = connection(&switch);
        drop(switch);
        assert!(c.await.is_err_and(|e| e.is_cancelled()));
        // Its watcher is gone too.
        tokio::task::yield_now().await;
        assert_eq!(tx.receiver_count(), 0);
    }
}
