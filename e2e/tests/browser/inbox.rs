//! The review inbox in the browser (issue 35 item 1): a maintainer sees the
//! count in the dashboard's header, opens the inbox, reads a lead with its
//! candidate and judges it in place, at 1280 and at 390 px, without a
//! control off-screen.

use super::*;

#[tokio::test]
async fn a_maintainer_judges_a_lead_from_the_inbox_at_1280_and_390() {
    let _one = BROWSER.lock().await;
    for (width, height) in [(1280, 1000), (390, 844)] {
        let h = start(width, height).await;
        h.sign_in("demo-maintainer").await;
        // The header says how many wait (the demo has a lead in jax-ml/jax), and leads there.
        let waiting: u64 = h.text("inbox-count").await.parse().unwrap();
        assert!(waiting > 0, "the demo has leads in demo-maintainer's projects");
        h.client.find(Locator::Css("[data-testid=inbox-link]")).await.unwrap().click().await.unwrap();
        h.until("the inbox", || async { h.client.current_url().await.unwrap().path() == "/inbox" }).await;
        h.text("inbox-title").await;
        assert_eq!(h.text("inbox-count").await, waiting.to_string());
        let items = h.client.find_all(Locator::Css("[data-testid=inbox-item]")).await.unwrap();
        assert_eq!(items.len() as u64, waiting.min(50));
        assert!(h.text("inbox-why").await.contains("lead") || h.text("inbox-why").await.contains("vague"));
        assert!(!h.text("inbox-report").await.trim().is_empty(), "the report's text is at hand");
        assert!(h.sideways().await <= 0, "the inbox fits {width} px");
        h.screenshot(&format!("inbox-{width}.png")).await;
        // Accept the first in place: the page comes back saying so, one fewer waiting.
        let first = items[0].attr("data-attempt").await.unwrap().unwrap();
        h.client.find(Locator::Css("[data-testid=inbox-accept]")).await.unwrap().click().await.unwrap();
        h.until("the notice", || async { h.text("inbox-notice").await == format!("Attempt {first} accepted.") }).await;
        assert_eq!(h.text("inbox-count").await, (waiting - 1).to_string());
        let a: serde_json::Value = h.api(&format!("/api/v1/attempts/{first}")).await;
        assert_eq!(a["review"], "accepted");
        assert!(!h.client.current_url().await.unwrap().path().contains("review"), "no post address left in the bar");
        h.finish().await;
    }
}

/// Issue 35 item 3: a maintainer adds a member to their project from its
/// set-up page, at 1280 and 390 px, and the report page offers members to
/// assign.
#[tokio::test]
async fn a_maintainer_adds_a_member_from_the_set_up_page() {
    let _one = BROWSER.lock().await;
    for (width, height) in [(1280, 1000), (390, 844)] {
        let h = start(width, height).await;
        h.sign_in("demo-maintainer").await;
        h.client.goto(&format!("{}/settings/projects/jax-ml/jax", h.base)).await.unwrap();
        h.text("members").await;
        // A refusal is said on the form's page, and the bar is back at that page's address.
        let form = h.client.find(Locator::Css("[data-testid=add-member]")).await.unwrap();
        form.find(Locator::Css("input[name=user]")).await.unwrap().send_keys("nobody-here").await.unwrap();
        form.find(Locator::Css("button[type=submit]")).await.unwrap().click().await.unwrap();
        h.until("the refusal", || async {
            h.client.find(Locator::Css(".state-error")).await.is_ok()
                && h.client.current_url().await.unwrap().path() == "/settings/projects/jax-ml/jax"
        })
        .await;
        let form = h.client.find(Locator::Css("[data-testid=add-member]")).await.unwrap();
        let user = form.find(Locator::Css("input[name=user]")).await.unwrap();
        user.clear().await.unwrap();
        user.send_keys("demo-viewer").await.unwrap();
        form.find(Locator::Css("select[name=role]")).await.unwrap().select_by_value("viewer").await.unwrap();
        form.find(Locator::Css("button[type=submit]")).await.unwrap().click().await.unwrap();
        h.until("the new member", || async { h.text("members").await.contains("demo-viewer") }).await;
        assert_eq!(
            h.client.current_url().await.unwrap().path(),
            "/settings/projects/jax-ml/jax",
            "no post address left"
        );
        assert!(h.sideways().await <= 0, "the set-up page fits {width} px");
        h.client.execute("document.querySelector('[data-testid=members]').scrollIntoView()", vec![]).await.unwrap();
        h.screenshot(&format!("members-{width}.png")).await;
        h.finish().await;
    }
}

/// Issue 35 item 7: the API reference's entry for submitting an attempt has
/// its body's fields and a curl line, and fits at 1280 and 390 px.
#[tokio::test]
async fn the_api_reference_shows_a_bodys_fields_and_curl_and_fits() {
    let _one = BROWSER.lock().await;
    for (width, height) in [(1280, 1000), (390, 844)] {
        let h = start(width, height).await;
        h.client.goto(&format!("{}/docs/api", h.base)).await.unwrap();
        h.text("api-contents").await;
        h.client.execute("document.getElementById('post--api-v1-attempts').scrollIntoView()", vec![]).await.unwrap();
        let op = h.client.find(Locator::Css("#post--api-v1-attempts")).await.unwrap();
        let text = op.text().await.unwrap();
        assert!(text.contains("curl -X POST") && text.contains("agent (required)"), "{text}");
        assert!(h.sideways().await <= 0, "the reference fits {width} px");
        h.screenshot(&format!("api-reference-{width}.png")).await;
        h.finish().await;
    }
}
