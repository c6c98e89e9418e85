//! Effects outside the proxy: what a fault does to the controller process or as the user.

use std::time::Duration;

use super::object::Object;

/// Effects outside the proxy, for faults that have them. `stalemate run` and `explore`
/// own the controller process and act as the user; `serve` does neither.
pub trait Process: Send + Sync {
    /// Kill a controller (SIGKILL) now and start it again after `down`: the one the
    /// window's `client` names when it names a controller under test, every one for `*`,
    /// else the controller after `--`.
    fn restart(&self, window: &str, client: &str, down: Duration);

    /// Touch these objects as their user would (`touch.rs`).
    fn touch(&self, window: &str, objects: &[Object]) {
        let _ = objects;
        tracing::warn!(window, "nothing here can touch objects");
    }
}
