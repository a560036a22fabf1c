//! The `[mail]` table of the configuration: where mail goes, from whom,
//! and how the relay retries. It lives with the relay that reads it;
//! `config` composes it into the settings and validates it with the
//! relay's own parsers (`transport::smtp_builder`, `transport::from_address`).

use secrecy::SecretString;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MailSettings {
    /// The SMTP server, as a URL: `smtp://user:pass@host:587?tls=required`
    /// (STARTTLS, refused without it), `smtps://user:pass@host:465`
    /// (implicit TLS), or `smtp://host:25` (plain, for a relay on the same
    /// host or network). Empty in development: mail goes to the dev
    /// mailbox (`/dev/mailbox`). Production refuses to start without one.
    pub smtp_url: Option<SecretString>,
    /// A PEM file of the CA that signed the SMTP server's certificate, if
    /// it is a private one (trusted beside the bundled public roots).
    pub smtp_ca_file: Option<String>,
    /// The sender: `AdmitOne <no-reply@courses.example.com>`. Required in
    /// production.
    pub from: String,
    /// Run the mail relay in `serve` (every instance may: rows are claimed
    /// with `FOR UPDATE SKIP LOCKED`).
    pub relay: bool,
    /// Pause between relay rounds when there was nothing to send.
    pub poll_interval_ms: u64,
    /// How long one SMTP conversation may take before it counts as failed.
    pub timeout_ms: u64,
    /// Attempts before a mail is dead-lettered.
    pub max_attempts: i32,
    /// First retry delay; doubled per attempt, with jitter, up to
    /// `backoff_max_secs`.
    pub backoff_base_ms: u64,
    pub backoff_max_secs: u64,
    /// Mails one tenant may hand the SMTP server a minute (its further
    /// mails wait for the next minute; account mail is no tenant's);
    /// 0: no limit (`engine::mail::limits`).
    pub tenant_per_minute: u32,
    /// Mails the server may hand the SMTP server a second, every
    /// instance together (the provider's sending rate); 0: no limit.
    pub smtp_per_second: u32,
}

impl Default for MailSettings {
    fn default() -> Self {
        Self {
            smtp_url: None,
            smtp_ca_file: None,
            from: String::new(),
            relay: true,
            poll_interval_ms: 1_000,
            timeout_ms: 15_000,
            max_attempts: 10,
            backoff_base_ms: 5_000,
            backoff_max_secs: 3_600,
            tenant_per_minute: 1_200,
            smtp_per_second: 0,
        }
    }
}
