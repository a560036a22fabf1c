//! What each mail says, in English and Simplified Chinese.
//!
//! A mail is a subject and a list of [`Block`]s (paragraphs, one button
//! with its link, a quoted reason, a small print), written out twice: as
//! plain text and as HTML, so the two parts of a `multipart/alternative`
//! mail always say the same thing. Everything that comes from people (a
//! name, a course title, an admin's reason) is escaped in the HTML part;
//! the headers are encoded by lettre.
//!
//! Every template is rendered in both languages by the tests below, so a
//! template cannot lose a parameter or a language unseen.

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
}

impl Context<'_> {
    fn param(&self, key: &str) -> String {
        self.params
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    fn pick<T>(&self, en: T, zh: T) -> T {
        self.lang.pick(en, zh)
    }

    fn link(&self) -> String {
        self.link.unwrap_or(self.origin).to_owned()
    }

    fn greeting(&self) -> Block {
        let name = self.param("name");
        Block::Para(if name.is_empty() {
            self.pick("Hello,".to_owned(), "你好：".to_owned())
        } else {
            self.pick(format!("Hello {name},"), format!("{name}，你好："))
        })
    }

    fn role(&self) -> String {
        match self.param("role").as_str() {
            "owner" => self.pick("owner", "所有者"),
            "admin" => self.pick("admin", "管理员"),
            _ => self.pick("support (read-only)", "客服（只读）"),
        }
        .to_owned()
    }

    fn not_you(&self) -> Block {
        Block::Small(self.pick(
            "If you did not ask for this, you can ignore this mail: nothing changes.".to_owned(),
            "如果这不是你本人的操作，请忽略这封邮件，一切保持不变。".to_owned(),
        ))
    }
}

/// Writes out `template` in the context's language.
pub fn render(template: Template, cx: &Context<'_>) -> Rendered {
    let (subject, blocks) = match template {
        Template::VerifyEmail => (
            cx.pick("Confirm your email address", "请验证你的邮箱地址").to_owned(),
            vec![
                cx.greeting(),
                Block::Para(cx.pick(
                    "Please confirm that this is your email address. Your course codes are bound to your account, so it should be an address you can always reach.".to_owned(),
                    "请确认这是你的邮箱地址。兑换码会绑定到你的账号，所以它应该是你一直能收到邮件的地址。".to_owned(),
                )),
                Block::Button(cx.pick("Confirm my address", "验证我的邮箱").to_owned(), cx.link()),
                Block::Small(cx.pick(
                    "The link works once, for 24 hours. If you did not create an account, ignore this mail.".to_owned(),
                    "链接 24 小时内有效，只能使用一次。如果你没有注册账号，请忽略这封邮件。".to_owned(),
                )),
            ],
        ),
        Template::ResetPassword => (
            cx.pick("Reset your password", "重置你的密码").to_owned(),
            vec![
                cx.greeting(),
                Block::Para(cx.pick(
                    "Someone (we hope you) asked to reset the password of your account. Choose a new one here:".to_owned(),
                    "有人（希望是你本人）请求重置你账号的密码。请在这里设置新密码：".to_owned(),
                )),
                Block::Button(cx.pick("Choose a new password", "设置新密码").to_owned(), cx.link()),
                Block::Small(cx.pick(
                    "The link works once, for 30 minutes. Setting a new password signs you out everywhere. If you did not ask for this, ignore this mail: your password stays as it is.".to_owned(),
                    "链接 30 分钟内有效，只能使用一次。设置新密码后，你会在所有设备上退出登录。如果这不是你本人的请求，请忽略这封邮件，你的密码不会改变。".to_owned(),
                )),
            ],
        ),
        Template::PasswordChanged => (
            cx.pick("Your password was changed", "你的密码已修改").to_owned(),
            vec![
                cx.greeting(),
                Block::Para(cx.pick(
                    "The password of your account was just changed, and every device was signed out.".to_owned(),
                    "你账号的密码刚刚被修改，所有设备都已退出登录。".to_owned(),
                )),
                Block::Para(cx.pick(
                    "If this was not you, reset your password now with \"Forgot password\" and tell the course provider.".to_owned(),
                    "如果这不是你本人的操作，请立即通过“忘记密码”重置密码，并告知课程提供方。".to_owned(),
                )),
                Block::Button(
                    cx.pick("Forgot password", "忘记密码").to_owned(),
                    format!("{}/forgot-password", cx.origin),
                ),
            ],
        ),
        Template::ChangeEmail => (
            cx.pick("Confirm your new email address", "请确认你的新邮箱地址").to_owned(),
            vec![
                cx.greeting(),
                Block::Para(cx.pick(
                    format!(
                        "You asked to move your account from {} to this address. Confirm that this address is yours:",
                        cx.param("old_email")
                    ),
                    format!("你请求把账号的邮箱从 {} 改为这个地址。请确认这个地址属于你：", cx.param("old_email")),
                )),
                Block::Button(cx.pick("Confirm the new address", "确认新邮箱").to_owned(), cx.link()),
                Block::Small(cx.pick(
                    "The link works once, for 24 hours. Until then your account keeps its old address.".to_owned(),
                    "链接 24 小时内有效，只能使用一次。在确认之前，你的账号继续使用原来的邮箱。".to_owned(),
                )),
                cx.not_you(),
            ],
        ),
        Template::EmailChangeRequested => (
            cx.pick("Your email address is about to change", "你的邮箱地址即将更改").to_owned(),
            vec![
                cx.greeting(),
                Block::Para(cx.pick(
                    format!(
                        "Someone signed in to your account asked to move it to {}. It moves once a link we sent there is opened.",
                        cx.param("new_email")
                    ),
                    format!(
                        "有人登录了你的账号，并请求把它改用 {}。打开我们发到那个地址的链接后，账号才会更改。",
                        cx.param("new_email")
                    ),
                )),
                Block::Para(cx.pick(
                    "If this was not you, change your password now: that stops the move and signs everyone else out.".to_owned(),
                    "如果这不是你本人的操作，请立即修改密码：这会阻止更改，并让其他人退出登录。".to_owned(),
                )),
                Block::Button(
                    cx.pick("Forgot password", "忘记密码").to_owned(),
                    format!("{}/forgot-password", cx.origin),
                ),
            ],
        ),
        Template::EmailChanged => (
            cx.pick("Your email address was changed", "你的邮箱地址已更改").to_owned(),
            vec![
                cx.greeting(),
                Block::Para(cx.pick(
                    format!(
                        "Your account now uses {} instead of this address. Mail about your courses goes there from now on.",
                        cx.param("new_email")
                    ),
                    format!("你的账号已改用 {}，不再使用这个地址。以后有关课程的邮件会发到新地址。", cx.param("new_email")),
                )),
                Block::Para(cx.pick(
                    "If this was not you, contact the course provider at once.".to_owned(),
                    "如果这不是你本人的操作，请立即联系课程提供方。".to_owned(),
                )),
            ],
        ),
        Template::Invitation => (
            cx.pick(
                format!("You are invited to {} on AdmitOne", cx.param("tenant")),
                format!("{} 邀请你加入 AdmitOne 团队", cx.param("tenant")),
            ),
            vec![
                Block::Para(cx.pick("Hello,".to_owned(), "你好：".to_owned())),
                Block::Para(cx.pick(
                    format!(
                        "{} invites you to the team of {} as {}.",
                        cx.param("inviter"),
                        cx.param("tenant"),
                        cx.role()
                    ),
                    format!(
                        "{} 邀请你以{}身份加入 {} 的团队。",
                        cx.param("inviter"),
                        cx.role(),
                        cx.param("tenant")
                    ),
                )),
                Block::Button(cx.pick("Accept the invitation", "接受邀请").to_owned(), cx.link()),
                Block::Small(cx.pick(
                    "The invitation works once, for 7 days, for an account with this address: sign in (or create an account) with it to accept.".to_owned(),
                    "邀请 7 天内有效，只能使用一次，且只适用于使用这个邮箱的账号：请用这个邮箱登录（或注册）后接受。".to_owned(),
                )),
            ],
        ),
        Template::CodeBound => (
            cx.pick(
                format!("You now hold {}", cx.param("course")),
                format!("你已获得《{}》", cx.param("course")),
            ),
            vec![
                cx.greeting(),
                Block::Para(cx.pick(
                    format!(
                        "Your code for {} (by {}) is now bound to your account. Sign in on any device to come back: you will not need the code again.",
                        cx.param("course"),
                        cx.param("tenant")
                    ),
                    format!(
                        "你在《{}》（{}）的兑换码已绑定到你的账号。以后在任何设备上登录即可继续学习，无需再次输入兑换码。",
                        cx.param("course"),
                        cx.param("tenant")
                    ),
                )),
                Block::Button(
                    cx.pick("Open the course", "打开课程").to_owned(),
                    format!("{}/s/{}", cx.origin, cx.param("course_slug")),
                ),
                Block::Small(cx.pick(
                    "The code cannot be used by anyone else now. Keep this mail as your receipt.".to_owned(),
                    "这个兑换码已不能再被其他人使用。请保留这封邮件作为凭证。".to_owned(),
                )),
            ],
        ),
        Template::CodeUnbound => (
            cx.pick(
                format!("Your code for {} was unbound", cx.param("course")),
                format!("你在《{}》的兑换码已被解绑", cx.param("course")),
            ),
            vec![
                cx.greeting(),
                Block::Para(cx.pick(
                    format!(
                        "{} unbound your code for {} from your account, so this account no longer opens the course. The reason they gave:",
                        cx.param("tenant"),
                        cx.param("course")
                    ),
                    format!(
                        "{} 已将《{}》的兑换码从你的账号解绑，这个账号不能再打开这门课程。对方给出的原因：",
                        cx.param("tenant"),
                        cx.param("course")
                    ),
                )),
                Block::Quote(cx.param("reason")),
                Block::Para(cx.pick(
                    "If you did not expect this, reply to the course provider.".to_owned(),
                    "如果你对此有疑问，请联系课程提供方。".to_owned(),
                )),
            ],
        ),
        Template::CodeRevoked => (
            cx.pick(
                format!("Your code for {} was revoked", cx.param("course")),
                format!("你在《{}》的兑换码已被作废", cx.param("course")),
            ),
            vec![
                cx.greeting(),
                Block::Para(cx.pick(
                    format!(
                        "{} revoked the code bound to your account for {}: the course no longer opens for this account.",
                        cx.param("tenant"),
                        cx.param("course")
                    ),
                    format!(
                        "{} 已作废绑定在你账号上的《{}》兑换码，这个账号不能再打开这门课程。",
                        cx.param("tenant"),
                        cx.param("course")
                    ),
                )),
                Block::Para(cx.pick(
                    "If you did not expect this, contact the course provider.".to_owned(),
                    "如果你对此有疑问，请联系课程提供方。".to_owned(),
                )),
            ],
        ),
    };
    write(subject, &blocks, cx.lang)
}

/// The footer of every mail.
fn footer(lang: Lang) -> &'static str {
    lang.pick(
        "Sent by AdmitOne. This is an automatic message; replies are not read.",
        "由 AdmitOne 发送。这是一封自动邮件，回复不会被阅读。",
    )
}

fn write(subject: String, blocks: &[Block], lang: Lang) -> Rendered {
    let mut text = String::new();
    let mut html = format!(
        "<!doctype html><html lang=\"{}\"><head><meta charset=\"utf-8\"><title>{}</title></head>\
         <body style=\"font-family:system-ui,sans-serif;line-height:1.5;color:#1f2933;max-width:36rem;margin:0 auto;padding:1rem\">",
        lang.tag(),
        escape(&subject)
    );
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
                    "<p><a href=\"{url}\" style=\"display:inline-block;padding:.6rem 1.1rem;background:#2457c5;color:#fff;border-radius:6px;text-decoration:none\">{}</a></p>\
                     <p style=\"font-size:.85rem;color:#52606d\">{}<br><a href=\"{url}\">{url}</a></p>",
                    escape(label),
                    escape(lang.pick("Or open this link:", "或打开这个链接：")),
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
    text.push_str("-- \n");
    text.push_str(footer(lang));
    text.push('\n');
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
        })
    }

    /// Every template, in both languages: a subject, both parts, the link
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
                    Lang::Zh => assert!(
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
        };
        let bound = render(Template::CodeBound, &cx(Lang::En));
        assert_eq!(bound.subject, "You now hold Rust 101");
        assert!(
            bound
                .text
                .contains("https://courses.example.com/s/rust-101")
        );
        let unbound = render(Template::CodeUnbound, &cx(Lang::Zh));
        assert!(
            unbound
                .text
                .contains("> moved to her work account\n> second line")
        );
        assert!(unbound.html.contains("Acme &amp; Co"));
        let invitation = render(Template::Invitation, &cx(Lang::Zh));
        assert!(
            invitation.text.contains("客服（只读）"),
            "{}",
            invitation.text
        );
        let changed = render(Template::EmailChanged, &cx(Lang::En));
        assert!(changed.text.contains("new@example.com"));
        let change = render(Template::ChangeEmail, &cx(Lang::En));
        assert!(change.text.contains("old@example.com"));
        let greeting = render(Template::PasswordChanged, &cx(Lang::En));
        assert!(greeting.text.starts_with("Hello Ada <script>,"));
        assert!(greeting.html.contains("Hello Ada &lt;script&gt;,"));
    }
}
