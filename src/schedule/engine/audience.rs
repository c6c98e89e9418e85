//! What the engine tells and acts on, given when it is made ([`Audience`]): the trace and
//! the oracles hear of every window, the network takes the partitions' links, and the
//! controller process is what `restart` windows act on.
//!
//! The process is the one not there yet when the engine is made: the proxy must be
//! listening before the controller runs. Whether there will be one is decided up front
//! ([`ProcessSlot::expected`] for `run` and `explore`, [`ProcessSlot::none`] for
//! `serve`), so which windows are allowed never changes; the supervisor hands the process
//! over through the slot once it runs.

use std::sync::{Arc, OnceLock};

use crate::fault::Process;
use crate::listen::network::Link;

/// What the engine tells and acts on (see the module docs). The default tells no one:
/// no trace, no oracles, no network, no process (tests of the engine alone).
#[derive(Default)]
pub struct Audience {
    /// Window openings and closings are recorded here.
    pub trace: crate::trace::Trace,
    /// Told when windows open and close; streams read their lanes from them.
    pub oracles: Option<Arc<crate::oracle::Oracles>>,
    /// Where the open partitions' links go.
    pub network: Option<Arc<dyn ClientLinks>>,
    /// The controller process `restart` windows act on.
    pub process: ProcessSlot,
}

/// The network between clients and the proxy, as windows see it: by client name, never
/// by socket. The proxy, which knows the listener each client comes in on, applies each
/// client's link to those listeners.
pub trait ClientLinks: Send + Sync {
    /// The links now, by client (`*`: every listener's); a listener no client's link
    /// covers is up.
    fn set(&self, links: &[(&str, Link)]);
}

/// The controller process stalemate owns, once it runs: a slot made empty-but-expected
/// (`run`, `explore`) or made without one (`serve`). Clones share the slot.
#[derive(Clone, Default)]
pub struct ProcessSlot(Option<Arc<OnceLock<Arc<dyn Process>>>>);

impl ProcessSlot {
    /// No process will ever be handed over (`serve`): `restart` windows are refused.
    pub fn none() -> ProcessSlot {
        ProcessSlot(None)
    }

    /// A process will be handed over with [`ProcessSlot::fill`] once it runs: windows
    /// that need one are accepted from the start.
    pub fn expected() -> ProcessSlot {
        ProcessSlot(Some(Arc::default()))
    }

    /// Whether stalemate owns (or will own) a process `restart` windows can act on.
    pub fn is_expected(&self) -> bool {
        self.0.is_some()
    }

    /// Hand the process over (the supervisor, once it runs). The first one stays.
    pub fn fill(&self, p: Arc<dyn Process>) {
        debug_assert!(
            self.0.is_some(),
            "a process handed to a slot made without one"
        );
        if let Some(slot) = &self.0 {
            let _ = slot.set(p);
        }
    }

    /// The process, once handed over.
    pub fn get(&self) -> Option<Arc<dyn Process>> {
        self.0.as_ref()?.get().cloned()
    }
}
