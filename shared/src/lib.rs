//! Types and pure logic shared by the failpass server and the dashboard.
//!
//! Nothing here does I/O, so the crate builds for native targets and for
//! `wasm32-unknown-unknown` alike. The figure math and the routing rule live
//! here so the server, the dashboard and the tests compute them one way.

pub mod api;
pub mod envinfo;
pub mod error;
pub mod figures;
pub mod format;
pub mod grading;
pub mod hash;
pub mod highlight;
pub mod model;
pub mod nav;
pub mod routing;
pub mod time;
pub mod trajectory;
