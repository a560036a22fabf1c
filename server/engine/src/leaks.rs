//! Leak alerts, and what an admin does about a leaked code.
//!
//! A bound code that other accounts keep typing has probably been passed
//! around (a forum post, a shared screenshot). The settlement counts each
//! such try (the leak signal, [`note_foreign_attempt`]); once a code has
//! been tried by others `leak_alert_threshold()` times (three), the
//! tenant's owners get a mail and the webhook outbox a
//! `code.leak_suspected` event, at most once per code per day while the
//! tries go on. The rule and its row lock live in the SQL function
//! `note_foreign_attempt` (`migrations/20261204000001_leak_alerts.sql`),
//! so two tries at the same instant raise one alert.
//!
//! The remedy is [`revoke_and_replace`]: the leaked code is unbound and
//! revoked through the audited unbind path, and a new code is inserted in
//! the same transaction already bound to the rightful learner, carrying
//! their binding (first use, accesses counted, extension). Whoever holds
//! the leaked text is refused from then on; the learner keeps their access
//! and gets a mail saying why their code changed.

use anyhow::Context as _;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::{
    accounts::AccountId,
    audit,
    code_actions::CodeError,
    code_actions::{CarriedBinding, Replaced, check_reason, insert_replacement, unbind_in},
    codes::Keyring,
    mail,
    tenants::TenantId,
};

/// Counts one try of the bound code `code` by another account and, when
/// the day's alert for it is due, queues it in the same transaction: the
/// `code.leak_suspected` event and one mail per owner of the tenant.
/// Returns whether an alert was queued.
pub async fn note_foreign_attempt(
    pool: &PgPool,
    tenant: TenantId,
    code: Uuid,
) -> anyhow::Result<bool> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let due = sqlx::query!(
        r#"SELECT share_id AS "share_id!", hint AS "hint!", attempts AS "attempts!"
           FROM note_foreign_attempt($1, $2)"#,
        tenant.0,
        code,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("counting an attempt on a bound code")?;
    let Some(due) = due else {
        tx.commit()
            .await
            .context("committing an attempt on a bound code")?;
        return Ok(false);
    };
    audit::emit(
        &mut tx,
        tenant,
        "code.leak_suspected",
        json!({
            "share_id": due.share_id,
            "code_id": code,
            "hint": due.hint,
            "attempts": due.attempts,
        }),
    )
    .await?;
    let owners = sqlx::query!(
        r#"SELECT a.id, a.email, a.lang, s.title, t.name AS tenant
           FROM tenant_members m
           JOIN accounts a ON a.id = m.account_id
           JOIN shares s ON s.tenant_id = m.tenant_id AND s.id = $2
           JOIN tenants t ON t.id = m.tenant_id
           WHERE m.tenant_id = $1 AND m.role = 'owner'
           ORDER BY a.id"#,
        tenant.0,
        due.share_id,
    )
    .fetch_all(&mut *tx)
    .await
    .context("reading the tenant's owners")?;
    for owner in owners {
        mail::enqueue(
            &mut tx,
            mail::NewMail {
                tenant: Some(tenant),
                account: Some(AccountId(owner.id)),
                template: mail::Template::LeakSuspected,
                to: &owner.email,
                lang: model::Lang::parse(&owner.lang).unwrap_or_default(),
                params: json!({
                    "course": owner.title,
                    "tenant": owner.tenant,
                    "hint": due.hint,
                    "attempts": due.attempts.to_string(),
                    // Where the owner acts: the share's code table, on this code.
                    "path": format!(
                        "/admin/t/{}/s/{}/codes?code={code}",
                        tenant.0, due.share_id
                    ),
                }),
                link: None,
            },
        )
        .await?;
    }
    tx.commit().await.context("committing a leak alert")?;
    Ok(true)
}

/// The code that replaced a leaked one (its plain text is nowhere: it is
/// bound already, so nobody needs to type it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reissued {
    pub id: Uuid,
    pub hint: String,
    /// The learner it is bound to.
    pub principal: AccountId,
}

/// Revokes a bound code whose text leaked and gives its learner a new one,
/// atomically: the old code is unbound and revoked through the audited
/// unbind path (`reason` is the admin's, 1 to 500 characters), and the new
/// code is inserted in the same batch, bound to the same learner with the
/// same first use, accesses and extension, and the old code's own expiry
/// date. The learner's live grants move to the new code (the replacement
/// costs them no access); they get a mail. Audited (`code.unbound`, `code.replaced`) and announced
/// (`code.unbound`, `code.replaced`).
pub async fn revoke_and_replace(
    pool: &PgPool,
    keyring: &Keyring,
    tenant: TenantId,
    actor: AccountId,
    code: Uuid,
    reason: &str,
) -> Result<Reissued, CodeError> {
    let reason = check_reason(reason)?;
    let mut tx = pool.begin().await.context("starting a transaction")?;
    crate::batches::hold_for_change(&mut tx, tenant, code).await?;
    let old = sqlx::query!(
        "SELECT share_id, batch_id, bound_principal, first_used_at, access_count, access_until,
                revoked_at, expires_at
         FROM auth_codes WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        tenant.0,
        code,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("locking the code")?
    .ok_or(CodeError::CodeNotFound)?;
    let (Some(principal), Some(first_used_at), None) =
        (old.bound_principal, old.first_used_at, old.revoked_at)
    else {
        return Err(CodeError::CodeNotBound);
    };
    let unbound = unbind_in(&mut tx, tenant, actor, code, reason, true, false).await?;
    debug_assert_eq!(unbound.principal, principal);
    // Still on the unbind path (`admitone.unbind` is on for this
    // transaction): the one place a code is inserted bound.
    let (new_id, plain) = insert_replacement(
        &mut tx,
        keyring,
        tenant,
        actor,
        Replaced {
            code,
            share: old.share_id,
            batch: old.batch_id,
            expires_at: old.expires_at,
        },
        Some(&CarriedBinding {
            principal,
            first_used_at,
            access_count: old.access_count,
            access_until: old.access_until,
        }),
    )
    .await?;
    let hint = plain.hint();
    // The learner's live grants go with the binding (the bytes route and
    // the settlement's reuse of a grant both read the code it names), so
    // the replacement costs them no access. Only live ones: the records of
    // past accesses keep naming the code they went through.
    sqlx::query!(
        "UPDATE access_records SET code_id = $3
         WHERE tenant_id = $1 AND code_id = $2 AND expires_at > now()",
        tenant.0,
        code,
        new_id,
    )
    .execute(&mut *tx)
    .await
    .context("moving the learner's live grants to the new code")?;
    mail::enqueue_code_notice(
        &mut tx,
        mail::Template::CodeReplaced,
        tenant,
        old.share_id,
        AccountId(principal),
        json!({ "reason": reason, "hint": hint }),
    )
    .await?;
    tx.commit()
        .await
        .context("committing the revoke and replace")?;
    Ok(Reissued {
        id: new_id,
        hint,
        principal: AccountId(principal),
    })
}
