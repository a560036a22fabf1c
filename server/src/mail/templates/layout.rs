//! How every mail is written out, whatever it says: the blocks a body is
//! made of, the tenant's branding above and below them, the footer, and
//! the HTML escaping. Kept apart from the templates so that each template
//! is only its words, and the plain-text and HTML parts are written side
//! by side here, block by block, so they always say the same thing.

use app::i18n::Msg;
use model::Lang;

use super::Rendered;

/// A piece of a mail's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Block {
    Para(String),
    /// A call to action: the label and where it goes.
    Button(String, String),
    /// Someone's own words (an admin's reason), set apart.
    Quote(String),
    /// The small print at the end.
    Small(String),
    /// Access codes, one a line, set in a fixed-width face to copy.
    Codes(Vec<String>),
}

/// A tenant's branding as a mail shows it.
pub(super) struct Brand {
    pub(super) name: String,
    pub(super) accent: Option<engine::branding::Accent>,
    pub(super) support: Option<String>,
    /// The logo's absolute URL.
    pub(super) logo: Option<String>,
}

/// The footer of every mail.
pub(super) fn footer(lang: Lang) -> &'static str {
    lang.text(Msg::SentByAdmitoneThisIsAn)
}

/// Writes out a mail's subject and blocks as plain text and as HTML.
pub(super) fn write(
    subject: String,
    blocks: &[Block],
    lang: Lang,
    brand: Option<&Brand>,
) -> Rendered {
    let mut mail = Parts {
        text: String::new(),
        html: head(&subject, lang),
    };
    let button = button_colours(brand);
    if let Some(brand) = brand {
        mail.brand(brand);
    }
    for block in blocks {
        mail.block(block, lang, button);
    }
    mail.end(lang, support(brand, lang).as_deref());
    Rendered {
        subject,
        text: mail.text,
        html: mail.html,
    }
}

/// The HTML document up to the body's first block.
fn head(subject: &str, lang: Lang) -> String {
    format!(
        "<!doctype html><html lang=\"{}\"><head><meta charset=\"utf-8\"><title>{}</title></head>\
         <body style=\"font-family:system-ui,sans-serif;line-height:1.5;color:#1f2933;max-width:36rem;margin:0 auto;padding:1rem\">",
        lang.tag(),
        escape(subject)
    )
}

/// The button's background and text colours: the tenant's accent, or
/// the default blue.
fn button_colours(brand: Option<&Brand>) -> (&str, &str) {
    brand
        .and_then(|b| b.accent.as_ref())
        .map_or(("#2457c5", "#fff"), |a| (a.as_str(), a.text_colour()))
}

/// The line that sends learners to the tenant's support address, if the
/// mail shows one.
fn support(brand: Option<&Brand>, lang: Lang) -> Option<String> {
    brand.and_then(|b| {
        b.support.as_ref().map(|email| {
            lang.format(
                Msg::QuestionsWriteToAt,
                &[("tenant", &b.name), ("email", email)],
            )
        })
    })
}

/// The two parts of a mail, written side by side.
struct Parts {
    text: String,
    html: String,
}

impl Parts {
    /// The tenant's name (and logo) above the body.
    fn brand(&mut self, brand: &Brand) {
        self.text.push_str(&brand.name);
        self.text.push_str("\n\n");
        self.html
            .push_str("<p class=\"brand\" style=\"margin:0 0 1rem;font-weight:600\">");
        if let Some(logo) = &brand.logo {
            self.html.push_str(&format!(
                "<img src=\"{}\" alt=\"\" height=\"40\" style=\"height:40px;vertical-align:middle;margin-right:.5rem\">",
                escape(logo)
            ));
        }
        self.html.push_str(&format!("{}</p>", escape(&brand.name)));
    }

    /// One block of the body; a button in the given colours.
    fn block(&mut self, block: &Block, lang: Lang, (button_bg, button_fg): (&str, &str)) {
        match block {
            Block::Para(p) => {
                self.text.push_str(p);
                self.text.push_str("\n\n");
                self.html.push_str(&format!("<p>{}</p>", escape(p)));
            }
            Block::Button(label, url) => {
                self.text.push_str(&format!("{label}:\n{url}\n\n"));
                self.html.push_str(&format!(
                    "<p><a href=\"{url}\" style=\"display:inline-block;padding:.6rem 1.1rem;background:{button_bg};color:{button_fg};border-radius:6px;text-decoration:none\">{}</a></p>\
                     <p style=\"font-size:.85rem;color:#52606d\">{}<br><a href=\"{url}\">{url}</a></p>",
                    escape(label),
                    escape(lang.text(Msg::OrOpenThisLink)),
                    url = escape(url)
                ));
            }
            Block::Quote(q) => {
                for line in q.lines() {
                    self.text.push_str("> ");
                    self.text.push_str(line);
                    self.text.push('\n');
                }
                self.text.push('\n');
                self.html.push_str(&format!(
                    "<blockquote style=\"margin:0 0 1rem;padding:.5rem 1rem;border-left:3px solid #9aa5b1;color:#323f4b\">{}</blockquote>",
                    escape(q)
                ));
            }
            Block::Codes(codes) => {
                for code in codes {
                    self.text.push_str("    ");
                    self.text.push_str(code);
                    self.text.push('\n');
                }
                self.text.push('\n');
                self.html.push_str("<p style=\"font-family:ui-monospace,Menlo,Consolas,monospace;font-size:1.15rem;letter-spacing:.05em\">");
                let lines: Vec<String> = codes.iter().map(|code| escape(code)).collect();
                self.html.push_str(&lines.join("<br>"));
                self.html.push_str("</p>");
            }
            Block::Small(s) => {
                self.text.push_str(s);
                self.text.push_str("\n\n");
                self.html.push_str(&format!(
                    "<p style=\"font-size:.85rem;color:#52606d\">{}</p>",
                    escape(s)
                ));
            }
        }
    }

    /// The support line, if any, and the footer below the body.
    fn end(&mut self, lang: Lang, support: Option<&str>) {
        if let Some(support) = support {
            self.text.push_str(support);
            self.text.push_str("\n\n");
        }
        self.text.push_str("-- \n");
        self.text.push_str(footer(lang));
        self.text.push('\n');
        if let Some(support) = support {
            self.html.push_str(&format!(
                "<p class=\"support\" style=\"font-size:.85rem;color:#52606d\">{}</p>",
                escape(support)
            ));
        }
        self.html.push_str(&format!(
            "<hr style=\"border:0;border-top:1px solid #e4e7eb\"><p style=\"font-size:.8rem;color:#7b8794\">{}</p></body></html>",
            escape(footer(lang))
        ));
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
