//! How `resourceVersion=0` reads of a fault's target are answered, and where a rewind
//! goes back to.

use std::time::Duration;

/// How `resourceVersion=0` reads of the target are answered while the window is open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reads {
    /// From the upstream.
    Upstream,
    /// From the client's view as it is (what the client has been shown).
    View,
    /// From the client's view as it was at a point in the past.
    Rewound(To),
}

/// Where a rewind goes back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum To {
    /// This long before the read.
    By(Duration),
    /// When the named window last opened.
    At(String),
}
