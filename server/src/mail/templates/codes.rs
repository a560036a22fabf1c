//! What a learner is told about the code bound to their account: bound,
//! unbound, revoked or replaced (the last two by the course's team); and
//! what a buyer is sent: the codes of their order.

use app::i18n::Msg;

use super::{Block, Context, Mail};

/// A learner's receipt: their code is now bound to their account.
pub(super) fn code_bound(cx: &Context<'_>) -> Mail {
    (
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
    )
}

/// Tells a learner an admin unbound their code, quoting the reason.
pub(super) fn code_unbound(cx: &Context<'_>) -> Mail {
    (
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
    )
}

/// Tells a learner the code bound to their account was revoked.
pub(super) fn code_revoked(cx: &Context<'_>) -> Mail {
    (
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
    )
}

/// Tells a learner their code was replaced by a new one, quoting the reason.
pub(super) fn code_replaced(cx: &Context<'_>) -> Mail {
    (
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
    )
}

/// A buyer's codes: one addressed to them (they sign in with this
/// address), or several to hand out.
pub(super) fn codes_sent(cx: &Context<'_>) -> Mail {
    let course = cx.param("course");
    let tenant = cx.param("tenant");
    let count = cx.codes.len().to_string();
    let addressed = cx
        .params
        .get("addressed")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let (subject, para) = if cx.codes.len() == 1 {
        (
            cx.format(Msg::YourAccessCodeFor, &[("course", &course)]),
            if addressed {
                cx.format(
                    Msg::HereIsYourCodeAddressed,
                    &[("course", &course), ("tenant", &tenant)],
                )
            } else {
                cx.format(
                    Msg::HereIsYourCode,
                    &[("course", &course), ("tenant", &tenant)],
                )
            },
        )
    } else {
        (
            cx.format(
                Msg::YourAccessCodesFor,
                &[("course", &course), ("count", &count)],
            ),
            cx.format(
                Msg::HereAreYourCodes,
                &[("course", &course), ("tenant", &tenant), ("count", &count)],
            ),
        )
    };
    (
        subject,
        vec![
            cx.greeting(),
            Block::Para(para),
            Block::Codes(cx.codes.to_vec()),
            Block::Button(
                cx.text(Msg::OpenTheCourse).to_owned(),
                format!("{}/s/{}", cx.origin, cx.param("course_slug")),
            ),
            Block::Small(cx.format(Msg::KeepThisMailACode, &[("tenant", &tenant)])),
        ],
    )
}
