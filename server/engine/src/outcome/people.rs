//! The answers of the errors of people and organisations: accounts,
//! tenants, teams, branding, API tokens and webhook endpoints.

use super::{ErrorKind, INVALID_INPUT, Outcome};
use crate::{
    accounts::AccountError, branding::BrandingError, team::TeamError, tenants::TenantError,
    tokens::TokenError, webhooks::WebhookError,
};

impl Outcome for AccountError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidEmail
            | Self::InvalidPassword
            | Self::InvalidDisplayName
            | Self::SameEmail => ErrorKind::Invalid,
            // Only a registration's link meets it (the address got an
            // account while the link waited): nothing to type differently.
            Self::EmailTaken => ErrorKind::Conflict,
            Self::InvalidCredentials => ErrorKind::Unauthenticated,
            Self::Disabled => ErrorKind::Forbidden,
            Self::LinkInvalid => ErrorKind::Gone,
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidEmail
            | Self::InvalidPassword
            | Self::InvalidDisplayName
            | Self::SameEmail => INVALID_INPUT,
            Self::EmailTaken => "email_taken",
            Self::InvalidCredentials => "invalid_credentials",
            Self::Disabled => "account_disabled",
            Self::LinkInvalid => "link_invalid",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidEmail => Some("email"),
            Self::SameEmail => Some("new_email"),
            Self::InvalidPassword => Some("password"),
            Self::InvalidDisplayName => Some("display_name"),
            Self::EmailTaken
            | Self::InvalidCredentials
            | Self::Disabled
            | Self::LinkInvalid
            | Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for TenantError {
    fn kind(&self) -> ErrorKind {
        match self {
            // Fixed by choosing another address, like a malformed one.
            Self::InvalidSlug | Self::InvalidName | Self::SlugTaken | Self::UnknownTimeZone(_) => {
                ErrorKind::Invalid
            }
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidSlug | Self::InvalidName | Self::UnknownTimeZone(_) => INVALID_INPUT,
            Self::SlugTaken => "slug_taken",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidSlug | Self::SlugTaken => Some("slug"),
            Self::InvalidName => Some("name"),
            Self::UnknownTimeZone(_) => Some("time_zone"),
            Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for BrandingError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidName
            | Self::InvalidAccent
            | Self::InvalidSupportEmail
            | Self::LogoNotAnImage => ErrorKind::Invalid,
            Self::LogoTooLarge => ErrorKind::TooLarge,
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidName
            | Self::InvalidAccent
            | Self::InvalidSupportEmail
            | Self::LogoNotAnImage => INVALID_INPUT,
            Self::LogoTooLarge => "too_large",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidName => Some("name"),
            Self::InvalidAccent => Some("accent"),
            Self::InvalidSupportEmail => Some("support_email"),
            Self::LogoNotAnImage | Self::LogoTooLarge => Some("logo"),
            Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for TokenError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidName | Self::InvalidScope | Self::InvalidExpiry => ErrorKind::Invalid,
            Self::BeyondCaller => ErrorKind::Forbidden,
            Self::TooMany => ErrorKind::Conflict,
            Self::NotFound => ErrorKind::NotFound,
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidName | Self::InvalidScope | Self::InvalidExpiry => INVALID_INPUT,
            Self::BeyondCaller => "token_beyond_caller",
            Self::TooMany => "too_many_tokens",
            Self::NotFound => "not_found",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidName => Some("name"),
            Self::InvalidScope => Some("scopes"),
            Self::InvalidExpiry => Some("expires_at"),
            Self::BeyondCaller | Self::TooMany | Self::NotFound | Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for WebhookError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidUrl | Self::InvalidEvents => ErrorKind::Invalid,
            Self::TooMany => ErrorKind::Conflict,
            Self::EndpointNotFound | Self::DeliveryNotFound => ErrorKind::NotFound,
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::InvalidUrl | Self::InvalidEvents => INVALID_INPUT,
            Self::TooMany => "too_many_endpoints",
            Self::EndpointNotFound | Self::DeliveryNotFound => "not_found",
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::InvalidUrl => Some("url"),
            Self::InvalidEvents => Some("events"),
            Self::EndpointNotFound
            | Self::DeliveryNotFound
            | Self::TooMany
            | Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}

impl Outcome for TeamError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::LastOwner | Self::AlreadyMember => ErrorKind::Conflict,
            Self::MemberNotFound | Self::InvitationNotFound => ErrorKind::NotFound,
            Self::InvitationInvalid => ErrorKind::Gone,
            Self::WrongAccount { .. } => ErrorKind::Forbidden,
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::LastOwner => "last_owner",
            Self::AlreadyMember => "already_member",
            Self::MemberNotFound | Self::InvitationNotFound => "not_found",
            Self::InvitationInvalid => "invitation_invalid",
            Self::WrongAccount { .. } => "invitation_for_another_address",
            Self::Unexpected(_) => "internal",
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            _ => None,
        }
    }
}
