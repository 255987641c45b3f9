//! failpass: triage and verification of agent-generated bug reproductions.

pub mod accounts_cli;
pub mod assets;
pub mod auth;
pub mod charts;
pub mod config;
pub mod db;
pub mod demo;
pub mod error;
pub mod export;
pub mod import;
pub mod import_cli;
pub mod input;
pub mod markdown;
pub mod metrics;
pub mod openapi;
pub mod reroute;
pub mod routes;
pub mod routing_eval;
pub mod runner;
pub mod security;
pub mod startup;
pub mod status;
pub mod summaries;
pub mod sync;
pub mod telemetry;
pub mod triage;
