//! A learner moving their access to another account: the confirmation
//! link, the two accounts' notices once it moved, and a refusal.

use app::i18n::Msg;

use super::{Block, Context, Mail};

/// Asks the receiving address to confirm a learner's move of their access.
pub(super) fn transfer_confirm(cx: &Context<'_>) -> Mail {
    (
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
    )
}

/// Tells the learner who gave it that their access moved to another account.
pub(super) fn code_transferred_away(cx: &Context<'_>) -> Mail {
    (
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
    )
}

/// Tells the receiving account that it now holds the access.
pub(super) fn code_transferred_here(cx: &Context<'_>) -> Mail {
    (
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
    )
}

/// Tells a learner their request to move was refused, quoting the reason.
pub(super) fn transfer_refused(cx: &Context<'_>) -> Mail {
    (
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
    )
}
