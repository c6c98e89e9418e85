//! Services' addresses: a cluster IP from the service range for every Service but
//! `ExternalName` and headless ones, and node ports for `NodePort` and `LoadBalancer`
//! ones — what kube-apiserver's REST storage allocates on create. The simulator's
//! service range is kind's and kubeadm's default, 10.96.0.0/12; `kubernetes` in
//! `default` has its first address, as on a real cluster.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::store::State;

/// The `kubernetes` Service's address (the range's first).
pub const KUBERNETES_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 1);
const RANGE_START: u32 = 0x0a60_0000; // 10.96.0.0
const RANGE_SIZE: u32 = 1 << 20; // /12
const NODE_PORTS: std::ops::RangeInclusive<u16> = 30000..=32767;

fn used(st: &State) -> (BTreeSet<String>, BTreeSet<u64>) {
    let (mut ips, mut ports) = (BTreeSet::new(), BTreeSet::new());
    for s in st.iter("/services", None) {
        if let Some(ip) = s.value["spec"]["clusterIP"].as_str() {
            ips.insert(ip.to_string());
        }
        for p in s.value["spec"]["ports"].as_array().into_iter().flatten() {
            if let Some(n) = p["nodePort"].as_u64() {
                ports.insert(n);
            }
        }
    }
    (ips, ports)
}

/// Fill in a new Service's cluster IP(s) and node ports, where it asks for none.
pub fn allocate(st: &State, svc: &mut Value) {
    let (ips, ports) = used(st);
    let spec = &mut svc["spec"];
    let kind = spec["type"].as_str().unwrap_or("ClusterIP").to_string();
    if kind != "ExternalName" {
        match spec["clusterIP"].as_str() {
            Some(ip) if !ip.is_empty() => {
                if spec["clusterIPs"].is_null() {
                    spec["clusterIPs"] = json!([ip]);
                }
            }
            _ => {
                let free = (10..RANGE_SIZE - 1)
                    .map(|i| Ipv4Addr::from(RANGE_START + i).to_string())
                    .find(|ip| !ips.contains(ip));
                if let Some(ip) = free {
                    spec["clusterIP"] = ip.clone().into();
                    spec["clusterIPs"] = json!([ip]);
                }
            }
        }
    }
    if matches!(kind.as_str(), "NodePort" | "LoadBalancer") {
        let mut taken = ports;
        if let Some(ps) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ps {
                if p["nodePort"].is_null()
                    && let Some(n) = NODE_PORTS.clone().find(|n| !taken.contains(&u64::from(*n)))
                {
                    p["nodePort"] = n.into();
                    taken.insert(u64::from(n));
                }
            }
        }
    }
}

/// An update that leaves out a Service's addresses keeps the allocated ones (the REST
/// storage's `patchAllocatedValues`): cluster IPs, IP families and policy, node ports.
pub fn keep_allocated(old: &Value, new: &mut Value) {
    let (o, n) = (&old["spec"], &mut new["spec"]);
    if !n.is_object() {
        return;
    }
    if n["type"] == "ExternalName" {
        return;
    }
    for k in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        let missing = n.get(k).is_none_or(|v| v.is_null() || v == "");
        if missing && let Some(v) = o.get(k) {
            n[k] = v.clone();
        }
    }
    // A changed clusterIP with the old clusterIPs: the first follows it
    // (`normalizeClusterIPs`), and validation then sees what changed.
    if n["clusterIP"] != o["clusterIP"] && n["clusterIPs"] == o["clusterIPs"] {
        let ip = n["clusterIP"].clone();
        if let Some(first) = n.get_mut("clusterIPs").and_then(|v| v.get_mut(0)) {
            *first = ip;
        }
    }
    let old_ports = o["ports"].as_array().cloned().unwrap_or_default();
    if let Some(ps) = n.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ps {
            if p["nodePort"].is_null()
                && let Some(op) = old_ports
                    .iter()
                    .find(|op| op["port"] == p["port"] && op["protocol"] == p["protocol"])
                && !op["nodePort"].is_null()
            {
                p["nodePort"] = op["nodePort"].clone();
            }
        }
    }
}
