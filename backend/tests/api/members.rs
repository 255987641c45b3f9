//! A team set up in the browser (issue 35 item 3): a project's set-up page
//! lists its members; admins and the project's maintainers add one with a
//! role, change it, take it away; wrong input is said on the page and
//! stores nothing; assignment offers the members.

use serde_json::json;

use crate::helpers::{client_with_token, spawn_app, user_token};
use crate::setup::form;

#[tokio::test]
async fn maintainers_manage_their_projects_members_from_the_set_up_page() {
    let app = spawn_app().await;
    app.project("o/n").await;
    app.project("o/other").await;
    let ana = user_token(app.storage.as_ref(), "ana", false).await;
    let bo = user_token(app.storage.as_ref(), "bo", false).await;
    let page = |html: &str| html.to_owned();

    // An admin adds ana as a maintainer: the page lists her.
    let (status, html, location) =
        form(&app, "/settings/projects/o/n/members", &[("user", "ana"), ("role", "maintainer")]).await;
    assert_eq!((status, location.as_deref()), (200, Some("/settings/projects/o/n")), "{html}");
    assert!(html.contains(r#"data-testid="member" data-name="ana""#) && html.contains("maintainer"), "{}", page(&html));
    assert!(!html.contains("failpass-page"), "a redirect's page is a page of its own address");
    // A refusal is answered in place, and names the form's page for the address bar.
    let (status, html, location) =
        form(&app, "/settings/projects/o/n/members", &[("user", "nobody-here"), ("role", "viewer")]).await;
    assert_eq!((status, location.as_deref()), (400, Some("/settings/projects/o/n/members")), "{html}");
    assert!(
        html.contains(r#"<meta name="failpass-page" content="/settings/projects/o/n">"#)
            && html.contains(r#"<script src="/frame.js" defer>"#),
        "{html}"
    );
    // Assignment offers the members.
    let id = app.report(json!({"project": "o/n", "external_id": "1", "title": "t"})).await;
    let report = app.get(&format!("/api/v1/reports/{id}")).await.body;
    assert!(report["lifecycle_html"].as_str().unwrap().contains(r#"<option value="ana">"#), "{report}");

    // Ana, a maintainer of o/n, adds bo as a viewer there, but not in o/other.
    let as_ana = client_with_token(&ana);
    let post = |client: &reqwest::Client, path: &str, fields: Vec<(&'static str, &'static str)>| {
        let req = client.post(format!("{}{path}", app.base)).header("origin", &app.base).form(&fields);
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let (status, _) = post(&as_ana, "/settings/projects/o/n/members", vec![("user", "bo"), ("role", "viewer")]).await;
    assert!(status == 200 || status == 303, "{status}");
    let (status, html) =
        post(&as_ana, "/settings/projects/o/other/members", vec![("user", "bo"), ("role", "viewer")]).await;
    assert_eq!(status, 403, "{html}");
    assert!(html.contains("<html") && html.contains("manage members"), "a page saying why: {html}");
    // Bo, a viewer, may not manage members.
    let (status, _) =
        post(&client_with_token(&bo), "/settings/projects/o/n/members", vec![("user", "bo"), ("role", "maintainer")])
            .await;
    assert_eq!(status, 403);

    // Wrong input is said on the page; nothing is stored.
    for (fields, needle) in [
        (vec![("user", "bo"), ("role", "owner")], "role: `owner` is not viewer or maintainer"),
        (vec![("user", "ghost"), ("role", "viewer")], "user: there is no account `ghost`"),
        (vec![("user", " "), ("role", "viewer")], "user: give an account name"),
    ] {
        let (status, html, _) = form(&app, "/settings/projects/o/n/members", &fields).await;
        assert_eq!(status, 400, "{fields:?}: {html}");
        assert!(html.contains(needle), "{fields:?}: {html}");
    }
    let users = app.storage.list_users().await.unwrap();
    let role_of = |name: &str| {
        users
            .iter()
            .find(|(u, _)| u.name == name)
            .and_then(|(_, ms)| ms.iter().find(|m| m.project == "o/n").map(|m| m.role))
    };
    assert_eq!(role_of("bo"), Some(failpass_shared::model::ProjectRole::Viewer), "bo stays a viewer");
    assert!(role_of("ghost").is_none());

    // Taken away: the page no longer lists bo.
    let (status, html, _) =
        form(&app, "/settings/projects/o/n/members/remove", &[("user", "bo"), ("confirm", "yes")]).await;
    assert_eq!(status, 200);
    assert!(!html.contains(r#"data-name="bo""#) && html.contains(r#"data-name="ana""#), "{html}");
    assert!(html.contains(r#"name="confirm" value="yes" required"#), "a removal asks first");
}

/// Admins make accounts in the browser: the password is shown once and
/// signs in; a bad or taken name is said on the page and makes nothing.
#[tokio::test]
async fn an_admin_makes_an_account_whose_password_is_shown_once() {
    let app = spawn_app().await;
    let page = app.get("/settings/users").await;
    assert_eq!(page.status, 200);
    let r = app
        .client
        .post(format!("{}/settings/users", app.base))
        .header("origin", &app.base)
        .form(&[("name", "carla")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let html = r.text().await.unwrap();
    let password = html
        .split(r#"data-testid="password">"#)
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .expect("the password, shown once")
        .to_owned();
    assert_eq!(password.len(), 24, "{html}");
    assert!(html.contains(r#"data-testid="user" data-name="carla""#));
    // It signs in.
    let signin = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let r = signin
        .post(format!("{}/signin", app.base))
        .form(&[("name", "carla"), ("password", password.as_str()), ("next", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert!(r.headers().get("set-cookie").is_some());
    // And it is not shown again.
    assert!(!app.get("/settings/users").await.body.as_str().unwrap().contains(&password));
    // Wrong input: said on the page, nothing made.
    for (name, needle) in [("bad name!", "user name `bad name!`"), ("carla", "`carla` is taken")] {
        let r = app
            .client
            .post(format!("{}/settings/users", app.base))
            .header("origin", &app.base)
            .form(&[("name", name)])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 400, "{name}");
        assert!(r.text().await.unwrap().contains(needle), "{name}");
    }
    assert_eq!(app.storage.list_users().await.unwrap().iter().filter(|(u, _)| u.name.starts_with("bad")).count(), 0);
}

/// Issue 35 item 2: a person saves a view (a named dashboard address),
/// opens it as a link, renames nothing by accident, and forgets it; a
/// foreign address or an empty name is refused on the page.
#[tokio::test]
async fn a_person_saves_opens_and_forgets_a_view() {
    let app = spawn_app().await;
    let no_follow = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let token = user_token(app.storage.as_ref(), "dana", false).await;
    let post = |path: &str, fields: Vec<(&'static str, &'static str)>| {
        let req =
            no_follow.post(format!("{}{path}", app.base)).header("origin", &app.base).bearer_auth(&token).form(&fields);
        async move {
            let r = req.send().await.unwrap();
            let location = r.headers().get("location").map(|l| l.to_str().unwrap().to_owned());
            (r.status().as_u16(), location, r.text().await.unwrap())
        }
    };
    let get = |path: &str| {
        let req = no_follow.get(format!("{}{path}", app.base)).bearer_auth(&token);
        async move { req.send().await.unwrap().text().await.unwrap() }
    };
    // The dashboard's link fills the form with the address.
    assert!(get("/settings/views?address=%2Fqueue%3Fstatus%3Dopen").await.contains(r#"value="/queue?status=open""#));
    let (status, location, _) =
        post("/settings/views", vec![("name", "my open work"), ("address", "/queue?status=open&assignee=me")]).await;
    assert_eq!((status, location.as_deref()), (303, Some("/queue?status=open&assignee=me")), "saved, then opened");
    let page = get("/settings/views").await;
    assert!(page.contains(r#"<a href="/queue?status=open&amp;assignee=me">my open work</a>"#), "{page}");
    // Saved again under the same name: one view, the new address.
    post("/settings/views", vec![("name", "my open work"), ("address", "/queue?status=needs_review")]).await;
    let views = app.storage.saved_views(app.storage.user_by_name("dana").await.unwrap().unwrap().id).await.unwrap();
    assert_eq!(views.len(), 1);
    assert_eq!(views[0].2, "/queue?status=needs_review");
    // Wrong input: said on the page, nothing saved.
    for (fields, needle) in [
        (vec![("name", "evil"), ("address", "https://evil.example/queue")], "is not one of the dashboard's pages"),
        (vec![("name", "api"), ("address", "/api/v1/reports")], "is not one of the dashboard's pages"),
        (vec![("name", " "), ("address", "/queue")], "name: give the view a name"),
    ] {
        let (status, _, html) = post("/settings/views", fields.clone()).await;
        assert_eq!(status, 400, "{fields:?}");
        assert!(html.contains(needle), "{fields:?}: {html}");
    }
    // Another person cannot forget it; its owner can.
    let id = views[0].0;
    let other = client_with_token(&user_token(app.storage.as_ref(), "eve", false).await);
    let r = other
        .post(format!("{}/settings/views/{id}/remove", app.base))
        .header("origin", &app.base)
        .form(&[("x", "")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let path: &'static str = Box::leak(format!("/settings/views/{id}/remove").into_boxed_str());
    let (status, location, _) = post(path, vec![]).await;
    assert_eq!((status, location.as_deref()), (303, Some("/settings/views")));
    assert!(get("/settings/views").await.contains("None yet"));
}
