//! A fault's behaviour: the one interface the proxy, the engine and the gated stream call,
//! and what it is given and answers.

use std::time::Duration;

use super::process::Process;
use super::random::Random;
use super::reads::Reads;
use crate::k8s::request::Verb;
use crate::k8s::status::ApiError;
use crate::watch::gate::HoldMode;

/// What a fault sees of a request of its target.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub verb: Verb,
    pub group: &'a str,
    pub resource: &'a str,
    pub name: Option<&'a str>,
    /// A write carrying a resourceVersion or uid precondition (`proxy/precondition.rs`).
    pub precondition: bool,
    /// The window the fault belongs to (named in synthetic answers).
    pub window: &'a str,
}

/// What a fault does to a request before it is forwarded.
#[derive(Debug, Clone)]
pub enum RequestAction {
    Pass,
    /// Forward it after this long.
    Delay(Duration),
    /// Answer it with this `Status`, never forwarding it.
    Answer(ApiError),
    /// Hold it until the window closes, then forward it (a blackhole: what the client
    /// still awaits then gets through).
    UntilClosed,
}

/// How a fault ends the target's watch streams that are open when its window opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// ERROR 410 `Expired`: the client relists.
    Expired,
    /// A reset, as a failed apiserver's: client-go relists, kube-rs resumes.
    Reset,
}

/// A fault's behaviour: every hook has a default that does nothing, so a fault
/// implements only the ones it uses.
pub trait Behaviour {
    /// The fault's name as the schedule file spells it.
    fn name(&self) -> &'static str;

    /// Problems with its settings, as (field under the fault, message).
    fn check(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// A request of the target, before it is forwarded.
    fn on_request(&self, _r: &Request<'_>, _random: &dyn Random) -> RequestAction {
        RequestAction::Pass
    }

    /// How the target's watch streams are held while the window is open. Drawn once
    /// when the window opens (a lag's jitter), so every stream and every later look at
    /// the window agree.
    fn hold(&self, _random: &dyn Random) -> Option<HoldMode> {
        None
    }

    /// What happens to the target's streams that are open when the window opens.
    fn ends_streams(&self) -> Option<StreamEnd> {
        None
    }

    /// How the target's `resourceVersion=0` reads are answered while it is open.
    fn reads(&self) -> Reads {
        Reads::Upstream
    }

    /// How long the window stays open when it gives no `duration` (`None`: until closed
    /// over the control API).
    fn default_duration(&self) -> Option<Duration> {
        None
    }

    /// Whether the window needs a process stalemate owns ([`Process`]).
    fn needs_process(&self) -> bool {
        false
    }

    /// The window opened (after its holds took effect); `client` is the window's.
    fn on_open(&self, _window: &str, _client: &str, _process: Option<&dyn Process>) {}
}
