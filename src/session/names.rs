//! The listener (and client) names a session gives its two processes.

pub const CONTROLLER: &str = "controller";
pub const WORKLOAD: &str = "workload";
