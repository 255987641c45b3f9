//! Regimes: the rate landscape over route × agent × model, harness against
//! patch logic, vague against clear, and the contamination split.

use failpass_shared::api::figures::{FigureRow, FiguresQuery};
use failpass_shared::format::{interval, percent};
use failpass_shared::model::GroupBy;
use leptos::prelude::*;

use crate::api::{self, ClientError};
use crate::components::AllColumns;
use crate::components::agents_table::AgentsTable;
use crate::components::figures::{Figure, FigurePage, chart_src};

/// The figures of every view on this page, fetched together.
#[derive(Clone)]
struct Views {
    cells: Vec<FigureRow>,
    agents: Vec<FigureRow>,
    models: Vec<FigureRow>,
    categories: Vec<FigureRow>,
    vagueness: Vec<FigureRow>,
    contamination: Vec<FigureRow>,
    /// The filters, for the charts the server draws.
    query: FiguresQuery,
}

async fn fetch(q: FiguresQuery) -> Result<Views, ClientError> {
    let by = |g: GroupBy, then: &[GroupBy]| FiguresQuery { group_by: g, then_by: then.to_vec(), ..q.clone() };
    Ok(Views {
        cells: api::figures(&by(GroupBy::Route, &[GroupBy::Agent, GroupBy::Model])).await?.rows,
        agents: api::figures(&by(GroupBy::Agent, &[])).await?.rows,
        models: api::figures(&by(GroupBy::Model, &[])).await?.rows,
        categories: api::figures(&by(GroupBy::Category, &[])).await?.rows,
        vagueness: api::figures(&by(GroupBy::Vagueness, &[])).await?.rows,
        contamination: api::figures(&by(GroupBy::Model, &[GroupBy::Cutoff])).await?.rows,
        query: q,
    })
}

#[component]
pub fn RegimesPage() -> impl IntoView {
    let page = FigurePage {
        title: "Regimes",
        path: "/regimes",
        what: "regimes",
        empty: "No attempts in this view: the regimes need attempts. Widen the filters.",
        fetch,
        body: |v: Views| (!v.cells.is_empty()).then(|| body(v)),
        export_by: "route,agent,model",
    };
    view! {
        <section class="regimes">
            {page.view()}
            <AgentsTable/>
        </section>
    }
}

fn body(v: Views) -> AnyView {
    // A rate chart's address, and its table's as a CSV download.
    let rate = |g: GroupBy, then: &[GroupBy], preferred: u32| {
        let pairs = FiguresQuery { group_by: g, then_by: then.to_vec(), ..v.query.clone() }.pairs();
        let export = format!("/api/v1/export/figures?{}", failpass_shared::api::query::to_query_string(&pairs));
        (chart_src("rate", pairs, preferred), export)
    };
    view! {
        <h2>"Rate landscape: route × agent × model"</h2>
        <p class="hint">"A report counts in every cell one of its attempts falls in. Rate: reports with a reproduced or confirmed attempt over reports with a graded one; per-attempt success beside it; LLM leads never count."</p>
        <div class="table-wrap">
            <AllColumns/>
            <table class="chart-table" data-testid="regime-table">
                <thead><tr>
                    <th scope="col">"Route"</th><th scope="col">"Agent"</th><th scope="col">"Model"</th>
                    <th scope="col" class="num opt">"Attempts"</th><th scope="col" class="num opt">"Graded reports"</th>
                    <th scope="col" class="num opt">"Reproduced"</th><th scope="col" class="num">"Rate"</th><th scope="col" class="opt">"95% interval"</th>
                    <th scope="col" class="num opt">"Per attempt"</th><th scope="col" class="num opt">"Leads"</th>
                </tr></thead>
                <tbody>
                    {v.cells.iter().map(|r| {
                        let part = |i: usize| r.keys.get(i).cloned().unwrap_or_default();
                        view! {
                            <tr data-testid="regime-row" data-key=r.key.clone()>
                                <td>{part(0).replace('_', " ")}</td><td>{part(1)}</td><td>{part(2)}</td>
                                <td class="num opt">{r.attempts}</td><td class="num opt">{r.reports_graded}</td>
                                <td class="num opt">{r.reports_reproduced}</td><td class="num" data-testid="regime-rate">{percent(r.rate)}</td>
                                <td class="opt">{interval(r.rate_low, r.rate_high)}</td>
                                <td class="num opt">{percent(r.attempt_rate)}</td><td class="num opt">{r.attempts_lead}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
        <div class="chart-pair">
            {rate_figure("chart-agents", rate(GroupBy::Agent, &[], 560),
                "Per agent, over the reports it attempted.", &v.agents, "Agent")}
            {rate_figure("chart-models", rate(GroupBy::Model, &[], 560),
                "Per model, over the reports attempted with it.", &v.models, "Model")}
        </div>
        <h2>"Harness against patch logic, vague against clear"</h2>
        <div class="chart-pair">
            {rate_figure("chart-category", rate(GroupBy::Category, &[], 560),
                "Harness and plumbing bugs against patch logic. Published prior: agents resolve at most about 9% of harness bugs against about 41% elsewhere.", &v.categories, "Category")}
            {rate_figure("chart-vagueness", rate(GroupBy::Vagueness, &[], 560),
                "Reports flagged vague (short, no code, no versions, no traceback) need a human to accept any verdict before it counts.", &v.vagueness, "Report")}
        </div>
        <h2>"Contamination split"</h2>
        {rate_figure("chart-contamination", rate(GroupBy::Model, &[GroupBy::Cutoff], 900),
            "Reports filed before against after the attempting model's training cutoff, per model; `unknown` where the cutoff is not recorded. Reference: LIBRO reproduced 32% of 31 post-cutoff reports against 33% overall.",
            &v.contamination, "Model · filed")}
    }
    .into_any()
}

/// A rate chart with its numbers underneath.
fn rate_figure(
    testid: &'static str,
    (chart, export): (String, String),
    caption: &'static str,
    rows: &[FigureRow],
    what: &'static str,
) -> AnyView {
    let rows = rows.to_vec();
    view! {
        <Figure testid=testid chart=chart caption=caption>
            <a class="download" href=export download>"Download (CSV)"</a>
            <table class="chart-table">
                <thead><tr><th scope="col">{what}</th><th scope="col" class="num">"Graded"</th><th scope="col" class="num">"Reproduced"</th><th scope="col" class="num">"Rate"</th><th scope="col">"95% interval"</th></tr></thead>
                <tbody>
                    {rows.iter().map(|r| view! {
                        <tr data-testid="rate-row" data-key=r.key.clone()>
                            <th scope="row">{r.key.replace('_', " ")}</th><td class="num">{r.reports_graded}</td><td class="num">{r.reports_reproduced}</td>
                            <td class="num">{percent(r.rate)}</td><td>{interval(r.rate_low, r.rate_high)}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </Figure>
    }
    .into_any()
}
