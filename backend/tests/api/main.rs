//! API integration tests and the storage contract suite, one binary.

mod access;
mod accounts;
mod attempts;
mod authoring;
mod charts;
mod export;
mod figures;
mod health;
mod helpers;
mod import;
mod input;
mod lifecycle;
mod metrics;
mod openapi;
mod projects;
mod queue;
mod reports;
mod runner;
mod sandbox;
mod setup;
mod status;
mod storage;
mod sync;
mod webhooks;
mod worker;
mod worklist;
