//! Services: their defaults (`SetDefaults_Service`, the IP family and traffic policy
//! defaults), their ports required and their cluster IP immutable, and their addresses:
//! a cluster IP from the service range for every Service but `ExternalName` and headless
//! ones, and node ports for `NodePort` and `LoadBalancer` ones — what kube-apiserver's
//! REST storage allocates on create, and keeps on an update that leaves them out. The
//! simulator's service range is kind's and kubeadm's default, 10.96.0.0/12; `kubernetes`
//! in `default` has its first address, as on a real cluster.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use crate::defaults::{default, items, object};
use crate::store::State;
use crate::strategy::Strategy;
use crate::validate::required;
use stalemate_wire::k8s::status::{ApiError, FieldError};

pub(crate) struct Services;

impl Strategy for Services {
    fn defaults(&self, obj: &mut Value, create: bool) {
        service(obj, create);
    }

    /// The cluster IP (and node ports), allocated here rather than by the defaults: the
    /// allocator needs the addresses in use.
    fn admit(&self, st: &State, _ns: &str, obj: &mut Value) -> Result<(), ApiError> {
        allocate(st, obj);
        Ok(())
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let headless = obj["spec"]["clusterIP"] == "None";
        let external = obj["spec"]["type"] == "ExternalName";
        if !headless && !external && obj["spec"]["ports"].as_array().is_none_or(|p| p.is_empty()) {
            errs.push(required("spec.ports"));
        }
        errs
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        let (o, n) = (&old["spec"]["clusterIPs"], &new["spec"]["clusterIPs"]);
        if o.as_array().is_some_and(|a| !a.is_empty()) && n.get(0) != o.get(0) {
            errs.push(FieldError::invalid(
                "spec.clusterIPs[0]",
                &n.to_string(),
                "may not change once set",
            ));
        }
        errs
    }

    fn prepare_for_update(&self, old: &Value, new: &mut Value) {
        keep_allocated(old, new);
    }
}

/// The `kubernetes` Service's address (the range's first).
pub(crate) const KUBERNETES_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 1);
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
fn allocate(st: &State, svc: &mut Value) {
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
fn keep_allocated(old: &Value, new: &mut Value) {
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

/// Service defaults (`SetDefaults_Service`, the IP family and traffic policy defaults);
/// the cluster IP itself is allocated by the caller, which owns the allocator.
fn service(obj: &mut Value, create: bool) {
    let spec = object(obj, "spec");
    default(spec, "type", json!("ClusterIP"));
    default(spec, "sessionAffinity", json!("None"));
    let external_name = spec["type"] == "ExternalName";
    for p in items(spec, "ports") {
        default(p, "protocol", json!("TCP"));
        let port = p["port"].clone();
        default(p, "targetPort", port);
    }
    if !external_name {
        default(spec, "internalTrafficPolicy", json!("Cluster"));
        // A headless Service without a selector may have endpoints of both families.
        let headless_any = spec["clusterIP"] == "None"
            && spec["selector"].as_object().is_none_or(|s| s.is_empty());
        if headless_any {
            default(spec, "ipFamilyPolicy", json!("RequireDualStack"));
            default(spec, "ipFamilies", json!(["IPv4", "IPv6"]));
        } else {
            default(spec, "ipFamilyPolicy", json!("SingleStack"));
            default(spec, "ipFamilies", json!(["IPv4"]));
        }
    }
    if matches!(spec["type"].as_str(), Some("NodePort" | "LoadBalancer")) {
        default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if create {
        obj["status"] = json!({"loadBalancer": {}});
    }
}
