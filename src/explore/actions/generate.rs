//! The actions a user could take on the setup's objects, and the sequences explore
//! tries them in.
//!
//! For every object of the setup that is not scaffolding (CRDs, namespaces, RBAC):
//! - its fields changed (`fields.rs`): a custom resource through its CRD's structural
//!   schema (when the setup has the CRD; one that preserves unknown fields: the fields
//!   the object has), a built-in kind through the fields a user changes;
//! - deleted and recreated under the same name, waiting for the delete and not;
//!   deleted; held by a finalizer of someone else's while deleted; annotated; labelled; one more
//!   like it under a new name.
//!
//! An object whose schema cannot be read (a custom resource whose CRD is not in the
//! setup) gets only the actions that need no schema, and `notes` says so.
//!
//! Sequences: each action alone; each field change and its undo ("scale down, then
//! back up"; "disable, then enable"); an annotation added and removed; a finalizer
//! added, the object deleted, the finalizer removed. They are ordered so that the
//! first ones cover every kind of action (breadth first), the order within a kind
//! drawn from `--seed`.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use serde_json::{Value, json};

use super::fields::{self, Change};
use super::sequence::{Action, Sequence, shell_word};
use crate::setup::Manifest;

/// A finalizer that is no controller's: it holds a deleted object until removed.
pub const FINALIZER: &str = "stalemate.dev/hold";

/// An annotation no controller knows of: a change to the object that is not to its spec.
pub const ANNOTATION: &str = "stalemate.dev/touched";

/// Kinds that are scaffolding, not what a controller acts on.
const SCAFFOLDING: &[&str] = &[
    "CustomResourceDefinition",
    "Namespace",
    "ServiceAccount",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
];

/// What the generator made.
#[derive(Debug, Clone, Default)]
pub struct Generated {
    pub sequences: Vec<Sequence>,
    /// What it could not do, and why.
    pub notes: Vec<String>,
}

/// Tiers, tried in this order; within one, in an order drawn from the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Tier {
    /// Delete and recreate at once: the stale-state classic (Sieve).
    RecreateAtOnce,
    /// The first change to every field.
    FirstChange,
    /// A value the controller must reject.
    Reject,
    RecreateAfter,
    /// A change and its undo.
    ChangeAndBack,
    Delete,
    OneMore,
    Finalizer,
    Annotate,
    /// The other changes to each field.
    MoreChanges,
}

/// The sequences for `setup`.
pub fn generate(setup: &[Manifest], seed: u64) -> Generated {
    let mut g = Generated::default();
    let mut tiers: Vec<(Tier, Sequence)> = Vec::new();
    for m in setup {
        if SCAFFOLDING.contains(&m.kind()) || m.name().is_empty() {
            continue;
        }
        let target = Target::of(m, setup);
        let changes = match field_changes(m, setup) {
            Ok(c) => c,
            Err(why) => {
                g.notes.push(format!(
                    "{}: {why}: only deleted, recreated, annotated, labelled and held by a finalizer",
                    m.describe()
                ));
                Vec::new()
            }
        };
        let mut fields_seen = Vec::new();
        for c in &changes {
            let first = !fields_seen.contains(&c.path);
            fields_seen.push(c.path.clone());
            let change = target.patch(c);
            let tier = if c.reject {
                Tier::Reject
            } else if first {
                Tier::FirstChange
            } else {
                Tier::MoreChanges
            };
            tiers.push((tier, Sequence::one(change.clone())));
            if let (Some(undo), false) = (&c.undo, c.reject) {
                let back = target.json_patch(
                    undo,
                    format!("put {} of {} back", c.path, target.describe),
                    format!("undo {} {}", c.how, c.path),
                );
                tiers.push((
                    Tier::ChangeAndBack,
                    Sequence {
                        actions: vec![change, back],
                    },
                ));
            }
        }
        tiers.push((Tier::RecreateAtOnce, Sequence::one(target.recreate(false))));
        tiers.push((Tier::RecreateAfter, Sequence::one(target.recreate(true))));
        tiers.push((Tier::Delete, Sequence::one(target.delete())));
        tiers.push((Tier::OneMore, Sequence::one(target.one_more())));
        tiers.push((
            Tier::Finalizer,
            Sequence {
                actions: vec![
                    target.add_finalizer(),
                    target.delete(),
                    target.remove_finalizer(),
                ],
            },
        ));
        for (on, off) in [target.annotate(), target.label()] {
            tiers.push((Tier::Annotate, Sequence::one(on.clone())));
            tiers.push((
                Tier::Annotate,
                Sequence {
                    actions: vec![on, off],
                },
            ));
        }
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut by_tier: std::collections::BTreeMap<Tier, Vec<Sequence>> = Default::default();
    for (t, s) in tiers {
        by_tier.entry(t).or_default().push(s);
    }
    for (_, mut seqs) in by_tier {
        seqs.shuffle(&mut rng);
        g.sequences.extend(seqs);
    }
    g
}

/// Delete each object the controller owns (its `ownerReferences` name one of the
/// user's): known only once the references have run.
pub fn delete_owned(owned: &[(String, String, String)]) -> Vec<Sequence> {
    owned
        .iter()
        .map(|(resource, namespace, name)| {
            let ns = ns_flag(namespace);
            Sequence::one(Action {
                label: format!("delete {resource} {namespace}/{name}, which the controller owns"),
                class: format!("delete owned {resource}"),
                run: format!("kubectl delete {resource} {name}{ns} --wait=false"),
            })
        })
        .collect()
}

/// The changes a field-aware user could make to `m`, or why there are none.
fn field_changes(m: &Manifest, setup: &[Manifest]) -> Result<Vec<Change>, String> {
    let group = m.api_version().split_once('/').map_or("", |(g, _)| g);
    // Built-in groups have no dot (`v1`, `apps/v1`) or end in `.k8s.io`.
    if !group.contains('.') || group.ends_with(".k8s.io") {
        return Ok(fields::builtin_fields(m.kind())
            .map(|f| fields::builtin_changes(&m.object, f))
            .unwrap_or_default());
    }
    let Some(crd) = crd_of(m, setup) else {
        return Err("no schema (its CRD is not in the setup)".into());
    };
    let version = m.api_version().rsplit('/').next().unwrap_or("");
    let schema = crd["spec"]["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["name"] == version))
        .map(|v| &v["schema"]["openAPIV3Schema"])
        .filter(|s| s.is_object());
    let Some(schema) = schema else {
        return Err(format!("its CRD has no schema for version {version}"));
    };
    let spec_schema = schema["properties"].get("spec");
    let Some(spec) = m.object.get("spec") else {
        return Ok(Vec::new());
    };
    Ok(fields::changes(spec_schema, spec, "/spec"))
}

/// The setup's CRD that serves `m`'s kind.
fn crd_of<'a>(m: &Manifest, setup: &'a [Manifest]) -> Option<&'a Value> {
    let group = m.api_version().split_once('/')?.0;
    setup
        .iter()
        .filter(|c| c.is_crd())
        .map(|c| &c.object)
        .find(|c| c["spec"]["group"] == group && c["spec"]["names"]["kind"] == m.kind())
}

/// An object as kubectl names it.
struct Target {
    /// `widgets.demo.stalemate.dev`
    resource: String,
    name: String,
    namespace: String,
    /// `widgets demo/w1`
    describe: String,
    /// What recreating it creates: the setup's object without server-set fields.
    manifest: Value,
}

impl Target {
    fn of(m: &Manifest, setup: &[Manifest]) -> Target {
        let resource = resource_of(m, setup);
        let namespace = m.namespace().unwrap_or_default().to_string();
        let mut manifest = m.object.clone();
        manifest.as_object_mut().map(|o| o.remove("status"));
        if let Some(meta) = manifest["metadata"].as_object_mut() {
            for k in [
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "generation",
                "managedFields",
            ] {
                meta.remove(k);
            }
        }
        Target {
            describe: if namespace.is_empty() {
                format!("{resource} {}", m.name())
            } else {
                format!("{resource} {namespace}/{}", m.name())
            },
            resource,
            name: m.name().to_string(),
            namespace,
            manifest,
        }
    }

    fn short(&self) -> &str {
        self.resource.split('.').next().unwrap_or(&self.resource)
    }

    /// `widgets.demo.stalemate.dev w1 -n demo`
    fn args(&self) -> String {
        format!(
            "{} {}{}",
            self.resource,
            self.name,
            ns_flag(&self.namespace)
        )
    }

    fn json_patch(&self, op: &Value, label: String, class: String) -> Action {
        Action {
            label,
            class: format!("{} {class}", self.short()),
            run: format!(
                "kubectl patch {} --type=json -p {}",
                self.args(),
                shell_word(&json!([op]).to_string())
            ),
        }
    }

    fn patch(&self, c: &Change) -> Action {
        let label = match c.how {
            "unset" => format!("unset {} of {} {}", c.path, self.describe, c.what),
            "add item" | "remove item" => {
                format!("{} of {}: {}", c.path, self.describe, c.what)
            }
            _ => format!("set {} of {} {}", c.path, self.describe, c.what),
        };
        self.json_patch(&c.op, label, format!("{} {}", c.how, c.path))
    }

    fn create(&self, manifest: &Value) -> String {
        format!(
            "printf '%s' {} | kubectl create -f -",
            shell_word(&manifest.to_string())
        )
    }

    /// Delete and create again, waiting for the delete or not. Not waiting, the create
    /// is refused (`AlreadyExists`) while a finalizer still holds the old object — for
    /// as long as its controller takes, which a fault makes longer — so it is tried again
    /// until the name is free (for up to a minute), as a user's script would: the new
    /// object lands the moment it can, and a slow controller is not the user's failure.
    fn recreate(&self, wait: bool) -> Action {
        let (label, class) = if wait {
            ("once it is gone", "recreate after delete")
        } else {
            ("at once", "recreate at once")
        };
        let run = if wait {
            format!(
                "kubectl delete {} --wait=true && {}",
                self.args(),
                self.create(&self.manifest)
            )
        } else {
            format!(
                "kubectl delete {} --wait=false && n=0 && until out=$({} 2>&1); do \
                 case $out in *AlreadyExists*) ;; *) echo \"$out\" >&2; exit 1;; esac; \
                 n=$((n+1)); if [ $n -ge 600 ]; then echo \"$out\" >&2; exit 1; fi; sleep 0.1; \
                 done && echo \"$out\"",
                self.args(),
                self.create(&self.manifest)
            )
        };
        Action {
            label: format!("delete {} and create it again {label}", self.describe),
            class: format!("{} {class}", self.short()),
            run,
        }
    }

    fn delete(&self) -> Action {
        Action {
            label: format!("delete {}", self.describe),
            class: format!("{} delete", self.short()),
            run: format!("kubectl delete {} --wait=false", self.args()),
        }
    }

    fn one_more(&self) -> Action {
        let mut m = self.manifest.clone();
        let name = format!("{}-2", self.name);
        m["metadata"]["name"] = json!(name);
        m["metadata"]
            .as_object_mut()
            .map(|o| o.remove("generateName"));
        Action {
            label: format!("create {name}, one more like {}", self.describe),
            class: format!("{} one more", self.short()),
            run: self.create(&m),
        }
    }

    fn add_finalizer(&self) -> Action {
        let append = json!([{"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER}]);
        let first = json!([{"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]}]);
        Action {
            label: format!("add finalizer {FINALIZER} to {}", self.describe),
            class: format!("{} add finalizer", self.short()),
            run: format!(
                "if [ -n \"$(kubectl get {a} -o jsonpath='{{.metadata.finalizers}}')\" ]; then p={}; else p={}; fi; kubectl patch {a} --type=json -p \"$p\"",
                shell_word(&append.to_string()),
                shell_word(&first.to_string()),
                a = self.args(),
            ),
        }
    }

    fn remove_finalizer(&self) -> Action {
        Action {
            label: format!("remove finalizer {FINALIZER} from {}", self.describe),
            class: format!("{} remove finalizer", self.short()),
            run: format!(
                "i=$(kubectl get {a} -o go-template='{{{{range $i, $f := .metadata.finalizers}}}}{{{{if eq $f \"{FINALIZER}\"}}}}{{{{$i}}}}{{{{end}}}}{{{{end}}}}') && [ -n \"$i\" ] && kubectl patch {a} --type=json -p \"[{{\\\"op\\\":\\\"remove\\\",\\\"path\\\":\\\"/metadata/finalizers/$i\\\"}}]\"",
                a = self.args(),
            ),
        }
    }

    /// A label of no controller's added and removed: what a selector-driven controller
    /// (a Service's, a label-selected watch) sees as the object coming and going.
    fn label(&self) -> (Action, Action) {
        (
            Action {
                label: format!("label {} {ANNOTATION}=1", self.describe),
                class: format!("{} label", self.short()),
                run: format!("kubectl label {} {ANNOTATION}=1", self.args()),
            },
            Action {
                label: format!("remove label {ANNOTATION} from {}", self.describe),
                class: format!("{} unlabel", self.short()),
                run: format!("kubectl label {} {ANNOTATION}-", self.args()),
            },
        )
    }

    fn annotate(&self) -> (Action, Action) {
        (
            Action {
                label: format!("annotate {} {ANNOTATION}=1", self.describe),
                class: format!("{} annotate", self.short()),
                run: format!("kubectl annotate {} {ANNOTATION}=1", self.args()),
            },
            Action {
                label: format!("remove annotation {ANNOTATION} from {}", self.describe),
                class: format!("{} unannotate", self.short()),
                run: format!("kubectl annotate {} {ANNOTATION}-", self.args()),
            },
        )
    }
}

fn ns_flag(namespace: &str) -> String {
    if namespace.is_empty() {
        String::new()
    } else {
        format!(" -n {namespace}")
    }
}

/// The resource kubectl names `m`'s kind by: `plural.group` from the setup's CRD, the
/// plural of a built-in kind, or the kind itself (kubectl resolves it by discovery).
fn resource_of(m: &Manifest, setup: &[Manifest]) -> String {
    if let Some(crd) = crd_of(m, setup)
        && let (Some(plural), Some(group)) = (
            crd["spec"]["names"]["plural"].as_str(),
            crd["spec"]["group"].as_str(),
        )
    {
        return format!("{plural}.{group}");
    }
    let group = m
        .api_version()
        .split_once('/')
        .map(|(g, _)| g)
        .unwrap_or("");
    let kind = m.kind().to_ascii_lowercase();
    let plural = if kind.ends_with('s') {
        format!("{kind}es")
    } else if let Some(stem) = kind.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{kind}s")
    };
    if group.is_empty() {
        plural
    } else {
        format!("{plural}.{group}")
    }
}
