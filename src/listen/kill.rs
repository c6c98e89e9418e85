//! The kill switch: bumping its value drops every connection open at that moment,
//! abruptly — what a client sees when an apiserver restarts (the simulator's
//! misbehaviour endpoints).
//!
//! One task per serving loop watches the switch and aborts the connections it holds.
//! The connections themselves never look at it: a `select!` against the switch in each
//! connection polled it every time the connection woke — twice per request — and each
//! such poll takes the lock that every connection waiting on the switch shares.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};

/// The connections of one serving loop that a bump of the switch drops.
pub struct KillSwitch {
    open: Arc<Mutex<Open>>,
    /// The watching task ends with the serving loop.
    watcher: AbortHandle,
}

#[derive(Default)]
struct Open {
    next: u64,
    /// `None` between registering and spawning.
    tasks: HashMap<u64, Option<AbortHandle>>,
}

impl KillSwitch {
    /// Watch `kill` on the current runtime; a value it holds already kills nothing.
    pub fn new(mut kill: watch::Receiver<u64>) -> KillSwitch {
        kill.borrow_and_update();
        let open = Arc::new(Mutex::new(Open::default()));
        let watched = open.clone();
        let watcher = tokio::spawn(async move {
            while kill.changed().await.is_ok() {
                let tasks: Vec<AbortHandle> = lock(&watched)
                    .tasks
                    .drain()
                    .filter_map(|(_, t)| t)
                    .collect();
                tracing::debug!(connections = tasks.len(), "dropping connections on request");
                for t in tasks {
                    t.abort();
                }
            }
        })
        .abort_handle();
        KillSwitch { open, watcher }
    }

    /// A place for a connection about to be spawned: its task holds the [`Registered`],
    /// and the spawner then hands the task to [`KillSwitch::attach`].
    pub fn register(&self) -> Registered {
        let mut open = lock(&self.open);
        let id = open.next;
        open.next += 1;
        open.tasks.insert(id, None);
        Registered {
            open: self.open.clone(),
            id,
        }
    }

    /// The task serving a registered connection, aborted if the switch moves while it
    /// runs. A task that has already ended (its registration gone) is not kept.
    pub fn attach(&self, id: u64, task: &JoinHandle<()>) {
        if let Some(slot) = lock(&self.open).tasks.get_mut(&id) {
            *slot = Some(task.abort_handle());
        }
    }

    /// How many connections a bump would drop now.
    #[cfg(test)]
    pub fn open(&self) -> usize {
        lock(&self.open).tasks.len()
    }
}

impl Drop for KillSwitch {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

/// A connection counted by the switch until it ends (dropped with its task).
pub struct Registered {
    open: Arc<Mutex<Open>>,
    id: u64,
}

impl Registered {
    pub fn id(&self) -> u64 {
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
        let registered = switch.register();
        let id = registered.id();
        let task = tokio::spawn(async move {
            let _registered = registered;
            std::future::pending::<()>().await
        });
        switch.attach(id, &task);
        task
    }

    #[tokio::test]
    async fn a_bump_drops_the_connections_open_then_and_only_those() {
        let (tx, rx) = watch::channel(0u64);
        let switch = KillSwitch::new(rx);
        let (a, b) = (connection(&switch), connection(&switch));
        let ends = tokio::spawn(async {});
        let id = switch.register();
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

    #[tokio::test]
    async fn the_watcher_ends_with_the_switch() {
        let (tx, rx) = watch::channel(0u64);
        let switch = KillSwitch::new(rx);
        let c = connection(&switch);
        drop(switch);
        tokio::task::yield_now().await;
        // Nobody watches any more: the connection lives on through a bump.
        tx.send_modify(|e| *e += 1);
        tokio::task::yield_now().await;
        assert!(!c.is_finished());
        assert_eq!(tx.receiver_count(), 0);
        c.abort();
    }
}
