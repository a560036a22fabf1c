//! Every template rendered in every language, and the branding a
//! tenant's mail carries: kept apart from the templates so that the words
//! read on their own.

use serde_json::json;

use super::{layout::footer, *};

fn params() -> Value {
    json!({
        "name": "Ada <script>",
        "old_email": "old@example.com",
        "new_email": "new@example.com",
        "tenant": "Acme & Co",
        "inviter": "Grace",
        "role": "support",
        "course": "Rust 101",
        "course_slug": "rust-101",
        "reason": "moved to her work account\nsecond line",
        "hint": "WX7Q",
        "attempts": "4",
        "path": "/admin/t/t1/s/s1/codes?code=c1",
        "from_email": "ada@example.com",
        "to_email": "ada@work.example.com",
    })
}

/// Every template, in every language: a subject, both parts, the link
/// where there is one, every parameter it names filled in, people's
/// words escaped in the HTML, and nothing left in the other language.
#[test]
fn every_template_renders_in_both_languages() {
    let params = params();
    let link = "https://courses.example.com/verify-email?token=abc";
    let codes = ["ABCD-EFGH-JKLM".to_owned()];
    for template in Template::ALL {
        let mut texts = Vec::new();
        for lang in Lang::ALL {
            let cx = Context {
                lang,
                params: &params,
                link: Some(link),
                origin: "https://courses.example.com",
                codes: &codes,
                brand: None,
            };
            let mail = render(template, &cx);
            assert!(!mail.subject.trim().is_empty(), "{template:?} {lang:?}");
            assert!(
                !mail.subject.contains('\n'),
                "{template:?}: one-line subject"
            );
            assert!(mail.text.contains(footer(lang)), "{template:?} {lang:?}");
            assert!(mail.html.contains(&format!("lang=\"{}\"", lang.tag())));
            let has_cjk = |s: &str| s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
            match lang {
                Lang::En => assert!(
                    !has_cjk(&mail.text),
                    "{template:?}: Chinese in the English mail: {}",
                    mail.text
                ),
                Lang::ZhCn | Lang::ZhTw => assert!(
                    has_cjk(&mail.subject) && has_cjk(&mail.text),
                    "{template:?}"
                ),
            }
            assert!(!mail.html.contains("<script>"), "{template:?}: escaped");
            let carries_link = matches!(
                template,
                Template::VerifyEmail
                    | Template::ResetPassword
                    | Template::ChangeEmail
                    | Template::Invitation
                    | Template::TransferConfirm
                    | Template::SignUp
            );
            assert_eq!(
                mail.text.contains(link),
                carries_link,
                "{template:?} {lang:?}: the link"
            );
            if carries_link {
                assert!(mail.html.contains(&escape(link)), "{template:?}");
            }
            texts.push(mail.text);
        }
        assert_ne!(texts[0], texts[1], "{template:?}: translated");
        assert_ne!(
            texts[1], texts[2],
            "{template:?}: in Traditional characters"
        );
    }
}

#[test]
fn parameters_reach_their_templates() {
    let params = params();
    let cx = |lang| Context {
        lang,
        params: &params,
        link: None,
        origin: "https://courses.example.com",
        codes: &[],
        brand: None,
    };
    let bound = render(Template::CodeBound, &cx(Lang::En));
    assert_eq!(bound.subject, "You now hold Rust 101");
    assert!(
        bound
            .text
            .contains("https://courses.example.com/s/rust-101")
    );
    let unbound = render(Template::CodeUnbound, &cx(Lang::ZhCn));
    assert!(
        unbound
            .text
            .contains("> moved to her work account\n> second line")
    );
    assert!(unbound.html.contains("Acme &amp; Co"));
    let invitation = render(Template::Invitation, &cx(Lang::ZhCn));
    assert!(
        invitation.text.contains("客服（只读）"),
        "{}",
        invitation.text
    );
    let invitation = render(Template::Invitation, &cx(Lang::ZhTw));
    assert!(
        invitation.text.contains("客服（唯讀）"),
        "{}",
        invitation.text
    );
    let changed = render(Template::EmailChanged, &cx(Lang::En));
    assert!(changed.text.contains("new@example.com"));
    let change = render(Template::ChangeEmail, &cx(Lang::En));
    assert!(change.text.contains("old@example.com"));
    let leak = render(Template::LeakSuspected, &cx(Lang::En));
    assert_eq!(
        leak.subject,
        "A code for Rust 101 may have been passed around"
    );
    assert!(leak.text.contains("ending in WX7Q"), "{}", leak.text);
    assert!(leak.text.contains("tried it 4 times"), "{}", leak.text);
    assert!(
        leak.text
            .contains("https://courses.example.com/admin/t/t1/s/s1/codes?code=c1"),
        "{}",
        leak.text
    );
    let replaced = render(Template::CodeReplaced, &cx(Lang::ZhTw));
    assert!(replaced.text.contains("以 WX7Q 結尾"), "{}", replaced.text);
    assert!(replaced.text.contains("> moved to her work account"));
    assert!(
        replaced
            .text
            .contains("https://courses.example.com/s/rust-101")
    );
    let greeting = render(Template::PasswordChanged, &cx(Lang::En));
    assert!(greeting.text.starts_with("Hello Ada <script>,"));
    assert!(greeting.html.contains("Hello Ada &lt;script&gt;,"));
}

/// A tenant's mail carries its name, logo, accent and support address;
/// an account's mail none.
#[test]
fn a_tenant_s_mail_carries_its_branding() {
    let tenant = engine::tenants::TenantId(uuid::Uuid::now_v7());
    let logo = uuid::Uuid::now_v7();
    let brand = engine::branding::Branding {
        tenant,
        name: "Acme <Academy>".to_owned(),
        accent: Some(engine::branding::Accent::parse("#ffd400").expect("accent")),
        support_email: Some("help@acme.test".to_owned()),
        logo: Some(logo),
    };
    let params = params();
    let cx = |lang, brand| Context {
        lang,
        params: &params,
        link: None,
        origin: "https://courses.example.com",
        codes: &[],
        brand,
    };
    let mail = render(Template::CodeBound, &cx(Lang::En, Some(&brand)));
    assert!(mail.html.contains("Acme &lt;Academy&gt;"), "{}", mail.html);
    assert!(
        mail.html.contains("background:#ffd400;color:#111111"),
        "the accent, with dark text on a yellow: {}",
        mail.html
    );
    assert!(mail.html.contains(&format!(
        "src=\"https://courses.example.com/brand/logo/{logo}\""
    )));
    assert!(mail.text.starts_with("Acme <Academy>\n\n"), "{}", mail.text);
    // The team's own mails do not send them to the support address.
    for team in [Template::Invitation, Template::LeakSuspected] {
        let mail = render(team, &cx(Lang::En, Some(&brand)));
        assert!(mail.html.contains("Acme &lt;Academy&gt;"));
        assert!(!mail.text.contains("help@acme.test"), "{team:?}");
    }
    assert!(
        mail.text
            .contains("Questions? Write to Acme <Academy> at help@acme.test.")
    );
    let zh = render(Template::CodeBound, &cx(Lang::ZhCn, Some(&brand)));
    assert!(zh.text.contains("help@acme.test"), "{}", zh.text);

    let plain = render(Template::CodeBound, &cx(Lang::En, None));
    assert!(plain.html.contains("background:#2457c5;color:#fff"));
    assert!(!plain.html.contains("class=\"brand\"") && !plain.text.contains("Questions?"));
}

/// An order's mail: the codes it was given, each on its own line in both
/// parts, the course's link; one code addressed to the buyer says so,
/// several say how many; the words in the mail's language.
#[test]
fn an_orders_mail_carries_its_codes() {
    let one = ["ABCD-EFGH-JKLM".to_owned()];
    let three = [
        "AAAA-BBBB-CCCC".to_owned(),
        "DDDD-EEEE-FFFF".to_owned(),
        "GGGG-HHHH-JJJJ".to_owned(),
    ];
    let mut addressed = params();
    addressed["addressed"] = json!(true);
    let cx = |lang, params, codes| Context {
        lang,
        params,
        link: None,
        origin: "https://courses.example.com",
        codes,
        brand: None,
    };
    let mail = render(Template::CodesSent, &cx(Lang::En, &addressed, &one));
    assert_eq!(mail.subject, "Your access code for Rust 101");
    assert!(mail.text.contains("    ABCD-EFGH-JKLM\n"), "{}", mail.text);
    assert!(mail.html.contains("ABCD-EFGH-JKLM"));
    assert!(mail.text.contains("kept for this address"), "{}", mail.text);
    assert!(mail.text.contains("https://courses.example.com/s/rust-101"));
    let plain = params();
    let mail = render(Template::CodesSent, &cx(Lang::En, &plain, &one));
    assert!(
        !mail.text.contains("kept for this address"),
        "{}",
        mail.text
    );
    let mail = render(Template::CodesSent, &cx(Lang::ZhCn, &plain, &three));
    assert_eq!(mail.subject, "你的 3 个《Rust 101》兑换码");
    for code in &three {
        assert!(mail.text.contains(&format!("    {code}\n")), "{code}");
        assert!(mail.html.contains(code.as_str()), "{code}");
    }
    assert!(
        mail.html
            .contains("AAAA-BBBB-CCCC<br>DDDD-EEEE-FFFF<br>GGGG-HHHH-JJJJ")
    );
}
