//! The SQL of every domain, written once: `sql/reports.rs` implements
//! `ReportStore`, and so on. `sqlite.rs` and `postgres.rs` each compile this
//! folder as a module of their own and name, for its files, `Engine` (their
//! storage type), `Db` (its sqlx database) and `Tx` (a write transaction).
//! Where the engines differ, a file uses the `Dialect` trait's named pieces.

use super::{Db, Engine, Tx};

mod accounts;
mod attempts;
mod batch;
mod environments;
mod figures;
mod flows;
mod hooks;
mod imports;
mod jobs;
mod oracle_drafts;
mod periods;
mod projects;
mod queue;
mod releases;
mod report_filters;
mod report_writes;
mod reports;
mod rollup_reads;
mod rollup_sums;
mod rollups;
mod routing;
mod spent;
mod storage;
mod values;
