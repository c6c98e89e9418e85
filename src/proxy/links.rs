//! The `partition` windows' links, put on the proxy's listeners. The engine says which
//! client's connections a partition cuts (`*`: everyone's); only the proxy knows which
//! listeners those are: a client recognised by its listener alone comes in on the one
//! its matcher names (by address, or by the name the server gave it).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use super::identity::Clients;
use crate::listen::network::{Link, Network};
use crate::schedule::engine::ClientLinks;

/// The network the proxy's listeners are served behind, addressed by client.
pub struct ListenerLinks {
    pub network: Arc<Network>,
    pub clients: Arc<Clients>,
}

impl ClientLinks for ListenerLinks {
    fn set(&self, links: &[(&str, Link)]) {
        let listeners = self.network.listeners();
        let mut by_listener: HashMap<SocketAddr, Link> = HashMap::new();
        for (client, link) in links {
            let listener = self.clients.listener_of(client);
            for addr in &listeners {
                let covered =
                    *client == "*" || listener.is_some_and(|l| self.clients.is_listener(*addr, l));
                if covered {
                    let at = by_listener.entry(*addr).or_default();
                    *at = at.max(*link);
                }
            }
        }
        self.network.set(by_listener);
    }
}
