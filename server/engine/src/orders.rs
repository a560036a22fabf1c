//! Orders: a shop's sale of a course, turned into codes once.
//!
//! An order is recorded once per `(tenant, source, order_ref)`: the shop
//! (`stripe`, `gumroad`, or an integrator's own word) and its order id
//! there. [`place`] issues the order's codes as a batch of the share,
//! addressed to the buyer when the order is for one seat (an addressed
//! code binds only to the buyer's verified account: `auth_codes`'s
//! trigger, `migrations/20261215000001_orders_and_addressed_codes.sql`),
//! and queues the mail that carries them, all in one transaction. A
//! replay of the same order, whenever it comes and however many race,
//! finds the first one's row (the unique key decides) and answers it:
//! nothing is issued or mailed twice.
//!
//! The codes are derived from their ids ([`Keyring::derive`]) rather than
//! drawn, so that neither the mail row nor anything else holds them: the
//! mail relay derives them again when it writes the mail
//! ([`mailed_codes`]), and a replay answers the same codes as the first
//! call.

use anyhow::Context as _;
use model::{CodeState, Lang};
use serde_json::json;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    accounts::{AccountId, Email},
    audit, batches,
    codes::{Keyring, PlainCode},
    db::turns,
    mail::Template,
    shares::ShareId,
    tenants::TenantId,
};

/// What refuses an order.
#[derive(Debug, thiserror::Error)]
pub enum OrderError {
    #[error(
        "a source is 1 to 32 lower-case letters, digits, '-' or '_', starting with a letter or digit"
    )]
    InvalidSource,
    /// `stripe-1a2b3c4d` and the like name a connected shop's orders
    /// (`crate::shops`): only that shop places them, so that its refunds
    /// reach its own orders alone.
    #[error(
        "this source names a connected shop's orders (its kind, a dash, 8 hex digits): only that shop places them; choose another source"
    )]
    SourceOfAShop,
    #[error("an order id is 1 to 200 visible characters")]
    InvalidOrderRef,
    #[error("the buyer's email is not an address we can send to")]
    InvalidEmail,
    #[error("an order has 1 to 1,000 codes")]
    InvalidQuantity,
    #[error("a language is en, zh-CN or zh-TW")]
    InvalidLang,
    /// One account holds one code of a course: codes addressed to one
    /// buyer past the first could never be used.
    #[error(
        "only an order of one code can be addressed to the buyer: one account holds one code of a course"
    )]
    AddressTakesOneCode,
    #[error("no such share")]
    ShareNotFound,
    /// The order was recorded before with other details (share, buyer,
    /// quantity, addressing or mailing): a shop never changes an order's
    /// contents under its id, so this is a mix-up, not a replay.
    #[error("this order was recorded before with other details; its codes were issued then")]
    OrderConflict,
    /// Other deliveries of this order (a shop's retries) held it for
    /// longer than a request waits: nothing was done; the retry is
    /// answered from what they did.
    #[error("this order is being placed or refunded by another request; try again in a moment")]
    Busy,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// A shop's name: 1 to 32 of `a-z0-9-_`, starting with a letter or digit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderSource(String);

impl OrderSource {
    pub fn parse(raw: &str) -> Result<Self, OrderError> {
        let source = raw.trim();
        let valid = (1..=32).contains(&source.len())
            && source.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && source
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        valid
            .then(|| Self(source.to_owned()))
            .ok_or(OrderError::InvalidSource)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the source of a connected shop's orders
    /// (`stripe-1a2b3c4d`, `crate::shops`), which an order placed through
    /// the API may not take.
    pub fn is_a_shops(&self) -> bool {
        self.0.split_once('-').is_some_and(|(kind, tail)| {
            crate::shops::Provider::parse(kind).is_ok()
                && tail.len() == 8
                && tail
                    .chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, 'a'..='f'))
        })
    }
}

/// The shop's order id: 1 to 200 characters, as given (trimmed), with no
/// control character and no invisible formatting one (zero-width spaces,
/// direction marks, a byte-order mark), which would make two ids look
/// alike in the console and the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRef(String);

impl OrderRef {
    pub fn parse(raw: &str) -> Result<Self, OrderError> {
        let order = raw.trim();
        let valid = (1..=200).contains(&order.chars().count())
            && !order.chars().any(|c| c.is_control() || is_invisible(c));
        valid
            .then(|| Self(order.to_owned()))
            .ok_or(OrderError::InvalidOrderRef)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A formatting character that shows as nothing (Unicode's `Cf` ones a
/// text field could carry).
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{600}'..='\u{605}' | '\u{61c}' | '\u{6dd}' | '\u{70f}'
        | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206f}' | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}' | '\u{e0001}' | '\u{e0020}'..='\u{e007f}')
}

/// What a shop (or an integrator) asks for.
#[derive(Debug, Clone)]
pub struct OrderRequest {
    pub share: ShareId,
    pub source: OrderSource,
    pub order_ref: OrderRef,
    pub buyer: Email,
    pub quantity: i64,
    /// Address the code to the buyer (`None`: when the order is for one).
    pub addressed: Option<bool>,
    /// Mail the codes to the buyer (else the caller hands them over).
    pub mail: bool,
    /// The mail's language (`None`: the buyer's account's, else English).
    pub lang: Option<Lang>,
}

/// One code of an order, as it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderCode {
    pub id: Uuid,
    pub hint: String,
    pub state: CodeState,
    /// The account holding it, if bound, by its address.
    pub holder: Option<String>,
    /// The account a refund released from it (it took the seat back and
    /// unbound the code), by its address.
    pub former_holder: Option<String>,
    pub bound_at: Option<OffsetDateTime>,
    key_version: i16,
    digest: Vec<u8>,
    salt: Option<Vec<u8>>,
}

/// An order and its codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub tenant: TenantId,
    pub id: Uuid,
    pub source: String,
    pub order_ref: String,
    pub share: ShareId,
    pub batch_id: Uuid,
    pub buyer_email: String,
    pub quantity: i32,
    pub addressed: bool,
    pub mailed: bool,
    /// The mail's language as asked (`None`: the buyer's account's, else
    /// English; which one is not said: it would tell who has an account).
    pub lang: Option<Lang>,
    /// The member who placed it (a token acts as its member).
    pub created_by: AccountId,
    pub created_at: OffsetDateTime,
    pub codes: Vec<OrderCode>,
}

impl Order {
    /// The plain text of each code (derived again, [`Keyring::rederive`],
    /// and checked against its digest), for the caller who placed the
    /// order; `None` for a code that was not derived (a replacement made
    /// by hand in the batch) or whose key version left the keyring.
    pub fn plain_codes(&self, keyring: &Keyring) -> Vec<Option<PlainCode>> {
        self.codes
            .iter()
            .map(|code| rederive_checked(keyring, self.tenant, code))
            .collect()
    }

    /// Whether `actor` may see the order's codes again: the member who
    /// placed it, within [`REVEAL_WINDOW`] of placing it (a shop's retry);
    /// anyone else, or later, gets the codes' states only.
    pub fn reveals_codes_to(&self, actor: AccountId, now: OffsetDateTime) -> bool {
        self.created_by == actor && now - self.created_at < REVEAL_WINDOW
    }
}

/// How long the member who placed an order gets its codes again in a
/// replay's answer (as an issuing retry does, `crate::handover`).
pub const REVEAL_WINDOW: time::Duration = time::Duration::minutes(15);

/// A code of an order derived again, if it was derived and still is what
/// its digest says.
fn rederive_checked(keyring: &Keyring, tenant: TenantId, code: &OrderCode) -> Option<PlainCode> {
    let salt = code.salt.as_deref()?;
    let version = u16::try_from(code.key_version).ok()?;
    let plain = keyring.rederive(version, tenant, code.id, salt)?;
    keyring
        .candidates(&plain)
        .contains(&code.digest)
        .then_some(plain)
}

/// Whether [`place`] issued the order now or found it issued before.
#[derive(Debug)]
pub enum Placed {
    New(Order),
    Replayed(Order),
}

impl Placed {
    pub fn order(&self) -> &Order {
        match self {
            Self::New(order) | Self::Replayed(order) => order,
        }
    }
}

/// Records an order and issues its codes, or answers the order recorded
/// before under the same `(source, order_ref)`.
pub async fn place(
    pool: &PgPool,
    keyring: &Keyring,
    tenant: TenantId,
    actor: AccountId,
    request: &OrderRequest,
) -> Result<Placed, OrderError> {
    let quantity = i32::try_from(request.quantity)
        .ok()
        .filter(|n| (1..=1000).contains(n))
        .ok_or(OrderError::InvalidQuantity)?;
    let addressed = request.addressed.unwrap_or(quantity == 1);
    if addressed && quantity != 1 {
        return Err(OrderError::AddressTakesOneCode);
    }
    let mut waits = turns::Waits::new();
    loop {
        // A replay, the common case of a shop's retries, is answered
        // without a transaction; one racing the first placement is caught
        // by the turn, or by the claim.
        if let Some(earlier) = get(pool, tenant, &request.source, &request.order_ref).await? {
            return replay(earlier, request, quantity, addressed);
        }
        if let Some(placed) =
            place_in_turn(pool, keyring, tenant, actor, request, quantity, addressed).await?
        {
            return Ok(placed);
        }
        // Another delivery of this order holds its turn: wait for it
        // outside the pool (`db::turns`), then answer from what it wrote.
        if !waits.next().await {
            return Err(OrderError::Busy);
        }
    }
}

/// [`place`] once it holds the order's turn; `None`: another request
/// holds it.
async fn place_in_turn(
    pool: &PgPool,
    keyring: &Keyring,
    tenant: TenantId,
    actor: AccountId,
    request: &OrderRequest,
    quantity: i32,
    addressed: bool,
) -> Result<Option<Placed>, OrderError> {
    let (order_id, batch_id) = (Uuid::now_v7(), Uuid::now_v7());
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let turn = turns::order(tenant, request.source.as_str(), request.order_ref.as_str());
    if !turns::try_take(&mut tx, &turn).await? {
        tx.rollback().await.context("giving the turn up")?;
        return Ok(None);
    }
    let label: String = format!("{} {}", request.source.as_str(), request.order_ref.as_str())
        .chars()
        .take(120)
        .collect();
    let batch = sqlx::query!(
        "INSERT INTO code_batches (tenant_id, id, share_id, label, count, created_by)
         SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM shares WHERE tenant_id = $1 AND id = $3)",
        tenant.0,
        batch_id,
        request.share.0,
        label,
        quantity,
        actor.0,
    )
    .execute(&mut *tx)
    .await
    .context("inserting an order's batch")?;
    if batch.rows_affected() == 0 {
        return Err(OrderError::ShareNotFound);
    }
    // The claim, under the order's turn: a placement of the same order
    // that committed since this request looked is found here (no wait),
    // and answered as a replay.
    let claimed = sqlx::query_scalar!(
        r#"INSERT INTO orders (tenant_id, id, source, order_ref, share_id, batch_id, buyer_email,
                               quantity, addressed, lang, created_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
           ON CONFLICT (tenant_id, source, order_ref) DO NOTHING
           RETURNING id"#,
        tenant.0,
        order_id,
        request.source.as_str(),
        request.order_ref.as_str(),
        request.share.0,
        batch_id,
        request.buyer.as_str(),
        quantity,
        addressed,
        request.lang.map(Lang::tag),
        actor.0,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("recording an order")?;
    if claimed.is_none() {
        tx.rollback().await.context("rolling back a replay")?;
        let earlier = get(pool, tenant, &request.source, &request.order_ref)
            .await?
            .context("an order that conflicted is gone")?;
        return replay(earlier, request, quantity, addressed).map(Some);
    }
    let mut salts = Vec::new();
    let codes: Vec<(Uuid, PlainCode)> = (0..quantity)
        .map(|_| {
            let id = Uuid::now_v7();
            let (_, code, salt) = keyring.derive(tenant, id);
            salts.push(salt);
            (id, code)
        })
        .collect();
    batches::insert_codes(
        &mut tx,
        keyring,
        (tenant, request.share, batch_id),
        &codes,
        Some(&salts),
        addressed.then(|| request.buyer.as_str()),
        None,
    )
    .await?;
    if request.mail {
        let ids: Vec<Uuid> = codes.iter().map(|(id, _)| *id).collect();
        let mail_id = Uuid::now_v7();
        let queued = sqlx::query!(
            "INSERT INTO mail_outbox (id, tenant_id, template, to_address, lang, params)
             SELECT $1, $2, $3, $4,
                    coalesce($5, (SELECT a.lang FROM accounts a WHERE a.email = $4), 'en'),
                    jsonb_build_object('course', s.title, 'course_slug', s.slug, 'tenant', t.name,
                                       'code_ids', $6::jsonb, 'addressed', $7::boolean)
               FROM shares s JOIN tenants t ON t.id = s.tenant_id
              WHERE s.tenant_id = $2 AND s.id = $8",
            mail_id,
            tenant.0,
            Template::CodesSent.as_str(),
            request.buyer.as_str(),
            request.lang.map(Lang::tag),
            json!(ids),
            addressed,
            request.share.0,
        )
        .execute(&mut *tx)
        .await
        .context("queueing an order's mail")?;
        if queued.rows_affected() != 1 {
            return Err(anyhow::anyhow!("the order's share went away while it was placed").into());
        }
        sqlx::query!(
            "UPDATE orders SET mail_id = $3 WHERE tenant_id = $1 AND id = $2",
            tenant.0,
            order_id,
            mail_id,
        )
        .execute(&mut *tx)
        .await
        .context("noting an order's mail")?;
    }
    let details = json!({
        "source": request.source.as_str(), "order_ref": request.order_ref.as_str(),
        "share_id": request.share.0, "batch_id": batch_id, "quantity": quantity,
        "addressed": addressed, "mailed": request.mail,
    });
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "order.placed",
        ("order", order_id),
        details.clone(),
    )
    .await?;
    audit::emit(
        &mut tx,
        tenant,
        "order.placed",
        json!({ "order_id": order_id, "source": request.source.as_str(),
                "order_ref": request.order_ref.as_str(), "share_id": request.share.0,
                "batch_id": batch_id, "quantity": quantity }),
    )
    .await?;
    tx.commit().await.context("committing an order")?;
    let order = get(pool, tenant, &request.source, &request.order_ref)
        .await?
        .context("an order just placed is gone")?;
    Ok(Some(Placed::New(order)))
}

/// The answer to a replay: the order placed before, if it is this one
/// (a shop never changes an order's contents under its id).
fn replay(
    earlier: Order,
    request: &OrderRequest,
    quantity: i32,
    addressed: bool,
) -> Result<Placed, OrderError> {
    let same = earlier.share == request.share
        && earlier.buyer_email == request.buyer.as_str()
        && earlier.quantity == quantity
        && earlier.addressed == addressed
        && earlier.mailed == request.mail
        && earlier.lang == request.lang;
    if same {
        Ok(Placed::Replayed(earlier))
    } else {
        Err(OrderError::OrderConflict)
    }
}

/// An order of `tenant` by its shop's id, with its codes as they stand.
pub async fn get(
    pool: &PgPool,
    tenant: TenantId,
    source: &OrderSource,
    order_ref: &OrderRef,
) -> anyhow::Result<Option<Order>> {
    let Some(row) = sqlx::query!(
        r#"SELECT id, source, order_ref, share_id, batch_id, buyer_email, quantity, addressed,
                  mail_id IS NOT NULL AS "mailed!", lang, created_by, created_at
           FROM orders WHERE tenant_id = $1 AND source = $2 AND order_ref = $3"#,
        tenant.0,
        source.as_str(),
        order_ref.as_str(),
    )
    .fetch_optional(pool)
    .await
    .context("reading an order")?
    else {
        return Ok(None);
    };
    let codes = sqlx::query_as!(
        OrderCode,
        r#"SELECT c.id, c.hint,
                  CASE WHEN c.revoked_at IS NOT NULL THEN 'revoked'
                       WHEN c.bound_principal IS NOT NULL THEN 'bound'
                       WHEN code_expires_at(c.tenant_id, c.batch_id, c.expires_at) <= now() THEN 'expired'
                       ELSE 'unused' END AS "state!: CodeState",
                  a.email AS "holder?", f.email AS "former_holder?", c.first_used_at AS bound_at,
                  c.key_version, c.digest, c.salt
           FROM auth_codes c LEFT JOIN accounts a ON a.id = c.bound_principal
           LEFT JOIN accounts f ON f.id = c.released_from
           WHERE c.tenant_id = $1 AND c.batch_id = $2
           ORDER BY c.id"#,
        tenant.0,
        row.batch_id,
    )
    .fetch_all(pool)
    .await
    .context("reading an order's codes")?;
    Ok(Some(Order {
        tenant,
        id: row.id,
        source: row.source,
        order_ref: row.order_ref,
        share: ShareId(row.share_id),
        batch_id: row.batch_id,
        buyer_email: row.buyer_email,
        quantity: row.quantity,
        addressed: row.addressed,
        mailed: row.mailed,
        lang: row.lang.as_deref().and_then(Lang::parse),
        created_by: AccountId(row.created_by),
        created_at: row.created_at,
        codes,
    }))
}

/// The tenants among `among` that recorded the order `(source,
/// order_ref)` (a member of several may name it without a tenant).
pub async fn tenants_with(
    pool: &PgPool,
    among: &[TenantId],
    source: &OrderSource,
    order_ref: &OrderRef,
) -> anyhow::Result<Vec<TenantId>> {
    let ids: Vec<Uuid> = among.iter().map(|t| t.0).collect();
    let rows = sqlx::query_scalar!(
        "SELECT tenant_id FROM orders WHERE tenant_id = ANY($1) AND source = $2 AND order_ref = $3
         ORDER BY tenant_id",
        &ids,
        source.as_str(),
        order_ref.as_str(),
    )
    .fetch_all(pool)
    .await
    .context("finding an order's tenant")?;
    Ok(rows.into_iter().map(TenantId).collect())
}

/// Why a mail of codes cannot be written out.
#[derive(Debug, thiserror::Error)]
pub enum MailedCodesError {
    /// Every code the mail carries was revoked, or expired, before it
    /// went: there is nothing left to send (it is not tried again).
    #[error("every code this mail carries was revoked or expired before it was sent")]
    AllRevoked,
    /// A code's text cannot be derived again as it was stored (its key
    /// version left the keyring, or the keys changed): it is not tried
    /// again; the creator revokes the order's codes and places it anew.
    #[error("a code of this mail cannot be derived again under the keys in force")]
    CannotDerive,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// The plain codes a mail of [`Template::CodesSent`] carries: each of
/// `ids` still live, derived again and checked against its stored digest,
/// in the order they were issued.
pub async fn mailed_codes(
    pool: &PgPool,
    keyring: &Keyring,
    tenant: TenantId,
    ids: &[Uuid],
) -> Result<Vec<PlainCode>, MailedCodesError> {
    let rows = sqlx::query!(
        "SELECT id, key_version, digest, salt FROM auth_codes
         WHERE tenant_id = $1 AND id = ANY($2) AND revoked_at IS NULL
           AND coalesce(code_expires_at(tenant_id, batch_id, expires_at) > now(), true)
         ORDER BY id",
        tenant.0,
        ids,
    )
    .fetch_all(pool)
    .await
    .context("reading a mail's codes")?;
    if rows.is_empty() {
        return Err(MailedCodesError::AllRevoked);
    }
    rows.into_iter()
        .map(|row| {
            let code = u16::try_from(row.key_version)
                .ok()
                .zip(row.salt.as_deref())
                .and_then(|(v, salt)| keyring.rederive(v, tenant, row.id, salt))
                .ok_or(MailedCodesError::CannotDerive)?;
            if keyring.candidates(&code).contains(&row.digest) {
                Ok(code)
            } else {
                Err(MailedCodesError::CannotDerive)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connected_shops_source_is_told_apart() {
        for shops in [
            "stripe-1a2b3c4d",
            "gumroad-00000000",
            "lemonsqueezy-abcdef09",
            "shopify-99999999",
        ] {
            assert!(
                OrderSource::parse(shops).expect(shops).is_a_shops(),
                "{shops}"
            );
        }
        for other in [
            "stripe",
            "stripe-1a2b3c4",
            "stripe-1a2b3c4d5",
            "stripe-1a2b3c4g",
            "paypal-1a2b3c4d",
            "stripe_1a2b3c4d",
            "my-shop",
        ] {
            assert!(
                !OrderSource::parse(other).expect(other).is_a_shops(),
                "{other}"
            );
        }
    }

    #[test]
    fn a_source_is_a_short_lower_case_word() {
        for good in ["stripe", "lemon-squeezy", "my_shop2", "9", &"a".repeat(32)] {
            assert_eq!(OrderSource::parse(good).expect(good).as_str(), good);
        }
        assert_eq!(
            OrderSource::parse(" gumroad ").expect("trimmed").as_str(),
            "gumroad"
        );
        for bad in [
            "",
            "Stripe",
            "-shop",
            "_x",
            "a b",
            "shop/1",
            "é",
            &"a".repeat(33),
        ] {
            assert!(
                matches!(OrderSource::parse(bad), Err(OrderError::InvalidSource)),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn an_order_ref_is_visible_text_of_at_most_200() {
        assert_eq!(
            OrderRef::parse(" cs_123 ").expect("trimmed").as_str(),
            "cs_123"
        );
        assert!(OrderRef::parse(&"é".repeat(200)).is_ok());
        for bad in [
            "",
            "   ",
            "a\nb",
            "a\u{7}",
            "cs\u{200b}1",
            "\u{202e}1sc",
            "\u{feff}cs_1",
            &"x".repeat(201),
        ] {
            assert!(
                matches!(OrderRef::parse(bad), Err(OrderError::InvalidOrderRef)),
                "{bad:?}"
            );
        }
    }
}
