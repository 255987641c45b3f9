//! Report bodies as sanitised HTML.
//!
//! Reports come from anyone who can file an issue, so their markdown is
//! untrusted. CommonMark is rendered with pulldown-cmark, and before any HTML
//! is written: raw HTML in the source becomes visible text, link targets
//! other than http(s), mailto and in-site paths become inert, and images
//! become links (a remote image would tell its host who is reading).

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// A link target that is safe to follow, or `None`.
fn safe_url(url: &str) -> Option<&str> {
    let u = url.trim();
    // Browsers read `/\host` and `/<tab>/host` as `//host`: no backslashes,
    // whitespace or control characters at all.
    if u.chars().any(|c| c == '\\' || c.is_whitespace() || c.is_control()) {
        return None;
    }
    let lower = u.to_ascii_lowercase();
    let ok = lower.starts_with("https://")
        || lower.starts_with("http://")
        || lower.starts_with("mailto:")
        || (u.starts_with('/') && !u.starts_with("//"))
        || u.starts_with('#');
    ok.then_some(u)
}

fn escape_attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn open_link(url: &str, title: &str) -> String {
    match safe_url(url) {
        Some(u) => {
            let title = if title.is_empty() { String::new() } else { format!(" title=\"{}\"", escape_attr(title)) };
            format!("<a href=\"{}\"{title} rel=\"nofollow noopener noreferrer\">", escape_attr(u))
        }
        // Kept as text, so the reader still sees where it pointed.
        None => "<a>".to_owned(),
    }
}

/// The body's markdown as HTML that is safe to insert into the page.
pub fn render(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(markdown, options).map(|event| match event {
        Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
        Event::Start(Tag::Link { link_type, dest_url, title, .. }) => {
            let url = if link_type == LinkType::Email { format!("mailto:{dest_url}") } else { dest_url.to_string() };
            Event::InlineHtml(CowStr::from(open_link(&url, &title)))
        }
        Event::End(TagEnd::Link) => Event::InlineHtml(CowStr::Borrowed("</a>")),
        Event::Start(Tag::Image { dest_url, .. }) => {
            Event::InlineHtml(CowStr::from(format!("{}[image: ", open_link(&dest_url, ""))))
        }
        Event::End(TagEnd::Image) => Event::InlineHtml(CowStr::Borrowed("]</a>")),
        e => e,
    });
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn renders_code_blocks_lists_and_tables() {
        let html = render(
            "# Title\n\nSee `torch.sum`:\n\n```python\nimport torch\nprint(torch.ones(2) < 3)\n```\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains("<code>torch.sum</code>"));
        assert!(
            html.contains("<pre><code class=\"language-python\">import torch\nprint(torch.ones(2) &lt; 3)"),
            "{html}"
        );
        assert!(html.contains("<li>one</li>") && html.contains("<table>"));
    }

    #[test]
    fn raw_html_and_scripts_become_text() {
        for evil in [
            "<script>alert(1)</script>",
            "hello <img src=x onerror=alert(1)> there",
            "<iframe src=\"https://evil.example\"></iframe>",
            "<a href=\"javascript:alert(1)\">x</a>",
        ] {
            let html = render(evil);
            assert!(
                !html.contains("<script")
                    && !html.contains("<img")
                    && !html.contains("<iframe")
                    && !html.contains("<a href=\"javascript"),
                "{evil} -> {html}"
            );
            assert!(html.contains("&lt;"), "shown as text: {html}");
        }
    }

    #[test]
    fn only_safe_links_are_followable_and_images_are_links() {
        let html = render(
            "[ok](https://github.com/a/b/issues/1) [bad](javascript:alert(1)) [data](DATA:text/html,x) [rel](/reports/2) ![plot](https://x.example/p.png \"t\")",
        );
        assert!(
            html.contains("<a href=\"https://github.com/a/b/issues/1\" rel=\"nofollow noopener noreferrer\">ok</a>"),
            "{html}"
        );
        assert!(html.contains("<a>bad</a>") && html.contains("<a>data</a>"), "{html}");
        assert!(html.contains("<a href=\"/reports/2\""));
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("[image: plot]"), "{html}");
        for sneaky in ["[s](/\\evil.example)", "[t](</\t/evil.example>)", "[u](<https://a.example/\u{0}x>)"] {
            let html = render(sneaky);
            assert!(!html.contains("href"), "{sneaky} -> {html}");
        }
        let quoted = render("[x](https://a.example/\"onmouseover=\"alert(1))");
        assert!(!quoted.contains("\"onmouseover"), "{quoted}");
    }
}
