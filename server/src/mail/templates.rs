//! What each mail says, in English and Simplified Chinese.
//!
//! A mail is a subject and a list of [`Block`]s (paragraphs, one button
//! with its link, a quoted reason, a small print), written out twice: as
//! plain text and as HTML, so the two parts of a `multipart/alternative`
//! mail always say the same thing. Everything that comes from people (a
//! name, a course title, an admin's reason) is escaped in the HTML part;
//! the headers are encoded by lettre.
//!
//! Every template is rendered in every language by the tests below, so a
//! template cannot lose a parameter or a language unseen.

use app::i18n::Msg;
use engine::mail::Template;
use model::Lang;
use serde_json::Value;

/// A mail written out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// A piece of a mail's body.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Block {
    Para(String),
    /// A call to action: the label and where it goes.
    Button(String, String),
    /// Someone's own words (an admin's reason), set apart.
    Quote(String),
    /// The small print at the end.
    Small(String),
}

/// What a template is given besides its words.
pub struct Context<'a> {
    pub lang: Lang,
    pub params: &'a Value,
    /// The single-use link the mail carries, if it carries one.
    pub link: Option<&'a str>,
    /// The server's public origin (`https://courses.example.com`).
    pub origin: &'a str,
    /// The tenant's branding, for a tenant's mail (`engine::branding`).
    pub brand: Option<&'a engine::branding::Branding>,
}

impl Context<'_> {
    fn param(&self, key: &str) -> String {
        self.params
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    fn text(&self, msg: Msg) -> &'static str {
        self.lang.text(msg)
    }

    fn format(&self, msg: Msg, args: app::i18n::Args<'_>) -> String {
        self.lang.format(msg, args)
    }

    fn link(&self) -> String {
        self.link.unwrap_or(self.origin).to_owned()
    }

    fn greeting(&self) -> Block {
        let name = self.param("name");
        Block::Para(if name.is_empty() {
            self.text(Msg::Hello).to_owned()
        } else {
            self.format(Msg::Hello2, &[("name", &name)])
        })
    }

    fn role(&self) -> String {
        match self.param("role").as_str() {
            "owner" => self.text(Msg::Owner2),
            "admin" => self.text(Msg::Admin2),
            _ => self.text(Msg::SupportReadOnly2),
        }
        .to_owned()
    }

    fn not_you(&self) -> Block {
        Block::Small(self.text(Msg::IfYouDidNotAskFor).to_owned())
    }

    /// The tenant's branding, if it is a tenant's mail: its name (and
    /// logo) above, its accent on the button, its support address in the
    /// footer.
    fn brand(&self, template: Template) -> Option<Brand> {
        self.brand.map(|b| Brand {
            name: b.name.clone(),
            accent: b.accent.clone(),
            logo: b.logo_path().map(|path| format!("{}{path}", self.origin)),
            // The support address is for learners: the team's own mails
            // (an invitation, a leak alert) do not send them to it.
            support: b
                .support_email
                .clone()
                .filter(|_| !matches!(template, Template::Invitation | Template::LeakSuspected)),
        })
    }
}

/// A tenant's branding as a mail shows it.
struct Brand {
    name: String,
    accent: Option<engine::branding::Accent>,
    support: Option<String>,
    /// The logo's absolute URL.
    logo: Option<String>,
}

/// Writes out `template` in the context's language.
pub fn render(template: Template, cx: &Context<'_>) -> Rendered {
    let (subject, blocks) = match template {
        Template::VerifyEmail => (
            cx.text(Msg::ConfirmYourEmailAddress).to_owned(),
            vec![
                cx.greeting(),
                Block::Para(cx.text(Msg::PleaseConfirmThatThisIsYour).to_owned()),
                Block::Button(cx.text(Msg::ConfirmMyAddress).to_owned(), cx.link()),
                Block::Small(cx.text(Msg::TheLinkWorksOnceFor24).to_owned()),
            ],
        ),
        Template::ResetPassword => (
            cx.text(Msg::ResetYourPassword).to_owned(),
            vec![
                cx.greeting(),
                Block::Para(cx.text(Msg::SomeoneWeHopeYouAskedTo).to_owned()),
                Block::Button(cx.text(Msg::ChooseANewPassword).to_owned(), cx.link()),
                Block::Small(cx.text(Msg::TheLinkWorksOnceFor30).to_owned()),
            ],
        ),
        Template::PasswordChanged => (
            cx.text(Msg::YourPasswordWasChanged).to_owned(),
            vec![
                cx.greeting(),
                Block::Para(cx.text(Msg::ThePasswordOfYourAccountWas).to_owned()),
                Block::Para(cx.text(Msg::IfThisWasNotYouReset).to_owned()),
                Block::Button(
                    cx.text(Msg::ForgotPassword).to_owned(),
                    format!("{}/forgot-password", cx.origin),
                ),
            ],
        ),
        Template::ChangeEmail => (
            cx.text(Msg::ConfirmYourNewEmailAddress).to_owned(),
            vec![
                cx.greeting(),
                Block::Para(cx.format(
                    Msg::YouAskedToMoveYourAccount,
                    &[("old_email", &cx.param("old_email"))],
                )),
                Block::Button(cx.text(Msg::ConfirmTheNewAddress).to_owned(), cx.link()),
                Block::Small(cx.text(Msg::TheLinkWorksOnceFor242).to_owned()),
                cx.not_you(),
            ],
        ),
        Template::EmailChangeRequested => (
            cx.text(Msg::YourEmailAddressIsAboutTo).to_owned(),
            vec![
                cx.greeting(),
                Block::Para(cx.format(
                    Msg::SomeoneSignedInToYourAccount,
                    &[("new_email", &cx.param("new_email"))],
                )),
                Block::Para(cx.text(Msg::IfThisWasNotYouChange).to_owned()),
                Block::Button(
                    cx.text(Msg::ForgotPassword).to_owned(),
                    format!("{}/forgot-password", cx.origin),
                ),
            ],
        ),
        Template::EmailChanged => (
            cx.text(Msg::YourEmailAddressWasChanged).to_owned(),
            vec![
                cx.greeting(),
                Block::Para(cx.format(
                    Msg::YourAccountNowUsesInsteadOf,
                    &[("new_email", &cx.param("new_email"))],
                )),
                Block::Para(cx.text(Msg::IfThisWasNotYouContact).to_owned()),
            ],
        ),
        Template::Invitation => (
            cx.format(
                Msg::YouAreInvitedToOnAdmitone,
                &[("tenant", &cx.param("tenant"))],
            ),
            vec![
                Block::Para(cx.text(Msg::Hello).to_owned()),
                Block::Para(cx.format(
                    Msg::InvitesYouToTheTeamOf,
                    &[
                        ("inviter", &cx.param("inviter")),
                        ("tenant", &cx.param("tenant")),
                        ("role", &cx.role()),
                    ],
                )),
                Block::Button(cx.text(Msg::AcceptTheInvitation).to_owned(), cx.link()),
                Block::Small(cx.text(Msg::TheInvitationWorksOnceFor7).to_owned()),
            ],
        ),
        Template::CodeBound => (
            cx.format(Msg::YouNowHold, &[("course", &cx.param("course"))]),
            vec![
                cx.greeting(),
                Block::Para(cx.format(
                    Msg::YourCodeForByIsNow,
                    &[
                        ("course", &cx.param("course")),
                        ("tenant", &cx.param("tenant")),
                    ],
                )),
                Block::Button(
                    cx.text(Msg::OpenTheCourse).to_owned(),
                    format!("{}/s/{}", cx.origin, cx.param("course_slug")),
                ),
                Block::Small(cx.text(Msg::TheCodeCannotBeUsedBy).to_owned()),
            ],
        ),
        Template::CodeUnbound => (
            cx.format(
                Msg::YourCodeForWasUnbound,
                &[("course", &cx.param("course"))],
            ),
            vec![
                cx.greeting(),
                Block::Para(cx.format(
                    Msg::UnboundYourCodeForFromYour,
                    &[
                        ("tenant", &cx.param("tenant")),
                        ("course", &cx.param("course")),
                    ],
                )),
                Block::Quote(cx.param("reason")),
                Block::Para(cx.text(Msg::IfYouDidNotExpectThis).to_owned()),
            ],
        ),
        Template::CodeRevoked => (
            cx.format(
                Msg::YourCodeForWasRevoked,
                &[("course", &cx.param("course"))],
            ),
            vec![
                cx.greeting(),
                Block::Para(cx.format(
                    Msg::RevokedTheCodeBoundToYour,
                    &[
                        ("tenant", &cx.param("tenant")),
                        ("course", &cx.param("course")),
                    ],
                )),
                Block::Para(cx.text(Msg::IfYouDidNotExpectThis2).to_owned()),
            ],
        ),
        Template::CodeReplaced => (
            cx.format(
                Msg::YourCodeForWasReplaced,
                &[("course", &cx.param("course"))],
            ),
            vec![
                cx.greeting(),
                Block::Para(cx.format(
                    Msg::ReplacedTheCodeBoundToYour,
                    &[
                        ("tenant", &cx.param("tenant")),
                        ("course", &cx.param("course")),
                        ("hint", &cx.param("hint")),
                    ],
                )),
                Block::Quote(cx.param("reason")),
                Block::Button(
                    cx.text(Msg::OpenTheCourse).to_owned(),
                    format!("{}/s/{}", cx.origin, cx.param("course_slug")),
                ),
                Block::Small(cx.text(Msg::IfYouDidNotExpectThis2).to_owned()),
            ],
        ),
        Template::LeakSuspected => (
            cx.format(
                Msg::ACodeForMayHaveLeaked,
                &[("course", &cx.param("course"))],
            ),
            vec![
                Block::Para(cx.text(Msg::Hello).to_owned()),
                Block::Para(cx.format(
                    Msg::TheCodeEndingInIsBound,
                    &[
                        ("hint", &cx.param("hint")),
                        ("course", &cx.param("course")),
                        ("tenant", &cx.param("tenant")),
                        ("attempts", &cx.param("attempts")),
                    ],
                )),
                Block::Para(cx.text(Msg::RevokeAndReplaceStopsThe).to_owned()),
                Block::Button(
                    cx.text(Msg::ReviewTheCode).to_owned(),
                    format!("{}{}", cx.origin, cx.param("path")),
                ),
                Block::Small(cx.text(Msg::YouHearAboutOneCodeAt).to_owned()),
            ],
        ),
        Template::TransferConfirm => (
            cx.format(
                Msg::ConfirmMovingToThisAccount,
                &[("course", &cx.param("course"))],
            ),
            vec![
                Block::Para(cx.text(Msg::Hello).to_owned()),
                Block::Para(cx.format(
                    Msg::AskedToMoveTheirAccessTo,
                    &[
                        ("from_email", &cx.param("from_email")),
                        ("tenant", &cx.param("tenant")),
                        ("course", &cx.param("course")),
                    ],
                )),
                Block::Button(cx.text(Msg::ReviewTheRequest).to_owned(), cx.link()),
                Block::Small(cx.text(Msg::TheLinkWorksFor7Days).to_owned()),
            ],
        ),
        Template::CodeTransferredAway => (
            cx.format(
                Msg::MovedToAnotherAccount,
                &[("course", &cx.param("course"))],
            ),
            vec![
                cx.greeting(),
                Block::Para(cx.format(
                    Msg::MovedYourAccessToToThe,
                    &[
                        ("tenant", &cx.param("tenant")),
                        ("course", &cx.param("course")),
                        ("to_email", &cx.param("to_email")),
                    ],
                )),
                Block::Small(cx.text(Msg::IfYouDidNotExpectThis2).to_owned()),
            ],
        ),
        Template::CodeTransferredHere => (
            cx.format(Msg::YouNowHold, &[("course", &cx.param("course"))]),
            vec![
                cx.greeting(),
                Block::Para(cx.format(
                    Msg::MovedTheAccessToFromTo,
                    &[
                        ("tenant", &cx.param("tenant")),
                        ("course", &cx.param("course")),
                        ("from_email", &cx.param("from_email")),
                    ],
                )),
                Block::Button(
                    cx.text(Msg::OpenTheCourse).to_owned(),
                    format!("{}/s/{}", cx.origin, cx.param("course_slug")),
                ),
            ],
        ),
        Template::TransferRefused => (
            cx.format(
                Msg::YourRequestToMoveWasRefused,
                &[("course", &cx.param("course"))],
            ),
            vec![
                cx.greeting(),
                Block::Para(cx.format(
                    Msg::RefusedToMoveToTheirReason,
                    &[
                        ("tenant", &cx.param("tenant")),
                        ("course", &cx.param("course")),
                        ("to_email", &cx.param("to_email")),
                    ],
                )),
                Block::Quote(cx.param("reason")),
                Block::Para(cx.text(Msg::TheCodeStaysWhereItIs).to_owned()),
            ],
        ),
    };
    write(subject, &blocks, cx.lang, cx.brand(template).as_ref())
}

/// The footer of every mail.
fn footer(lang: Lang) -> &'static str {
    lang.text(Msg::SentByAdmitoneThisIsAn)
}

fn write(subject: String, blocks: &[Block], lang: Lang, brand: Option<&Brand>) -> Rendered {
    let mut text = String::new();
    let mut html = format!(
        "<!doctype html><html lang=\"{}\"><head><meta charset=\"utf-8\"><title>{}</title></head>\
         <body style=\"font-family:system-ui,sans-serif;line-height:1.5;color:#1f2933;max-width:36rem;margin:0 auto;padding:1rem\">",
        lang.tag(),
        escape(&subject)
    );
    let (button_bg, button_fg) = brand
        .and_then(|b| b.accent.as_ref())
        .map_or(("#2457c5", "#fff"), |a| (a.as_str(), a.text_colour()));
    if let Some(brand) = brand {
        text.push_str(&brand.name);
        text.push_str("\n\n");
        html.push_str("<p class=\"brand\" style=\"margin:0 0 1rem;font-weight:600\">");
        if let Some(logo) = &brand.logo {
            html.push_str(&format!(
                "<img src=\"{}\" alt=\"\" height=\"40\" style=\"height:40px;vertical-align:middle;margin-right:.5rem\">",
                escape(logo)
            ));
        }
        html.push_str(&format!("{}</p>", escape(&brand.name)));
    }
    for block in blocks {
        match block {
            Block::Para(p) => {
                text.push_str(p);
                text.push_str("\n\n");
                html.push_str(&format!("<p>{}</p>", escape(p)));
            }
            Block::Button(label, url) => {
                text.push_str(&format!("{label}:\n{url}\n\n"));
                html.push_str(&format!(
                    "<p><a href=\"{url}\" style=\"display:inline-block;padding:.6rem 1.1rem;background:{button_bg};color:{button_fg};border-radius:6px;text-decoration:none\">{}</a></p>\
                     <p style=\"font-size:.85rem;color:#52606d\">{}<br><a href=\"{url}\">{url}</a></p>",
                    escape(label),
                    escape(lang.text(Msg::OrOpenThisLink)),
                    url = escape(url)
                ));
            }
            Block::Quote(q) => {
                for line in q.lines() {
                    text.push_str("> ");
                    text.push_str(line);
                    text.push('\n');
                }
                text.push('\n');
                html.push_str(&format!(
                    "<blockquote style=\"margin:0 0 1rem;padding:.5rem 1rem;border-left:3px solid #9aa5b1;color:#323f4b\">{}</blockquote>",
                    escape(q)
                ));
            }
            Block::Small(s) => {
                text.push_str(s);
                text.push_str("\n\n");
                html.push_str(&format!(
                    "<p style=\"font-size:.85rem;color:#52606d\">{}</p>",
                    escape(s)
                ));
            }
        }
    }
    let support = brand.and_then(|b| {
        b.support.as_ref().map(|email| {
            lang.format(
                Msg::QuestionsWriteToAt,
                &[("tenant", &b.name), ("email", email)],
            )
        })
    });
    if let Some(support) = &support {
        text.push_str(support);
        text.push_str("\n\n");
    }
    text.push_str("-- \n");
    text.push_str(footer(lang));
    text.push('\n');
    if let Some(support) = &support {
        html.push_str(&format!(
            "<p class=\"support\" style=\"font-size:.85rem;color:#52606d\">{}</p>",
            escape(support)
        ));
    }
    html.push_str(&format!(
        "<hr style=\"border:0;border-top:1px solid #e4e7eb\"><p style=\"font-size:.8rem;color:#7b8794\">{}</p></body></html>",
        escape(footer(lang))
    ));
    Rendered {
        subject,
        text,
        html,
    }
}

/// HTML-escapes text (element content and quoted attribute values).
pub fn escape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
        for template in Template::ALL {
            let mut texts = Vec::new();
            for lang in Lang::ALL {
                let cx = Context {
                    lang,
                    params: &params,
                    link: Some(link),
                    origin: "https://courses.example.com",
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
}
