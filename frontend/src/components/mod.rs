//! Pieces every page uses: loading, error and empty states, headline cards,
//! badges and the project filter.

pub mod agents_table;
pub mod figures;
pub mod filters;
pub mod progress;
pub mod trajectory;

use leptos::prelude::*;

use crate::api::ClientError;

#[component]
pub fn Loading(#[prop(into)] what: String) -> impl IntoView {
    view! { <p class="state state-loading" role="status" aria-live="polite">"Loading " {what} "…"</p> }
}

#[component]
pub fn ErrorPanel(error: ClientError) -> impl IntoView {
    let (title, hint) = match &error {
        ClientError::Network(_) => ("The server did not answer", "Check that failpass is running, then reload."),
        ClientError::Api { status, .. } if *status >= 500 => ("The server failed", "The server log has the cause."),
        ClientError::Api { status: 404, .. } => ("Not found", "It may have been removed, or the address is mistyped."),
        ClientError::Api { .. } | ClientError::Input(_) => {
            ("This view cannot be shown", "Check the address or the filters.")
        }
        ClientError::Decode(_) => ("Unexpected response", "The dashboard and server versions may differ; reload."),
    };
    view! {
        <div class="state state-error" role="alert" data-testid="error">
            <strong>{title}</strong>
            <p class="error-message">{error.to_string()}</p>
            <p class="hint">{hint}</p>
        </div>
    }
}

#[component]
pub fn Empty(#[prop(into)] message: String) -> impl IntoView {
    view! { <p class="state state-empty" data-testid="empty">{message}</p> }
}

/// A headline figure with its sample size underneath.
#[component]
pub fn Stat(
    #[prop(into)] label: String,
    #[prop(into)] value: String,
    #[prop(into)] detail: String,
    #[prop(into)] testid: String,
) -> impl IntoView {
    view! {
        <div class="stat">
            <div class="stat-label">{label}</div>
            <div class="stat-value" data-testid=testid>{value}</div>
            <div class="stat-detail">{detail}</div>
        </div>
    }
}

/// At phone width a table shows its priority columns; this opens the rest
/// (the CSS hides `.opt` cells until it is open).
#[component]
pub fn AllColumns() -> impl IntoView {
    view! { <details class="all-columns"><summary>"Every column"</summary></details> }
}

/// A small label whose text carries the meaning; colour only repeats it.
#[component]
pub fn Badge(#[prop(into)] kind: String, #[prop(into)] text: String) -> impl IntoView {
    view! { <span class=format!("badge badge-{kind}")>{text}</span> }
}
