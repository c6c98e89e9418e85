//! Loopback ports for a control plane's processes.

use anyhow::Result;

use super::daemon::Daemon;

/// A free loopback port (the kernel's choice; the caller binds it moments later, and
/// tries again if someone else did first — [`port_clash`]).
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| anyhow::anyhow!("cannot find a free loopback port: {e}"))?;
    Ok(l.local_addr()?.port())
}

/// Whether a process failed because its port was taken.
pub fn port_clash(d: &Daemon) -> bool {
    std::fs::read_to_string(&d.log).is_ok_and(|l| l.contains("address already in use"))
}
