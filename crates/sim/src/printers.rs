//! The built-in printers: the Table columns kube-apiserver's compiled-in printers give
//! built-in kinds (`pkg/printers/internalversion/printers.go`) — names, types, priorities
//! and descriptions as v1.37 answers them (`e2e/sim_differential.rs` compares), and how
//! each cell is computed. Kinds without one here print Name and Age.

use serde_json::{Value, json};

pub(crate) const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
pub(crate) const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const CONTAINERS: &str = "Names of each container in the template.";
const IMAGES: &str = "Images referenced by each container in the template.";

/// How a built-in column's cell is computed.
pub(crate) enum Cell {
    Name,
    /// A human duration since the timestamp at this path.
    Age(&'static str),
    /// The value at this path, `<none>` if missing.
    Path(&'static str),
    /// The number of entries of these maps or lists.
    Count(&'static [&'static str]),
    Compute(fn(&Value) -> Value),
}

pub(crate) struct Col {
    pub name: &'static str,
    pub type_: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    pub priority: i64,
    pub cell: Cell,
}

const fn col(name: &'static str, description: &'static str, cell: Cell) -> Col {
    Col {
        name,
        type_: "string",
        format: "",
        description,
        priority: 0,
        cell,
    }
}

const fn wide(name: &'static str, description: &'static str, cell: Cell) -> Col {
    Col {
        priority: 1,
        ..col(name, description, cell)
    }
}

/// The columns of a built-in kind.
pub(crate) fn columns(kind: &str) -> Vec<Col> {
    let name = Col {
        format: "name",
        ..col("Name", NAME_DESCRIPTION, Cell::Name)
    };
    let age = col(
        "Age",
        AGE_DESCRIPTION,
        Cell::Age("metadata.creationTimestamp"),
    );
    match kind {
        "Namespace" => vec![name, col("Status", "", Cell::Path("status.phase")), age],
        "ConfigMap" => vec![
            name,
            col(
                "Data",
                "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
                Cell::Count(&["data", "binaryData"]),
            ),
            age,
        ],
        "Secret" => vec![
            name,
            col("Type", "", Cell::Path("type")),
            Col {
                type_: "integer",
                ..col("Data", "", Cell::Count(&["data"]))
            },
            age,
        ],
        "ServiceAccount" => vec![
            name,
            Col {
                type_: "integer",
                ..col("Secrets", "", Cell::Count(&["secrets"]))
            },
            age,
        ],
        "Lease" => vec![
            name,
            col("Holder", "", Cell::Path("spec.holderIdentity")),
            age,
        ],
        "Event" => vec![
            col("Last Seen", "", Cell::Age("lastTimestamp")),
            col("Type", "", Cell::Path("type")),
            col("Reason", "", Cell::Path("reason")),
            col("Object", "", Cell::Compute(involved_object)),
            col("Message", "", Cell::Path("message")),
        ],
        "Deployment" => vec![
            name,
            col(
                "Ready",
                "Number of the pod with ready state",
                Cell::Compute(deployment_ready),
            ),
            col(
                "Up-to-date",
                "Total number of non-terminating pods targeted by this deployment that have the desired template spec.",
                Cell::Compute(|o| int(o, "status.updatedReplicas")),
            ),
            col(
                "Available",
                "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.",
                Cell::Compute(|o| int(o, "status.availableReplicas")),
            ),
            age,
            wide(
                "Containers",
                CONTAINERS,
                Cell::Compute(|o| containers(o, "name")),
            ),
            wide("Images", IMAGES, Cell::Compute(|o| containers(o, "image"))),
            wide(
                "Selector",
                "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.",
                Cell::Compute(|o| json!(super::selector::string_form(&o["spec"]["selector"]))),
            ),
        ],
        "Pod" => vec![
            name,
            col(
                "Ready",
                "The aggregate readiness state of this pod for accepting traffic.",
                Cell::Compute(pod_ready),
            ),
            col(
                "Status",
                "The aggregate status of the containers in this pod.",
                Cell::Compute(pod_status),
            ),
            col(
                "Restarts",
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
                Cell::Compute(pod_restarts),
            ),
            age,
            wide(
                "IP",
                "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
                Cell::Path("status.podIP"),
            ),
            wide(
                "Node",
                "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
                Cell::Path("spec.nodeName"),
            ),
            wide(
                "Nominated Node",
                "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
                Cell::Path("status.nominatedNodeName"),
            ),
            wide(
                "Readiness Gates",
                "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
                Cell::Compute(readiness_gates),
            ),
        ],
        "Service" => vec![
            name,
            col(
                "Type",
                "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types",
                Cell::Path("spec.type"),
            ),
            col(
                "Cluster-IP",
                "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
                Cell::Path("spec.clusterIP"),
            ),
            col(
                "External-IP",
                "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.",
                Cell::Compute(external_ips),
            ),
            col(
                "Port(s)",
                "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
                Cell::Compute(service_ports),
            ),
            age,
            wide(
                "Selector",
                "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/",
                Cell::Compute(|o| {
                    none_if_empty(super::selector::string_form(&o["spec"]["selector"]))
                }),
            ),
        ],
        "Job" => vec![
            name,
            col("Status", "Status of the job.", Cell::Compute(job_status)),
            col(
                "Completions",
                "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.",
                Cell::Compute(job_completions),
            ),
            col(
                "Duration",
                "Time required to complete the job.",
                Cell::Compute(job_duration),
            ),
            age,
            wide(
                "Containers",
                CONTAINERS,
                Cell::Compute(|o| containers(o, "name")),
            ),
            wide("Images", IMAGES, Cell::Compute(|o| containers(o, "image"))),
            wide(
                "Selector",
                "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
                Cell::Compute(|o| json!(super::selector::string_form(&o["spec"]["selector"]))),
            ),
        ],
        "RoleBinding" | "ClusterRoleBinding" => vec![
            name,
            col(
                "Role",
                "roleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
                Cell::Compute(|o| {
                    let r = &o["roleRef"];
                    json!(format!(
                        "{}/{}",
                        r["kind"].as_str().unwrap_or(""),
                        r["name"].as_str().unwrap_or("")
                    ))
                }),
            ),
            age,
            wide(
                "Users",
                "Users in the roleBinding",
                Cell::Compute(|o| subjects(o, "User")),
            ),
            wide(
                "Groups",
                "Groups in the roleBinding",
                Cell::Compute(|o| subjects(o, "Group")),
            ),
            wide(
                "ServiceAccounts",
                "ServiceAccounts in the roleBinding",
                Cell::Compute(|o| subjects(o, "ServiceAccount")),
            ),
        ],
        "CustomResourceDefinition" => vec![
            name,
            Col {
                type_: "date",
                format: "date-time",
                ..col("Created At", "", Cell::Path("metadata.creationTimestamp"))
            },
        ],
        _ => vec![name, age],
    }
}

pub(crate) fn path_get<'a>(obj: &'a Value, dotted: &str) -> &'a Value {
    dotted.split('.').fold(obj, |v, p| &v[p])
}

fn int(o: &Value, path: &str) -> Value {
    json!(path_get(o, path).as_i64().unwrap_or(0))
}

fn none_if_empty(s: String) -> Value {
    json!(if s.is_empty() {
        "<none>".to_string()
    } else {
        s
    })
}

fn deployment_ready(o: &Value) -> Value {
    json!(format!(
        "{}/{}",
        o["status"]["readyReplicas"].as_i64().unwrap_or(0),
        o["spec"]["replicas"].as_i64().unwrap_or(0)
    ))
}

fn containers(o: &Value, field: &str) -> Value {
    let cs = path_get(o, "spec.template.spec.containers");
    json!(
        cs.as_array()
            .map(|cs| cs
                .iter()
                .filter_map(|c| c[field].as_str())
                .collect::<Vec<_>>()
                .join(","))
            .unwrap_or_default()
    )
}

fn involved_object(o: &Value) -> Value {
    let i = &o["involvedObject"];
    json!(format!(
        "{}/{}",
        i["kind"].as_str().unwrap_or("").to_ascii_lowercase(),
        i["name"].as_str().unwrap_or("")
    ))
}

fn statuses(o: &Value) -> impl Iterator<Item = &Value> {
    o["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
}

fn pod_ready(o: &Value) -> Value {
    let total = o["spec"]["containers"].as_array().map_or(0, Vec::len);
    let ready = statuses(o).filter(|s| s["ready"] == true).count();
    json!(format!("{ready}/{total}"))
}

/// `printPod`'s reason, cut to what a pod without a kubelet can show: Terminating, a
/// container's waiting or terminated reason, the pod's reason, else its phase.
fn pod_status(o: &Value) -> Value {
    if o["metadata"].get("deletionTimestamp").is_some() {
        return json!("Terminating");
    }
    for s in statuses(o) {
        for state in ["waiting", "terminated"] {
            if let Some(r) = s["state"][state]["reason"].as_str() {
                return json!(r);
            }
        }
    }
    let reason = o["status"]["reason"]
        .as_str()
        .or(o["status"]["phase"].as_str());
    json!(reason.unwrap_or(""))
}

fn pod_restarts(o: &Value) -> Value {
    let n: i64 = statuses(o).filter_map(|s| s["restartCount"].as_i64()).sum();
    json!(n.to_string())
}

fn readiness_gates(o: &Value) -> Value {
    let Some(gates) = o["spec"]["readinessGates"]
        .as_array()
        .filter(|g| !g.is_empty())
    else {
        return json!("<none>");
    };
    let conditions = o["status"]["conditions"].as_array();
    let true_ = gates
        .iter()
        .filter(|g| {
            conditions
                .into_iter()
                .flatten()
                .any(|c| c["type"] == g["conditionType"] && c["status"] == "True")
        })
        .count();
    json!(format!("{true_}/{}", gates.len()))
}

fn external_ips(o: &Value) -> Value {
    let mut ips: Vec<String> = o["spec"]["externalIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    match o["spec"]["type"].as_str() {
        Some("ExternalName") => return json!(o["spec"]["externalName"].as_str().unwrap_or("")),
        Some("LoadBalancer") => {
            for i in o["status"]["loadBalancer"]["ingress"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if let Some(ip) = i["ip"].as_str().or(i["hostname"].as_str()) {
                    ips.push(ip.to_string());
                }
            }
            if ips.is_empty() {
                return json!("<pending>");
            }
        }
        _ => {}
    }
    none_if_empty(ips.join(","))
}

fn service_ports(o: &Value) -> Value {
    let ports: Vec<String> = o["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let proto = p["protocol"].as_str().unwrap_or("TCP");
            match p["nodePort"].as_i64() {
                Some(n) => format!("{}:{n}/{proto}", p["port"]),
                None => format!("{}/{proto}", p["port"]),
            }
        })
        .collect();
    none_if_empty(ports.join(","))
}

/// `printJob`'s status: the last true terminal or suspension condition, else Running.
fn job_status(o: &Value) -> Value {
    if o["metadata"].get("deletionTimestamp").is_some() {
        return json!("Terminating");
    }
    let mut status = "Running";
    for c in o["status"]["conditions"].as_array().into_iter().flatten() {
        if c["status"] != "True" {
            continue;
        }
        status = match c["type"].as_str() {
            Some("Complete") => "Complete",
            Some("Failed") => "Failed",
            Some("Suspended") => "Suspended",
            Some("FailureTarget") => "FailureTarget",
            Some("SuccessCriteriaMet") => "SuccessCriteriaMet",
            _ => status,
        };
    }
    json!(status)
}

fn job_completions(o: &Value) -> Value {
    let succeeded = o["status"]["succeeded"].as_i64().unwrap_or(0);
    match o["spec"]["completions"].as_i64() {
        Some(c) => json!(format!("{succeeded}/{c}")),
        None => {
            let p = o["spec"]["parallelism"].as_i64().unwrap_or(0);
            json!(if p > 1 {
                format!("{succeeded}/1 of {p}")
            } else {
                format!("{succeeded}/1")
            })
        }
    }
}

fn job_duration(o: &Value) -> Value {
    let time = |p: &str| {
        path_get(o, p)
            .as_str()
            .and_then(|t| humantime::parse_rfc3339_weak(t.trim_end_matches('Z')).ok())
    };
    let Some(start) = time("status.startTime") else {
        return json!("");
    };
    let end = time("status.completionTime").unwrap_or_else(std::time::SystemTime::now);
    let secs = end.duration_since(start).map_or(0, |d| d.as_secs() as i64);
    json!(super::age::human_duration(secs))
}

fn subjects(o: &Value, kind: &str) -> Value {
    let names: Vec<String> = o["subjects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["kind"] == kind)
        .map(|s| {
            let name = s["name"].as_str().unwrap_or("");
            match (kind, s["namespace"].as_str()) {
                ("ServiceAccount", Some(ns)) => format!("{ns}/{name}"),
                _ => name.to_string(),
            }
        })
        .collect();
    json!(names.join(","))
}
