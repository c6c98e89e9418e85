//! The oracles' names: one enum, spelled on the wire (schedules, reports, the trace,
//! `stalemate_oracle_violations{oracle=…}`) exactly as the `oracles` section of a
//! schedule spells each oracle.

use serde::{Deserialize, Serialize};

/// An oracle, by name. Adding an oracle adds a variant here (and its `as_str` and
/// `gauged` arms: the compiler asks for both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OracleName {
    Convergence,
    Recovery,
    ReadinessRace,
    HotLoop,
    Conflicts,
    Expected,
}

impl OracleName {
    /// Every oracle, in the order their violations are reported.
    pub const ALL: [OracleName; 6] = [
        OracleName::Convergence,
        OracleName::Recovery,
        OracleName::ReadinessRace,
        OracleName::HotLoop,
        OracleName::Conflicts,
        OracleName::Expected,
    ];

    /// The name as the schedule, the reports and the metrics spell it (serde's, too).
    pub fn as_str(self) -> &'static str {
        match self {
            OracleName::Convergence => "convergence",
            OracleName::Recovery => "recovery",
            OracleName::ReadinessRace => "readinessRace",
            OracleName::HotLoop => "hotLoop",
            OracleName::Conflicts => "conflicts",
            OracleName::Expected => "expected",
        }
    }

    /// Whether `stalemate_oracle_violations` has a series for it. `expected` judges the
    /// end state once the run is over, so a scrape while it runs has nothing to say of it.
    pub fn gauged(self) -> bool {
        match self {
            OracleName::Convergence
            | OracleName::Recovery
            | OracleName::ReadinessRace
            | OracleName::HotLoop
            | OracleName::Conflicts => true,
            OracleName::Expected => false,
        }
    }
}

impl std::fmt::Display for OracleName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, not `write_str`: the reports align it with `{:<14}`.
        f.pad(self.as_str())
    }
}

/// Compared with a name as written (a finding's, a test's expectation).
impl PartialEq<&str> for OracleName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_spelled_as_serde_spells_them() {
        for n in OracleName::ALL {
            let wire = serde_json::to_value(n).unwrap();
            assert_eq!(wire, n.as_str(), "{n:?}");
            assert_eq!(serde_json::from_value::<OracleName>(wire).unwrap(), n);
            assert_eq!(format!("{n:<14}|").len(), 15);
        }
    }
}
