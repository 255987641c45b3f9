//! `GET /api/v1/agents`: agents' stated figures beside the computed ones.

use axum::extract::State;
use failpass_shared::api::figures::FiguresQuery;

use super::AppState;
use crate::auth::Viewer;
use crate::error::{ApiJson, ApiResult};

/// `GET /api/v1/agents`: each agent's stated figures beside its computed ones.
#[utoipa::path(
    get, path = "/api/v1/agents", tag = "figures",
    responses((status = 200, description = "Each agent's stated figures beside the computed ones.", body = Vec<failpass_shared::api::import::AgentFigures>))
)]
#[tracing::instrument(skip_all)]
pub async fn list_agents(
    State(state): State<AppState>,
    viewer: Viewer,
) -> ApiResult<ApiJson<Vec<failpass_shared::api::import::AgentFigures>>> {
    use failpass_shared::api::import::{AgentFigures, discrepancies};
    use failpass_shared::model::{Goal, GroupBy};
    let scope = viewer.scope();
    let mut computed = std::collections::HashMap::new();
    for goal in [Goal::Reproduce, Goal::Fix] {
        let q = FiguresQuery { group_by: GroupBy::Agent, goal, ..Default::default() };
        for row in crate::summaries::rows_of(state.storage.as_ref(), &scope, &q).await? {
            // Fix figures win where an agent has both: leaderboards grade fixes.
            if goal == Goal::Fix || !computed.contains_key(&row.key) {
                computed.insert(row.key.clone(), (goal, row));
            }
        }
    }
    let agents = state.storage.list_agents().await?;
    Ok(ApiJson(
        agents
            .into_iter()
            .map(|agent| {
                let (goal, row) = match computed.remove(&agent.name) {
                    Some((g, r)) => (g, Some(r)),
                    None => (Goal::Fix, None),
                };
                AgentFigures { discrepancies: discrepancies(&agent, row.as_ref()), agent, goal, computed: row }
            })
            .collect(),
    ))
}
