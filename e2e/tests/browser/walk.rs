//! Every page at 1280 and at 390 px (issue 35 items 6 and 8): no control past
//! the screen's edges (unless inside a box that scrolls sideways), no text
//! drawn under 12 px (a chart's text as drawn, after the SVG's scaling),
//! and no page wider than the screen. `e2e/layout_check.js` measures; this
//! walks the pages an admin sees, settled (charts drawn, lists loaded).

use super::*;

/// The pages, the dashboard's and the server's.
const PAGES: &[&str] = &[
    "/",
    "/?period=this_week&goal=fix",
    "/queue",
    "/queue?status=open&arrived=24h",
    "/regimes",
    "/cost",
    "/oracles",
    "/runners",
    "/reports/1",
    "/reports/1/oracle",
    "/inbox",
    "/settings/projects",
    "/settings/projects/jax-ml/jax",
    "/settings/tokens",
    "/settings/views",
    "/settings/hooks",
    "/settings/users",
    "/settings/import",
    "/runners/environments",
    "/docs/api",
    "/status",
    "/status/jax-ml/jax",
];

#[tokio::test]
async fn every_page_fits_at_1280_and_390_with_text_of_12_px_or_more() {
    let _one = BROWSER.lock().await;
    let mut found = Vec::new();
    for (width, height) in [(1280, 900), (390, 844)] {
        let h = start(width, height).await;
        h.sign_in("demo-admin").await;
        for page in PAGES {
            h.client.goto(&format!("{}{page}", h.base)).await.unwrap();
            h.until(&format!("{page} settled"), || async {
                h.client
                    .execute(
                        "return document.readyState === 'complete' && !document.getElementById('boot') \
                         && !document.querySelector('.state-loading, .chart-loading')",
                        vec![],
                    )
                    .await
                    .is_ok_and(|v| v == serde_json::Value::Bool(true))
            })
            .await;
            for problem in h.layout_problems().await {
                found.push(format!("{page} at {width} px: {problem}"));
            }
        }
        h.screenshot(&format!("walk-last-{width}.png")).await;
        // The check sees what it is for: small text and a control past the edge.
        h.client
            .execute(
                "const p = document.createElement('p'); p.style.fontSize = '9px'; p.textContent = 'tiny'; \
                 const b = document.createElement('button'); b.textContent = 'far'; \
                 b.style.position = 'absolute'; b.style.left = (window.innerWidth + 40) + 'px'; \
                 document.querySelector('main').append(p, b);",
                vec![],
            )
            .await
            .unwrap();
        let planted = h.layout_problems().await;
        assert!(planted.iter().any(|p| p.starts_with("text 9.0 px") && p.contains("tiny")), "{planted:?}");
        assert!(planted.iter().any(|p| p.starts_with("off-screen") && p.contains("far")), "{planted:?}");
        h.finish().await;
    }
    assert!(found.is_empty(), "{} problems:\n{}", found.len(), found.join("\n"));
}
