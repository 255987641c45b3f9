//! The API reference page (`GET /docs/api`, served by `openapi`), rendered
//! on the server from the OpenAPI document (so it cannot say something the
//! document does not); this file draws, the document comes to it.

use maud::{Markup, html};
use utoipa::openapi::path::{Operation, Parameter, ParameterIn};
use utoipa::openapi::{RefOr, Required};

use super::status::frame;

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

pub(crate) fn render(doc: &utoipa::openapi::OpenApi) -> Markup {
    let ops = operations(doc);
    let tags: Vec<&utoipa::openapi::tag::Tag> = doc.tags.iter().flatten().collect();
    // The JSON API apart from the pages and their forms.
    let (api_ops, page_ops): (Vec<_>, Vec<_>) = ops.iter().partition(|(_, _, path, _)| path.starts_with("/api/"));
    // The document's subjects in its order, then any an operation names besides.
    let mut subjects: Vec<(String, Option<String>)> =
        tags.iter().map(|t| (t.name.clone(), t.description.clone())).collect();
    for (tag, ..) in &api_ops {
        if !subjects.iter().any(|(n, _)| n == tag) {
            subjects.push((tag.clone(), None));
        }
    }
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
        nav.panel aria-labelledby="ref-contents" data-testid="api-contents" {
            h2 #ref-contents { "Contents" }
            p {
                "The JSON API, by subject: "
                @for (i, (name, _)) in subjects.iter().filter(|(n, _)| api_ops.iter().any(|(t, ..)| t == n)).enumerate() {
                    @if i > 0 { " · " }
                    a href={ "#tag-" (name) } { (name) }
                }
                ". Then " a href="#ref-pages" { "the pages and their forms" } " (HTML, for the browser)."
            }
            p.muted { "Writing an agent? " code { "failpass submit attempt" } " sends attempts from a script or CI "
                "(see " code { "docs/agents.md" } " in the repository); "
                a href={ "#" (anchor("POST", "/api/v1/attempts")) } { code { "POST /api/v1/attempts" } } " is what it calls." }
        }
        @for (name, about) in &subjects {
            @let here: Vec<_> = api_ops.iter().filter(|(t, ..)| t == name).collect();
            @if !here.is_empty() {
                section.panel id={ "tag-" (name) } {
                    h2 { (name) }
                    @if let Some(d) = about { p.muted { (prose(d)) } }
                    ul.status-list {
                        @for (_, method, path, op) in &here {
                            li {
                                a href={ "#" (anchor(method, path)) } { code { (method) " " (path) } }
                                @if let Some(s) = &op.summary { " — " (prose(s)) }
                            }
                        }
                    }
                }
                @for (_, method, path, op) in here {
                    (operation(doc, method, path, op))
                }
            }
        }
        section.panel #ref-pages {
            h2 { "Pages and their forms" }
            p.muted { "What the browser loads and posts: HTML pages, and forms answered with a page or a redirect. "
                "Scripts use the JSON API above." }
            ul.status-list {
                @for (_, method, path, op) in &page_ops {
                    li {
                        a href={ "#" (anchor(method, path)) } { code { (method) " " (path) } }
                        @if let Some(s) = &op.summary { " — " (prose(s)) }
                    }
                }
            }
        }
        @for (_, method, path, op) in &page_ops {
            (operation(doc, method, path, op))
        }
    };
    frame("API reference", None, main)
}

fn operation(doc: &utoipa::openapi::OpenApi, method: &str, path: &str, op: &Operation) -> Markup {
    let params: Vec<&Parameter> = op.parameters.iter().flatten().filter_map(inline).collect();
    let body = op.request_body.as_ref().and_then(inline);
    let json_body =
        body.and_then(|b| b.content.get("application/json")).and_then(inline).and_then(|c| c.schema.as_ref());
    let fields = json_body.and_then(|s| component(doc, s));
    html! {
        section.panel.api-op id=(anchor(method, path)) aria-label={ (method) " " (path) } {
            h2 { code { (method) " " (path) } }
            @if let Some(s) = &op.summary { p { strong { (prose(s)) } } }
            @if let Some(d) = &op.description {
                @for para in d.split("\n\n") { p { (prose(&para.replace("**", ""))) } }
            }
            @if !params.is_empty() {
                table {
                    caption.visually-hidden { "Parameters" }
                    thead { tr { th scope="col" { "Parameter" } th scope="col" { "In" } th scope="col" { "Type" } th scope="col" { "About" } } }
                    tbody {
                        @for p in &params {
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
            @if let Some(body) = body {
                p {
                    "Body: "
                    @for (i, (ct, content)) in body.content.iter().filter_map(|(ct, c)| Some((ct, inline(c)?))).enumerate() {
                        @if i > 0 { ", " }
                        code { (ct) }
                        @if let Some(s) = &content.schema { " (" (schema_name(s)) ")" }
                    }
                }
            }
            @if let Some((name, object)) = &fields {
                table data-testid="body-fields" {
                    caption { "The body's fields (" (name) ")" }
                    thead { tr { th scope="col" { "Field" } th scope="col" { "Type" } th scope="col" { "About" } } }
                    tbody {
                        @for (field, schema) in &object.properties {
                            tr {
                                td { code { (field) } @if object.required.contains(field) { " (required)" } }
                                td { (schema_name(schema)) }
                                td.wrap { (prose(description(schema).unwrap_or_default())) }
                            }
                        }
                    }
                }
            }
            @if path.starts_with("/api/") {
                pre.curl data-testid="curl" { (curl(method, path, &params, fields.as_ref().and_then(|(_, o)| o.example.as_ref()))) }
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

/// The component a schema refers to, when it is an object: its name and it.
fn component<'a>(
    doc: &'a utoipa::openapi::OpenApi,
    s: &RefOr<utoipa::openapi::schema::Schema>,
) -> Option<(String, &'a utoipa::openapi::schema::Object)> {
    let RefOr::Ref(r) = s else { return None };
    let name = r.ref_location.rsplit('/').next()?.to_owned();
    match doc.components.as_ref()?.schemas.get(&name)? {
        RefOr::T(utoipa::openapi::schema::Schema::Object(o)) => Some((name, o)),
        _ => None,
    }
}

/// A field's description, wherever its schema keeps it.
fn description(s: &RefOr<utoipa::openapi::schema::Schema>) -> Option<&str> {
    use utoipa::openapi::schema::Schema;
    match s {
        RefOr::T(Schema::Object(o)) => o.description.as_deref(),
        RefOr::T(Schema::Array(a)) => a.description.as_deref(),
        RefOr::T(Schema::OneOf(o)) => o.description.as_deref(),
        RefOr::T(Schema::AllOf(o)) => o.description.as_deref(),
        _ => None,
    }
}

/// A `curl` line for an operation: the token from the environment, the
/// path's parameters as their examples, and the body's example when it has one.
fn curl(method: &str, path: &str, params: &[&Parameter], example: Option<&serde_json::Value>) -> String {
    let mut url = path.to_owned();
    for p in params.iter().filter(|p| matches!(p.parameter_in, ParameterIn::Path)) {
        // The example is the document's (utoipa keeps the field private).
        let example = serde_json::to_value(p).ok().map(|v| v["example"].clone()).filter(|v| !v.is_null());
        let value = example.map(|v| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()));
        url = url.replace(&format!("{{{}}}", p.name), &value.unwrap_or_else(|| p.name.to_uppercase()));
    }
    let url = url.replace("{*slug}", "pytorch/pytorch");
    let mut out = String::from("curl");
    if method != "GET" {
        out.push_str(&format!(" -X {method}"));
    }
    out.push_str(" -H \"Authorization: Bearer $FAILPASS_TOKEN\"");
    if let Some(body) = example {
        out.push_str(" -H 'Content-Type: application/json' \\\n  -d '");
        out.push_str(&serde_json::to_string(body).unwrap_or_default().replace('\'', "'\\''"));
        out.push('\'');
    }
    out.push_str(&format!(" \\\n  \"$FAILPASS_URL{url}\""));
    out
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
