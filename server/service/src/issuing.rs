//! Issuing codes: the console's use cases that are more than one engine
//! call. Issuing a
//! batch or a replacement code whose plain codes are handed over through
//! Redis (`engine::handover`), where every step after the first must undo
//! the ones before it if it fails. A batch nobody will ever see must not
//! stay usable (park-or-revoke), and a "try again" after such a failure
//! must issue anew, not reopen the revoked batch (the idempotency key is
//! released). Both the console's server functions and, where they hand
//! codes over the same way, other adapters call these; single engine
//! calls (revoke, unbind, settings) need no use case of their own.

use engine::{
    accounts::Principal,
    batches::{self, BatchError, BatchRequest},
    code_actions, code_table,
    coordination::ThrottleScope,
    handover, imports,
    progress::Progress,
    shares::{Share, ShareId},
    tenants::TenantId,
};
use uuid::Uuid;

use crate::{ServiceError, Services};

/// How long a caller is told to wait after a handover could not be parked.
const HANDOVER_AWAY_RETRY_SECS: u64 = 5;

/// A batch to issue from the console.
#[derive(Debug)]
pub struct Issue<'a> {
    pub share: &'a Share,
    pub count: i64,
    pub label: &'a str,
    /// When the batch's unused codes stop working (`None`: never).
    pub expires_at: Option<time::OffsetDateTime>,
    /// Chosen when the form was rendered: the progress report's name and
    /// the request's idempotency key (the same form sent twice opens the
    /// first batch).
    pub ticket: Option<Uuid>,
    /// To send by mail (`engine::mailings`): its codes are never shown,
    /// so none is parked.
    pub mailable: bool,
}

/// What issuing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issued {
    /// A new batch, its plain codes parked for the admin's one viewing.
    New { batch_id: Uuid },
    /// This ticket already issued `batch_id`: nothing new was issued.
    Again { batch_id: Uuid },
}

/// Issues a batch and parks its plain codes for `admin`'s one viewing
/// (page and CSV); a mailable batch's codes are never shown, and nothing
/// is parked. If parking fails the batch is revoked at once (nobody
/// saw those codes) and its idempotency key released, and the answer is
/// `Unavailable`: retrying issues a new batch.
#[tracing::instrument(name = "issue_for_handover", skip_all, fields(share = %issue.share.id, count = issue.count))]
pub async fn issue_for_handover(
    services: &Services,
    admin: &Principal,
    issue: Issue<'_>,
) -> Result<Issued, ServiceError> {
    let Issue {
        share,
        count,
        label,
        expires_at,
        ticket,
        mailable,
    } = issue;
    let idempotency_key = ticket.map(|t| format!("console-issue:{t}"));
    let progress = ticket.map(|t| Progress::new(&services.redis, admin.id, t));
    let issued = batches::issue_codes(
        &services.pool,
        &services.keyring,
        share.tenant(),
        admin.id,
        &BatchRequest {
            share: share.id,
            count,
            label,
            expires_at,
            idempotency_key: idempotency_key.as_deref(),
            progress: progress.as_ref(),
            mailable,
        },
    )
    .await;
    let batch = match issued {
        Err(BatchError::BatchAlreadyIssued { batch_id, .. }) => {
            return Ok(Issued::Again { batch_id });
        }
        other => other?,
    };
    if mailable {
        return Ok(Issued::New {
            batch_id: batch.batch_id,
        });
    }
    let codes: Vec<String> = batch.codes.iter().map(|(_, c)| c.display()).collect();
    if let Err(error) = handover::park(&services.redis, admin.id, batch.batch_id, &codes).await {
        // Nobody will ever see these codes: they must not stay usable.
        tracing::error!(error = format!("{error:#}"), "parking issued codes failed");
        batches::revoke_unused_of_batch(&services.pool, share.tenant(), admin.id, batch.batch_id)
            .await?;
        // The "try again" must issue anew, not open the revoked batch.
        if let Some(key) = &idempotency_key {
            batches::release_issue_key(&services.pool, share.tenant(), key).await?;
        }
        return Err(ServiceError::Unavailable {
            retry_after_secs: HANDOVER_AWAY_RETRY_SECS,
        });
    }
    Ok(Issued::New {
        batch_id: batch.batch_id,
    })
}

/// Imports codes another system sold (`engine::imports`), after the
/// tenant's import throttle. An import's report says which of its codes
/// exist already (`already_exists`): foreign codes within the tenant only
/// (they are hashed per tenant), ours across the platform, where probing
/// finds nothing (55 random bits). The throttle keeps imports, and what
/// they write, to a human pace.
#[tracing::instrument(name = "import_codes", skip_all, fields(share = %share.id, lines = request.lines.len()))]
pub async fn import_codes(
    services: &Services,
    admin: &Principal,
    share: &Share,
    request: imports::ImportRequest<'_>,
) -> Result<imports::Imported, ServiceError> {
    crate::throttle::hit(
        services,
        ThrottleScope::ImportTenant,
        &share.tenant().0.to_string(),
        services.auth.imports_per_tenant,
    )
    .await?;
    Ok(imports::import_codes(
        &services.pool,
        &services.keyring,
        share.tenant(),
        admin.id,
        request,
    )
    .await?)
}

/// A batch as an API client gets it: its id and its plain codes.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IssuedForApi {
    pub batch_id: Uuid,
    /// (code id, code as shown), in issuing order.
    pub codes: Vec<(Uuid, String)>,
}

/// Never the plain codes (logs, error chains).
impl std::fmt::Debug for IssuedForApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedForApi")
            .field("batch_id", &self.batch_id)
            .field("codes", &self.codes.len())
            .finish()
    }
}

/// How long a retry waits for the first attempt's answer to be held (the
/// first attempt may still be finishing): about 2 s in all.
const HELD_ANSWER_WAITS_MS: [u64; 7] = [0, 50, 100, 200, 400, 600, 650];

/// Issues a batch for an API client. With an `Idempotency-Key` the answer
/// is held (see [`handover::hold_answer`]): a retry with the same key gets
/// the original batch, codes included, while it is held and none of its
/// codes was revoked, and `BatchAlreadyIssued` otherwise. A retry that
/// arrives while the first attempt is still finishing waits a moment for
/// its answer. Issuing and holding run in a task of their own, so a client
/// that goes away mid-request (the usual way an answer gets lost) cannot
/// cut them apart: a committed batch always has its answer held.
#[tracing::instrument(name = "issue_for_api", skip_all, fields(share = %share.id, count = count))]
#[expect(
    clippy::too_many_arguments,
    reason = "the API's issuing request, field by field, as the handler parsed it"
)]
pub async fn issue_for_api(
    services: &Services,
    admin: &Principal,
    share: &Share,
    count: i64,
    label: &str,
    expires_at: Option<time::OffsetDateTime>,
    idempotency_key: Option<&str>,
    mailable: bool,
) -> Result<IssuedForApi, ServiceError> {
    let (task_services, admin_id, tenant, share_id) =
        (services.clone(), admin.id, share.tenant(), share.id);
    let (label, key) = (label.to_owned(), idempotency_key.map(str::to_owned));
    let issuing = tokio::spawn(async move {
        let services = task_services;
        let batch = batches::issue_codes(
            &services.pool,
            &services.keyring,
            tenant,
            admin_id,
            &BatchRequest {
                share: share_id,
                count,
                label: &label,
                expires_at,
                idempotency_key: key.as_deref(),
                progress: None,
                mailable,
            },
        )
        .await?;
        // A mailable batch's codes are never shown: they reach people only
        // by mail (`engine::mailings`), so none is in two hands.
        let answer = IssuedForApi {
            batch_id: batch.batch_id,
            codes: if mailable {
                Vec::new()
            } else {
                batch
                    .codes
                    .iter()
                    .map(|(id, code)| (*id, code.display()))
                    .collect()
            },
        };
        if key.is_some() {
            let held = match serde_json::to_string(&answer) {
                Ok(json) => {
                    handover::hold_answer(&services.redis, admin_id, answer.batch_id, &json).await
                }
                Err(_) => Err(anyhow::anyhow!("encoding an API answer failed")),
            };
            if let Err(error) = held {
                // This answer still carries the codes; only a retry would
                // miss them (and hear which batch it was).
                tracing::warn!(
                    error = format!("{error:#}"),
                    "holding an API answer for retries failed"
                );
            }
        }
        Ok::<_, BatchError>(answer)
    });
    let issued = issuing
        .await
        .map_err(|e| anyhow::anyhow!("the issuing task failed: {e}"))?;
    match issued {
        Ok(answer) => Ok(answer),
        Err(BatchError::BatchAlreadyIssued { batch_id, count }) => {
            let again = BatchError::BatchAlreadyIssued { batch_id, count };
            for wait_ms in HELD_ANSWER_WAITS_MS {
                tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await;
                let Some(json) = handover::held_answer(&services.redis, admin.id, batch_id).await?
                else {
                    continue;
                };
                // Revoked since (the admin's answer to a lost batch): the
                // codes are not handed out again as if fresh.
                if batches::has_revoked_codes(&services.pool, share.tenant(), batch_id).await? {
                    return Err(again.into());
                }
                // Never the decoder's message: it may quote a code.
                return serde_json::from_str(&json)
                    .map_err(|_| anyhow::anyhow!("a held API answer could not be read").into());
            }
            Err(again.into())
        }
        Err(error) => Err(error.into()),
    }
}

/// A replacement code, parked for the admin's one viewing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replacement {
    pub share: ShareId,
    /// The new code (its handover is named by it).
    pub code_id: Uuid,
}

/// Replaces a lost unused code (the old one revoked and a new one issued
/// in the same batch, atomically) and parks the new plain code; if
/// parking fails the new code is revoked at once and the answer is
/// `Unavailable`.
#[tracing::instrument(name = "replace_for_handover", skip_all, fields(code = %code_id))]
pub async fn replace_for_handover(
    services: &Services,
    tenant: TenantId,
    admin: &Principal,
    code_id: Uuid,
) -> Result<Replacement, ServiceError> {
    // A code of another tenant does not exist for this admin (the engine's
    // replace filters by tenant too; this use case does not lean on it).
    let share = match code_table::share_of_code(&services.pool, &[tenant], code_id).await? {
        Some((owner, share)) if owner == tenant => share,
        _ => return Err(ServiceError::NotFound),
    };
    let code_actions::Replacement {
        id: new_id, plain, ..
    } = code_actions::replace_code(&services.pool, &services.keyring, tenant, admin.id, code_id)
        .await?;
    if let Err(error) = handover::park(&services.redis, admin.id, new_id, &[plain.display()]).await
    {
        tracing::error!(
            error = format!("{error:#}"),
            "parking a replacement code failed"
        );
        code_actions::revoke_code(&services.pool, tenant, admin.id, new_id).await?;
        return Err(ServiceError::Unavailable {
            retry_after_secs: HANDOVER_AWAY_RETRY_SECS,
        });
    }
    Ok(Replacement {
        share,
        code_id: new_id,
    })
}
