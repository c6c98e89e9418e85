//! `touch {objects}`: a user touches their objects. When the window opens, stalemate
//! annotates each object (`stalemate.io/touched`) and takes the annotation off again, as
//! a user's `kubectl annotate` would — two metadata-only writes that every watcher of
//! the object sees, and that change nothing a controller reconciles on.
//!
//! Why a fault needs it: a controller reconciles when something it watches changes. One
//! that gave up waiting for its own writes to show up (client-go's workload controllers
//! wait five minutes: the expectations timeout) acts again only when something happens,
//! and in a quiet cluster nothing does. Explore's long freezes (`explore/plan/freeze.rs`,
//! round 2) end with a touch of the user's objects while the freeze still holds: the
//! moment an impatient controller acts on what it has been shown.
//!
//! It is a user's write, not the controller's: it goes to the upstream with the run's
//! own credentials, and its events reach the controller like any other (held, if a
//! window holds them). Only `run` and `explore` touch (`serve` has no user side). The
//! end state comparisons drop the annotation (`oracle/end_state.rs`).

use serde::{Deserialize, Serialize};

use super::behaviour::Behaviour;
pub use super::object::Object;
use super::process::Process;

/// The annotation a touch writes, then removes.
pub const ANNOTATION: &str = "stalemate.io/touched";

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Touch {
    /// The objects to touch.
    pub objects: Vec<Object>,
}

impl Behaviour for Touch {
    fn name(&self) -> &'static str {
        "touch"
    }

    fn check(&self) -> Vec<(String, String)> {
        let mut errs = Vec::new();
        if self.objects.is_empty() {
            errs.push(("objects".into(), "name at least one object to touch".into()));
        }
        for (i, o) in self.objects.iter().enumerate() {
            if o.resource.is_empty() || o.name.is_empty() {
                errs.push((format!("objects[{i}]"), "give its resource and name".into()));
            }
        }
        errs
    }

    fn needs_process(&self) -> bool {
        true
    }

    /// A touch is a moment: the window closes as it opens.
    fn default_duration(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::ZERO)
    }

    fn on_open(&self, window: &str, _client: &str, process: Option<&dyn Process>) {
        match process {
            Some(p) => p.touch(window, &self.objects),
            None => tracing::warn!(window, "touch window opened without a run to touch from"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);
    impl Process for Recorder {
        fn restart(&self, _: &str, _: &str, _: std::time::Duration) {}
        fn touch(&self, window: &str, objects: &[Object]) {
            for o in objects {
                self.0.lock().unwrap().push(format!("{window}: {o}"));
            }
        }
    }

    #[test]
    fn opening_touches_the_objects() {
        let t: Touch = serde_json::from_str(
            r#"{"objects": [{"resource": "deployments.apps", "namespace": "demo", "name": "web"},
                            {"resource": "nodes", "name": "kwok-node-0"}]}"#,
        )
        .unwrap();
        assert!(t.check().is_empty());
        let p = Recorder::default();
        t.on_open("nudge", "*", Some(&p));
        assert_eq!(
            *p.0.lock().unwrap(),
            [
                "nudge: deployments.apps demo/web",
                "nudge: nodes kwok-node-0"
            ]
        );
        let none: Touch = serde_json::from_str(r#"{"objects": []}"#).unwrap();
        assert_eq!(none.check()[0].0, "objects");
    }
}
