//! Verification: sandboxed runs, environments, grading, the job queue's
//! workers and the refine loop.

pub mod env;
pub mod refine;
pub mod sandbox;
pub mod schedule;
pub mod verify;
pub mod worker;
