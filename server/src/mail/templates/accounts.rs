//! The account's own mails: registering (the link that makes the account,
//! or the note that the address has one), confirming an address,
//! resetting or changing a password, moving to another address. They
//! carry no tenant's branding.

use app::i18n::Msg;

use super::{Block, Context, Mail};

/// Carries the link that makes an account at the address that registered
/// (once, for 24 hours).
pub(super) fn sign_up(cx: &Context<'_>) -> Mail {
    (
        cx.text(Msg::FinishCreatingYourAccount).to_owned(),
        vec![
            cx.greeting(),
            Block::Para(cx.text(Msg::SomeoneWeHopeYouAskedToCreate).to_owned()),
            Block::Button(cx.text(Msg::FinishMyAccount).to_owned(), cx.link()),
            Block::Small(cx.text(Msg::TheLinkWorksOnceFor243).to_owned()),
        ],
    )
}

/// Tells the owner of an address that someone registered it again: it has
/// an account, which they sign in to (or reset the password of).
pub(super) fn account_exists(cx: &Context<'_>) -> Mail {
    (
        cx.text(Msg::YouAlreadyHaveAnAccount).to_owned(),
        vec![
            cx.greeting(),
            Block::Para(cx.format(
                Msg::SomeoneAskedToCreateAnAccount,
                &[("reset_url", &format!("{}/forgot-password", cx.origin))],
            )),
            Block::Button(
                cx.text(Msg::SignIn).to_owned(),
                format!("{}/login", cx.origin),
            ),
            cx.not_you(),
        ],
    )
}

/// Asks an account made before registration started from the address to
/// confirm it (the link works once, for 24 hours).
pub(super) fn verify_email(cx: &Context<'_>) -> Mail {
    (
        cx.text(Msg::ConfirmYourEmailAddress).to_owned(),
        vec![
            cx.greeting(),
            Block::Para(cx.text(Msg::PleaseConfirmThatThisIsYour).to_owned()),
            Block::Button(cx.text(Msg::ConfirmMyAddress).to_owned(), cx.link()),
            Block::Small(cx.text(Msg::TheLinkWorksOnceFor24).to_owned()),
        ],
    )
}

/// Carries the link to choose a new password (once, for 30 minutes).
pub(super) fn reset_password(cx: &Context<'_>) -> Mail {
    (
        cx.text(Msg::ResetYourPassword).to_owned(),
        vec![
            cx.greeting(),
            Block::Para(cx.text(Msg::SomeoneWeHopeYouAskedTo).to_owned()),
            Block::Button(cx.text(Msg::ChooseANewPassword).to_owned(), cx.link()),
            Block::Small(cx.text(Msg::TheLinkWorksOnceFor30).to_owned()),
        ],
    )
}

/// Tells the account its password was changed, with a way back if it was not them.
pub(super) fn password_changed(cx: &Context<'_>) -> Mail {
    (
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
    )
}

/// Asks the new address to confirm a move of the account to it.
pub(super) fn change_email(cx: &Context<'_>) -> Mail {
    (
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
    )
}

/// Warns the old address that the account is about to move away from it.
pub(super) fn email_change_requested(cx: &Context<'_>) -> Mail {
    (
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
    )
}

/// Tells the old address the account now uses another one.
pub(super) fn email_changed(cx: &Context<'_>) -> Mail {
    (
        cx.text(Msg::YourEmailAddressWasChanged).to_owned(),
        vec![
            cx.greeting(),
            Block::Para(cx.format(
                Msg::YourAccountNowUsesInsteadOf,
                &[("new_email", &cx.param("new_email"))],
            )),
            Block::Para(cx.text(Msg::IfThisWasNotYouContact).to_owned()),
        ],
    )
}
