//! The mails to a tenant's team rather than its learners: an invitation
//! to join it, and a warning that a code may have been passed around.
//! Neither sends them to the tenant's own support address.

use app::i18n::Msg;

use super::{Block, Context, Mail};

/// Invites someone to a tenant's team, in the role they are offered.
pub(super) fn invitation(cx: &Context<'_>) -> Mail {
    (
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
    )
}

/// Warns the team that a bound code is being tried by others.
pub(super) fn leak_suspected(cx: &Context<'_>) -> Mail {
    (
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
    )
}
