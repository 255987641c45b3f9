//! One module per page of the dashboard.

pub mod cost;
pub mod overview;
pub mod queue;
pub mod regimes;
pub mod report;
