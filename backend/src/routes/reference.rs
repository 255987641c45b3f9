//! `GET /docs/api`: a small API reference, rendered on the server from the
//! OpenAPI document (so it cannot say something the document does not).

use std::sync::OnceLock;

use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use maud::{Markup, html};
use utoipa::OpenApi;
use utoipa::openapi::path::{Operation, Parameter, ParameterIn};
use utoipa::openapi::{RefOr, Required};

use super::status::frame;
use crate::openapi::ApiDoc;

/// `GET /docs/api`
#[utoipa::path(
    get, path = "/docs/api", tag = "pages",
    responses((status = 200, description = "The API reference, from the OpenAPI document.", content_type = "text/html", body = String))
)]
pub async fn api_reference() -> Response {
    static PAGE: OnceLock<String> = OnceLock::new();
    let page = PAGE.get_or_init(|| render(&ApiDoc::openapi()).into_string());
    ([(header::CACHE_CONTROL, "public, max-age=300")], Html(page.as_str())).into_response()
}

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// Every operation as (tag, method, path, operation), in the document's order of tags.
fn operations(doc: &utoipa::openapi::OpenApi) -> Vec<(String, &'static str, &str, &Operation)> {
    let mut out = Vec::new();
    for (path, item) in &doc.paths.paths {
        for (method, op) in METHODS.into_iter().zip([&item.get, &item.post, &item.put, &item.patch, &item.delete]) {
            if let Some(op) = op {
                let tag = op.tags.as_ref().and_then(|t| t.first()).cloned().unwrap_or_default();
                out.push((tag, method, path.as_str(), op));
            }
        }
    }
    let order: Vec<String> = doc.tags.iter().flatten().map(|t| t.name.clone()).collect();
    out.sort_by_key(|(tag, _, path, _)| (order.iter().position(|t| t == tag).unwrap_or(usize::MAX), path.to_string()));
    out
}

fn anchor(method: &str, path: &str) -> String {
    let mut id = format!("{}-{path}", method.to_ascii_lowercase());
    id.retain(|c| c.is_ascii_alphanumeric() || c == '-' || c == '/');
    id.replace('/', "-")
}

fn render(doc: &utoipa::openapi::OpenApi) -> Markup {
    let ops = operations(doc);
    let tags: Vec<&utoipa::openapi::tag::Tag> = doc.tags.iter().flatten().collect();
    let main = html! {
        h1 data-testid="api-reference" { "failpass API" }
        p {
            "Version " (doc.info.version) ". The machine-readable document is "
            a href="/api/v1/openapi.json" { code { "/api/v1/openapi.json" } } " (OpenAPI 3.1); this page is drawn from it."
        }
        section.panel aria-labelledby="ref-basics" {
            h2 #ref-basics { "Basics" }
            ul.status-list {
                li { "Authenticate with an API token, " code { "Authorization: Bearer TOKEN" } ", or the dashboard's session cookie. Public projects are readable without either." }
                li { "Every error answers " code { "{\"code\": …, \"message\": …}" } "; " code { "code" } " is stable, " code { "message" } " names the field at fault." }
                li { "A private project answers exactly as a missing one to anyone who may not read it." }
                li { "Lists are keyset-paged: pass " code { "next_cursor" } " back as " code { "cursor" } "." }
            }
        }
        nav.panel aria-labelledby="ref-contents" {
            h2 #ref-contents { "Operations" }
            @for tag in &tags {
                @let here: Vec<_> = ops.iter().filter(|(t, ..)| *t == tag.name).collect();
                @if !here.is_empty() {
                    h3 { (tag.name) }
                    @if let Some(d) = &tag.description { p.muted { (d) } }
                    ul.status-list {
                        @for (_, method, path, op) in here {
                            li {
                                a href={ "#" (anchor(method, path)) } { code { (method) " " (path) } }
                                @if let Some(s) = &op.summary { " — " (s) }
                            }
                        }
                    }
                }
            }
        }
        @for (_, method, path, op) in &ops {
            (operation(method, path, op))
        }
    };
    frame("API reference", None, main)
}

fn operation(method: &str, path: &str, op: &Operation) -> Markup {
    let params: Vec<&Parameter> = op.parameters.iter().flatten().filter_map(inline).collect();
    html! {
        section.panel.api-op id=(anchor(method, path)) aria-label={ (method) " " (path) } {
            h2 { code { (method) " " (path) } }
            @if let Some(s) = &op.summary { p { strong { (s) } } }
            @if let Some(d) = &op.description {
                @for para in d.split("\n\n") { p { (prose(&para.replace("**", ""))) } }
            }
            @if !params.is_empty() {
                table {
                    caption.visually-hidden { "Parameters" }
                    thead { tr { th scope="col" { "Parameter" } th scope="col" { "In" } th scope="col" { "Type" } th scope="col" { "About" } } }
                    tbody {
                        @for p in params {
                            tr {
                                td { code { (p.name) } @if p.required == Required::True { " (required)" } }
                                td { (match p.parameter_in { ParameterIn::Path => "path", ParameterIn::Query => "query", ParameterIn::Header => "header", _ => "cookie" }) }
                                td { (p.schema.as_ref().map(schema_name).unwrap_or_default()) }
                                td.wrap { (prose(p.description.as_deref().unwrap_or_default())) }
                            }
                        }
                    }
                }
            }
            @if let Some(body) = op.request_body.as_ref().and_then(inline) {
                p {
                    "Body: "
                    @for (i, (ct, content)) in body.content.iter().filter_map(|(ct, c)| Some((ct, inline(c)?))).enumerate() {
                        @if i > 0 { ", " }
                        code { (ct) }
                        @if let Some(s) = &content.schema { " (" (schema_name(s)) ")" }
                    }
                }
            }
            table {
                caption.visually-hidden { "Responses" }
                thead { tr { th scope="col" { "Status" } th scope="col" { "Meaning" } } }
                tbody {
                    @for (status, r) in &op.responses.responses {
                        tr {
                            td { code { (status) } }
                            td.wrap {
                                @match r {
                                    RefOr::T(r) => {
                                        (prose(&r.description))
                                        @for (ct, content) in r.content.iter().filter_map(|(ct, c)| Some((ct, inline(c)?))) {
                                            " · " code { (ct) }
                                            @if let Some(s) = &content.schema { " " (schema_name(s)) }
                                        }
                                    }
                                    RefOr::Ref(r) => (r.ref_location),
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Text with its `code` spans shown as code (everything else escaped).
fn prose(text: &str) -> Markup {
    html! {
        @for (i, part) in text.split('`').enumerate() {
            @if i % 2 == 1 { code { (part) } } @else { (part) }
        }
    }
}

/// The value itself (this document has no shared parameters, bodies or contents).
fn inline<T>(r: &RefOr<T>) -> Option<&T> {
    match r {
        RefOr::T(t) => Some(t),
        RefOr::Ref(_) => None,
    }
}

/// A schema's name as a reader wants it: the component it refers to, or its type.
fn schema_name(s: &RefOr<utoipa::openapi::schema::Schema>) -> String {
    use utoipa::openapi::schema::{ArrayItems, Schema, SchemaType, Type};
    match s {
        RefOr::Ref(r) => r.ref_location.rsplit('/').next().unwrap_or_default().to_owned(),
        RefOr::T(Schema::Object(o)) => {
            if let Some(values) = &o.enum_values {
                let v: Vec<String> = values.iter().map(|v| v.as_str().unwrap_or_default().to_owned()).collect();
                return format!("one of {}", v.join(", "));
            }
            match &o.schema_type {
                SchemaType::Type(Type::String) => "string".into(),
                SchemaType::Type(Type::Integer) => "integer".into(),
                SchemaType::Type(Type::Number) => "number".into(),
                SchemaType::Type(Type::Boolean) => "boolean".into(),
                SchemaType::Array(types) => {
                    let name = |t: &Type| match t {
                        Type::String => "string",
                        Type::Integer => "integer",
                        Type::Number => "number",
                        Type::Boolean => "boolean",
                        Type::Array => "list",
                        _ => "object",
                    };
                    types.iter().filter(|t| **t != Type::Null).map(name).collect::<Vec<_>>().join(" or ")
                }
                _ => "object".into(),
            }
        }
        RefOr::T(Schema::Array(a)) => match &a.items {
            ArrayItems::RefOrSchema(items) => format!("list of {}", schema_name(items)),
            ArrayItems::False => "list".into(),
        },
        RefOr::T(Schema::OneOf(o)) => o.items.iter().map(schema_name).collect::<Vec<_>>().join(" or "),
        RefOr::T(Schema::AllOf(o)) => o.items.iter().map(schema_name).collect::<Vec<_>>().join(" and "),
        RefOr::T(_) => "value".into(),
    }
}
