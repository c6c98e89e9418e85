//! `restart {down}`: the controller crashes mid-reconcile. When the window opens,
//! stalemate kills the controller process (SIGKILL) and starts it again after `down`
//! (default 0 s), with the same arguments and environment — Sieve's "intermediate state"
//! class: it must recover from whatever its last writes left behind.
//!
//! Only `stalemate run` and `explore` own a process; `serve` refuses the window. Opened
//! by an `afterRequests` trigger, the kill waits until the triggering request has been
//! forwarded and answered upstream, so the write really happened.

use serde::{Deserialize, Serialize};

use super::behaviour::Behaviour;
use super::process::Process;
use crate::k8s::duration::GoDuration;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Restart {
    /// How long the controller stays down (default 0 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down: Option<GoDuration>,
}

impl Restart {
    pub fn down(&self) -> std::time::Duration {
        self.down.map_or(std::time::Duration::ZERO, |d| d.0)
    }
}

impl Behaviour for Restart {
    fn name(&self) -> &'static str {
        "restart"
    }

    fn needs_process(&self) -> bool {
        true
    }

    /// Open while the controller is down: it closes as the controller starts again.
    fn default_duration(&self) -> Option<std::time::Duration> {
        Some(self.down())
    }

    fn on_open(&self, window: &str, client: &str, process: Option<&dyn Process>) {
        match process {
            Some(p) => p.restart(window, client, self.down()),
            // Refused when the window was submitted; nothing to do here.
            None => tracing::warn!(window, "restart window opened without a process to restart"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<(String, String, Duration)>>);
    impl Process for Recorder {
        fn restart(&self, window: &str, client: &str, down: Duration) {
            self.0
                .lock()
                .unwrap()
                .push((window.to_string(), client.to_string(), down));
        }
    }

    #[test]
    fn opening_restarts_the_process() {
        let r: Restart = serde_json::from_str(r#"{"down": "1500ms"}"#).unwrap();
        let p = Recorder::default();
        r.on_open("crash", "kustomize", Some(&p));
        assert_eq!(
            *p.0.lock().unwrap(),
            [(
                "crash".to_string(),
                "kustomize".to_string(),
                Duration::from_millis(1500)
            )]
        );
        assert!(r.needs_process());
        let d: Restart = serde_json::from_str("{}").unwrap();
        assert_eq!(d.down(), Duration::ZERO);
    }
}
