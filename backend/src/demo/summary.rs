//! What a demo loader stored.

/// How much a demo loader stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoSummary {
    pub projects: usize,
    pub reports: usize,
    pub attempts: usize,
}
