//! Passwords: the checked plain password (never printed) and its argon2id
//! hashing and verification, on the blocking pool and at most one per
//! core at a time. Apart from the accounts' queries because it is a room
//! of its own: its rules (length, cost, a dummy hash for unknown emails)
//! concern the secret, not the account that keeps it.

use anyhow::Context as _;
use argon2::{
    Argon2, PasswordHash, PasswordHasher as _, PasswordVerifier as _,
    password_hash::{SaltString, rand_core::OsRng},
};
use secrecy::{ExposeSecret as _, SecretString};

use super::AccountError;

/// A plain password, kept secret: it never prints (`Debug` is redacted).
pub struct Password(SecretString);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password([REDACTED])")
    }
}

impl Password {
    pub const MIN_CHARS: usize = 10;
    pub const MAX_CHARS: usize = 128;

    pub fn parse(raw: SecretString) -> Result<Self, AccountError> {
        let chars = raw.expose_secret().chars().count();
        if (Self::MIN_CHARS..=Self::MAX_CHARS).contains(&chars) {
            Ok(Self(raw))
        } else {
            Err(AccountError::InvalidPassword)
        }
    }
}

/// How many argon2 computations may run at once in this process.
///
/// Each one holds 19 MiB and a core for tens of milliseconds; unbounded, a
/// burst of sign-ins starts one blocking thread each and the process grows
/// by gigabytes. This limits a process-wide resource (cores and memory), so
/// it is process-wide itself, unlike application state.
static ARGON2_SLOTS: std::sync::LazyLock<tokio::sync::Semaphore> = std::sync::LazyLock::new(|| {
    tokio::sync::Semaphore::new(
        std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
    )
});

/// Runs argon2 work on the blocking pool, at most one per core at a time.
async fn with_argon2_slot<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> anyhow::Result<T> {
    let _slot = ARGON2_SLOTS
        .acquire()
        .await
        .context("the argon2 limiter is closed")?;
    tokio::task::spawn_blocking(work)
        .await
        .context("the password hashing task panicked")
}

/// Hashes a password with argon2id (default parameters) on the blocking pool.
pub async fn hash_password(password: &Password) -> anyhow::Result<String> {
    let secret = password.0.clone();
    with_argon2_slot(move || {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(secret.expose_secret().as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .map_err(|error| anyhow::anyhow!("argon2 hashing failed: {error}"))
    })
    .await?
}

/// Checks `password` against a stored PHC hash on the blocking pool.
pub async fn verify_password(password: &Password, stored_hash: &str) -> anyhow::Result<bool> {
    let secret = password.0.clone();
    let stored = stored_hash.to_owned();
    with_argon2_slot(move || {
        let parsed = PasswordHash::new(&stored)
            .map_err(|error| anyhow::anyhow!("stored password hash is malformed: {error}"))?;
        Ok(Argon2::default()
            .verify_password(secret.expose_secret().as_bytes(), &parsed)
            .is_ok())
    })
    .await?
}

/// A PHC string of the same parameters as real hashes: verifying against
/// it costs an unknown email the same time as a known one.
pub(super) const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$49jnr48R6jjX8qgDBSosMA$Fed1WY4cbAmUyc/b0TrMXgFwwipUzsqo9YCQOpVdjj8";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_length_is_bounded() {
        let short = SecretString::from("123456789");
        assert!(Password::parse(short).is_err());
        let long = SecretString::from("x".repeat(Password::MAX_CHARS + 1));
        assert!(Password::parse(long).is_err());
        assert!(Password::parse(SecretString::from("correct horse")).is_ok());
    }

    #[test]
    fn password_debug_is_redacted() {
        let password = Password::parse(SecretString::from("hunter2hunter2")).expect("valid");
        assert!(!format!("{password:?}").contains("hunter2"));
    }

    #[tokio::test]
    async fn the_dummy_hash_is_a_valid_hash_of_the_real_parameters() {
        let any = Password::parse(SecretString::from("some password")).expect("valid");
        assert!(!verify_password(&any, DUMMY_HASH).await.expect("parses"));
        let real = hash_password(&any).await.expect("hash");
        let params = |h: &str| h.split('$').nth(3).map(str::to_owned);
        assert_eq!(params(&real), params(DUMMY_HASH), "same cost parameters");
    }

    #[tokio::test]
    async fn hashes_verify_only_the_right_password() {
        let right = Password::parse(SecretString::from("correct horse battery")).expect("valid");
        let wrong = Password::parse(SecretString::from("wrong horse battery")).expect("valid");
        let hash = hash_password(&right).await.expect("hash");
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password(&right, &hash).await.expect("verify"));
        assert!(!verify_password(&wrong, &hash).await.expect("verify"));
    }
}
