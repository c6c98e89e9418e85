//! The differential's script (`common::api_script::Script` says how to read it): discovery,
//! then a namespace and, in it, ConfigMaps, a Deployment, Pods, Services, Secrets,
//! ServiceAccounts, a Job, a Role and RoleBinding, a PersistentVolumeClaim — created,
//! read, listed, updated, patched every way, deleted — then watches of each, in JSON and
//! protobuf, with initial events, and from too old a resourceVersion; then writes with
//! protobuf bodies (a ConfigMap, a Deployment and its scale, a Pod and its status, a Job,
//! a Role, a Lease, DeleteOptions) and kubectl's `create`s, which send protobuf. The
//! expected answers are the real apiserver's (v1.37): they make sure each step does what
//! it is there for.

/// The collections the script names.
pub const COLLECTIONS: &[(&str, &str)] = &[
    ("{cm}", "/api/v1/namespaces/{ns}/configmaps"),
    ("{secret}", "/api/v1/namespaces/{ns}/secrets"),
    ("{sa}", "/api/v1/namespaces/{ns}/serviceaccounts"),
    ("{pod}", "/api/v1/namespaces/{ns}/pods"),
    ("{svc}", "/api/v1/namespaces/{ns}/services"),
    ("{pvc}", "/api/v1/namespaces/{ns}/persistentvolumeclaims"),
    ("{deploy}", "/apis/apps/v1/namespaces/{ns}/deployments"),
    ("{job}", "/apis/batch/v1/namespaces/{ns}/jobs"),
    (
        "{lease}",
        "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
    ),
    (
        "{role}",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    ),
    (
        "{rb}",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    ),
];

pub const SCRIPT: &str = r#"
version | 200 | GET /version
core group | 200 .versions=["v1"] | GET /api
groups | 200 | GET /apis
core resources | 200 | GET /api/v1
apps resources | 200 | GET /apis/apps/v1
batch resources | 200 | GET /apis/batch/v1
rbac resources | 200 | GET /apis/rbac.authorization.k8s.io/v1
aggregated core | 200 | GET /api aggregated
aggregated groups | 200 | GET /apis aggregated
a group nobody serves | 404 | GET /apis/nope.example.com/v1

create the namespace | 201 .status.phase="Active" .spec.finalizers=["kubernetes"] | POST /api/v1/namespaces
    {"metadata": {"name": "{ns}"}}
the default service account appears | 200 | AWAIT GET {sa}/default
the root CA config map appears | 200 | AWAIT GET {cm}/kube-root-ca.crt
get the namespace | 200 .metadata.labels={"kubernetes.io/metadata.name":"{ns}"} | GET /api/v1/namespaces/{ns}

create configmap c1 | 201 .data.a="1" | POST {cm}
    {"metadata": {"name": "c1", "labels": {"app": "e2e"}, "annotations": {"note": "one"}},
     "data": {"a": "1"}}
create c1 again | 409 AlreadyExists | POST {cm}
    {"metadata": {"name": "c1"}}
get c1 | 200 | GET {cm}/c1
get c1, protobuf or JSON | 200 | GET {cm}/c1 protobuf-or-json
get a missing configmap | 404 NotFound | GET {cm}/nope
create an invalid name | 422 Invalid | POST {cm}
    {"metadata": {"name": "Bad_Name"}}
create without a name | 422 Invalid | POST {cm}
    {"metadata": {"labels": {"a": "b"}}}
create in another namespace than the path's | 400 BadRequest | POST {cm}
    {"metadata": {"name": "elsewhere", "namespace": "default"}}
update c1 | 200 .data.a="2" | PUT {cm}/c1
    {"metadata": {"name": "c1", "labels": {"app": "e2e"}, "resourceVersion": "{rv@get c1}"},
     "data": {"a": "2"}}
update c1 with a stale resourceVersion | 409 Conflict | PUT {cm}/c1
    {"metadata": {"name": "c1", "resourceVersion": "{rv@get c1}"}, "data": {"a": "3"}}
no-op update of c1 | 200 .metadata.resourceVersion="{rv@update c1}" | PUT {cm}/c1
    {"metadata": {"name": "c1", "labels": {"app": "e2e"}, "resourceVersion": "{rv@update c1}"},
     "data": {"a": "2"}}
update a missing configmap | 404 NotFound | PUT {cm}/nope
    {"metadata": {"name": "nope", "resourceVersion": "1"}, "data": {"a": "1"}}
merge patch c1 | 200 .data.b="2" | PATCH {cm}/c1 merge
    {"data": {"b": "2"}}
JSON patch c1 | 200 .data.c="3" | PATCH {cm}/c1 json
    [{"op": "add", "path": "/data/c", "value": "3"}]
JSON patch whose test fails | 422 Invalid | PATCH {cm}/c1 json
    [{"op": "test", "path": "/data/a", "value": "x"}]
strategic merge patch c1 | 200 .data.d="4" .metadata.labels.tier="x" | PATCH {cm}/c1 strategic
    {"metadata": {"labels": {"tier": "x"}}, "data": {"d": "4"}}
merge patch with a stale resourceVersion | 409 Conflict | PATCH {cm}/c1 merge
    {"metadata": {"resourceVersion": "{rv@get c1}"}, "data": {"e": "5"}}
patch a missing configmap | 404 NotFound | PATCH {cm}/nope merge
    {"data": {"a": "1"}}
server-side apply (create) | 201 .data.k="one" | PATCH {cm}/applied?fieldManager=e2e-a apply
    {apiVersion: v1, kind: ConfigMap, metadata: {name: applied, labels: {by: a}}, data: {k: "one"}}
server-side apply, same manager | 200 .data.k="uno" | PATCH {cm}/applied?fieldManager=e2e-a apply
    {apiVersion: v1, kind: ConfigMap, metadata: {name: applied, labels: {by: a}}, data: {k: "uno"}}
server-side apply by another manager | 409 Conflict | PATCH {cm}/applied?fieldManager=e2e-b apply
    {apiVersion: v1, kind: ConfigMap, metadata: {name: applied}, data: {k: "two"}}
server-side apply, forced | 200 .data.k="two" | PATCH {cm}/applied?fieldManager=e2e-b&force=true apply
    {apiVersion: v1, kind: ConfigMap, metadata: {name: applied}, data: {k: "two"}}
server-side apply without a field manager | 422 Invalid | PATCH {cm}/applied apply
    {apiVersion: v1, kind: ConfigMap, metadata: {name: applied}, data: {k: "three"}}
dry run | 201 .metadata.name="dry" | POST {cm}?dryRun=All
    {"metadata": {"name": "dry"}}
get the dry run's object | 404 NotFound | GET {cm}/dry
generateName | 201 | POST {cm}
    {"metadata": {"generateName": "gen-"}, "data": {"g": "1"}}
get the generated name | 200 | GET {cm}/{name@generateName}
list configmaps by label | 200 | GET {cm}?labelSelector=app%3De2e
list configmaps, first page | 200 .metadata.remainingItemCount=2 | GET {cm}?limit=2
list configmaps, second page | 200 | GET {cm}?limit=2&continue={continue@list configmaps, first page}
table of configmaps | 200 | GET {cm} table
delete c1 | 200 .status="Success" | DELETE {cm}/c1
delete c1 again | 404 NotFound | DELETE {cm}/c1
kubectl apply k1 | ok | kubectl -n {ns} apply -f -
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "k1"}, "data": {"v": "1"}}
kubectl apply k1 changed | ok | kubectl -n {ns} apply -f -
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "k1"}, "data": {"v": "2"}}
kubectl get k1 | ok | kubectl -n {ns} get configmap k1 -o json
kubectl get a missing configmap | fails | kubectl -n {ns} get configmap nope
kubectl delete k1 | ok | kubectl -n {ns} delete configmap k1

create deployment web | 201 .metadata.generation=1 .spec.strategy.type="RollingUpdate" | POST {deploy}
    {"metadata": {"name": "web", "labels": {"app": "web"}},
     "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
       "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
         {"name": "app", "image": "busybox:1", "ports": [{"containerPort": 8080}]},
         {"name": "sidecar", "image": "busybox:1"}]}}}}
get web | 200 .spec.revisionHistoryLimit=10 .spec.progressDeadlineSeconds=600 | GET {deploy}/web
get web, protobuf or JSON | 200 | GET {deploy}/web protobuf-or-json
update web's image | 200 .metadata.generation=2 | PUT {deploy}/web
    {"metadata": {"name": "web", "labels": {"app": "web"}, "resourceVersion": "{rv@get web}"},
     "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
       "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
         {"name": "app", "image": "busybox:2", "ports": [{"containerPort": 8080}]},
         {"name": "sidecar", "image": "busybox:1"}]}}}}
label web | 200 .metadata.generation=2 | PATCH {deploy}/web merge
    {"metadata": {"labels": {"tier": "frontend"}}}
no-op patch of web | 200 .metadata.resourceVersion="{rv@label web}" | PATCH {deploy}/web merge
    {"metadata": {"labels": {"tier": "frontend"}}}
annotate web: a Deployment's annotations move its generation | 200 .metadata.generation=3 | PATCH {deploy}/web merge
    {"metadata": {"annotations": {"team": "e2e"}}}
strategic merge patch web's sidecar | 200 .metadata.generation=4 .spec.template.spec.containers.0.name="app" .spec.template.spec.containers.1.image="busybox:3" | PATCH {deploy}/web strategic
    {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:3"}]}}}}
JSON patch web | 200 .metadata.generation=5 .spec.minReadySeconds=5 | PATCH {deploy}/web json
    [{"op": "add", "path": "/spec/minReadySeconds", "value": 5}]
merge patch web, status ignored | 200 .metadata.generation=5 .status.replicas=null | PATCH {deploy}/web merge
    {"status": {"replicas": 7}}
update web/status | 200 .metadata.generation=5 .status.observedGeneration=5 .spec.replicas=2 | PUT {deploy}/web/status
    {"metadata": {"name": "web", "resourceVersion": "{rv@merge patch web, status ignored}"},
     "spec": {"replicas": 99},
     "status": {"observedGeneration": 5, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
       "availableReplicas": 2, "conditions": [{"type": "Available", "status": "True",
         "reason": "MinimumReplicasAvailable", "message": "ok",
         "lastUpdateTime": "2024-01-01T00:00:00Z", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}
merge patch web/status | 200 .metadata.generation=5 .status.readyReplicas=1 | PATCH {deploy}/web/status merge
    {"status": {"readyReplicas": 1, "availableReplicas": 1}}
status with more available than ready replicas | 422 Invalid | PATCH {deploy}/web/status merge
    {"status": {"availableReplicas": 2}}
get web/status | 200 .status.readyReplicas=1 | GET {deploy}/web/status
get web/scale | 200 .kind="Scale" .apiVersion="autoscaling/v1" .spec.replicas=2 .status.selector="app=web" | GET {deploy}/web/scale
update web/scale | 200 .spec.replicas=3 | PUT {deploy}/web/scale
    {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web", "namespace": "{ns}"},
     "spec": {"replicas": 3}}
patch web/scale | 200 .spec.replicas=4 | PATCH {deploy}/web/scale merge
    {"spec": {"replicas": 4}}
update web/scale with a stale resourceVersion | 409 Conflict | PUT {deploy}/web/scale
    {"apiVersion": "autoscaling/v1", "kind": "Scale",
     "metadata": {"name": "web", "namespace": "{ns}", "resourceVersion": "{rv@get web/scale}"},
     "spec": {"replicas": 5}}
get web after scaling | 200 .spec.replicas=4 .metadata.generation=7 | GET {deploy}/web
create a deployment whose selector does not match | 422 Invalid | POST {deploy}
    {"metadata": {"name": "bad"}, "spec": {"selector": {"matchLabels": {"app": "x"}},
     "template": {"metadata": {"labels": {"app": "y"}},
       "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}}}
change web's selector | 422 Invalid | PATCH {deploy}/web merge
    {"spec": {"selector": {"matchLabels": {"app": "other"}}}}
server-side apply deployment api | 201 .metadata.generation=1 | PATCH {deploy}/api?fieldManager=e2e apply
    {apiVersion: apps/v1, kind: Deployment, metadata: {name: api},
     spec: {selector: {matchLabels: {app: api}},
       template: {metadata: {labels: {app: api}}, spec: {containers: [{name: api, image: "busybox:1"}]}}}}
server-side apply deployment api, new image | 200 .metadata.generation=2 | PATCH {deploy}/api?fieldManager=e2e apply
    {apiVersion: apps/v1, kind: Deployment, metadata: {name: api},
     spec: {selector: {matchLabels: {app: api}},
       template: {metadata: {labels: {app: api}}, spec: {containers: [{name: api, image: "busybox:2"}]}}}}
list deployments | 200 | GET {deploy}
table of deployments | 200 | GET {deploy} table
create deployment held, with a finalizer | 201 | POST {deploy}
    {"metadata": {"name": "held", "finalizers": ["e2e.stalemate.dev/hold"],
       "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "applied",
         "uid": "{uid@server-side apply (create)}"}]},
     "spec": {"selector": {"matchLabels": {"app": "held"}},
       "template": {"metadata": {"labels": {"app": "held"}},
         "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}}}
delete held: its finalizer holds it | 200 .metadata.deletionTimestamp!=null .metadata.generation=2 | DELETE {deploy}/held
get held while it terminates | 200 .metadata.deletionTimestamp!=null | GET {deploy}/held
update held's spec while it terminates | 200 .metadata.generation=3 | PATCH {deploy}/held merge
    {"spec": {"replicas": 2}}
remove held's finalizer | 200 | PATCH {deploy}/held json
    [{"op": "remove", "path": "/metadata/finalizers"}]
get held once gone | 404 NotFound | GET {deploy}/held
delete deployment api | 200 | DELETE {deploy}/api
kubectl scale web | ok | kubectl -n {ns} scale deployment web --replicas=5
kubectl get web | ok | kubectl -n {ns} get deployment web -o json

create pod p1 | 201 .status.phase="Pending" .status.qosClass="BestEffort" .spec.serviceAccountName="default" | POST {pod}
    {"metadata": {"name": "p1", "labels": {"app": "web"}},
     "spec": {"containers": [{"name": "app", "image": "busybox:1"}]}}
create pod p2, guaranteed | 201 .status.qosClass="Guaranteed" | POST {pod}
    {"metadata": {"name": "p2"}, "spec": {"restartPolicy": "Never", "containers": [
      {"name": "app", "image": "busybox:1", "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}]}}
create a pod without containers | 422 Invalid | POST {pod}
    {"metadata": {"name": "empty"}, "spec": {"containers": []}}
get p1 | 200 | GET {pod}/p1
patch p1's image | 200 .spec.containers.0.image="busybox:2" | PATCH {pod}/p1 strategic
    {"spec": {"containers": [{"name": "app", "image": "busybox:2"}]}}
label p1 | 200 .metadata.labels.tier="frontend" | PATCH {pod}/p1 merge
    {"metadata": {"labels": {"tier": "frontend"}}}
change p1's restartPolicy | 422 Invalid | PATCH {pod}/p1 merge
    {"spec": {"restartPolicy": "Never"}}
update p1/status | 200 .status.phase="Running" | PATCH {pod}/p1/status merge
    {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
list pods | 200 | GET {pod}
table of pods | 200 | GET {pod} table
delete p1 | 200 | DELETE {pod}/p1
get p1 once gone | 404 NotFound | GET {pod}/p1
delete p2 | 200 | DELETE {pod}/p2

create service web | 201 .spec.type="ClusterIP" .spec.sessionAffinity="None" .spec.ports.0.protocol="TCP" .spec.ports.0.targetPort=8080 | POST {svc}
    {"metadata": {"name": "web"},
     "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}
create headless service db | 201 .spec.clusterIP="None" .spec.ports.0.targetPort=5432 | POST {svc}
    {"metadata": {"name": "db"}, "spec": {"clusterIP": "None", "ports": [{"port": 5432}]}}
create a service without ports | 422 Invalid | POST {svc}
    {"metadata": {"name": "noports"}, "spec": {"selector": {"app": "web"}}}
get service web | 200 | GET {svc}/web
patch service web's ports | 200 .spec.ports.0.port=81 | PATCH {svc}/web merge
    {"spec": {"ports": [{"name": "http", "port": 81, "targetPort": "http"}]}}
update service web | 200 .metadata.labels.app="web" | PUT {svc}/web
    {"metadata": {"name": "web", "labels": {"app": "web"}, "resourceVersion": "{rv@patch service web's ports}"},
     "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 81, "targetPort": "http"}]}}
make service web headless | 422 Invalid | PATCH {svc}/web merge
    {"spec": {"clusterIP": "None"}}
list services | 200 | GET {svc}
table of services | 200 | GET {svc} table
delete service web | 200 | DELETE {svc}/web
delete service db | 200 | DELETE {svc}/db

create secret s1 | 201 .type="Opaque" .data.password="czNjcjN0" | POST {secret}
    {"metadata": {"name": "s1"}, "stringData": {"password": "s3cr3t"}}
get s1 | 200 | GET {secret}/s1
update s1 | 200 .data.password="bmV3" | PUT {secret}/s1
    {"metadata": {"name": "s1", "resourceVersion": "{rv@get s1}"}, "data": {"password": "bmV3"}}
change s1's type | 422 Invalid | PATCH {secret}/s1 merge
    {"type": "kubernetes.io/tls"}
create an immutable secret | 201 | POST {secret}
    {"metadata": {"name": "frozen"}, "immutable": true, "data": {"k": "dg=="}}
change the immutable secret | 422 Invalid | PATCH {secret}/frozen merge
    {"data": {"k": "dzI="}}
create a secret with a bad key | 422 Invalid | POST {secret}
    {"metadata": {"name": "badkey"}, "data": {"no/slash": "dg=="}}
list secrets | 200 | GET {secret}
delete s1 | 200 | DELETE {secret}/s1
delete the immutable secret | 200 | DELETE {secret}/frozen

create serviceaccount robot | 201 | POST {sa}
    {"metadata": {"name": "robot"}}
get robot | 200 | GET {sa}/robot
patch robot | 200 .automountServiceAccountToken=false | PATCH {sa}/robot merge
    {"automountServiceAccountToken": false}
update robot | 200 | PUT {sa}/robot
    {"metadata": {"name": "robot", "labels": {"who": "robot"}, "resourceVersion": "{rv@patch robot}"},
     "automountServiceAccountToken": false}
request a token for robot | 201 .kind="TokenRequest" .status.token!=null | POST {sa}/robot/token
    {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
list serviceaccounts | 200 | GET {sa}

create job j1 | 201 .spec.completions=1 .spec.parallelism=1 .spec.backoffLimit=6 .spec.suspend=false | POST {job}
    {"metadata": {"name": "j1"}, "spec": {"template": {"spec": {"restartPolicy": "Never",
     "containers": [{"name": "c", "image": "busybox:1", "command": ["true"]}]}}}}
create a job with restartPolicy Always | 422 Invalid | POST {job}
    {"metadata": {"name": "always"}, "spec": {"template": {"spec": {"restartPolicy": "Always",
     "containers": [{"name": "c", "image": "busybox:1"}]}}}}
get j1 | 200 | GET {job}/j1
suspend j1 | 200 .spec.suspend=true .metadata.generation=2 | PATCH {job}/j1 merge
    {"spec": {"suspend": true}}
change j1's image | 422 Invalid | PATCH {job}/j1 strategic
    {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}}
update j1/status | 200 .metadata.generation=2 .status.conditions.0.type="Suspended" | PATCH {job}/j1/status merge
    {"status": {"conditions": [{"type": "Suspended", "status": "True", "reason": "JobSuspended",
     "message": "Job suspended", "lastProbeTime": "2024-01-01T00:00:00Z",
     "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}
list jobs | 200 | GET {job}
table of jobs | 200 | GET {job} table
delete j1 | 200 | DELETE {job}/j1?propagationPolicy=Background
get j1 once gone | 404 NotFound | GET {job}/j1

create role reader | 201 | POST {role}
    {"metadata": {"name": "reader"},
     "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}
create a role rule without verbs | 422 Invalid | POST {role}
    {"metadata": {"name": "empty"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}]}
create rolebinding robot-reads | 201 | POST {rb}
    {"metadata": {"name": "robot-reads"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
     "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "{ns}"}]}
get role reader | 200 | GET {role}/reader
get rolebinding robot-reads | 200 | GET {rb}/robot-reads
update role reader | 200 .rules.1.resources=["secrets"] | PUT {role}/reader
    {"metadata": {"name": "reader", "resourceVersion": "{rv@get role reader}"},
     "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
       {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}
change robot-reads' roleRef | 422 Invalid | PATCH {rb}/robot-reads merge
    {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "other"}}
add a subject to robot-reads | 200 | PATCH {rb}/robot-reads json
    [{"op": "add", "path": "/subjects/-", "value": {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"}}]
list roles | 200 | GET {role}
list rolebindings | 200 | GET {rb}
table of rolebindings | 200 | GET {rb} table
delete rolebinding robot-reads | 200 | DELETE {rb}/robot-reads
delete role reader | 200 | DELETE {role}/reader
delete serviceaccount robot | 200 | DELETE {sa}/robot

create claim data | 201 .status.phase="Pending" .spec.volumeMode="Filesystem" | POST {pvc}
    {"metadata": {"name": "data"},
     "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
get claim data | 200 | GET {pvc}/data
grow unbound claim data | 422 Invalid | PATCH {pvc}/data merge
    {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}
label claim data | 200 | PATCH {pvc}/data merge
    {"metadata": {"labels": {"tier": "db"}}}
update claim data/status | 200 .status.phase="Bound" | PATCH {pvc}/data/status merge
    {"status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}}
list claims | 200 | GET {pvc}
delete claim data: its protection holds it | 200 .metadata.deletionTimestamp!=null | DELETE {pvc}/data
remove claim data's protection, as its controller would | 200 | PATCH {pvc}/data json
    [{"op": "remove", "path": "/metadata/finalizers"}]
get claim data once gone | 404 NotFound | GET {pvc}/data

watch configmaps | 200 | WATCH {cm}?resourceVersion={rv@create the namespace} json
    ADDED kube-root-ca.crt, ADDED c1, MODIFIED c1, MODIFIED c1, MODIFIED c1, MODIFIED c1,
    ADDED applied, MODIFIED applied, MODIFIED applied, ADDED {name@generateName}, DELETED c1,
    ADDED k1, MODIFIED k1, DELETED k1
watch configmaps, protobuf or JSON | 200 | WATCH {cm}?resourceVersion={rv@create the namespace} protobuf-or-json
    ADDED kube-root-ca.crt, ADDED c1, MODIFIED c1, MODIFIED c1, MODIFIED c1, MODIFIED c1,
    ADDED applied, MODIFIED applied, MODIFIED applied, ADDED {name@generateName}, DELETED c1,
    ADDED k1, MODIFIED k1, DELETED k1
watch deployments | 200 | WATCH {deploy}?resourceVersion={rv@create the namespace} json
    ADDED web, MODIFIED web, MODIFIED web, MODIFIED web, MODIFIED web, MODIFIED web,
    MODIFIED web, MODIFIED web, MODIFIED web, MODIFIED web, ADDED api, MODIFIED api, ADDED held,
    MODIFIED held, MODIFIED held, DELETED held, DELETED api, MODIFIED web
watch deployments, protobuf or JSON | 200 | WATCH {deploy}?resourceVersion={rv@create the namespace} protobuf-or-json
    ADDED web, MODIFIED web, MODIFIED web, MODIFIED web, MODIFIED web, MODIFIED web,
    MODIFIED web, MODIFIED web, MODIFIED web, MODIFIED web, ADDED api, MODIFIED api, ADDED held,
    MODIFIED held, MODIFIED held, DELETED held, DELETED api, MODIFIED web
watch pods | 200 | WATCH {pod}?resourceVersion={rv@create the namespace} json
    ADDED p1, ADDED p2, MODIFIED p1, MODIFIED p1, MODIFIED p1, MODIFIED p1, DELETED p1,
    MODIFIED p2, DELETED p2
watch services | 200 | WATCH {svc}?resourceVersion={rv@create the namespace} json
    ADDED web, ADDED db, MODIFIED web, MODIFIED web, DELETED web, DELETED db
watch secrets | 200 | WATCH {secret}?resourceVersion={rv@create the namespace} json
    ADDED s1, MODIFIED s1, ADDED frozen, DELETED s1, DELETED frozen
watch serviceaccounts | 200 | WATCH {sa}?resourceVersion={rv@create the namespace} json
    ADDED default, ADDED robot, MODIFIED robot, MODIFIED robot, DELETED robot
watch jobs | 200 | WATCH {job}?resourceVersion={rv@create the namespace} json
    ADDED j1, MODIFIED j1, MODIFIED j1, DELETED j1
watch roles | 200 | WATCH {role}?resourceVersion={rv@create the namespace} json
    ADDED reader, MODIFIED reader, DELETED reader
watch rolebindings | 200 | WATCH {rb}?resourceVersion={rv@create the namespace} json
    ADDED robot-reads, MODIFIED robot-reads, DELETED robot-reads
watch claims | 200 | WATCH {pvc}?resourceVersion={rv@create the namespace} json
    ADDED data, MODIFIED data, MODIFIED data, MODIFIED data, DELETED data
watch one deployment by name | 200 | WATCH {deploy}?fieldSelector=metadata.name%3Dweb&resourceVersion={rv@create the namespace} json
    ADDED web, MODIFIED web, MODIFIED web, MODIFIED web, MODIFIED web, MODIFIED web,
    MODIFIED web, MODIFIED web, MODIFIED web, MODIFIED web, MODIFIED web
watch configmaps with initial events | 200 | WATCH {cm}?sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true json
    ADDED applied, ADDED {name@generateName}, ADDED kube-root-ca.crt, BOOKMARK initial-events-end
watch deployments with initial events, protobuf or JSON | 200 | WATCH {deploy}?sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true protobuf-or-json
    ADDED web, BOOKMARK initial-events-end
watch with resourceVersionMatch alone | 422 Invalid | GET {cm}?watch=1&resourceVersionMatch=NotOlderThan
watch configmaps from resourceVersion 1 | 200 | WATCH {cm}?resourceVersion=1 json
    ADDED kube-root-ca.crt, ADDED c1, MODIFIED c1, MODIFIED c1, MODIFIED c1, MODIFIED c1,
    ADDED applied, MODIFIED applied, MODIFIED applied, ADDED {name@generateName}, DELETED c1,
    ADDED k1, MODIFIED k1, DELETED k1
create the widgets CRD | 201 | POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions
    {"metadata": {"name": "widgets.differential.example.com"},
     "spec": {"group": "differential.example.com", "scope": "Namespaced",
       "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
       "versions": [{"name": "v1", "served": true, "storage": true,
         "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}
widgets are served | 200 | AWAIT GET /apis/differential.example.com/v1/namespaces/{ns}/widgets
too-old watch | 200 | WATCH /apis/differential.example.com/v1/namespaces/{ns}/widgets?resourceVersion=1 json
    ERROR 410 Expired
too-old watch, protobuf or JSON | 200 | WATCH /apis/differential.example.com/v1/namespaces/{ns}/widgets?resourceVersion=1 protobuf-or-json
    ERROR 410 Expired

create configmap pb by protobuf | 201 .data.a="1" .binaryData.b="AAE=" | POST {cm} protobuf-body
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pb", "labels": {"via": "protobuf"}},
     "data": {"a": "1"}, "binaryData": {"b": "AAE="}}
update configmap pb by protobuf | 200 .data.a="2" | PUT {cm}/pb protobuf-body
    {"apiVersion": "v1", "kind": "ConfigMap",
     "metadata": {"name": "pb", "labels": {"via": "protobuf"}, "resourceVersion": "{rv@create configmap pb by protobuf}"},
     "data": {"a": "2"}}
update configmap pb by protobuf, stale | 409 Conflict | PUT {cm}/pb protobuf-body
    {"apiVersion": "v1", "kind": "ConfigMap",
     "metadata": {"name": "pb", "resourceVersion": "{rv@create configmap pb by protobuf}"}, "data": {"a": "3"}}
create an invalid configmap by protobuf | 422 Invalid | POST {cm} protobuf-body
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}
create deployment pb by protobuf | 201 .metadata.generation=1 .spec.strategy.rollingUpdate.maxUnavailable="10%" | POST {deploy} protobuf-body
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "pb", "labels": {"app": "pb"}},
     "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "pb"}},
       "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "10%"}},
       "template": {"metadata": {"labels": {"app": "pb"}}, "spec": {"containers": [
         {"name": "app", "image": "busybox:1", "ports": [{"containerPort": 8080, "name": "http"}],
          "env": [{"name": "A", "value": "1"}],
          "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "250m"}},
          "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5}}]}}}}
update deployment pb by protobuf | 200 .metadata.generation=2 .spec.template.spec.containers.0.image="busybox:2" | PUT {deploy}/pb protobuf-body
    {"apiVersion": "apps/v1", "kind": "Deployment",
     "metadata": {"name": "pb", "labels": {"app": "pb"}, "resourceVersion": "{rv@create deployment pb by protobuf}"},
     "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "pb"}},
       "template": {"metadata": {"labels": {"app": "pb"}}, "spec": {"containers": [
         {"name": "app", "image": "busybox:2"}]}}}}
update deployment pb/scale by protobuf | 200 .spec.replicas=3 | PUT {deploy}/pb/scale protobuf-body
    {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "pb", "namespace": "{ns}"},
     "spec": {"replicas": 3}}
get deployment pb | 200 .spec.replicas=3 | GET {deploy}/pb
create pod pb by protobuf | 201 .status.qosClass="Burstable" | POST {pod} protobuf-body
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pb", "labels": {"app": "pb"}},
     "spec": {"containers": [{"name": "app", "image": "busybox:1", "command": ["sleep", "3600"],
         "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}},
         "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
         "securityContext": {"runAsUser": 1000, "allowPrivilegeEscalation": false}}],
       "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}],
       "tolerations": [{"key": "example.com/slow", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}],
       "terminationGracePeriodSeconds": 5}}
update pod pb/status by protobuf | 200 .status.phase="Running" .status.podIP="10.0.0.5" | PUT {pod}/pb/status protobuf-body
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pb", "resourceVersion": "{rv@create pod pb by protobuf}"},
     "spec": {"containers": [{"name": "app", "image": "busybox:1"}]},
     "status": {"phase": "Running", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}],
       "startTime": "2024-01-01T00:00:00Z",
       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:01Z"}]}}
create a pod without containers by protobuf | 422 Invalid | POST {pod} protobuf-body
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty-pb"}, "spec": {}}
create job pb by protobuf | 201 .spec.backoffLimit=2 .spec.suspend=false | POST {job} protobuf-body
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pb"},
     "spec": {"backoffLimit": 2, "manualSelector": true, "selector": {"matchLabels": {"job": "pb"}},
       "template": {"metadata": {"labels": {"job": "pb"}}, "spec": {"restartPolicy": "Never",
         "containers": [{"name": "c", "image": "busybox:1", "command": ["true"]}]}}}}
update job pb by protobuf | 200 .spec.suspend=true .spec.activeDeadlineSeconds=600 | PUT {job}/pb protobuf-body
    {"apiVersion": "batch/v1", "kind": "Job",
     "metadata": {"name": "pb", "resourceVersion": "{rv@create job pb by protobuf}"},
     "spec": {"backoffLimit": 2, "manualSelector": true, "suspend": true, "activeDeadlineSeconds": 600,
       "selector": {"matchLabels": {"job": "pb"}},
       "template": {"metadata": {"labels": {"job": "pb"}}, "spec": {"restartPolicy": "Never",
         "containers": [{"name": "c", "image": "busybox:1", "command": ["true"]}]}}}}
create role pb by protobuf | 201 | POST {role} protobuf-body
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "pb"},
     "rules": [{"apiGroups": ["apps"], "resources": ["deployments", "deployments/scale"], "verbs": ["get", "update"]}]}
update role pb by protobuf | 200 .rules.0.verbs=["get","update","patch"] | PUT {role}/pb protobuf-body
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
     "metadata": {"name": "pb", "resourceVersion": "{rv@create role pb by protobuf}"},
     "rules": [{"apiGroups": ["apps"], "resources": ["deployments", "deployments/scale"], "verbs": ["get", "update", "patch"]}]}
create lease pb by protobuf | 201 .spec.renewTime="2024-01-01T00:00:00.123456Z" | POST {lease} protobuf-body
    {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "pb"},
     "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
       "acquireTime": "2024-01-01T00:00:00.000000Z", "renewTime": "2024-01-01T00:00:00.123456Z"}}
update lease pb by protobuf | 200 .spec.holderIdentity="b" .spec.leaseTransitions=1 | PUT {lease}/pb protobuf-body
    {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
     "metadata": {"name": "pb", "resourceVersion": "{rv@create lease pb by protobuf}"},
     "spec": {"holderIdentity": "b", "leaseDurationSeconds": 15, "leaseTransitions": 1,
       "acquireTime": "2024-01-01T00:00:10.000000Z", "renewTime": "2024-01-01T00:00:10.000000Z"}}
delete deployment pb with protobuf options | 200 | DELETE {deploy}/pb protobuf-body
    {"apiVersion": "apps/v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
kubectl create deployment kpb | ok | kubectl -n {ns} create deployment kpb --image=busybox:1 --replicas=2 --port=80
kubectl get deployment kpb | ok | kubectl -n {ns} get deployment kpb -o json
kubectl create job kpb | ok | kubectl -n {ns} create job kpb --image=busybox:1 -- true
kubectl get job kpb | ok | kubectl -n {ns} get job kpb -o json
kubectl run pod kpb | ok | kubectl -n {ns} run kpb --image=busybox:1 --labels=app=kpb --restart=Never -- sleep 1
kubectl get pod kpb | ok | kubectl -n {ns} get pod kpb -o json
kubectl create configmap kpb | ok | kubectl -n {ns} create configmap kpb --from-literal=a=1
kubectl create role kpb | ok | kubectl -n {ns} create role kpb --verb=get --resource=pods
kubectl get role kpb | ok | kubectl -n {ns} get role kpb -o json

delete the namespace | 200 .status.phase="Terminating" | DELETE /api/v1/namespaces/{ns}
"#;
