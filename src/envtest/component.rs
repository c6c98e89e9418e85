//! What `--with` may add to a control plane, and the flag's value.

/// What `--with` may add.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Component {
    ControllerManager,
    Scheduler,
    Kwok,
}

impl Component {
    pub fn binary(self) -> &'static str {
        match self {
            Component::ControllerManager => "kube-controller-manager",
            Component::Scheduler => "kube-scheduler",
            Component::Kwok => "kwok",
        }
    }

    /// `--with`'s value: comma-separated names. `kwok` brings kube-scheduler along — a
    /// fake node is of no use without something putting pods on it.
    pub fn parse_list(s: &str) -> Result<Vec<Component>, String> {
        let mut out = Vec::new();
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let c = match name {
                "kube-controller-manager" => Component::ControllerManager,
                "kube-scheduler" => Component::Scheduler,
                "kwok" => Component::Kwok,
                other => {
                    return Err(format!(
                        "{other:?} is not a component stalemate can add (kube-controller-manager, kube-scheduler, kwok)"
                    ));
                }
            };
            out.push(c);
            if c == Component::Kwok {
                out.push(Component::Scheduler);
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }
}

/// `--with`'s value: what to add to a control plane (a type of its own, so clap takes
/// the comma-separated list as one value).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct With(pub Vec<Component>);

impl With {
    pub fn parse(s: &str) -> Result<With, String> {
        Component::parse_list(s).map(With)
    }

    /// As `--with` spells it (for a reproducer's command line).
    pub fn flag_value(&self) -> String {
        self.0
            .iter()
            .filter(|c| !(**c == Component::Scheduler && self.0.contains(&Component::Kwok)))
            .map(|c| c.binary())
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_lists_are_parsed_and_kwok_brings_the_scheduler() {
        assert_eq!(
            Component::parse_list("kube-controller-manager,kwok").unwrap(),
            [
                Component::ControllerManager,
                Component::Scheduler,
                Component::Kwok
            ]
        );
        assert_eq!(Component::parse_list("").unwrap(), []);
        let e = Component::parse_list("kube-proxy").unwrap_err();
        assert!(e.contains("\"kube-proxy\" is not a component"), "{e}");
    }
}
