//! Codes sent by mail: a batch issued `mailable` (its codes derived from
//! their ids, [`crate::codes::Keyring::derive`]) mails its unused codes
//! to a list of addresses, one code in one mail to each.
//!
//! [`send`] reads the whole list first and refuses it, with nothing sent,
//! if an address is not one we can mail or the batch has fewer codes left
//! than the list has new addresses; addresses that already got a code of
//! this batch are skipped (sending the same list again mails no one), and
//! one list's duplicates are folded. Then, in one transaction under the
//! batch's row lock (two sends of one batch run one after the other), each
//! new address is given a free code, recorded in `code_mailings`, and its
//! mail queued in the mail outbox (the relay derives the code again as it
//! writes the mail: no row holds it). A restart loses nothing: the mails
//! wait in the outbox. Optionally each code is addressed to its recipient
//! (it then binds only to their verified account).

use anyhow::Context as _;
use model::Lang;
use serde_json::json;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::{accounts::AccountId, accounts::Email, audit, mail::Template, tenants::TenantId};

mod recipients;

pub use recipients::{
    Recipient, RecipientState, Redone, recipient, recipients, resend, revoke_and_resend,
};

/// How long after a code's last mail it may be mailed again.
pub const RESEND_AFTER_MINUTES: i32 = 10;

/// The longest list one send takes.
pub const MAX_ADDRESSES: usize = 10_000;

/// The most lines a list may have, blank ones included.
pub const MAX_LINES: usize = 4 * MAX_ADDRESSES;

/// A line of a list that is not an address we can send to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidLine {
    /// 1-based, as the list was given (blank lines count).
    pub line: usize,
    /// What it said (at most 80 characters).
    pub text: String,
}

/// What refuses a send (nothing is sent).
#[derive(Debug, thiserror::Error)]
pub enum MailingError {
    #[error(
        "this batch's codes were not issued to be mailed: issue a batch with \"mailable\" to send codes by mail"
    )]
    NotMailable,
    #[error("the list has no address")]
    EmptyList,
    #[error("a list has at most 10,000 addresses")]
    TooManyAddresses,
    #[error("{} of the addresses cannot be mailed: {}", .0.len(), summary(.0))]
    InvalidAddresses(Vec<InvalidLine>),
    #[error(
        "the list has {to_send} addresses that have no code of this batch yet, but the batch has {free} codes left to send"
    )]
    NotEnoughCodes { to_send: usize, free: i64 },
    #[error("no such batch")]
    BatchNotFound,
    #[error("a language is en, zh-CN or zh-TW")]
    InvalidLang,
    /// A code this send counted on was bound, revoked or replaced while
    /// it ran: nothing was sent; sending the same list again is safe.
    #[error("the batch changed while this was being sent; nothing was sent: send the list again")]
    BatchChanged,
    /// The code named is not the one a recipient holds now: it was never
    /// mailed, or it was replaced already (a repeated revoke-and-resend).
    #[error(
        "this code is not one a recipient of a mailed batch holds now: it was never mailed, or it was replaced already"
    )]
    CodeNotMailed,
    /// Someone bound the code: it is theirs (the code's own
    /// revoke-and-replace deals with a bound code whose text leaked).
    #[error(
        "this code was redeemed already: it is bound to a learner, and mailing it again would help no one"
    )]
    CodeRedeemed,
    #[error("this code was revoked: use revoke-and-resend to mail its recipient another")]
    CodeRevoked,
    #[error("this code's date has passed: use revoke-and-resend to mail its recipient another")]
    CodeExpired,
    /// The last mail of the code went out moments ago: a resend waits
    /// [`RESEND_AFTER_MINUTES`] (a mail takes a while to arrive, and
    /// nobody's inbox is to be flooded); a mail given up on may be sent
    /// again at once.
    #[error(
        "this code was mailed to its recipient less than 10 minutes ago: give the mail time to arrive before sending it again"
    )]
    ResendTooSoon,
    /// A revoke-and-resend found no free code in the batch to send instead.
    #[error("this batch has no code left to send in its place: issue another mailable batch")]
    NoCodeLeft,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// The first few invalid lines, for a message.
fn summary(lines: &[InvalidLine]) -> String {
    let mut shown: Vec<String> = lines
        .iter()
        .take(5)
        .map(|l| format!("line {} ({:?})", l.line, l.text))
        .collect();
    if lines.len() > 5 {
        shown.push(format!("and {} more", lines.len() - 5));
    }
    shown.join(", ")
}

/// A send, as asked.
#[derive(Debug, Clone)]
pub struct SendRequest<'a> {
    pub batch: Uuid,
    /// The list, one address per entry (blank entries are skipped).
    pub addresses: &'a [String],
    /// Address each code to its recipient.
    pub addressed: bool,
    /// The mails' language (`None`: each recipient's account's, else
    /// English).
    pub lang: Option<Lang>,
    /// Report what would be sent, and send nothing.
    pub dry_run: bool,
}

/// What a send did (or, on a dry run, would do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendReport {
    /// New addresses, each mailed a code (none on a dry run).
    pub sent: usize,
    /// New addresses the list holds (what `sent` is when not a dry run).
    pub to_send: usize,
    /// Entries that repeat an earlier one of the list.
    pub duplicates: usize,
    /// Addresses that already had a code of this batch: skipped.
    pub already_sent: usize,
    /// Codes the batch had left to send before this one.
    pub free: i64,
}

/// Reads a list: the addresses, case-folded, in order, each once; the
/// count of duplicates; the lines that are not addresses.
fn read_list(addresses: &[String]) -> Result<(Vec<String>, usize), MailingError> {
    // Entries, not lines: a pasted CSV's heading and blank lines do not count.
    if addresses.iter().filter(|a| !a.trim().is_empty()).count() > MAX_ADDRESSES {
        return Err(MailingError::TooManyAddresses);
    }
    let (mut valid, mut invalid, mut duplicates) = (Vec::new(), Vec::new(), 0);
    let mut seen = std::collections::HashSet::new();
    for (index, raw) in addresses.iter().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        match Email::parse(raw) {
            Ok(email) if seen.insert(email.as_str().to_owned()) => {
                valid.push(email.as_str().to_owned());
            }
            Ok(_) => duplicates += 1,
            Err(_) => invalid.push(InvalidLine {
                line: index + 1,
                text: raw.trim().chars().take(80).collect(),
            }),
        }
    }
    if !invalid.is_empty() {
        return Err(MailingError::InvalidAddresses(invalid));
    }
    if valid.is_empty() {
        return Err(MailingError::EmptyList);
    }
    Ok((valid, duplicates))
}

/// The separators of a pasted CSV row: `,` `;` a tab, and the full-width
/// `，` `；` a Chinese keyboard types.
const SEPARATORS: [char; 5] = [',', ';', '\t', '，', '；'];

/// A pasted list as the entries [`send`] reads, one a line, in order (so
/// a report's line numbers are the pasted lines'). A line with separators
/// is a CSV row. A first line with no `@` that reads as a heading
/// (letters, spaces, separators, quotes, `_` and `-` only, as `email` or
/// `name,email`) is skipped, and if one of its cells names an address
/// (`email`, `e-mail`, `mail`, `address`, 邮箱, 郵箱, 電子郵件, 电子邮件),
/// that column is each row's entry. Otherwise a row's one cell holding an
/// `@` is its entry; a row with two such cells is kept whole, so the send
/// names it rather than guess which of them is meant. Quotes and a
/// `Name <…>` wrapping are taken off; a row of blank cells is blank.
///
/// A list past [`MAX_ADDRESSES`] non-blank lines (and a heading), or past
/// [`MAX_LINES`] lines in all, is refused before any entry is made: a
/// file of millions of short lines would otherwise take a hundred
/// megabytes before [`send`] counted them.
pub fn read_pasted(text: &str) -> Result<Vec<String>, MailingError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.lines().count() > MAX_LINES
        || text.lines().filter(|line| !line.trim().is_empty()).count() > MAX_ADDRESSES + 1
    {
        return Err(MailingError::TooManyAddresses);
    }
    let mut column = None;
    Ok(text
        .lines()
        .enumerate()
        .map(|(index, line)| {
            let heading = index == 0
                && !line.contains('@')
                && line.chars().all(|c| {
                    c.is_alphabetic()
                        || SEPARATORS.contains(&c)
                        || matches!(c, ' ' | '"' | '\'' | '_' | '-')
                });
            if heading {
                column = line.split(SEPARATORS).position(names_an_address);
                return String::new();
            }
            let cells: Vec<&str> = line.split(SEPARATORS).collect();
            if cells.iter().all(|cell| unquoted(cell).is_empty()) {
                return String::new();
            }
            let cell = match column.and_then(|c| cells.get(c)) {
                Some(cell) => cell,
                None => {
                    let mut holding = cells.iter().filter(|cell| cell.contains('@'));
                    match (holding.next(), holding.next()) {
                        (Some(cell), None) => cell,
                        (None, _) => line,
                        // Two: kept whole, as it was (never unwrapped).
                        (Some(_), Some(_)) => return line.trim().to_owned(),
                    }
                }
            };
            let cell = unquoted(cell);
            match (cell.rfind('<'), cell.rfind('>')) {
                (Some(open), Some(close)) if open < close => {
                    cell[open + 1..close].trim().to_owned()
                }
                _ => cell.to_owned(),
            }
        })
        .collect())
}

/// A cell without its blanks and quotes.
fn unquoted(cell: &str) -> &str {
    cell.trim().trim_matches(['"', '\'']).trim()
}

/// Whether a heading's cell names the address column.
fn names_an_address(cell: &str) -> bool {
    let name = unquoted(cell).to_lowercase();
    [
        "email",
        "e-mail",
        "e_mail",
        "mail",
        "address",
        "email address",
        "邮箱",
        "郵箱",
        "電子郵件",
        "电子邮件",
        "邮件地址",
        "郵件地址",
    ]
    .contains(&name.as_str())
}

/// How many codes a batch has left to mail (`0` for a batch of another
/// tenant).
pub async fn free_codes(pool: &PgPool, tenant: TenantId, batch: Uuid) -> anyhow::Result<i64> {
    let mut conn = pool.acquire().await.context("taking a connection")?;
    count_free(&mut conn, tenant, batch).await
}

/// Mails a free code of a batch to each new address of a list.
pub async fn send(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    request: &SendRequest<'_>,
) -> Result<SendReport, MailingError> {
    let (addresses, duplicates) = read_list(request.addresses)?;
    let mut tx = pool.begin().await.context("starting a transaction")?;
    // Two sends of one batch run one after the other, so neither hands
    // out a code the other did, nor mails an address the other did.
    let share = lock_batch(&mut tx, tenant, request.batch).await?;
    let already: Vec<String> = sqlx::query_scalar!(
        "SELECT email FROM code_mailings WHERE tenant_id = $1 AND batch_id = $2 AND email = ANY($3)",
        tenant.0,
        request.batch,
        &addresses,
    )
    .fetch_all(&mut *tx)
    .await
    .context("reading who has a code of the batch")?;
    let already: std::collections::HashSet<String> = already.into_iter().collect();
    let new: Vec<String> = addresses
        .into_iter()
        .filter(|email| !already.contains(email))
        .collect();
    // Free: unused, unrevoked, not expired, not addressed, never mailed,
    // and derived (not a replacement drawn by hand into the batch).
    let free = count_free(&mut tx, tenant, request.batch).await?;
    let wanted = i64::try_from(new.len()).context("a list of more than 2^63 addresses")?;
    if wanted > free {
        return Err(MailingError::NotEnoughCodes {
            to_send: new.len(),
            free,
        });
    }
    let report = SendReport {
        sent: if request.dry_run { 0 } else { new.len() },
        to_send: new.len(),
        duplicates,
        already_sent: already.len(),
        free,
    };
    if request.dry_run || new.is_empty() {
        tx.rollback().await.context("ending a dry run")?;
        return Ok(report);
    }
    // The codes themselves, locked: a bind, revoke or replacement of one
    // of them in flight is waited for (and the code then passed over if it
    // is no longer free) or skipped; once locked, none of them changes
    // until this commits. Fewer than asked: the batch changed meanwhile.
    let codes = take_free(&mut tx, tenant, request.batch, wanted).await?;
    if codes.len() != new.len() {
        return Err(MailingError::BatchChanged);
    }
    let mails: Vec<Uuid> = new.iter().map(|_| Uuid::now_v7()).collect();
    queue_mails(
        &mut tx,
        tenant,
        share,
        request.lang.map(Lang::tag),
        request.addressed,
        (&mails, &new, &codes),
    )
    .await?;
    sqlx::query!(
        "INSERT INTO code_mailings (tenant_id, batch_id, email, code_id, mail_id, created_by)
         SELECT $1, $2, m.email, m.code_id, m.mail_id, $3
           FROM UNNEST($4::text[], $5::uuid[], $6::uuid[]) AS m(email, code_id, mail_id)",
        tenant.0,
        request.batch,
        actor.0,
        &new,
        &codes,
        &mails,
    )
    .execute(&mut *tx)
    .await
    .context("recording who got which code")?;
    if request.addressed {
        sqlx::query!(
            "UPDATE auth_codes c SET addressed_to = m.email
               FROM UNNEST($2::uuid[], $3::text[]) AS m(code_id, email)
              WHERE c.tenant_id = $1 AND c.id = m.code_id",
            tenant.0,
            &codes,
            &new,
        )
        .execute(&mut *tx)
        .await
        .context("addressing the codes")?;
    }
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "batch.mailed",
        ("code_batch", request.batch),
        json!({ "share_id": share, "sent": new.len(), "already_sent": already.len(),
                "addressed": request.addressed }),
    )
    .await?;
    tx.commit().await.context("committing a send")?;
    Ok(report)
}

/// Takes a mailable batch's row (`FOR NO KEY UPDATE`: a replacement's
/// insert into the batch, which takes a key share of it, is not held up)
/// for a change to who holds which of its codes: sends, resends and
/// revoke-and-resends of one batch run one after the other. Its share.
async fn lock_batch(
    tx: &mut PgConnection,
    tenant: TenantId,
    batch: Uuid,
) -> Result<Uuid, MailingError> {
    let batch = sqlx::query!(
        "SELECT share_id, mailable FROM code_batches WHERE tenant_id = $1 AND id = $2
         FOR NO KEY UPDATE",
        tenant.0,
        batch,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("locking the batch")?
    .ok_or(MailingError::BatchNotFound)?;
    if !batch.mailable {
        return Err(MailingError::NotMailable);
    }
    Ok(batch.share_id)
}

/// How many free codes a batch has (as [`take_free`] takes them, locked
/// or not).
async fn count_free(tx: &mut PgConnection, tenant: TenantId, batch: Uuid) -> anyhow::Result<i64> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "free!" FROM auth_codes c
         WHERE c.tenant_id = $1 AND c.batch_id = $2
           AND c.bound_principal IS NULL AND c.revoked_at IS NULL AND c.addressed_to IS NULL
           AND c.salt IS NOT NULL
           AND coalesce(code_expires_at(c.tenant_id, c.batch_id, c.expires_at) > now(), true)
           AND NOT EXISTS (SELECT 1 FROM code_mailings m
                            WHERE m.tenant_id = c.tenant_id AND m.code_id = c.id)"#,
        tenant.0,
        batch,
    )
    .fetch_one(tx)
    .await
    .context("counting the batch's free codes")
}

/// Takes up to `n` free codes of a batch, locked (`FOR UPDATE SKIP
/// LOCKED`: a bind, revoke or replacement of one in flight is skipped;
/// once taken, none of them changes until the transaction ends). Free:
/// unused, unrevoked, unexpired, not addressed, never mailed, and derived
/// (not a replacement drawn by hand into the batch), as [`count_free`]
/// counts them: the two queries say the same, and are kept side by side.
async fn take_free(
    tx: &mut PgConnection,
    tenant: TenantId,
    batch: Uuid,
    n: i64,
) -> anyhow::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        "SELECT c.id FROM auth_codes c
         WHERE c.tenant_id = $1 AND c.batch_id = $2
           AND c.bound_principal IS NULL AND c.revoked_at IS NULL AND c.addressed_to IS NULL
           AND c.salt IS NOT NULL
           AND coalesce(code_expires_at(c.tenant_id, c.batch_id, c.expires_at) > now(), true)
           AND NOT EXISTS (SELECT 1 FROM code_mailings m
                            WHERE m.tenant_id = c.tenant_id AND m.code_id = c.id)
         ORDER BY c.id
         LIMIT $3
         FOR UPDATE OF c SKIP LOCKED",
        tenant.0,
        batch,
        n,
    )
    .fetch_all(tx)
    .await
    .context("taking the batch's free codes")
}

/// Queues one mail of [`Template::CodesSent`] per `(mail id, address,
/// code)`, in `lang` (`None`: the recipient's account's, else English);
/// the relay derives each code again as it writes the mail.
async fn queue_mails(
    tx: &mut PgConnection,
    tenant: TenantId,
    share: Uuid,
    lang: Option<&str>,
    addressed: bool,
    (mails, emails, codes): (&[Uuid], &[String], &[Uuid]),
) -> Result<(), MailingError> {
    let queued = sqlx::query!(
        "INSERT INTO mail_outbox (id, tenant_id, template, to_address, lang, params)
         SELECT m.id, $1, $2, m.email,
                coalesce($3, (SELECT a.lang FROM accounts a WHERE a.email = m.email), 'en'),
                jsonb_build_object('course', s.title, 'course_slug', s.slug, 'tenant', t.name,
                                   'code_ids', jsonb_build_array(m.code_id), 'addressed', $4::boolean)
           FROM UNNEST($5::uuid[], $6::text[], $7::uuid[]) AS m(id, email, code_id)
           JOIN shares s ON s.tenant_id = $1 AND s.id = $8
           JOIN tenants t ON t.id = $1",
        tenant.0,
        Template::CodesSent.as_str(),
        lang,
        addressed,
        mails,
        emails,
        codes,
        share,
    )
    .execute(&mut *tx)
    .await
    .context("queueing the mails")?;
    if queued.rows_affected() != mails.len() as u64 {
        return Err(anyhow::anyhow!("the batch's share went away during a send").into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pasted CSV gives each line's address cell; a heading is skipped;
    /// a line that holds no address stays as it was (the send names it).
    #[test]
    fn a_pasted_list_reads_one_entry_a_line() {
        let pasted = "name,note\nAnn,ann@example.com\n\n\"Bob\";\"bob@example.com\"\nCy <cy@example.com>\nnot an address\n  dee@example.com  \nEve\teve@example.com\tteam\nFay，fay@example.com\n,,,";
        assert_eq!(
            read_pasted(pasted).expect("read"),
            list(&[
                "",
                "ann@example.com",
                "",
                "bob@example.com",
                "cy@example.com",
                "not an address",
                "dee@example.com",
                "eve@example.com",
                "fay@example.com",
                "",
            ])
        );
        // A first line that is not a heading is an entry like any other.
        assert_eq!(
            read_pasted("ann.example.com\nb@example.com").expect("read"),
            list(&["ann.example.com", "b@example.com"])
        );
        assert_eq!(
            read_pasted("\u{feff}email\nann@example.com").expect("read"),
            list(&["", "ann@example.com"])
        );
    }

    /// Two addresses on one line are never guessed between: the heading's
    /// address column decides, and without one the line is kept whole (and
    /// so refused, named by its number).
    #[test]
    fn a_line_with_two_addresses_is_read_by_its_heading_or_refused() {
        assert_eq!(
            read_pasted("referrer,Email\nref@example.com,ann@example.com\n").expect("read"),
            list(&["", "ann@example.com"])
        );
        assert_eq!(
            read_pasted("ann@example.com, bob@example.com").expect("read"),
            list(&["ann@example.com, bob@example.com"])
        );
        assert!(matches!(
            read_list(&read_pasted("Ann <ann@example.com>; Bob <bob@example.com>").expect("read")),
            Err(MailingError::InvalidAddresses(lines)) if lines[0].line == 1
        ));
    }

    /// A list too long is refused before its entries are made: past the
    /// addresses (a heading allowed) or past the lines, blank ones too.
    #[test]
    fn a_list_too_long_is_refused_before_it_is_read() {
        let rows = |n: usize| "@\n".repeat(n);
        assert!(matches!(
            read_pasted(&rows(MAX_ADDRESSES + 2)),
            Err(MailingError::TooManyAddresses)
        ));
        assert_eq!(
            read_pasted(&format!("email\n{}", rows(MAX_ADDRESSES)))
                .expect("a heading and the most addresses")
                .len(),
            MAX_ADDRESSES + 1
        );
        assert!(matches!(
            read_pasted(&"\n".repeat(MAX_LINES + 1)),
            Err(MailingError::TooManyAddresses)
        ));
        assert_eq!(
            read_pasted(&"\n".repeat(MAX_LINES)).expect("blank").len(),
            MAX_LINES
        );
    }

    /// The limit counts addresses, not blank lines (a heading is blank by
    /// then: [`read_pasted`]).
    #[test]
    fn the_limit_counts_addresses_not_lines() {
        let mut pasted = vec![String::new(), "  ".to_owned()];
        pasted.extend((0..MAX_ADDRESSES).map(|i| format!("p{i}@example.com")));
        assert!(read_list(&pasted).is_ok());
        pasted.push("one-more@example.com".to_owned());
        assert!(matches!(
            read_list(&pasted),
            Err(MailingError::TooManyAddresses)
        ));
    }

    fn list(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn a_list_is_folded_and_its_bad_lines_named() {
        let (valid, duplicates) = read_list(&list(&[
            "Ann@Example.com",
            "",
            "bob@example.com ",
            "ann@example.com",
        ]))
        .expect("a good list");
        assert_eq!(valid, ["ann@example.com", "bob@example.com"]);
        assert_eq!(duplicates, 1);
        let Err(MailingError::InvalidAddresses(bad)) =
            read_list(&list(&["ann@example.com", "not an address", "", "x@y"]))
        else {
            panic!("bad lines refuse the list");
        };
        assert_eq!(
            bad,
            [
                InvalidLine {
                    line: 2,
                    text: "not an address".into()
                },
                InvalidLine {
                    line: 4,
                    text: "x@y".into()
                },
            ]
        );
        assert!(
            MailingError::InvalidAddresses(bad)
                .to_string()
                .contains("line 2 (\"not an address\")")
        );
        assert!(matches!(
            read_list(&list(&["", "  "])),
            Err(MailingError::EmptyList)
        ));
        let long = vec!["a@example.com".to_owned(); MAX_ADDRESSES + 1];
        assert!(matches!(
            read_list(&long),
            Err(MailingError::TooManyAddresses)
        ));
        assert!(read_list(&long[..MAX_ADDRESSES]).is_ok());
    }
}
