//! failpass: triage and verification of agent-generated bug reproductions.

pub mod assets;
pub mod auth;
pub mod charts;
pub mod cli;
pub mod config;
pub mod db;
pub mod demo;
pub mod error;
pub mod export;
pub mod hooks;
pub mod import;
pub mod input;
pub mod markdown;
pub mod metrics;
pub mod networks;
pub mod openapi;
pub mod releases;
pub mod routes;
pub mod routing_health;
pub mod runner;
pub mod security;
pub mod startup;
pub mod status;
pub mod summaries;
pub mod telemetry;
pub mod triage;
