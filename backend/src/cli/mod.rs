//! The command line's commands, apart from the server's parts: each opens
//! the database (or calls a server) itself and prints what it did. `main.rs`
//! parses the arguments (`config`) and hands each command here.

pub mod accounts;
pub mod backup;
pub mod import;
pub mod realbugs_bench;
pub mod releases;
pub mod reroute;
pub mod routing_eval;
pub mod submit;
pub mod sync;
