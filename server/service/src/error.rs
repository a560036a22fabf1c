//! Every outcome a use case can end in, as one enum.
//!
//! The engine's own errors travel inside unchanged (their kind, code and
//! field come from `engine::outcome`); the use cases add what only they
//! know: who is asking (signed out, not an admin), a limit reached, a
//! session store away, two form fields that disagree. Nothing here is text
//! for a person: `Display` is English for logs and the JSON API, the pages
//! translate each variant (`app::i18n::errors`), and both adapters take the
//! status from the kind, so they agree (tested in
//! `server/src/problem/tests.rs`).

use engine::{
    accounts::AccountError,
    batches::BatchError,
    code_actions::CodeError,
    codes::CodeFormatError,
    coordination::ThrottleScope,
    imports::ImportError,
    outcome::{ErrorKind, INVALID_INPUT, Outcome},
    resources::ResourceError,
    settlement::SettlementError,
    shares::ShareError,
    suspension::SuspensionError,
    team::TeamError,
    tenants::TenantError,
    transfers::TransferError,
};

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("please sign in first")]
    Unauthenticated,
    #[error("you do not have access to this")]
    Forbidden,
    #[error("not found")]
    NotFound,
    /// Too many attempts of one kind in the current window.
    #[error("Too many {}. Try again in {}.", attempts(*scope), wait(*retry_after_secs))]
    Throttled {
        scope: ThrottleScope,
        /// Attempts the window allows (`RateLimit-Limit`).
        limit: u32,
        /// Whole seconds, never 0.
        retry_after_secs: u64,
    },
    /// Redis (sessions, throttles) cannot answer now.
    #[error("the service is busy, please try again in a moment")]
    Unavailable { retry_after_secs: u64 },
    /// Registration: `password_confirm` is not `password`.
    #[error("the two passwords differ")]
    PasswordsDiffer,
    /// Password change: `new_password_confirm` is not `new_password`.
    #[error("the two new passwords differ")]
    NewPasswordsDiffer,
    /// Password change: the current password does not match.
    #[error("the current password is wrong")]
    WrongCurrentPassword,
    /// Password change: the new password breaks the policy.
    #[error("{0}")]
    InvalidNewPassword(AccountError),
    /// Change of address: the new address is not one.
    #[error("enter a valid email address, like name@example.com")]
    InvalidNewEmail,
    /// Change of address: another account has the new address.
    #[error("another account uses this email address")]
    NewEmailTaken,
    /// A role that is not owner, admin or support.
    #[error("a role is owner, admin or support")]
    InvalidRole,
    /// Tenant signup is off (`tenants.self_signup`).
    #[error("creating a tenant from the web is not open on this server; ask the operator")]
    SignupClosed,
    /// Something only a verified address may do (create a tenant).
    #[error("verify your email address first")]
    VerifyEmailFirst,
    #[error(transparent)]
    Account(#[from] AccountError),
    #[error(transparent)]
    Settlement(#[from] SettlementError),
    #[error(transparent)]
    Share(#[from] ShareError),
    #[error(transparent)]
    Resource(#[from] ResourceError),
    #[error(transparent)]
    Batch(#[from] BatchError),
    #[error(transparent)]
    Import(#[from] ImportError),
    #[error(transparent)]
    Code(#[from] CodeError),
    /// The typed text is not a code (caught before anything is counted).
    #[error(transparent)]
    Format(#[from] CodeFormatError),
    #[error(transparent)]
    Team(#[from] TeamError),
    #[error(transparent)]
    Tenant(#[from] TenantError),
    #[error(transparent)]
    Suspension(#[from] SuspensionError),
    #[error(transparent)]
    Transfer(#[from] TransferError),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// What a throttle counts, in English (the pages translate the scope).
pub fn attempts(scope: ThrottleScope) -> &'static str {
    match scope {
        ThrottleScope::SignInEmail | ThrottleScope::SignInEmailNetwork => {
            "sign-in attempts for this account"
        }
        ThrottleScope::SignInIp => "sign-in attempts from your network",
        ThrottleScope::RegisterIp => "registrations from your network",
        ThrottleScope::RegisterEmail => "registrations of this address",
        ThrottleScope::CodeAccount => "code attempts",
        ThrottleScope::CodeIp => "code attempts from your network",
        ThrottleScope::CodeShare => "code attempts for this course",
        ThrottleScope::PasswordChangeAccount => "password change attempts",
        ThrottleScope::PasswordChangeIp => "password change attempts from your network",
        ThrottleScope::ResetEmail => "password reset requests for this address",
        ThrottleScope::MailIp => "requests that send mail from your network",
        ThrottleScope::MailAccount => "requests that send mail from your account",
        ThrottleScope::ApiToken => "calls with this API token",
        ThrottleScope::ContentAccount => "requests for course content from your account",
        ThrottleScope::ImportTenant => "imports of codes for this organisation",
        ThrottleScope::LogoIp => "requests for logos from your network",
    }
}

/// How long to wait, in English: seconds below two minutes, else minutes
/// (rounded up).
fn wait(secs: u64) -> String {
    if secs >= 120 {
        format!("{} minutes", secs.div_ceil(60))
    } else {
        format!("{secs} seconds")
    }
}

impl Outcome for ServiceError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::Unauthenticated => ErrorKind::Unauthenticated,
            Self::Forbidden => ErrorKind::Forbidden,
            Self::NotFound => ErrorKind::NotFound,
            Self::Throttled { .. } => ErrorKind::RateLimited,
            Self::Unavailable { .. } => ErrorKind::Unavailable,
            Self::PasswordsDiffer
            | Self::NewPasswordsDiffer
            | Self::WrongCurrentPassword
            | Self::InvalidNewPassword(_)
            | Self::InvalidNewEmail
            | Self::NewEmailTaken
            | Self::InvalidRole => ErrorKind::Invalid,
            Self::SignupClosed | Self::VerifyEmailFirst => ErrorKind::Forbidden,
            Self::Team(e) => e.kind(),
            Self::Tenant(e) => e.kind(),
            Self::Suspension(e) => e.kind(),
            Self::Transfer(e) => e.kind(),
            Self::Account(e) => e.kind(),
            Self::Settlement(e) => e.kind(),
            Self::Share(e) => e.kind(),
            Self::Resource(e) => e.kind(),
            Self::Batch(e) => e.kind(),
            Self::Import(e) => e.kind(),
            Self::Code(e) => e.kind(),
            Self::Format(e) => e.kind(),
            Self::Unexpected(_) => ErrorKind::Internal,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::Unauthenticated => "unauthenticated",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::Throttled { .. } => "rate_limited",
            Self::Unavailable { .. } => "unavailable",
            Self::PasswordsDiffer
            | Self::NewPasswordsDiffer
            | Self::WrongCurrentPassword
            | Self::InvalidNewPassword(_)
            | Self::InvalidNewEmail
            | Self::NewEmailTaken
            | Self::InvalidRole => INVALID_INPUT,
            Self::SignupClosed => "tenant_signup_closed",
            Self::VerifyEmailFirst => "email_not_verified",
            Self::Team(e) => e.code(),
            Self::Tenant(e) => e.code(),
            Self::Suspension(e) => e.code(),
            Self::Transfer(e) => e.code(),
            Self::Account(e) => e.code(),
            Self::Settlement(e) => e.code(),
            Self::Share(e) => e.code(),
            Self::Resource(e) => e.code(),
            Self::Batch(e) => e.code(),
            Self::Import(e) => e.code(),
            Self::Code(e) => e.code(),
            Self::Format(e) => e.code(),
            Self::Unexpected(_) => "internal",
        }
    }

    fn field(&self) -> Option<&'static str> {
        match self {
            Self::PasswordsDiffer => Some("password_confirm"),
            Self::NewPasswordsDiffer => Some("new_password_confirm"),
            Self::WrongCurrentPassword => Some("current_password"),
            Self::InvalidNewPassword(_) => Some("new_password"),
            Self::InvalidNewEmail | Self::NewEmailTaken => Some("new_email"),
            Self::InvalidRole => Some("role"),
            Self::Team(e) => e.field(),
            Self::Tenant(e) => e.field(),
            Self::Suspension(e) => e.field(),
            Self::Transfer(e) => e.field(),
            Self::Account(e) => e.field(),
            Self::Settlement(e) => e.field(),
            Self::Share(e) => e.field(),
            Self::Resource(e) => e.field(),
            Self::Batch(e) => e.field(),
            Self::Import(e) => e.field(),
            Self::Code(e) => e.field(),
            Self::Format(e) => e.field(),
            Self::Unauthenticated
            | Self::Forbidden
            | Self::NotFound
            | Self::Throttled { .. }
            | Self::Unavailable { .. }
            | Self::SignupClosed
            | Self::VerifyEmailFirst
            | Self::Unexpected(_) => None,
        }
    }

    fn unexpected(&self) -> Option<&anyhow::Error> {
        match self {
            Self::Unexpected(e) => Some(e),
            Self::Account(e) => e.unexpected(),
            Self::Settlement(e) => e.unexpected(),
            Self::Share(e) => e.unexpected(),
            Self::Resource(e) => e.unexpected(),
            Self::Batch(e) => e.unexpected(),
            Self::Import(e) => e.unexpected(),
            Self::Code(e) => e.unexpected(),
            Self::Format(e) => e.unexpected(),
            Self::InvalidNewPassword(e) => e.unexpected(),
            Self::Team(e) => e.unexpected(),
            Self::Tenant(e) => e.unexpected(),
            Self::Suspension(e) => e.unexpected(),
            Self::Transfer(e) => e.unexpected(),
            Self::Unauthenticated
            | Self::Forbidden
            | Self::NotFound
            | Self::Throttled { .. }
            | Self::Unavailable { .. }
            | Self::PasswordsDiffer
            | Self::NewPasswordsDiffer
            | Self::WrongCurrentPassword
            | Self::InvalidNewEmail
            | Self::NewEmailTaken
            | Self::InvalidRole
            | Self::SignupClosed
            | Self::VerifyEmailFirst => None,
        }
    }
}

/// What a person may be told of a fault the use cases did not expect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reported {
    /// A momentary outage (PostgreSQL restarting, Redis away, see
    /// `engine::db::is_transient`): worth retrying, nothing is wrong.
    Transient,
    /// A real fault: `reference` finds its log line.
    Internal { reference: String },
}

/// Logs an unexpected error with its whole chain (every adapter's one
/// place for it) and returns what the caller may see: a reference to the
/// log line, never the chain.
pub fn report(error: &anyhow::Error) -> Reported {
    if engine::db::is_transient(error) {
        tracing::warn!(error = format!("{error:#}"), "dependency unavailable");
        return Reported::Transient;
    }
    // Short, unique enough to grep for in the logs; not a secret.
    let reference = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
    tracing::error!(reference = %reference, error = format!("{error:#}"), "unexpected error");
    Reported::Internal { reference }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_says_what_it_counts_and_how_long_to_wait() {
        let short = ServiceError::Throttled {
            scope: ThrottleScope::CodeAccount,
            limit: 10,
            retry_after_secs: 7,
        };
        assert_eq!(
            short.to_string(),
            "Too many code attempts. Try again in 7 seconds."
        );
        let long = ServiceError::Throttled {
            scope: ThrottleScope::SignInEmail,
            limit: 10,
            retry_after_secs: 121,
        };
        assert_eq!(
            long.to_string(),
            "Too many sign-in attempts for this account. Try again in 3 minutes."
        );
        assert_eq!(long.kind(), ErrorKind::RateLimited);
    }

    #[test]
    fn wrapped_engine_errors_keep_their_own_answers() {
        let wrapped = ServiceError::from(SettlementError::CodeBound);
        assert_eq!(
            (wrapped.kind(), wrapped.code()),
            (ErrorKind::Conflict, "code_bound")
        );
        let format = ServiceError::from(CodeFormatError::BadCheckSymbol);
        assert_eq!(format.field(), CodeFormatError::BadCheckSymbol.field());
    }
}
