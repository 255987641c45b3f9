//! The query parameters each list and figure parses, as OpenAPI parameters
//! (feature `openapi`, for `/api/v1/openapi.json`).
//!
//! The parsers (`from_pairs`, [`ReportFilter::take`]) read raw pairs, so the
//! parameters are described here, beside them, rather than derived; the
//! server's tests send every parameter named here to its route and check it is
//! not refused as unknown.

use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::{RefOr, Required};
use utoipa::{IntoParams, PartialSchema};

use super::MAX_LIMIT;
use super::attempts::AttemptListQuery;
use super::figures::{DistributionQuery, FiguresQuery, MAX_GROUP_DIMENSIONS};
use super::projects::slug;
use super::reports::{Order, ReportFilter, ReportListQuery, ReportSort};
use crate::api::figures::Metric;
use crate::model::{Goal, GroupBy, Route, Verdict};

/// An optional query parameter.
pub fn query(name: &str, schema: RefOr<Schema>, description: &str) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Query)
        .required(Required::False)
        .schema(Some(schema))
        .description(Some(description))
        .build()
}

/// A free-text string of at most `max` characters.
pub fn text(max: usize) -> RefOr<Schema> {
    ObjectBuilder::new().schema_type(Type::String).max_length(Some(max)).into()
}

/// A day, `YYYY-MM-DD`.
fn day() -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Date)))
        .examples([serde_json::json!("2026-11-30")])
        .into()
}

fn limit() -> Parameter {
    query(
        "limit",
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(1))
            .maximum(Some(MAX_LIMIT))
            .default(Some(serde_json::json!(super::DEFAULT_LIMIT)))
            .into(),
        "Page size.",
    )
}

fn cursor() -> Parameter {
    query("cursor", text(200), "The `next_cursor` of the previous page (opaque).")
}

impl IntoParams for ReportFilter {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![
            query("project", slug(), "Only this project (`owner/name`)."),
            query("route", Route::schema(), "Only reports the triage rule sent this way."),
            query(
                "status",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .max_length(Some(200))
                    .examples([serde_json::json!("open")])
                    .into(),
                "Only reports in these states: one (`needs_review`), several separated by commas (`new,needs_review`), \
                 or `open` (not in a final state: new, in progress, needs review).",
            ),
            query("label", text(200), "Only reports carrying this label."),
            query("verdict", Verdict::schema(), "Only reports whose best verdict is this."),
            query("q", text(200), "Free text over title, body and external id (case-insensitive)."),
            query("since", day(), "The window's first day (UTC): of filing, unless `dated` says otherwise."),
            query("until", day(), "The window's last day (UTC), included."),
            query(
                "period",
                crate::api::reports::Period::schema(),
                "A window relative to today (UTC), instead of `since` and `until`.",
            ),
            query(
                "dated",
                crate::api::reports::Dated::schema(),
                "Which date the window is of: `filed` (the default), `reproduced` (the first counting reproduction) or `spent` (attempts started in it; the figures then count only those).",
            ),
            query(
                "route_check",
                ObjectBuilder::new().schema_type(Type::Boolean).into(),
                "Only reports whose route the rule was unsure of (`true`: a human should look), or sure of (`false`).",
            ),
        ]
    }
}

impl IntoParams for ReportListQuery {
    fn into_params(p: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let mut out = ReportFilter::into_params(p);
        out.extend([
            query("agent", text(200), "Only reports with an attempt by this agent."),
            query("model", text(200), "Only reports with an attempt by this model."),
            query(
                "stuck_days",
                ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1)).maximum(Some(3650)).into(),
                "Stuck reports: not in a final state and nothing happened to them for this many days.",
            ),
            query(
                "assignee",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .max_length(Some(100))
                    .examples([serde_json::json!("none")])
                    .into(),
                "Reports assigned to this member; `me` for the caller (signed in), `none` for unassigned ones.",
            ),
            query(
                "arrived",
                crate::api::reports::Arrived::schema(),
                "Reports new to you: arrived in failpass in the last 24 hours (`24h`), or since your last visit ended (`visit`: signed in; a visit ends after 30 minutes without a page load).",
            ),
        ]);
        out.push(query("sort", ReportSort::schema(), "Order by this; ties break on id. Default `filed_at`."));
        out.push(query("order", Order::schema(), "Default `desc`."));
        out.extend([limit(), cursor()]);
        out
    }
}

impl IntoParams for AttemptListQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![
            query("report_id", ObjectBuilder::new().schema_type(Type::Integer).into(), "Only this report's attempts."),
            query("project", slug(), "Only this project's attempts (`owner/name`)."),
            query("agent", text(200), "Only this agent's attempts."),
            query("model", text(200), "Only this model's attempts."),
            query("verdict", Verdict::schema(), "Only attempts with this verdict."),
            query("goal", Goal::schema(), "Only attempts at this goal."),
            limit(),
            cursor(),
        ]
    }
}

impl IntoParams for FiguresQuery {
    fn into_params(p: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let dims: Vec<&str> = GroupBy::ALL.iter().map(|g| g.as_str()).collect();
        let mut out = vec![
            query(
                "group_by",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(format!("^({0})(,({0})){{0,{1}}}$", dims.join("|"), MAX_GROUP_DIMENSIONS - 1)))
                    .examples([serde_json::json!("route"), serde_json::json!("route,agent")])
                    .into(),
                &format!(
                    "Group by one dimension, or cross up to {MAX_GROUP_DIMENSIONS} comma-separated: {}. Default `none`.",
                    dims.join(", ")
                ),
            ),
            query("goal", Goal::schema(), "Figures for reproducing or for fixing. Default `reproduce`."),
            query("agent", text(200), "Only this agent's attempts."),
            query("model", text(200), "Only this model's attempts."),
        ];
        out.extend(ReportFilter::into_params(p));
        out
    }
}

impl IntoParams for DistributionQuery {
    fn into_params(p: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let mut out = vec![query("metric", Metric::schema(), "What is distributed. Default `cost_usd`.")];
        out.extend(FiguresQuery::into_params(p).into_iter().map(|mut param| {
            if param.name == "group_by" {
                param.description = Some("Group by one dimension (a distribution takes one). Default `none`.".into());
            }
            param
        }));
        out
    }
}
