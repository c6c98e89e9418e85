//! An action (one shell step a user takes) and a sequence of them.

use serde::Serialize;

/// One thing a user does: a shell step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    /// What it does, for people: `set spec.size of widgets demo/w1 to 2 (was 1)`.
    pub label: String,
    /// What makes two actions alike for the search: the same change to the same field of
    /// the same kind of object (`patch widgets spec.size up`). Plans tried for one are
    /// not tried again for another of its class.
    pub class: String,
    /// The step: a shell command (`sh -c`), run with KUBECONFIG through the proxy.
    pub run: String,
}

/// Actions run one after another, the controller's reaction awaited between them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sequence {
    pub actions: Vec<Action>,
}

impl Sequence {
    pub fn one(a: Action) -> Sequence {
        Sequence { actions: vec![a] }
    }

    /// `set spec.size … ; then delete …`
    pub fn label(&self) -> String {
        self.actions
            .iter()
            .map(|a| a.label.as_str())
            .collect::<Vec<_>>()
            .join("; then ")
    }

    /// What makes two sequences alike (their actions' classes).
    pub fn class(&self) -> String {
        self.actions
            .iter()
            .map(|a| a.class.as_str())
            .collect::<Vec<_>>()
            .join(" / ")
    }

    /// Its workload steps.
    pub fn steps(&self) -> Vec<String> {
        self.actions.iter().map(|a| a.run.clone()).collect()
    }
}

/// One shell word (single-quoted unless plain).
pub fn shell_word(s: &str) -> String {
    crate::explore::shell::shell_line(std::slice::from_ref(&s.to_string()))
}
