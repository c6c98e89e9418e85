//! The random choices a fault may make, and tests' randomness that draws nothing.

/// The random choices a fault may make (seeded by the schedule; the engine draws).
pub trait Random {
    /// A draw from `lo..=hi`.
    fn uniform(&self, lo: f64, hi: f64) -> f64;
    /// A coin with probability `p`.
    fn chance(&self, p: f64) -> bool;
}

/// Tests' randomness that never draws: the low end, never by chance.
#[cfg(test)]
pub(crate) struct NoDraw;

#[cfg(test)]
impl Random for NoDraw {
    fn uniform(&self, lo: f64, _hi: f64) -> f64 {
        lo
    }
    fn chance(&self, _p: f64) -> bool {
        false
    }
}
