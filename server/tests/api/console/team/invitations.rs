//! Invitations: an owner invites by mail, the invited address (and only it)
//! accepts once, and the role then limits what the member may do (support
//! reads the codes but cannot issue them); an invitation expires, is
//! replaced by a newer one, or is withdrawn.

use sqlx::PgPool;
use uuid::Uuid;

use super::{PASSWORD, post, roles, tenant_with_owner};
use crate::support::app::{new_client, spawn_app_with};
use crate::support::mail::{MAIL_WAIT, mail_settings, token_of};

/// Invite → the mail → accept (by the invited address only, once) → the
/// role's limits: support reads the codes but cannot issue them.
#[sqlx::test(migrations = "../migrations")]
async fn an_invited_support_member_joins_reads_and_cannot_issue(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let app = spawn_app_with(pool, mail_settings(&sink)).await;
    let (tenant, owner) = tenant_with_owner(&app, "owner@acme.example").await;
    let t = tenant.to_string();
    let (status, body) = post(
        &app,
        &owner,
        "/api/admin/team/invite",
        &[
            ("tenant_id", &t),
            ("email", "Sam@Example.com"),
            ("role", "support"),
        ],
    )
    .await;
    assert!(status < 400, "{status} {body}");
    let mail = sink.wait_for("sam@example.com", "invited", MAIL_WAIT).await;
    assert!(mail.subject.contains("Acme Courses"), "{}", mail.subject);
    assert!(mail.text.contains("support (read-only)"), "{}", mail.text);
    let token = token_of(&mail.link("/invitation").expect("link"));

    // Someone else signed in cannot use it, and it stays open.
    app.create_account("mallory@example.com", PASSWORD).await;
    let mallory = new_client();
    app.login_as(&mallory, "mallory@example.com", PASSWORD)
        .await;
    let (status, body) = post(&app, &mallory, "/api/team/accept", &[("token", &token)]).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["Refused"]["reason"], "invitation_for_another_address");
    // Signed out: sign in first.
    let (status, _) = post(
        &app,
        &new_client(),
        "/api/team/accept",
        &[("token", &token)],
    )
    .await;
    assert_eq!(status, 401);

    // Sam, whose account was registered before registration started from
    // the address (its address never proved), signs in and accepts: a
    // member with the invited role, the address verified by the link.
    let sam = new_client();
    app.create_unverified_account("sam@example.com", PASSWORD)
        .await;
    app.login_as(&sam, "sam@example.com", PASSWORD).await;
    let (status, body) = post(&app, &sam, "/api/team/accept", &[("token", &token)]).await;
    assert!(status < 400, "{status} {body}");
    assert_eq!(
        roles(&app, tenant).await,
        vec![
            ("owner@acme.example".to_owned(), "owner".to_owned()),
            ("sam@example.com".to_owned(), "support".to_owned())
        ]
    );
    let verified: bool = sqlx::query_scalar(
        "SELECT email_verified_at IS NOT NULL FROM accounts WHERE email = 'sam@example.com'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("account");
    assert!(verified);
    let (status, body) = post(&app, &sam, "/api/team/accept", &[("token", &token)]).await;
    assert_eq!(
        (status, body["Refused"]["reason"].clone()),
        (410, "invitation_invalid".into())
    );

    // What support may do: read, never change.
    let share = engine::shares::create_share(
        &app.pool,
        engine::tenants::TenantId(tenant),
        engine::accounts::AccountId(
            sqlx::query_scalar("SELECT id FROM accounts WHERE email = 'owner@acme.example'")
                .fetch_one(&app.pool)
                .await
                .expect("owner"),
        ),
        engine::shares::NewShare::parse(engine::shares::ShareInput {
            title: "Course".into(),
            slug: Some("course".into()),
            description: None,
            status: Some("active".into()),
            per_learner_limit: None,
            quota: None,
            access_days: None,
            valid_from: None,
            valid_until: None,
        })
        .expect("share"),
    )
    .await
    .expect("share");
    let s = share.id.0.to_string();
    let codes = app
        .get_as(
            &sam,
            &format!("/api/admin/codes?tenant_id={t}&share_id={s}"),
        )
        .await;
    assert_eq!(codes.status(), 200, "support reads the code table");
    let (status, _) = post(
        &app,
        &sam,
        "/api/admin/codes/issue",
        &[
            ("tenant_id", &t),
            ("share_id", &s),
            ("count", "2"),
            ("label", "x"),
        ],
    )
    .await;
    assert_eq!(status, 403, "support cannot issue");
    let issued: i64 = sqlx::query_scalar("SELECT count(*) FROM auth_codes")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(issued, 0);
    let audit: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE tenant_id = $1 AND action LIKE 'member.%' ORDER BY created_at",
    )
    .bind(tenant)
    .fetch_all(&app.pool)
    .await
    .expect("audit");
    assert_eq!(audit, vec!["member.invited", "member.joined"]);
}

/// An invitation in the invitee's own language when they have an account,
/// expired after 7 days, replaced by a newer one, or withdrawn: the link
/// no longer works.
#[sqlx::test(migrations = "../migrations")]
async fn invitations_expire_are_replaced_and_can_be_withdrawn(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let app = spawn_app_with(pool, mail_settings(&sink)).await;
    let (tenant, owner) = tenant_with_owner(&app, "owner@acme.example").await;
    let t = tenant.to_string();
    app.create_account("li@example.com", PASSWORD).await;
    let li = new_client();
    app.login_as(&li, "li@example.com", PASSWORD).await;
    // Li reads Chinese (as a sign-in from a Chinese browser would record).
    sqlx::query("UPDATE accounts SET lang = 'zh-CN' WHERE email = 'li@example.com'")
        .execute(&app.pool)
        .await
        .expect("lang");
    let invite = |role: &'static str| {
        let (app, owner, t) = (&app, &owner, t.clone());
        async move {
            post(
                app,
                owner,
                "/api/admin/team/invite",
                &[
                    ("tenant_id", &t),
                    ("email", "li@example.com"),
                    ("role", role),
                ],
            )
            .await
            .0
        }
    };
    assert!(invite("admin").await < 400);
    let first = sink.wait_for("li@example.com", "邀请你", MAIL_WAIT).await;
    assert!(first.text.contains("管理员"), "in Chinese: {}", first.text);
    let lifetime: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM expires_at - created_at)::float8 FROM tenant_invitations",
    )
    .fetch_one(&app.pool)
    .await
    .expect("invitation");
    assert_eq!(lifetime, 7.0 * 86_400.0);

    // A newer invitation replaces it.
    assert!(invite("support").await < 400);
    let mails = sink.wait_for_count(2, MAIL_WAIT).await;
    let (old, new) = (
        token_of(&first.link("/invitation").expect("link")),
        token_of(
            &mails
                .iter()
                .find(|m| m.message_id != first.message_id)
                .and_then(|m| m.link("/invitation"))
                .expect("second"),
        ),
    );
    let (status, _) = post(&app, &li, "/api/team/accept", &[("token", &old)]).await;
    assert_eq!(status, 410, "replaced");

    // Expired.
    sqlx::query("UPDATE tenant_invitations SET expires_at = now() - interval '1 second' WHERE accepted_at IS NULL AND revoked_at IS NULL")
        .execute(&app.pool)
        .await
        .expect("age");
    let (status, _) = post(&app, &li, "/api/team/accept", &[("token", &new)]).await;
    assert_eq!(status, 410, "expired");

    // Withdrawn.
    assert!(invite("support").await < 400);
    let third = sink.wait_for_count(3, MAIL_WAIT).await;
    let newest = third
        .iter()
        .filter_map(|m| m.link("/invitation").map(|l| token_of(&l)))
        .find(|tok| *tok != old && *tok != new)
        .expect("third");
    let id: Uuid = sqlx::query_scalar(
        "SELECT id FROM tenant_invitations WHERE accepted_at IS NULL AND revoked_at IS NULL",
    )
    .fetch_one(&app.pool)
    .await
    .expect("open");
    let (status, _) = post(
        &app,
        &owner,
        "/api/admin/team/invitations/revoke",
        &[("tenant_id", &t), ("invitation_id", &id.to_string())],
    )
    .await;
    assert!(status < 400);
    let (status, _) = post(&app, &li, "/api/team/accept", &[("token", &newest)]).await;
    assert_eq!(status, 410, "withdrawn");
    assert_eq!(roles(&app, tenant).await.len(), 1, "nobody joined");

    // Bad input changes nothing.
    let (status, body) = post(
        &app,
        &owner,
        "/api/admin/team/invite",
        &[
            ("tenant_id", &t),
            ("email", "li@example.com"),
            ("role", "superuser"),
        ],
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(body["Invalid"]["field"], "role");
    let (status, body) = post(
        &app,
        &owner,
        "/api/admin/team/invite",
        &[
            ("tenant_id", &t),
            ("email", "owner@acme.example"),
            ("role", "admin"),
        ],
    )
    .await;
    assert_eq!(status, 409, "already a member: {body}");
}
