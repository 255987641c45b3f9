//! An attempt's trajectory, step by step: a list that draws only the rows
//! in view (a trajectory may have 10,000 steps), each with its action, the
//! first line of its input, the time since the step before and its cost;
//! loops and the step where the candidate appears are marked. A step opens
//! below the list with its whole input, output and thought.
//!
//! The rows out of view are two spacers whose `height` attribute holds
//! their place (an `svg`'s: the server's Content-Security-Policy blocks
//! `style` attributes).
//!
//! The steps stay as the browser parsed them (`JSON.parse`) and each drawn
//! row reads its fields from there: no deserializer for the trajectory's
//! types in the bundle (serde's cost 14 KB gzip here), and no copy of
//! steps that are never shown.

use failpass_shared::format::usd;
use leptos::prelude::*;
use wasm_bindgen::JsValue;

use crate::api::{self, ClientError};
use crate::components::{Empty, ErrorPanel, Loading};

/// Height of one row, in pixels (as `.traj-row` in style/60-runner.css).
const ROW: i32 = 28;
/// Rows the list shows at once; more scroll.
const SHOWN: i32 = 14;
/// Rows drawn beyond the view on each side, so a fast scroll shows no gap.
const SPARE: i32 = 6;

fn field(o: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(o, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

fn text(o: &JsValue, key: &str) -> String {
    field(o, key).as_string().unwrap_or_default()
}

/// The time a step began, in milliseconds (`Date.parse`), if it says.
fn millis(step: &JsValue) -> Option<f64> {
    field(step, "at").as_string().map(|at| js_sys::Date::parse(&at)).filter(|m| m.is_finite())
}

/// The trajectory of attempt `id`, fetched when shown.
#[component]
pub fn TrajectoryPanel(id: i64) -> impl IntoView {
    let data = crate::load::Load::new(move || api::trajectory(id));
    view! {
        <Transition fallback=|| view! { <Loading what="the trajectory"/> }>
            {move || Suspend::new(async move {
                match data.get().await {
                    Err(ClientError::Api { status: 404, .. }) => {
                        view! { <Empty message="No trajectory: the agent sent none with this attempt."/> }.into_any()
                    }
                    Err(e) => view! { <ErrorPanel error=e/> }.into_any(),
                    Ok(t) => steps(t).into_any(),
                }
            })}
        </Transition>
    }
}

/// Seconds since the step before (from their times), else the seconds the
/// step's action ran (SWE-agent keeps those instead), as a short text.
fn gap(prev: Option<&JsValue>, step: &JsValue) -> String {
    match (prev.and_then(millis), millis(step)) {
        (Some(a), Some(b)) => format!("+{:.1} s", (b - a) / 1000.0),
        _ => field(step, "seconds").as_f64().map(|s| format!("{s:.1} s")).unwrap_or_default(),
    }
}

/// The rows drawn when the list is scrolled `top` pixels: those in view
/// and [`SPARE`] on each side.
fn window(top: i32, n: i32) -> (i32, i32) {
    ((top / ROW - SPARE).max(0), (top / ROW + SHOWN + SPARE).min(n))
}

fn steps(t: JsValue) -> impl IntoView {
    let list = js_sys::Array::from(&field(&t, "steps"));
    let n = list.length() as i32;
    let top = RwSignal::new(0i32);
    let open = RwSignal::new(None::<u32>);
    let candidate = field(&t, "candidate_step").as_f64().map(|i| i as u32);
    let format = match text(&t, "format").as_str() {
        "swe_agent" => "SWE-agent",
        "open_hands" => "OpenHands",
        _ => "JSON Lines",
    };
    // The headline, then a line per loop and the candidate's step.
    let mut summary = format!("{n} steps ({format})");
    if let Some(c) = field(&t, "cost_usd").as_f64() {
        summary += &format!(", {}", usd(Some(c)));
    }
    let capped = field(&t, "capped").as_f64().unwrap_or(0.0);
    if capped > 0.0 {
        summary += &format!(", {capped} cut to their caps");
    }
    summary.push('.');
    let mut loops: Vec<(u32, u32)> = Vec::new();
    for l in js_sys::Array::from(&field(&t, "loops")).iter() {
        let [first, last, repeats] = ["first", "last", "repeats"].map(|k| field(&l, k).as_f64().unwrap_or(0.0) as u32);
        loops.push((first, last));
        summary +=
            &format!("\nLoop: steps {first}–{last}, {} ×{repeats}. Proposed cause: stuck in loop.", text(&l, "action"));
    }
    if let Some(c) = candidate {
        summary += &format!("\nThe candidate first appears at step {c}.");
    }
    let list = StoredValue::new_local(list);
    let rows = move |first: i32, last: i32| {
        list.with_value(|list| {
            (first..last)
                .map(|i| {
                    let i = i as u32;
                    let s = list.get(i);
                    let mut class = String::from("traj-row");
                    if loops.iter().any(|(a, b)| *a <= i && i <= *b) {
                        class.push_str(" loop");
                    }
                    if candidate == Some(i) {
                        class.push_str(" candidate");
                    }
                    let input = text(&s, "input").lines().next().unwrap_or_default().to_owned();
                    let prev = i.checked_sub(1).map(|p| list.get(p));
                    let when = gap(prev.as_ref(), &s);
                    let cost = field(&s, "cost_usd").as_f64().map(|c| usd(Some(c))).unwrap_or_default();
                    view! {
                        <button type="button" class=class data-testid="traj-row"
                            on:click=move |_| open.set(Some(i))>
                            <span class="traj-i">{i}</span>
                            <span class="traj-main">{format!("{} {input}", text(&s, "action"))}</span>
                            <span class="traj-meta">{format!("{when} {cost}")}</span>
                        </button>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <div class="trajectory" data-testid="trajectory">
            <p class="counts traj-summary">{summary}</p>
            <div class="traj-list" on:scroll=move |ev| {
                // Only a scroll into another row draws the rows again, not every pixel.
                let now = event_target::<web_sys::Element>(&ev).scroll_top() / ROW * ROW;
                if now != top.get_untracked() {
                    top.set(now);
                }
            }>
                {move || {
                    let (first, last) = window(top.get(), n);
                    view! {
                        <svg class="traj-pad" width="1" height=(first * ROW).to_string()></svg>
                        {rows(first, last)}
                        <svg class="traj-pad" width="1" height=((n - last) * ROW).to_string()></svg>
                    }
                }}
            </div>
            {move || open.get().map(|i| list.with_value(|list| {
                let s = list.get(i);
                let output = text(&s, "output");
                let thought = text(&s, "thought");
                let head = format!("Step {i} · {}{}{thought}", text(&s, "action"), if thought.is_empty() { "" } else { ": " });
                view! {
                    <div class="traj-detail" data-testid="traj-detail">
                        <h4>{head}</h4>
                        <pre>{text(&s, "input")}</pre>
                        <pre>{if output.is_empty() { "(no output)".to_owned() } else { output }}</pre>
                    </div>
                }
            }))}
        </div>
    }
}
